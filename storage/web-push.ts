import type { Queryable } from './db.ts';
import type { NotificationRow } from './notifications.ts';

export interface VapidKeys {
  /** base64url of the uncompressed P-256 point (65 bytes). */
  public_key: string;
  /** base64url of the private scalar (32 bytes). */
  private_key: string;
}

export async function findVapidKeys(db: Queryable): Promise<VapidKeys | null> {
  const { rows } = await db.query<VapidKeys>('SELECT public_key, private_key FROM vapid_keys');
  return rows[0] ?? null;
}

/** Saves the server's VAPID keys unless some process saved them first; returns the keys that stand. */
export async function saveVapidKeys(db: Queryable, keys: VapidKeys): Promise<VapidKeys> {
  await db.query(
    'INSERT INTO vapid_keys (public_key, private_key) VALUES ($1, $2) ON CONFLICT (singleton) DO NOTHING',
    [keys.public_key, keys.private_key],
  );
  return (await findVapidKeys(db))!;
}

export type PushPolicy = 'all' | 'followed' | 'follower' | 'none';

export interface PushSubscriptionRow {
  id: string;
  access_token_id: string;
  account_id: string;
  access_token: string;
  endpoint: string;
  key_p256dh: string;
  key_auth: string;
  standard: boolean;
  alerts: string[];
  policy: PushPolicy;
  created_at: Date;
}

const COLUMNS = 'id, access_token_id, account_id, access_token, endpoint, key_p256dh, key_auth, standard, alerts, policy, created_at';

export interface NewPushSubscription {
  accessTokenId: string;
  accountId: string;
  accessToken: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  standard: boolean;
  alerts: string[];
  policy: PushPolicy;
}

/**
 * The token's subscription, replacing the one it had (as Mastodon's POST does: a new row, a new id). One statement,
 * so two POSTs racing for one token leave one subscription.
 */
export async function replacePushSubscription(db: Queryable, s: NewPushSubscription): Promise<PushSubscriptionRow> {
  const { rows } = await db.query<PushSubscriptionRow>(
    `INSERT INTO web_push_subscriptions (access_token_id, account_id, access_token, endpoint, key_p256dh, key_auth, standard, alerts, policy)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (access_token_id) DO UPDATE SET
       id = timestamp_id(), account_id = EXCLUDED.account_id, access_token = EXCLUDED.access_token,
       endpoint = EXCLUDED.endpoint, key_p256dh = EXCLUDED.key_p256dh, key_auth = EXCLUDED.key_auth,
       standard = EXCLUDED.standard, alerts = EXCLUDED.alerts, policy = EXCLUDED.policy,
       created_at = now(), updated_at = now()
     RETURNING ${COLUMNS}`,
    [s.accessTokenId, s.accountId, s.accessToken, s.endpoint, s.p256dh, s.auth, s.standard, s.alerts, s.policy],
  );
  return rows[0]!;
}

export async function findPushSubscriptionByToken(db: Queryable, accessTokenId: string): Promise<PushSubscriptionRow | null> {
  const { rows } = await db.query<PushSubscriptionRow>(`SELECT ${COLUMNS} FROM web_push_subscriptions WHERE access_token_id = $1`, [accessTokenId]);
  return rows[0] ?? null;
}

/** PUT: the alerts and policy are replaced as a whole (Mastodon's `update!(data: …)`); null when there is none. */
export async function updatePushSubscriptionData(db: Queryable, accessTokenId: string, alerts: string[], policy: PushPolicy): Promise<PushSubscriptionRow | null> {
  const { rows } = await db.query<PushSubscriptionRow>(
    `UPDATE web_push_subscriptions SET alerts = $2, policy = $3, updated_at = now() WHERE access_token_id = $1 RETURNING ${COLUMNS}`,
    [accessTokenId, alerts, policy],
  );
  return rows[0] ?? null;
}

export async function deletePushSubscriptionByToken(db: Queryable, accessTokenId: string): Promise<void> {
  await db.query('DELETE FROM web_push_subscriptions WHERE access_token_id = $1', [accessTokenId]);
}

export async function deletePushSubscription(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM web_push_subscriptions WHERE id = $1', [id]);
}

// Mastodon's Web::PushSubscription#pushable?: the type is among the alerts, and the policy admits the sender
// (`followed`: the account follows the sender; `follower`: the sender follows the account).
function pushable(type: string, from: string): string {
  return `${type} = ANY(s.alerts)
    AND (s.policy = 'all'
      OR (s.policy = 'followed' AND EXISTS (SELECT 1 FROM follows f WHERE f.account_id = s.account_id AND f.target_account_id = ${from}))
      OR (s.policy = 'follower' AND EXISTS (SELECT 1 FROM follows f WHERE f.account_id = ${from} AND f.target_account_id = s.account_id)))`;
}

/** The ids of accountId's subscriptions that take a notification of this type from this sender. */
export async function pushableSubscriptionIds(db: Queryable, accountId: string, type: string, fromAccountId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM web_push_subscriptions s WHERE s.account_id = $1 AND ${pushable('$2', '$3')}`,
    [accountId, type, fromAccountId],
  );
  return rows.map((r) => r.id);
}

export interface PushTarget extends PushSubscriptionRow {
  /** The subscriber's preferred locale (users.locale). */
  locale: string | null;
}

/**
 * A queued push, if it is still to be sent: the subscription exists and still takes the notification (its alerts and
 * policy may have changed since), and the notification is there, its status not deleted.
 */
export async function findPushDelivery(db: Queryable, subscriptionId: string, notificationId: string): Promise<{ subscription: PushTarget; notification: NotificationRow } | null> {
  const { rows } = await db.query<PushTarget & { n: NotificationRow }>(
    `SELECT ${COLUMNS.split(', ').map((c) => `s.${c}`).join(', ')}, u.locale,
            json_build_object('id', n.id::text, 'account_id', n.account_id::text, 'from_account_id', n.from_account_id::text,
                              'type', n.type, 'status_id', n.status_id::text, 'created_at', n.created_at) AS n
       FROM web_push_subscriptions s
       JOIN users u ON u.account_id = s.account_id
       JOIN notifications n ON n.id = $2 AND n.account_id = s.account_id
       LEFT JOIN statuses st ON st.id = n.status_id
      WHERE s.id = $1 AND (n.status_id IS NULL OR st.deleted_at IS NULL) AND ${pushable('n.type', 'n.from_account_id')}`,
    [subscriptionId, notificationId],
  );
  const row = rows[0];
  if (!row) return null;
  const { n, ...subscription } = row;
  return { subscription, notification: { ...n, created_at: new Date(n.created_at) } };
}
