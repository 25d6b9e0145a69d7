import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';
import type { OutboxRow } from './outbox.ts';

/**
 * The SQL of deleting an account (services/account-deletion.ts, jobs/account-deletion.ts). Every statement is bounded:
 * it takes one batch (LIMIT) through an index on the column that names the account, so a large account is removed
 * by many short transactions rather than one long one.
 */

/** Suspends an account and marks it deleted (both keep the time they had). Returns whether it exists. */
export async function markAccountDeleted(db: Queryable, accountId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE accounts SET suspended_at = coalesce(suspended_at, now()), deleted_at = coalesce(deleted_at, now()), updated_at = now()
      WHERE id = $1`,
    [accountId],
  );
  return rowCount === 1;
}

/** A local user's ways in, ended: web sessions and authorization codes gone, tokens revoked. */
export async function endUserAccess(db: Queryable, accountId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(`SELECT id::text FROM users WHERE account_id = $1`, [accountId]);
  const userId = rows[0]?.id ?? null;
  if (!userId) return null;
  await db.query(`DELETE FROM web_sessions WHERE user_id = $1`, [userId]);
  await db.query(`UPDATE oauth_access_grants SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, [userId]);
  await db.query(`UPDATE oauth_access_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, [userId]);
  return userId;
}

/**
 * Remote accounts on one side of the account's follows (or follow requests), paged by the row's id: its followers,
 * those it follows, and requests either way. Suspended accounts are left out (their servers get nothing).
 */
export async function remoteRelationsBatch(
  db: Queryable, accountId: string, table: 'follows' | 'follow_requests', side: 'followers' | 'following', after: string, limit: number,
): Promise<{ lastId: string | null; accounts: AccountRow[] }> {
  const [mine, theirs] = side === 'followers' ? ['target_account_id', 'account_id'] : ['account_id', 'target_account_id'];
  const { rows } = await db.query<{ id: string; other: string; remote: boolean }>(
    `SELECT r.id::text, r.${theirs}::text AS other, (a.domain IS NOT NULL AND a.suspended_at IS NULL) AS remote
       FROM ${table} r JOIN accounts a ON a.id = r.${theirs}
      WHERE r.${mine} = $1 AND r.id > $2 ORDER BY r.id LIMIT $3`,
    [accountId, after, limit],
  );
  const accounts = await findAccountsByIds(db, [...new Set(rows.filter((r) => r.remote).map((r) => r.other))]);
  return { lastId: rows.at(-1)?.id ?? null, accounts };
}

/**
 * Statuses named by unresolved reports about the account: as Mastodon's DeleteAccountService, they (with their
 * media, edits and poll) are kept for the moderators when the account's row is kept. At most `limit` (reports are
 * read through their target's index).
 */
export async function reportedStatusIds(db: Queryable, accountId: string, limit = 5000): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT DISTINCT s.id::text FROM reports r CROSS JOIN LATERAL unnest(r.status_ids) AS s(id)
      WHERE r.target_account_id = $1 AND r.action_taken_at IS NULL LIMIT $2`,
    [accountId, limit],
  );
  return rows.map((r) => r.id);
}

/** The account's statuses (reblogs too, deleted ones too), oldest first, after an id; `keep` left out. */
export async function statusIdsBatch(db: Queryable, accountId: string, after: string, limit: number, keep: string[] = []): Promise<string[]> {
  // Two index walks (live statuses, and those already flagged deleted), merged in id order.
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text FROM (
       (SELECT id FROM statuses WHERE account_id = $1 AND deleted_at IS NULL AND id > $2 AND id <> ALL($4::bigint[]) ORDER BY id LIMIT $3)
       UNION ALL
       (SELECT id FROM statuses WHERE account_id = $1 AND deleted_at IS NOT NULL AND id > $2 AND id <> ALL($4::bigint[]) ORDER BY id LIMIT $3)
     ) s ORDER BY s.id LIMIT $3`,
    [accountId, after, limit, keep],
  );
  return rows.map((r) => r.id);
}

/**
 * Remote accounts that took part in these statuses: mentioned in them, replying to them, favouriting or boosting
 * them. Each lookup goes through the status id's index.
 */
export async function remoteParticipants(db: Queryable, statusIds: string[]): Promise<AccountRow[]> {
  if (statusIds.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT DISTINCT a.id::text FROM accounts a
      WHERE a.domain IS NOT NULL AND a.suspended_at IS NULL AND a.id IN (
        SELECT account_id FROM mentions WHERE status_id = ANY($1::bigint[])
        UNION SELECT account_id FROM favourites WHERE status_id = ANY($1::bigint[])
        UNION SELECT account_id FROM statuses WHERE in_reply_to_id = ANY($1::bigint[])
        UNION SELECT account_id FROM statuses WHERE reblog_of_id = ANY($1::bigint[]))`,
    [statusIds],
  );
  return findAccountsByIds(db, rows.map((r) => r.id));
}

