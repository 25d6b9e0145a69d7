import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

export interface FollowOptions {
  reblogs?: boolean | undefined;
  notify?: boolean | undefined;
  languages?: string[] | null | undefined;
  /** The ActivityPub id of a remote account's Follow, answered later by an Accept or Reject that names it. */
  uri?: string | null | undefined;
}

export interface RelationshipRow {
  id: string;
  following: boolean;
  showing_reblogs: boolean;
  notifying: boolean;
  languages: string[] | null;
  followed_by: boolean;
  requested: boolean;
  requested_by: boolean;
  blocking: boolean;
  blocked_by: boolean;
  muting: boolean;
  muting_notifications: boolean;
  muting_expires_at: Date | null;
  domain_blocking: boolean;
  endorsed: boolean;
  note: string;
}

/**
 * The viewer's relation to each target, in one query; unknown ids come back with every flag false.
 * While a follow is only requested, its options show as showing_reblogs/notifying/languages, as in Mastodon's RelationshipSerializer.
 * A timed mute past its end is no mute.
 */
export async function relationships(db: Queryable, viewerId: string, targetIds: string[]): Promise<Map<string, RelationshipRow>> {
  const { rows } = await db.query<RelationshipRow>(
    `SELECT t.id::text AS id,
            f.id IS NOT NULL AS following,
            coalesce(f.show_reblogs, fr.show_reblogs, false) AS showing_reblogs,
            coalesce(f.notify, fr.notify, false) AS notifying,
            CASE WHEN f.id IS NOT NULL THEN f.languages ELSE fr.languages END AS languages,
            EXISTS (SELECT 1 FROM follows WHERE account_id = t.id AND target_account_id = $1) AS followed_by,
            fr.id IS NOT NULL AS requested,
            EXISTS (SELECT 1 FROM follow_requests WHERE account_id = t.id AND target_account_id = $1) AS requested_by,
            EXISTS (SELECT 1 FROM blocks WHERE account_id = $1 AND target_account_id = t.id) AS blocking,
            EXISTS (SELECT 1 FROM blocks WHERE account_id = t.id AND target_account_id = $1) AS blocked_by,
            m.id IS NOT NULL AS muting,
            coalesce(m.hide_notifications, false) AS muting_notifications,
            m.expires_at AS muting_expires_at,
            EXISTS (SELECT 1 FROM accounts a JOIN account_domain_blocks d ON d.account_id = $1 AND d.domain = lower(a.domain)
                     WHERE a.id = t.id) AS domain_blocking,
            EXISTS (SELECT 1 FROM account_endorsements WHERE account_id = $1 AND target_account_id = t.id) AS endorsed,
            coalesce((SELECT comment FROM account_notes WHERE account_id = $1 AND target_account_id = t.id), '') AS note
       FROM unnest($2::bigint[]) AS t(id)
       LEFT JOIN follows f ON f.account_id = $1 AND f.target_account_id = t.id
       LEFT JOIN follow_requests fr ON fr.account_id = $1 AND fr.target_account_id = t.id
       LEFT JOIN mutes m ON m.account_id = $1 AND m.target_account_id = t.id AND (m.expires_at IS NULL OR m.expires_at > now())`,
    [viewerId, targetIds],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

export type FollowOutcome = 'followed' | 'requested' | 'updated';

/**
 * Follows target (or asks to, when it is locked). Following again only updates the options given.
 * Counts move only when a row is really inserted, so a repeated or racing follow counts once.
 */
export async function follow(db: Queryable, accountId: string, target: AccountRow, opts: FollowOptions): Promise<FollowOutcome> {
  const existing = await db.query(
    `UPDATE follows SET show_reblogs = coalesce($3, show_reblogs), notify = coalesce($4, notify),
                        languages = CASE WHEN $6::boolean THEN $5 ELSE languages END
      WHERE account_id = $1 AND target_account_id = $2`,
    [accountId, target.id, opts.reblogs ?? null, opts.notify ?? null, opts.languages ?? null, opts.languages !== undefined],
  );
  if (existing.rowCount === 1) return 'updated';
  // A remote account answers a Follow with an Accept or a Reject: until then it is a request, as in Mastodon.
  if (target.locked || target.domain !== null) {
    await db.query(
      `INSERT INTO follow_requests (account_id, target_account_id, show_reblogs, notify, languages, uri)
       VALUES ($1, $2, coalesce($3, true), coalesce($4, false), $5, $7)
       ON CONFLICT (account_id, target_account_id) DO UPDATE
         SET show_reblogs = coalesce($3, follow_requests.show_reblogs), notify = coalesce($4, follow_requests.notify),
             languages = CASE WHEN $6::boolean THEN $5 ELSE follow_requests.languages END,
             uri = coalesce($7, follow_requests.uri)`,
      [accountId, target.id, opts.reblogs ?? null, opts.notify ?? null, opts.languages ?? null, opts.languages !== undefined, opts.uri ?? null],
    );
    return 'requested';
  }
  // Counts move only when the row is new, so two racing follows count once.
  if (await insertFollow(db, accountId, target.id, opts.reblogs ?? true, opts.notify ?? false, opts.languages ?? null, opts.uri ?? null)) {
    await adjustFollowCounts(db, accountId, target.id, 1);
  }
  return 'followed';
}

/** Inserts the follow row only; returns whether it is new. Used by follow() and by authorising a request. */
async function insertFollow(db: Queryable, accountId: string, targetId: string, showReblogs: boolean, notify: boolean, languages: string[] | null, uri: string | null): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO follows (account_id, target_account_id, show_reblogs, notify, languages, uri)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (account_id, target_account_id) DO NOTHING`,
    [accountId, targetId, showReblogs, notify, languages, uri],
  );
  return rowCount === 1;
}

async function adjustFollowCounts(db: Queryable, accountId: string, targetId: string, delta: 1 | -1): Promise<void> {
  // Lock order by id keeps two opposite follows from deadlocking.
  const [first, second] = BigInt(accountId) < BigInt(targetId) ? [accountId, targetId] : [targetId, accountId];
  for (const id of [first, second]) {
    if (id === accountId) {
      await db.query(`UPDATE accounts SET following_count = greatest(following_count + $2, 0) WHERE id = $1`, [id, delta]);
    } else {
      await db.query(`UPDATE accounts SET followers_count = greatest(followers_count + $2, 0) WHERE id = $1`, [id, delta]);
    }
  }
}

/** Removes a follow and any pending request. Returns whether anything was removed. */
export async function unfollow(db: Queryable, accountId: string, targetId: string): Promise<boolean> {
  const removed = await db.query(`DELETE FROM follows WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
  if (removed.rowCount === 1) await adjustFollowCounts(db, accountId, targetId, -1);
  const request = await db.query(`DELETE FROM follow_requests WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
  return removed.rowCount === 1 || request.rowCount === 1;
}

/** Turns requesterId's pending request to targetId into a follow. Returns false when there was no request. */
export async function authorizeFollowRequest(db: Queryable, targetId: string, requesterId: string): Promise<boolean> {
  const { rows } = await db.query<{ show_reblogs: boolean; notify: boolean; languages: string[] | null; uri: string | null }>(
    `DELETE FROM follow_requests WHERE account_id = $1 AND target_account_id = $2
     RETURNING show_reblogs, notify, languages, uri`,
    [requesterId, targetId],
  );
  const request = rows[0];
  if (!request) return false;
  if (await insertFollow(db, requesterId, targetId, request.show_reblogs, request.notify, request.languages, request.uri)) {
    await adjustFollowCounts(db, requesterId, targetId, 1);
  }
  return true;
}

/** Authorizes every pending request to targetId, as Mastodon does when an account unlocks; returns the requesters now following. */
export async function authorizeAllFollowRequests(db: Queryable, targetId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT account_id::text FROM follow_requests WHERE target_account_id = $1 ORDER BY id`, [targetId],
  );
  const authorized: string[] = [];
  for (const r of rows) if (await authorizeFollowRequest(db, targetId, r.account_id)) authorized.push(r.account_id);
  return authorized;
}

export async function rejectFollowRequest(db: Queryable, targetId: string, requesterId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM follow_requests WHERE account_id = $1 AND target_account_id = $2`,
    [requesterId, targetId],
  );
  return rowCount === 1;
}

export interface AccountPage {
  accounts: AccountRow[];
  /** Paging ids of the first and last entries (follow or request ids, as Mastodon pages these lists). */
  firstId: string | null;
  lastId: string | null;
}

async function pagedAccounts(db: Queryable, sql: (where: string, order: string, limit: string) => string, firstValue: string, p: PageParams): Promise<AccountPage> {
  const values: unknown[] = [firstValue];
  const clause = pageClause('r.id', p, values);
  const { rows } = await db.query<{ page_id: string; account_id: string }>(sql(clause.where, clause.order, clause.limit), values);
  const ordered = pageRows(rows, p);
  const accounts = await findAccountsByIds(db, ordered.map((r) => r.account_id));
  const byId = new Map(accounts.map((a) => [a.id, a]));
  return {
    accounts: ordered.map((r) => byId.get(r.account_id)).filter((a): a is AccountRow => a !== undefined),
    firstId: ordered[0]?.page_id ?? null,
    lastId: ordered.at(-1)?.page_id ?? null,
  };
}

export function followersPage(db: Queryable, accountId: string, p: PageParams): Promise<AccountPage> {
  return pagedAccounts(db, (where, order, limit) =>
    `SELECT r.id AS page_id, r.account_id FROM follows r
      WHERE r.target_account_id = $1 AND ${where} ORDER BY ${order} ${limit}`, accountId, p);
}

export function followingPage(db: Queryable, accountId: string, p: PageParams): Promise<AccountPage> {
  return pagedAccounts(db, (where, order, limit) =>
    `SELECT r.id AS page_id, r.target_account_id AS account_id FROM follows r
      WHERE r.account_id = $1 AND ${where} ORDER BY ${order} ${limit}`, accountId, p);
}

export function followRequestsPage(db: Queryable, targetId: string, p: PageParams): Promise<AccountPage> {
  return pagedAccounts(db, (where, order, limit) =>
    `SELECT r.id AS page_id, r.account_id FROM follow_requests r
      WHERE r.target_account_id = $1 AND ${where} ORDER BY ${order} ${limit}`, targetId, p);
}

export async function countFollowRequests(db: Queryable, targetId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM follow_requests WHERE target_account_id = $1`, [targetId]);
  return Number(rows[0]!.n);
}

