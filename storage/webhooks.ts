import type { Queryable } from './db.ts';
import type { OutboxRow } from './outbox.ts';

/** An operators' webhook (Mastodon's Webhook). */
export interface WebhookRow {
  id: string;
  url: string;
  events: string[];
  secret: string;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

/** One attempt to deliver an event to a webhook: the answer's status, or why there was none. */
export interface WebhookDeliveryRow {
  id: string;
  webhook_id: string;
  event: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  created_at: Date;
}

const COLUMNS = `id::text, url, events, secret, enabled, created_at, updated_at`;
/** A server has a handful of webhooks; lists are bounded all the same. */
const LIST_LIMIT = 200;

export async function listWebhooks(db: Queryable): Promise<WebhookRow[]> {
  const { rows } = await db.query<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks ORDER BY id LIMIT ${LIST_LIMIT}`);
  return rows;
}

export async function findWebhook(db: Queryable, id: string): Promise<WebhookRow | null> {
  const { rows } = await db.query<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function insertWebhook(db: Queryable, w: { url: string; events: string[]; secret: string; enabled: boolean }): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO webhooks (url, events, secret, enabled) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`, [w.url, w.events, w.secret, w.enabled],
  );
  return rows[0]!;
}

/** Changes what is given; null when there is no such webhook. */
export async function updateWebhook(db: Queryable, id: string, w: { events?: string[]; enabled?: boolean; secret?: string }): Promise<WebhookRow | null> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks SET events = COALESCE($2, events), enabled = COALESCE($3, enabled), secret = COALESCE($4, secret), updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, w.events ?? null, w.enabled ?? null, w.secret ?? null],
  );
  return rows[0] ?? null;
}

/** The removed webhook; null when there was none. */
export async function deleteWebhook(db: Queryable, id: string): Promise<WebhookRow | null> {
  const { rows } = await db.query<WebhookRow>(`DELETE FROM webhooks WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
  return rows[0] ?? null;
}

/**
 * One `deliverWebhook` outbox row for each enabled webhook that wants the event, written in the caller's transaction:
 * one statement on a table of a handful of rows, which writes nothing when no webhook wants it.
 */
export async function queueWebhookDeliveries(db: Queryable, event: string, objectId: string): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>({
    name: 'webhook-queue-deliveries',
    text: `INSERT INTO outbox (kind, payload)
           SELECT 'deliverWebhook', jsonb_build_object('webhookId', id::text, 'event', $1::text, 'objectId', $2::text,
                  'createdAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             FROM webhooks WHERE enabled AND $1::text = ANY (events)
           RETURNING id::text, kind, payload`,
    values: [event, objectId],
  });
  return rows;
}

/** Records an attempt and keeps only the webhook's last `keep`. */
export async function recordWebhookDelivery(db: Queryable, d: { webhookId: string; event: string; attempt: number; statusCode: number | null; error: string | null }, keep: number): Promise<void> {
  await db.query(
    `WITH added AS (INSERT INTO webhook_deliveries (webhook_id, event, attempt, status_code, error) VALUES ($1, $2, $3, $4, $5) RETURNING id)
     DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND id < (
       SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC OFFSET $6 - 2 LIMIT 1)`,
    [d.webhookId, d.event, d.attempt, d.statusCode, d.error?.slice(0, 500) ?? null, keep],
  );
}

/** The last attempts of these webhooks, newest first, at most `limit` each. */
export async function lastWebhookDeliveries(db: Queryable, webhookIds: string[], limit: number): Promise<WebhookDeliveryRow[]> {
  const { rows } = await db.query<WebhookDeliveryRow>(
    `SELECT d.id::text, d.webhook_id::text, d.event, d.attempt, d.status_code, d.error, d.created_at
       FROM unnest($1::bigint[]) AS w(id)
       CROSS JOIN LATERAL (SELECT * FROM webhook_deliveries WHERE webhook_id = w.id ORDER BY id DESC LIMIT $2) d
      ORDER BY d.webhook_id, d.id DESC`,
    [webhookIds, limit],
  );
  return rows;
}