/** What removing a batch of statuses needs to know first: who was mentioned (their feeds), and the files. */
export async function statusBatchDetails(db: Queryable, statusIds: string[]): Promise<{ mentionedIds: string[]; fileKeys: string[] }> {
  const mentioned = await db.query<{ account_id: string }>(
    `SELECT DISTINCT account_id::text FROM mentions WHERE status_id = ANY($1::bigint[])`, [statusIds],
  );
  return { mentionedIds: mentioned.rows.map((r) => r.account_id), fileKeys: await mediaFileKeys(db, `status_id = ANY($1::bigint[])`, statusIds) };
}

async function mediaFileKeys(db: Queryable, where: string, value: unknown): Promise<string[]> {
  const { rows } = await db.query<{ keys: (string | null)[] }>(
    `SELECT ARRAY[staged_key, original_key, small_key, thumbnail_key] AS keys FROM media_attachments WHERE ${where}`, [value],
  );
  return rows.flatMap((r) => r.keys.filter((k): k is string => k !== null));
}

/**
 * Removes statuses of the account, with what hangs off them (mentions, tags, polls, edits, others' favourites,
 * bookmarks and boosts of them, notifications about them: the foreign keys cascade), after moving the counts they
 * held: a reply's parent's replies_count, a boost's original's reblogs_count, and the statuses_count of others whose
 * boosts of them go. Returns the statuses and accounts whose counts changed.
 */
export async function deleteStatuses(db: Queryable, accountId: string, statusIds: string[]): Promise<{ statuses: string[]; accounts: string[] }> {
  if (statusIds.length === 0) return { statuses: [], accounts: [] };
  const parents = await db.query<{ id: string }>(
    `UPDATE statuses p SET replies_count = greatest(p.replies_count - c.n, 0)
       FROM (SELECT in_reply_to_id AS id, count(*)::int AS n FROM statuses
              WHERE id = ANY($1::bigint[]) AND in_reply_to_id IS NOT NULL AND deleted_at IS NULL GROUP BY 1) c
      WHERE p.id = c.id AND p.account_id <> $2 RETURNING p.id::text`,
    [statusIds, accountId],
  );
  const originals = await db.query<{ id: string }>(
    `UPDATE statuses o SET reblogs_count = greatest(o.reblogs_count - c.n, 0)
       FROM (SELECT reblog_of_id AS id, count(*)::int AS n FROM statuses
              WHERE id = ANY($1::bigint[]) AND reblog_of_id IS NOT NULL AND deleted_at IS NULL GROUP BY 1) c
      WHERE o.id = c.id AND o.account_id <> $2 RETURNING o.id::text`,
    [statusIds, accountId],
  );
  const boosters = await db.query<{ id: string }>(
    `UPDATE accounts a SET statuses_count = greatest(a.statuses_count - c.n, 0)
       FROM (SELECT account_id AS id, count(*)::int AS n FROM statuses
              WHERE reblog_of_id = ANY($1::bigint[]) AND deleted_at IS NULL AND account_id <> $2 GROUP BY 1) c
      WHERE a.id = c.id RETURNING a.id::text`,
    [statusIds, accountId],
  );
  // Replies and quotes of them lose their link (the keys set it to null): their rendered forms change too.
  const linked = await db.query<{ id: string }>(
    `SELECT id::text FROM statuses WHERE in_reply_to_id = ANY($1::bigint[]) AND account_id <> $2
     UNION SELECT status_id::text FROM quotes WHERE quoted_status_id = ANY($1::bigint[])`,
    [statusIds, accountId],
  );
  await db.query(`DELETE FROM media_attachments WHERE status_id = ANY($1::bigint[])`, [statusIds]);
  await db.query(`DELETE FROM statuses WHERE id = ANY($1::bigint[]) AND account_id = $2`, [statusIds, accountId]);
  return { statuses: [...parents.rows, ...originals.rows, ...linked.rows].map((r) => r.id), accounts: boosters.rows.map((r) => r.id) };
}

