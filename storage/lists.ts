import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

export type RepliesPolicy = 'followed' | 'list' | 'none';

export interface ListRow {
  id: string;
  account_id: string;
  title: string;
  replies_policy: RepliesPolicy;
  exclusive: boolean;
}

const COLUMNS = `id::text, account_id::text, title, replies_policy, exclusive`;

/** How many lists one account may have, and how many members one list (Mastodon has no member limit; a bound does). */
export const LISTS_PER_ACCOUNT = 50;
export const MEMBERS_PER_LIST = 500;

export async function listsOf(db: Queryable, accountId: string): Promise<ListRow[]> {
  const { rows } = await db.query<ListRow>(`SELECT ${COLUMNS} FROM lists WHERE account_id = $1 ORDER BY id LIMIT ${LISTS_PER_ACCOUNT}`, [accountId]);
  return rows;
}

export async function findList(db: Queryable, accountId: string, id: string): Promise<ListRow | null> {
  const { rows } = await db.query<ListRow>(`SELECT ${COLUMNS} FROM lists WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rows[0] ?? null;
}

/** Creates a list unless the account has LISTS_PER_ACCOUNT already (null then); the count is taken under a lock on the owner. */
export async function insertList(db: Queryable, accountId: string, l: { title: string; repliesPolicy: RepliesPolicy; exclusive: boolean }): Promise<ListRow | null> {
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
  const { rows } = await db.query<ListRow>(
    `INSERT INTO lists (account_id, title, replies_policy, exclusive)
     SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM lists WHERE account_id = $1) < ${LISTS_PER_ACCOUNT}
     RETURNING ${COLUMNS}`,
    [accountId, l.title, l.repliesPolicy, l.exclusive],
  );
  return rows[0] ?? null;
}

export async function updateList(db: Queryable, accountId: string, id: string, l: { title?: string | undefined; repliesPolicy?: RepliesPolicy | undefined; exclusive?: boolean | undefined }): Promise<ListRow | null> {
  const { rows } = await db.query<ListRow>(
    `UPDATE lists SET title = coalesce($3, title), replies_policy = coalesce($4, replies_policy), exclusive = coalesce($5, exclusive), updated_at = now()
      WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
    [id, accountId, l.title ?? null, l.repliesPolicy ?? null, l.exclusive ?? null],
  );
  return rows[0] ?? null;
}

export async function deleteList(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM lists WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}

/**
 * Adds accounts the owner follows to a list; returns the ids that were not followed (nothing is added then).
 * Already present ones are kept as they are.
 */
