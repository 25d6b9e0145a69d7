import webpush from 'web-push';
import type { Queryable } from '../storage/db.ts';
import { findVapidKeys, saveVapidKeys, type VapidKeys } from '../storage/web-push.ts';

/** The alert names of Mastodon's WebPushSubscription (4.3): the notification types a subscription can ask for. */
export const PUSH_ALERTS = ['mention', 'status', 'reblog', 'follow', 'follow_request', 'favourite', 'poll', 'update', 'admin.sign_up', 'admin.report'] as const;
export type PushAlert = (typeof PUSH_ALERTS)[number];

/** Reads the server's VAPID keys, making and storing them if there are none yet; racing processes agree on the first saved. */
export async function loadOrCreateVapidKeys(db: Queryable): Promise<VapidKeys> {
  const stored = await findVapidKeys(db);
  if (stored) return stored;
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