/** The account's remaining uploads (not attached to a status of its own, nor to a kept one), a batch, with their files. */
export async function mediaBatch(db: Queryable, accountId: string, limit: number, keep: string[] = []): Promise<{ ids: string[]; fileKeys: string[] }> {
  const { rows } = await db.query<{ id: string; keys: (string | null)[] }>(
    `SELECT id::text, ARRAY[staged_key, original_key, small_key, thumbnail_key] AS keys FROM media_attachments
      WHERE account_id = $1 AND (status_id IS NULL OR status_id <> ALL($3::bigint[])) ORDER BY id LIMIT $2`,
    [accountId, limit, keep],
  );
  return { ids: rows.map((r) => r.id), fileKeys: rows.flatMap((r) => r.keys.filter((k): k is string => k !== null)) };
}

export async function deleteMedia(db: Queryable, ids: string[]): Promise<void> {
  await db.query(`DELETE FROM media_attachments WHERE id = ANY($1::bigint[])`, [ids]);
}

/** A batch of the account's favourites removed, with the favourites_count they held. Returns the statuses. */
export async function deleteFavouritesBatch(db: Queryable, accountId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ status_id: string }>(
    `DELETE FROM favourites WHERE ctid = ANY(ARRAY(SELECT ctid FROM favourites WHERE account_id = $1 LIMIT $2))
     RETURNING status_id::text`,
    [accountId, limit],
  );
  const ids = rows.map((r) => r.status_id);
  if (ids.length > 0) {
    await db.query(`UPDATE statuses SET favourites_count = greatest(favourites_count - 1, 0) WHERE id = ANY($1::bigint[])`, [ids]);
  }
  return ids;
}

/**
 * A batch of the account's follows, one direction, removed with the counts they moved on the other side.
 * Returns the other accounts (their counts changed).
 */
export async function deleteFollowsBatch(db: Queryable, accountId: string, side: 'followers' | 'following', limit: number): Promise<string[]> {
  const [mine, theirs, count] = side === 'followers'
    ? ['target_account_id', 'account_id', 'following_count']
    : ['account_id', 'target_account_id', 'followers_count'];
  const { rows } = await db.query<{ other: string }>(
    `DELETE FROM follows WHERE id = ANY(ARRAY(SELECT id FROM follows WHERE ${mine} = $1 ORDER BY id LIMIT $2))
     RETURNING ${theirs}::text AS other`,
    [accountId, limit],
  );
  const others = rows.map((r) => r.other);
  if (others.length > 0) {
    await db.query(`UPDATE accounts SET ${count} = greatest(${count} - 1, 0) WHERE id = ANY($1::bigint[])`, [others]);
  }
  return others;
}

/** A column that names an account through a foreign key, and what the key does when the account goes. */
export interface AccountReference {
  table: string;
  column: string;
  setNull: boolean;
}

/**
 * Every single-column foreign key to accounts(id), read from the catalogue: a table added later is covered without
 * being named here. The accounts table's own references (an account moved to this one) are only ever cleared.
 */
export async function accountReferences(db: Queryable): Promise<AccountReference[]> {
  const { rows } = await db.query<{ table: string; column: string; rule: string }>(
    `SELECT c.conrelid::regclass::text AS table, quote_ident(a.attname) AS column, c.confdeltype AS rule
       FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.contype = 'f' AND c.confrelid = 'accounts'::regclass AND cardinality(c.conkey) = 1
      ORDER BY 1, 2`,
  );
  return rows.map((r) => ({ table: r.table, column: r.column, setNull: r.rule === 'n' || r.table === 'accounts' }));
}

/**
 * What a deletion that keeps the account's row leaves for the moderators, as Mastodon's DeleteAccountService does
 * with `reserve_username` (an operator's deletion and one's own): reports it filed and reports about it (Mastodon's
 * `reports` and `targeted_reports` are only destroyed with the account record), and the statuses those unresolved
 * reports name, with what makes them readable (files, edits, poll). A remote actor's own `Delete` keeps nothing.
 */
export interface KeptForModeration {
  reports: boolean;
  statusIds: string[];
}