/** A local follower of an account, as a fan-out reads them. */
export interface LocalFollower {
  followId: string;
  accountId: string;
  showReblogs: boolean;
}

/** Local followers of an account, a batch at a time in follow order (keyset paging, so any number can be walked). */
export async function localFollowersBatch(db: Queryable, accountId: string, afterFollowId: string, limit: number): Promise<LocalFollower[]> {
  // follower_local (migration 1766690000000): no join to accounts, the batch read from the partial index
  // follows_target_local, which matches its filter and its order. Named, so planned once per connection: the
  // generic plan PostgreSQL settles on after five runs is that index too. (With the join it was not: a generic plan
  // walked follows by id and filtered on the target, and an author with most of a skewed table's follows took a
  // 10,000-follower fan-out from 0.3 s to 7 s; checked again on such a table since.) The fan-out's first
  // batch comes with its status (storage/statuses.ts findStatusForFanOut); this reads the later ones.
  const { rows } = await db.query<{ id: string; account_id: string; show_reblogs: boolean }>({
    name: 'local-followers-batch',
    text: `SELECT id, account_id, show_reblogs FROM follows
            WHERE target_account_id = $1 AND id > $2 AND follower_local ORDER BY id LIMIT $3`,
    values: [accountId, afterFollowId, limit],
  });
  return rows.map((r) => ({ followId: r.id, accountId: r.account_id, showReblogs: r.show_reblogs }));
}

