import type { Queryable } from './db.ts';
import { notSilencedSql } from './instance-domain-blocks.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

// Mastodon's NotificationPolicy, NotificationRequest and NotificationPermission.

export type PolicyAction = 'accept' | 'filter' | 'drop';
export const POLICY_ACTIONS: PolicyAction[] = ['accept', 'filter', 'drop'];
export const POLICY_FIELDS = ['for_not_following', 'for_not_followers', 'for_new_accounts', 'for_private_mentions', 'for_limited_accounts'] as const;
export type PolicyField = (typeof POLICY_FIELDS)[number];
export type NotificationPolicy = Record<PolicyField, PolicyAction>;

/** Mastodon's defaults: private mentions from strangers and notifications from limited accounts are filtered. */
export const DEFAULT_POLICY: NotificationPolicy = {
  for_not_following: 'accept',
  for_not_followers: 'accept',
  for_new_accounts: 'accept',
  for_private_mentions: 'filter',
  for_limited_accounts: 'filter',
};

/** Mastodon caps the counts of pending requests and notifications it reports. */
export const MAX_MEANINGFUL_COUNT = 100;

export async function findPolicy(db: Queryable, accountId: string): Promise<NotificationPolicy> {
  const { rows } = await db.query<NotificationPolicy>(
    `SELECT ${POLICY_FIELDS.join(', ')} FROM notification_policies WHERE account_id = $1`,
    [accountId],
  );
  return rows[0] ?? { ...DEFAULT_POLICY };
}

/** Sets the fields given (the others keep their value, or the default); returns the policy as it now is. */
export async function updatePolicy(db: Queryable, accountId: string, changes: Partial<NotificationPolicy>): Promise<NotificationPolicy> {
  const merged = { ...(await findPolicy(db, accountId)), ...changes };
  const { rows } = await db.query<NotificationPolicy>(
    `INSERT INTO notification_policies (account_id, ${POLICY_FIELDS.join(', ')}) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (account_id) DO UPDATE SET ${POLICY_FIELDS.map((f) => `${f} = EXCLUDED.${f}`).join(', ')}, updated_at = now()
     RETURNING ${POLICY_FIELDS.join(', ')}`,
    [accountId, ...POLICY_FIELDS.map((f) => merged[f])],
  );
  return rows[0]!;
}

/** What a policy decides on, about one sender and one recipient, read in one round trip. */
export interface PolicyFacts extends NotificationPolicy {
  /** The recipient accepted a request from the sender before. */
  permitted: boolean;
  /** The recipient follows the sender (or asked to). */
  following: boolean;
  /** The sender has followed the recipient for 3 days or more. */
  follower: boolean;
  /** The sender's account is less than 30 days old. */
  new_account: boolean;
  /** The sender is limited by a moderator, or on a limited server. */
  limited: boolean;
  /** The status is a direct one (a private mention). */
  direct: boolean;
}

export async function policyFacts(db: Queryable, recipientId: string, senderId: string, statusId: string | null): Promise<PolicyFacts | null> {
  const { rows } = await db.query<PolicyFacts>(
    `SELECT ${POLICY_FIELDS.map((f) => `coalesce(p.${f}, '${DEFAULT_POLICY[f]}') AS ${f}`).join(', ')},
            EXISTS (SELECT 1 FROM notification_permissions np WHERE np.account_id = $1 AND np.from_account_id = $2) AS permitted,
            (EXISTS (SELECT 1 FROM follows f WHERE f.account_id = $1 AND f.target_account_id = $2)
              OR EXISTS (SELECT 1 FROM follow_requests r WHERE r.account_id = $1 AND r.target_account_id = $2)) AS following,
            EXISTS (SELECT 1 FROM follows f WHERE f.account_id = $2 AND f.target_account_id = $1 AND f.created_at <= now() - interval '3 days') AS follower,
            a.created_at > now() - interval '30 days' AS new_account,
            (a.silenced_at IS NOT NULL OR NOT ${notSilencedSql('a', '$1')}) AS limited,
            coalesce((SELECT s.visibility = 'direct' FROM statuses s WHERE s.id = $3), false) AS direct
       FROM accounts a LEFT JOIN notification_policies p ON p.account_id = $1
      WHERE a.id = $2`,
    [recipientId, senderId, statusId],
  );
  return rows[0] ?? null;
}

/**
 * Whether the status answers a private mention of the sender by the recipient: a direct status of the recipient
 * mentioning the sender up its thread (the nearest 40 ancestors), as Mastodon's NotifyService#response_to_recipient?.
 */
export async function answersPrivateMention(db: Queryable, recipientId: string, senderId: string, statusId: string): Promise<boolean> {
  const { rows } = await db.query<{ answers: boolean }>(
    `WITH RECURSIVE up (id, depth) AS (
       SELECT s.in_reply_to_id, 1 FROM statuses s WHERE s.id = $3 AND s.in_reply_to_id IS NOT NULL
       UNION ALL
       SELECT s.in_reply_to_id, up.depth + 1 FROM up JOIN statuses s ON s.id = up.id WHERE s.in_reply_to_id IS NOT NULL AND up.depth < 40
     )
     SELECT EXISTS (SELECT 1 FROM up JOIN statuses s ON s.id = up.id JOIN mentions m ON m.status_id = s.id AND m.account_id = $2
                     WHERE s.account_id = $1 AND s.visibility = 'direct') AS answers`,
    [recipientId, senderId, statusId],
  );
  return rows[0]!.answers;
}