/** Columns never purged while reports are kept (by `table.column` as the catalogue names them). */
const REPORT_COLUMNS = new Set(['reports.account_id', 'reports.target_account_id']);
/** Rows of the kept statuses, by the column that names the status, in the tables whose rows name their author. */
const KEPT_STATUS_COLUMN: Record<string, string> = { statuses: 'id', media_attachments: 'status_id', status_edits: 'status_id', polls: 'status_id' };

/** Clears or removes one batch of rows naming the account in one column, except what is kept; returns how many. */
export async function purgeReferenceBatch(
  db: Queryable, ref: AccountReference, accountId: string, limit: number, kept: KeptForModeration = { reports: false, statusIds: [] },
): Promise<number> {
  if (kept.reports && REPORT_COLUMNS.has(`${ref.table}.${ref.column}`)) return 0;
  const statusColumn = kept.statusIds.length > 0 ? KEPT_STATUS_COLUMN[ref.table] : undefined;
  const values: unknown[] = [accountId, limit];
  let except = '';
  if (statusColumn) {
    values.push(kept.statusIds);
    except = ` AND (${statusColumn} IS NULL OR ${statusColumn} <> ALL($3::bigint[]))`;
  }
  // By the rows' physical ids alone (a TID scan of exactly the batch): repeating the column's condition outside would
  // make the planner walk every row of the account again. The ids come from this statement's own snapshot.
  const rows = `ARRAY(SELECT ctid FROM ${ref.table} WHERE ${ref.column} = $1${except} LIMIT $2)`;
  const sql = ref.setNull
    ? `UPDATE ${ref.table} SET ${ref.column} = NULL WHERE ctid = ANY(${rows})`
    : `DELETE FROM ${ref.table} WHERE ctid = ANY(${rows})`;
  const { rowCount } = await db.query(sql, values);
  return rowCount ?? 0;
}

/**
 * Follows of a remote account being deleted by an operator, both ways, written as deliveries to its server (as
 * Mastodon's reject_follows! and undo_follows!): a Reject of each of its follows (and follow requests) of our
 * accounts, an Undo of each of ours of it. One INSERT … SELECT per table through the account's follow indexes, in
 * the transaction that removes the follows; returns the outbox rows to queue.
 */
export async function queueSeveredFollows(db: Queryable, remoteId: string): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `INSERT INTO outbox (kind, payload)
     SELECT 'deliver', jsonb_build_object('activity', 'RejectFollow', 'accountId', f.target_account_id::text, 'requesterId', f.account_id::text, 'followUri', f.uri)
       FROM (SELECT target_account_id, account_id, uri FROM follows WHERE account_id = $1
             UNION ALL SELECT target_account_id, account_id, uri FROM follow_requests WHERE account_id = $1) f
       JOIN accounts a ON a.id = f.target_account_id AND a.domain IS NULL
     UNION ALL
     SELECT 'deliver', jsonb_build_object('activity', 'UndoFollow', 'accountId', f.account_id::text, 'targetId', f.target_account_id::text, 'followUri', f.uri)
       FROM follows f WHERE f.target_account_id = $1 AND f.follower_local
     RETURNING id, kind, payload`,
    [remoteId],
  );
  return rows;
}

/** The account's own lists (their feeds in Redis go with them). */
export async function listIdsBatch(db: Queryable, accountId: string, after: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text FROM lists WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`, [accountId, after, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * What is left: the account row, its profile emptied (as Mastodon's DeleteAccountService leaves a reserved name),
 * counts zero, no longer moved or aliased. Returns the files of its avatar and header, for the file host.
 */
export async function emptyProfile(db: Queryable, accountId: string): Promise<string[]> {
  const { rows } = await db.query<{ avatar_file: string | null; header_file: string | null }>(
    `UPDATE accounts n SET display_name = '', note_source = '', note_html = '', fields = '[]', locked = false, bot = false,
            discoverable = false, indexable = false, avatar_file = NULL, avatar_content_type = NULL, header_file = NULL,
            header_content_type = NULL, avatar_remote_url = NULL, header_remote_url = NULL, avatar_description = '',
            header_description = '', followers_count = 0, following_count = 0, statuses_count = 0, last_status_at = NULL,
            also_known_as = '{}', moved_to_account_id = NULL, silenced_at = NULL, sensitized_at = NULL, updated_at = now()
       FROM accounts o WHERE n.id = o.id AND n.id = $1
     RETURNING o.avatar_file, o.header_file`,
    [accountId],
  );
  return rows.flatMap((r) => [r.avatar_file, r.header_file].filter((k): k is string => k !== null));
}
