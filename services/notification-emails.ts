import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterCommit, transaction, type Queryable } from '../storage/db.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import type { NotificationRow, NotificationType } from '../storage/notifications.ts';
import {
  digestCandidates, mailableUser, markDigestQueued, notificationEmailChoices, setNotificationEmailChoices, statusVisibility, takeMailTurn,
} from '../storage/notification-emails.ts';
import type { JobQueues } from '../jobs/queues.ts';
import type { AppContext } from '../context.ts';
import type { Config } from '../config.ts';
import { queueMail } from './mail.ts';
import { serverKey } from './two-factor.ts';

/**
 * The notifications a person may be mailed about, as Mastodon's notification_emails settings: a mention, a direct
 * message (a mention in a direct post, its own choice here), a new follower, a follow request, a favourite, a boost.
 */
export const EMAIL_KINDS = ['mention', 'direct', 'follow', 'follow_request', 'favourite', 'reblog'] as const;
export type EmailKind = (typeof EMAIL_KINDS)[number];

/** Mastodon's defaults (UserSettings notification_emails): mention, follow and follow request on; favourite and boost off. */
export const EMAIL_DEFAULTS: Record<EmailKind, boolean> = { mention: true, direct: true, follow: true, follow_request: true, favourite: false, reblog: false };

/** What an unsubscribe link may turn off: one kind, or the daily digest. */
export type UnsubscribeKind = EmailKind | 'digest';
const UNSUBSCRIBE_KINDS: readonly string[] = [...EMAIL_KINDS, 'digest'];

/**
 * After a mail of one kind, no other of that kind goes to the same person for this long (the notifications stay in
 * the app). Mastodon mails each notification of a chosen kind; a flood of favourites would then flood the inbox.
 */
export const NOTIFICATION_MAIL_QUIET_SECONDS = 10 * 60;

/** The daily digest: at most one a day, and only to people not active in the last day. */
export const DIGEST_EVERY_HOURS = 24;
export const DIGEST_ACTIVE_HOURS = 24;
/** People served per run of the digest job (hourly); the rest wait for the next run. */
const DIGEST_BATCH = 500;

/** The mail kind of a notification: a mention in a direct post is a direct message; kinds not mailed are null. */
export function emailKindOf(type: NotificationType, visibility: string | null): EmailKind | null {
  if (type === 'mention') return visibility === 'direct' ? 'direct' : 'mention';
  return (EMAIL_KINDS as readonly string[]).includes(type) ? (type as EmailKind) : null;
}

/** Whether the person's choices (kinds they set; the rest default) take mail of this kind. */
export function takesMail(choices: Record<string, boolean>, kind: EmailKind): boolean {
  return typeof choices[kind] === 'boolean' ? choices[kind] : EMAIL_DEFAULTS[kind];
}

/** A person's choices for the settings page: every kind, and the digest. */
export async function emailChoices(db: Queryable, userId: string): Promise<{ kinds: Record<EmailKind, boolean>; digest: boolean }> {
  const found = await notificationEmailChoices(db, userId);
  const kinds = Object.fromEntries(EMAIL_KINDS.map((k) => [k, takesMail(found?.choices ?? {}, k)])) as Record<EmailKind, boolean>;
  return { kinds, digest: found?.digest ?? false };
}

export async function saveEmailChoices(db: Queryable, userId: string, kinds: Record<EmailKind, boolean>, digest: boolean): Promise<void> {
  await setNotificationEmailChoices(db, userId, kinds, digest);
}

/**
 * Queues the mail of a notification just made (not filtered: the caller checks), in its transaction, when the
 * recipient may be mailed (a confirmed address, not disabled or suspended), takes mail of its kind, and had no mail
 * of that kind in the last NOTIFICATION_MAIL_QUIET_SECONDS.
 */
export async function queueNotificationMail(deps: { jobs: JobQueues }, tx: Queryable, n: NotificationRow): Promise<void> {
  const kind = emailKindOf(n.type, n.type === 'mention' && n.status_id ? await statusVisibility(tx, n.status_id) : null);
  if (!kind) return;
  const user = await mailableUser(tx, n.account_id);
  if (!user || !takesMail(user.choices, kind)) return;
  if (!(await takeMailTurn(tx, user.id, kind, NOTIFICATION_MAIL_QUIET_SECONDS))) return;
  const row = await queueMail(tx, { type: 'notification', userId: user.id, notificationId: n.id, kind });
  afterCommit(tx, () => deps.jobs.enqueue(row).catch(() => {}));
}

/**
 * Queues the daily digests due (storage digestCandidates says who): "active" is a web page opened in a session, or
 * the notifications marker moved by an app, in the last DIGEST_ACTIVE_HOURS. Each digest's mail and its record commit
 * together. Returns how many were queued.
 */
export async function queueDigests(ctx: Pick<AppContext, 'db' | 'jobs'>): Promise<number> {
  const due = await digestCandidates(ctx.db, DIGEST_EVERY_HOURS, DIGEST_ACTIVE_HOURS, DIGEST_BATCH);
  const rows: OutboxRow[] = [];
  for (const c of due) {
    rows.push(await transaction(ctx.db, async (tx) => {
      await markDigestQueued(tx, c.userId, c.upToId);
      return queueMail(tx, { type: 'notification_digest', userId: c.userId, afterId: c.afterId, upToId: c.upToId });
    }));
  }
  await ctx.jobs.enqueueMany(rows);
  return rows.length;
}

function unsubscribeSignature(config: Pick<Config, 'otpSecret' | 'dataDir'>, userId: string, kind: string): Buffer {
  return createHmac('sha256', serverKey(config, 'notification-mail-unsubscribe')).update(`${userId}.${kind}`).digest();
}

/** The token of an unsubscribe link: the person, the kind, and a signature of both with the server's key. */
export function unsubscribeToken(config: Pick<Config, 'otpSecret' | 'dataDir'>, userId: string, kind: UnsubscribeKind): string {
  return `${userId}.${kind}.${unsubscribeSignature(config, userId, kind).toString('base64url')}`;
}

/** The person and kind a token names, or null when it is malformed or its signature is not ours. */
export function readUnsubscribeToken(config: Pick<Config, 'otpSecret' | 'dataDir'>, token: string): { userId: string; kind: UnsubscribeKind } | null {
  const m = /^([0-9]{1,20})\.([a-z_]{1,20})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m || !UNSUBSCRIBE_KINDS.includes(m[2]!)) return null;
  const given = Buffer.from(m[3]!, 'base64url');
  const expected = unsubscribeSignature(config, m[1]!, m[2]!);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return { userId: m[1]!, kind: m[2] as UnsubscribeKind };
}

/** Turns off what a valid token names; false when the token is not valid (or its person is gone). */
export async function unsubscribe(ctx: Pick<AppContext, 'db' | 'config'>, token: string): Promise<{ kind: UnsubscribeKind } | null> {
  const found = readUnsubscribeToken(ctx.config, token);
  if (!found) return null;
  const done = found.kind === 'digest'
    ? await setNotificationEmailChoices(ctx.db, found.userId, {}, false)
    : await setNotificationEmailChoices(ctx.db, found.userId, { [found.kind]: false });
  return done ? { kind: found.kind } : null;
}
