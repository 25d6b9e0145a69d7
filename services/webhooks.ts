import { createHmac, randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import * as storage from '../storage/webhooks.ts';
import { notFound, unprocessable } from '../errors.ts';
import { logAction, type ActionName, type Actor } from './action-log.ts';

/**
 * Operators' webhooks, as Mastodon's admin webhooks: an event (an account created, approved or edited, a report
 * filed or changed, a local status posted or edited) is POSTed to each enabled webhook that wants it, as
 * `{"event", "created_at", "object"}` signed with the webhook's secret (`X-Hub-Signature: sha256=<hex HMAC>`). The
 * deliveries are outbox rows written in the transaction of the change (storage/webhooks.ts), sent by the
 * deliverWebhook job (jobs/webhooks.ts). The operators' page and the CLI both manage them here.
 */

/**
 * Mastodon's Webhook::EVENTS: accounts are local ones (account.updated: a profile edit), statuses local ones, as
 * Mastodon's; reports any, filed here or arriving as a Flag.
 */
export const WEBHOOK_EVENTS = ['account.approved', 'account.created', 'account.updated', 'report.created', 'report.updated', 'status.created', 'status.updated'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The last attempts kept per webhook for the operators' page. */
export const WEBHOOK_DELIVERIES_KEPT = 20;
const URL_MAX = 2048;

/** A new secret: Mastodon's is 20 random bytes in hex. */
const newSecret = () => randomBytes(20).toString('hex');

/** The signature a receiver checks: HMAC-SHA256 of the raw body with the secret, in hex. */
export function webhookSignature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

function checkedEvents(events: readonly string[]): WebhookEvent[] {
  const wanted = [...new Set(events.map((e) => e.trim()).filter((e) => e !== ''))];
  const unknown = wanted.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
  if (unknown.length > 0) throw unprocessable(`Validation failed: Events ${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not known (known: ${WEBHOOK_EVENTS.join(', ')})`);
  if (wanted.length === 0) throw unprocessable("Validation failed: Events can't be blank");
  return wanted as WebhookEvent[];
}

function checkedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    throw unprocessable('Validation failed: Url is invalid');
  }
  if ((parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || url.length > URL_MAX) throw unprocessable('Validation failed: Url is invalid');
  return parsed.href;
}

/** A webhook's change and its audit log entry in one transaction; the entry names the webhook by its URL. */
async function logged(db: Db, by: Actor | undefined, action: ActionName, write: (tx: Queryable) => Promise<storage.WebhookRow | null>): Promise<storage.WebhookRow> {
  const row = await transaction(db, async (tx) => {
    const row = await write(tx);
    if (row) await logAction(tx, by, action, { type: 'Webhook', id: action === 'destroy' ? null : row.id, name: row.url });
    return row;
  });
  if (!row) throw notFound();
  return row;
}

export async function createWebhook(db: Db, input: { url: string; events: readonly string[]; enabled?: boolean }, by?: Actor): Promise<storage.WebhookRow> {
  const fields = { url: checkedUrl(input.url), events: checkedEvents(input.events), secret: newSecret(), enabled: input.enabled ?? true };
  return logged(db, by, 'create', (tx) => storage.insertWebhook(tx, fields));
}

export async function changeWebhook(db: Db, id: string, change: { events?: readonly string[]; enabled?: boolean; rotateSecret?: boolean }, by?: Actor): Promise<storage.WebhookRow> {
  const fields = {
    ...(change.events ? { events: checkedEvents(change.events) } : {}),
    ...(change.enabled !== undefined ? { enabled: change.enabled } : {}),
    ...(change.rotateSecret ? { secret: newSecret() } : {}),
  };
  const action: ActionName = change.rotateSecret ? 'rotate_secret' : change.enabled === true ? 'enable' : change.enabled === false ? 'disable' : 'update';
  return logged(db, by, action, (tx) => storage.updateWebhook(tx, id, fields));
}

export async function removeWebhook(db: Db, id: string, by?: Actor): Promise<void> {
  await logged(db, by, 'destroy', (tx) => storage.deleteWebhook(tx, id));
}

/**
 * Queues the event's deliveries in the caller's transaction; the caller queues the returned rows after its commit
 * (a crash meanwhile leaves them to the outbox sweeper).
 */
export function queueWebhookEvent(tx: Parameters<typeof storage.queueWebhookDeliveries>[0], event: WebhookEvent, objectId: string): Promise<OutboxRow[]> {
  return storage.queueWebhookDeliveries(tx, event, objectId);
}

/** The same, for a change that was not made in a transaction of ours: its own statement, right after the change. */
export async function queueWebhookEventNow(deps: { db: Db; jobs?: { enqueue(row: OutboxRow): Promise<void> } | null }, event: WebhookEvent, objectId: string): Promise<void> {
  const rows = await transaction(deps.db, (tx) => storage.queueWebhookDeliveries(tx, event, objectId));
  if (deps.jobs) await Promise.all(rows.map((r) => deps.jobs!.enqueue(r).catch(() => {})));
}