export async function addListMembers(db: Queryable, list: ListRow, accountIds: string[]): Promise<{ notFollowed: string[]; full: boolean }> {
  const { rows } = await db.query<{ target_account_id: string; id: string }>(
    `SELECT target_account_id::text, id::text FROM follows WHERE account_id = $1 AND target_account_id = ANY($2::bigint[])`,
    [list.account_id, accountIds],
  );
  const follows = new Map(rows.map((r) => [r.target_account_id, r.id]));
  const notFollowed = accountIds.filter((id) => !follows.has(id));
  if (notFollowed.length > 0) return { notFollowed, full: false };
  await db.query(`SELECT 1 FROM lists WHERE id = $1 FOR UPDATE`, [list.id]);
  const { rows: counted } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM list_accounts WHERE list_id = $1 AND NOT (account_id = ANY($2::bigint[]))`, [list.id, accountIds],
  );
  if (counted[0]!.n + accountIds.length > MEMBERS_PER_LIST) return { notFollowed: [], full: true };
  await db.query(
    `INSERT INTO list_accounts (list_id, account_id, follow_id) SELECT $1, a, f FROM unnest($2::bigint[], $3::bigint[]) AS t(a, f)
     ON CONFLICT (list_id, account_id) DO NOTHING`,
    [list.id, accountIds, accountIds.map((id) => follows.get(id)!)],
  );
  return { notFollowed: [], full: false };
}

/**
 * Keeps `accountId` in these lists of the owner while the owner's follow of it is only a request (an account move,
 * jobs/account-move.ts); the membership goes over to the follow when the request is accepted, and ends with the
 * request otherwise (migration 1766680000000_list_follow_requests). Lists already holding it are left as they are;
 * a full list (MEMBERS_PER_LIST) is not added to. Returns whether every list holds it now.
 */
export async function addRequestedListMembers(db: Queryable, ownerId: string, listIds: string[], accountId: string): Promise<boolean> {
  const { rows } = await db.query<{ held: boolean }>(
    `WITH added AS (
       INSERT INTO list_accounts (list_id, account_id, follow_request_id)
       SELECT l.id, $3, r.id FROM lists l JOIN follow_requests r ON r.account_id = l.account_id AND r.target_account_id = $3
        WHERE l.id = ANY($2::bigint[]) AND l.account_id = $1
          AND (SELECT count(*) FROM list_accounts c WHERE c.list_id = l.id) < ${MEMBERS_PER_LIST}
       ON CONFLICT (list_id, account_id) DO NOTHING RETURNING list_id)
     SELECT (SELECT count(*) FROM added) + (SELECT count(*) FROM list_accounts WHERE account_id = $3 AND list_id = ANY($2::bigint[])) >= cardinality($2::bigint[]) AS held`,
    [ownerId, listIds, accountId],
  );
  return rows[0]!.held;
}

export async function removeListMembers(db: Queryable, listId: string, accountIds: string[]): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(
    `DELETE FROM list_accounts WHERE list_id = $1 AND account_id = ANY($2::bigint[]) RETURNING account_id::text`, [listId, accountIds],
  );
  return rows.map((r) => r.account_id);
}

export async function listMembersPage(db: Queryable, listId: string, p: PageParams): Promise<{ accounts: AccountRow[]; firstId: string | null; lastId: string | null }> {
  const values: unknown[] = [listId];
  const clause = pageClause('r.id', p, values);
  const { rows } = await db.query<{ id: string; account_id: string }>(
    `SELECT r.id::text, r.account_id::text FROM list_accounts r WHERE r.list_id = $1 AND ${clause.where} ORDER BY ${clause.order} ${clause.limit}`, values,
  );
  const ordered = pageRows(rows, p);
  const byId = new Map((await findAccountsByIds(db, ordered.map((r) => r.account_id))).map((a) => [a.id, a]));
  return {
    accounts: ordered.flatMap((r) => (byId.has(r.account_id) ? [byId.get(r.account_id)!] : [])),
    firstId: ordered[0]?.id ?? null,
    lastId: ordered.at(-1)?.id ?? null,
  };
}

export async function listMemberIds(db: Queryable, listId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(`SELECT account_id::text FROM list_accounts WHERE list_id = $1 LIMIT ${MEMBERS_PER_LIST}`, [listId]);
  return rows.map((r) => r.account_id);
}

/** The viewer's lists that hold this account. */
export async function listsHolding(db: Queryable, ownerId: string, accountId: string): Promise<ListRow[]> {
  const { rows } = await db.query<ListRow>(
    `SELECT ${COLUMNS.split(', ').map((c) => `l.${c}`).join(', ')} FROM lists l JOIN list_accounts m ON m.list_id = l.id
      WHERE l.account_id = $1 AND m.account_id = $2 ORDER BY l.id LIMIT ${LISTS_PER_ACCOUNT}`,
    [ownerId, accountId],
  );
  return rows;
}

/**
 * Lists (of local owners) that hold an author, a batch at a time in list order, with what fan-out needs to know. A
 * member its owner has only asked to follow gets nothing until the request is accepted (as Mastodon's
 * lists_for_local_distribution).
 */
export async function listsWithMember(db: Queryable, accountId: string, afterListId: string, limit: number): Promise<{ id: string; ownerId: string; repliesPolicy: RepliesPolicy }[]> {
  const { rows } = await db.query<{ id: string; owner: string; replies_policy: RepliesPolicy }>(
    `SELECT l.id::text, l.account_id::text AS owner, l.replies_policy FROM list_accounts m JOIN lists l ON l.id = m.list_id
      WHERE m.account_id = $1 AND m.list_id > $2 AND m.follow_id IS NOT NULL ORDER BY m.list_id LIMIT $3`,
    [accountId, afterListId, limit],
  );
  return rows.map((r) => ({ id: r.id, ownerId: r.owner, repliesPolicy: r.replies_policy }));
}

/** Of these lists, the ones that hold `accountId` (for replies shown under the `list` policy). */
export async function listsAlsoHolding(db: Queryable, listIds: string[], accountId: string): Promise<Set<string>> {
  if (listIds.length === 0) return new Set();
  const { rows } = await db.query<{ list_id: string }>(
    `SELECT list_id::text FROM list_accounts WHERE account_id = $1 AND list_id = ANY($2::bigint[])`, [accountId, listIds],
  );
  return new Set(rows.map((r) => r.list_id));
}

/** Members of the viewer's exclusive lists: their posts stay out of the viewer's home timeline. */
export async function exclusiveMembers(db: Queryable, ownerId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT DISTINCT m.account_id::text FROM lists l JOIN list_accounts m ON m.list_id = l.id WHERE l.account_id = $1 AND l.exclusive LIMIT 10000`,
    [ownerId],
  );
  return rows.map((r) => r.account_id);
}

/**
 * The newest statuses of a list's members a list feed is rebuilt from (not direct ones, not replies the policy hides);
 * only members the owner follows (one only asked to follow may not be read beyond what is public).
 */
export async function listFeedSourceIds(db: Queryable, list: ListRow, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id::text FROM list_accounts m
       CROSS JOIN LATERAL (
         SELECT s.id, s.in_reply_to_account_id, s.account_id FROM statuses s
          WHERE s.account_id = m.account_id AND s.deleted_at IS NULL AND s.visibility <> 'direct'
          ORDER BY s.id DESC LIMIT $2) s
      WHERE m.list_id = $1 AND m.follow_id IS NOT NULL
        AND (s.in_reply_to_account_id IS NULL OR s.in_reply_to_account_id = s.account_id OR s.in_reply_to_account_id = $3
             OR $4 = 'followed'
             OR ($4 = 'list' AND EXISTS (SELECT 1 FROM list_accounts o WHERE o.list_id = $1 AND o.account_id = s.in_reply_to_account_id)))
      ORDER BY s.id DESC LIMIT $2`,
    [list.id, limit, list.account_id, list.replies_policy],
  );
  return rows.map((r) => r.id);
}
