import { accountImageUrl } from './media-urls.ts';
import { sanitize } from '../text/sanitize.ts';
import type { Queryable } from '../storage/db.ts';
import { afterCommit } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import { findVapidKeys, saveVapidKeys, pushableSubscriptionIds, type VapidKeys, type PushTarget } from '../storage/web-push.ts';
import type { NotificationRow, NotificationType } from '../storage/notifications.ts';
import type { AccountRow } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import type { FileHost } from '../storage/filehost/index.ts';
import type { JobQueues } from '../jobs/queues.ts';

/** The alert names of Mastodon's WebPushSubscription (4.3; `quote` and `quoted_update` since 4.5): the notification types a subscription can ask for. */
export const PUSH_ALERTS = ['mention', 'status', 'reblog', 'follow', 'follow_request', 'favourite', 'poll', 'update', 'admin.sign_up', 'admin.report', 'quote', 'quoted_update'] as const;
export type PushAlert = (typeof PUSH_ALERTS)[number];

/** Reads the server's VAPID keys, making and storing them if there are none yet; racing processes agree on the first saved. */
export async function loadOrCreateVapidKeys(db: Queryable): Promise<VapidKeys> {
  const stored = await findVapidKeys(db);
  if (stored) return stored;
  // web-push (with its ASN.1 and JWT libraries) is loaded where it is used: once per database, and by the push job.
  const { default: webpush } = await import('web-push');
  const made = webpush.generateVAPIDKeys();
  return saveVapidKeys(db, { public_key: made.publicKey, private_key: made.privateKey });
}

// Keys never change once stored, so each process reads them once (per database: tests run several servers).
const vapidCache = new WeakMap<object, Promise<VapidKeys>>();

export function vapidKeys(db: Queryable): Promise<VapidKeys> {
  let pending = vapidCache.get(db);
  if (!pending) {
    pending = loadOrCreateVapidKeys(db);
    vapidCache.set(db, pending);
    pending.catch(() => vapidCache.delete(db));
  }
  return pending;
}

/** The public key apps subscribe with (`server_key`, the Application's `vapid_key`, the v2 instance's `vapid.public_key`). */
export async function vapidPublicKey(db: Queryable): Promise<string> {
  return (await vapidKeys(db)).public_key;
}

/**
 * Queues a push of a new notification to each of the account's subscriptions that take it (its type among their
 * alerts, the sender admitted by their policy), through the outbox of the notification's own transaction; the jobs
 * are queued once it commits (the outbox sweeper queues them if this process dies first).
 */
export async function queueWebPush(deps: { jobs: JobQueues }, tx: Queryable, n: NotificationRow): Promise<void> {
  const ids = await pushableSubscriptionIds(tx, n.account_id, n.type, n.from_account_id);
  if (ids.length === 0) return;
  const rows: OutboxRow[] = [];
  for (const id of ids) rows.push(await addToOutbox(tx, 'webPush', { subscriptionId: id, notificationId: n.id }));
  afterCommit(tx, () => Promise.all(rows.map((r) => deps.jobs.enqueue(r).catch(() => {}))));
}

// Mastodon's English notification_mailer subjects, which its push titles are (and our notification mails' subjects).
export const TITLES: Record<NotificationType, (name: string) => string> = {
  mention: (name) => `You were mentioned by ${name}`,
  status: (name) => `${name} just posted`,
  reblog: (name) => `${name} boosted your post`,
  follow: (name) => `${name} is now following you`,
  follow_request: (name) => `Pending follower: ${name}`,
  favourite: (name) => `${name} favorited your post`,
  poll: (name) => `A poll by ${name} has ended`,
  update: (name) => `${name} edited a post`,
  'admin.sign_up': (name) => `${name} signed up`,
  'admin.report': (name) => `${name} submitted a report`,
  quote: (name) => `${name} quoted your post`,
  quoted_update: (name) => `${name} edited a post you have quoted`,
  added_to_collection: (name) => `${name} added you to a collection`,
  collection_update: (name) => `${name} edited a collection you are in`,
};

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** HTML to plain text: tags dropped (line and paragraph breaks kept as line breaks), entities decoded. */
export function plainText(html: string): string {
  const text = sanitize(html.replace(/<br\s*\/?>/gi, '\n').replace(/<\/p>\s*<p[^>]*>/gi, '\n\n'), { allowedTags: [], allowedAttributes: {} });
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** Rails' `truncate(length: 140)`: at most 140 characters, the last three "..." when cut. */
export function truncate(text: string, length = 140): string {
  const chars = [...text];
  return chars.length <= length ? text : `${chars.slice(0, length - 3).join('')}...`;
}

export interface PushPayloadInput {
  subscription: PushTarget;
  notification: NotificationRow;
  from: AccountRow;
  status: StatusRow | null;
  server: { publicUrl: string; fileHost: FileHost };
}

/**
 * The JSON a push carries, as Mastodon's Web::NotificationSerializer renders it: access_token, preferred_locale,
 * notification_id, notification_type, icon, title and body. The notification id is a JSON number there (apps decode
 * it as a 64-bit integer), so it is written as its digits rather than through a JavaScript number, which would round it.
 * (Not an API entity: jobs render it, and jobs never import http/.)
 */
export function renderPushPayload({ subscription, notification, from, status, server }: PushPayloadInput): string {
  const name = from.display_name.trim() || from.username;
  const icon = accountImageUrl(server, from, 'avatar');
  const source = status ? (status.spoiler_text || status.text || plainText(status.content)) : plainText(from.note_html);
  const idDigits = /^\d+$/.test(notification.id) ? notification.id : JSON.stringify(notification.id);
  const fields = [
    `"access_token":${JSON.stringify(subscription.access_token)}`,
    `"preferred_locale":${JSON.stringify(subscription.locale || 'en')}`,
    `"notification_id":${idDigits}`,
    `"notification_type":${JSON.stringify(notification.type)}`,
    `"icon":${JSON.stringify(icon)}`,
    `"title":${JSON.stringify(TITLES[notification.type](name))}`,
    `"body":${JSON.stringify(truncate(source.trim()))}`,
  ];
  return `{${fields.join(',')}}`;
}