/** Files a filtered notification under the request for its sender (made on the first one; a mention's status is shown on it). */
export async function recordFiltered(db: Queryable, accountId: string, fromAccountId: string, mentionStatusId: string | null): Promise<void> {
  await db.query(
    `INSERT INTO notification_requests (account_id, from_account_id, last_status_id) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, from_account_id)
     DO UPDATE SET last_status_id = coalesce(EXCLUDED.last_status_id, notification_requests.last_status_id), updated_at = now()`,
    [accountId, fromAccountId, mentionStatusId],
  );
}

export interface RequestRow {
  id: string;
  account_id: string;
  from_account_id: string;
  last_status_id: string | null;
  created_at: Date;
  updated_at: Date;
  /** Its filtered notifications, counted up to MAX_MEANINGFUL_COUNT. */
  notifications_count: number;
}

// A request is shown while its sender has filtered notifications left and is not suspended.
const REQUEST_COLUMNS = `r.id, r.account_id, r.from_account_id, r.last_status_id, r.created_at, r.updated_at,
  (SELECT count(*) FROM (SELECT 1 FROM notifications n WHERE n.account_id = r.account_id AND n.from_account_id = r.from_account_id AND n.filtered LIMIT ${MAX_MEANINGFUL_COUNT}) c)::int AS notifications_count`;
const REQUEST_SHOWN = `EXISTS (SELECT 1 FROM notifications n WHERE n.account_id = r.account_id AND n.from_account_id = r.from_account_id AND n.filtered)
  AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = r.from_account_id AND a.suspended_at IS NULL)`;

export async function requestsPage(db: Queryable, accountId: string, p: PageParams): Promise<RequestRow[]> {
  const values: unknown[] = [accountId];
  const c = pageClause('r.id', p, values);
  const { rows } = await db.query<RequestRow>(
    `SELECT ${REQUEST_COLUMNS} FROM notification_requests r
      WHERE r.account_id = $1 AND ${REQUEST_SHOWN} AND ${c.where} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p);
}

export async function findRequest(db: Queryable, accountId: string, id: string): Promise<RequestRow | null> {
  const { rows } = await db.query<RequestRow>(
    `SELECT ${REQUEST_COLUMNS} FROM notification_requests r WHERE r.id = $2 AND r.account_id = $1 AND ${REQUEST_SHOWN}`,
    [accountId, id],
  );
  return rows[0] ?? null;
}

/** The senders of the recipient's requests among these ids, locked for the change (ids not theirs are left out). */
export async function lockRequests(db: Queryable, accountId: string, ids: string[]): Promise<string[]> {
  const { rows } = await db.query<{ from_account_id: string }>(
    `SELECT from_account_id FROM notification_requests WHERE account_id = $1 AND id = ANY($2::bigint[]) FOR UPDATE`,
    [accountId, [...new Set(ids)]],
  );
  return rows.map((r) => r.from_account_id);
}

/** Accepts these senders: their filtered notifications join the list, later ones are never filtered, the requests go. */
export async function acceptSenders(db: Queryable, accountId: string, senderIds: string[]): Promise<void> {
  await db.query(
    `INSERT INTO notification_permissions (account_id, from_account_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`,
    [accountId, senderIds],
  );
  await db.query(`UPDATE notifications SET filtered = false WHERE account_id = $1 AND from_account_id = ANY($2::bigint[]) AND filtered`, [accountId, senderIds]);
  await db.query(`DELETE FROM notification_requests WHERE account_id = $1 AND from_account_id = ANY($2::bigint[])`, [accountId, senderIds]);
}

/** Dismisses these senders' requests: the requests and their filtered notifications are deleted. */
export async function dismissSenders(db: Queryable, accountId: string, senderIds: string[]): Promise<void> {
  await db.query(`DELETE FROM notifications WHERE account_id = $1 AND from_account_id = ANY($2::bigint[]) AND filtered`, [accountId, senderIds]);
  await db.query(`DELETE FROM notification_requests WHERE account_id = $1 AND from_account_id = ANY($2::bigint[])`, [accountId, senderIds]);
}

/** The policy's summary: pending requests and filtered notifications, each counted up to a cap. */
export async function pendingSummary(db: Queryable, accountId: string): Promise<{ pending_requests_count: number; pending_notifications_count: number }> {
  const { rows } = await db.query<{ requests: number; notifications: number }>(
    `SELECT (SELECT count(*) FROM (SELECT 1 FROM notification_requests r WHERE r.account_id = $1 AND ${REQUEST_SHOWN} LIMIT ${MAX_MEANINGFUL_COUNT}) x)::int AS requests,
            (SELECT count(*) FROM (SELECT 1 FROM notifications n JOIN accounts a ON a.id = n.from_account_id AND a.suspended_at IS NULL
                                    WHERE n.account_id = $1 AND n.filtered LIMIT ${MAX_MEANINGFUL_COUNT * 10}) y)::int AS notifications`,
    [accountId],
  );
  return { pending_requests_count: rows[0]!.requests, pending_notifications_count: rows[0]!.notifications };
}