/** Of these accounts, the ones that follow target. */
export async function whoFollow(db: Queryable, accountIds: string[], targetId: string): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT account_id FROM follows WHERE target_account_id = $1 AND account_id = ANY($2::bigint[])`, [targetId, accountIds],
  );
  return new Set(rows.map((r) => r.account_id));
}

/** True when some local account follows this one. */
export async function hasLocalFollowers(db: Queryable, accountId: string): Promise<boolean> {
  const { rows } = await db.query<{ yes: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM follows WHERE target_account_id = $1 AND follower_local) AS yes`,
    [accountId],
  );
  return rows[0]!.yes;
}

/**
 * Who asked to follow whom, by the ActivityPub id of the Follow and one of its two parties: a pending request or a
 * follow it became. Ids are not unique (anyone can send a Follow naming any id), so a party is part of the key.
 */
export async function followByUri(db: Queryable, uri: string, party: { accountId: string } | { targetId: string }): Promise<{ accountId: string; targetId: string } | null> {
  const column = 'accountId' in party ? 'account_id' : 'target_account_id';
  const { rows } = await db.query<{ account_id: string; target_account_id: string }>(
    `SELECT account_id, target_account_id FROM follow_requests WHERE uri = $1 AND ${column} = $2
     UNION ALL SELECT account_id, target_account_id FROM follows WHERE uri = $1 AND ${column} = $2 LIMIT 1`,
    [uri, 'accountId' in party ? party.accountId : party.targetId],
  );
  return rows[0] ? { accountId: rows[0].account_id, targetId: rows[0].target_account_id } : null;
}

/** The ActivityPub id of a follow or pending request (what an Undo, Accept or Reject names). */
export async function followUri(db: Queryable, accountId: string, targetId: string): Promise<string | null> {
  const { rows } = await db.query<{ uri: string | null }>(
    `SELECT uri FROM follows WHERE account_id = $1 AND target_account_id = $2
     UNION ALL SELECT uri FROM follow_requests WHERE account_id = $1 AND target_account_id = $2 LIMIT 1`,
    [accountId, targetId],
  );
  return rows[0]?.uri ?? null;
}

/** A page of an account's remote followers, oldest follow first (what a delivery goes to). */
export async function remoteFollowersBatch(db: Queryable, accountId: string, afterFollowId: string, limit: number): Promise<{ followId: string; account: AccountRow }[]> {
  const { rows } = await db.query<{ id: string; account_id: string }>(
    `SELECT f.id, f.account_id FROM follows f JOIN accounts a ON a.id = f.account_id
      WHERE f.target_account_id = $1 AND f.id > $2 AND NOT f.follower_local AND a.suspended_at IS NULL ORDER BY f.id LIMIT $3`,
    [accountId, afterFollowId, limit],
  );
  const accounts = new Map((await findAccountsByIds(db, rows.map((r) => r.account_id))).map((a) => [a.id, a]));
  return rows.flatMap((r) => (accounts.has(r.account_id) ? [{ followId: r.id, account: accounts.get(r.account_id)! }] : []));
}
