import type { Queryable } from './db.ts';

/**
 * The SQL of removing other servers' posts past the retention period (services/status-retention.ts). A post `s` may
 * go when its author is remote, it was published before $1, and nothing ties it to this server:
 * - no favourite, boost, reply, bookmark, pin or poll vote by a local account, no mention of one, no local post
 *   quoting it, no report naming it, no muted conversation starting at it;
 * - it is not itself a boost of, a reply to or a quote of a local post (another server's interaction with ours);
 * - no boost of it is newer than the period (the boost would go with it: boosts are removed with what they boost).
 * Mastodon's `tootctl statuses remove` keeps much the same. Posts already deleted (by their author, or flagged by an
 * earlier version of this removal) go too: their rows are not needed any more.
 */
const REMOVABLE = `
      a.domain IS NOT NULL AND s.created_at < $1
  AND NOT EXISTS (SELECT 1 FROM favourites f JOIN accounts l ON l.id = f.account_id AND l.domain IS NULL WHERE f.status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM statuses r JOIN accounts l ON l.id = r.account_id
                   WHERE r.reblog_of_id = s.id AND r.reblog_of_id IS NOT NULL AND (l.domain IS NULL OR r.created_at >= $1))
  AND NOT EXISTS (SELECT 1 FROM statuses r JOIN accounts l ON l.id = r.account_id AND l.domain IS NULL WHERE r.in_reply_to_id = s.id AND r.in_reply_to_id IS NOT NULL)
  AND NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM status_pins p WHERE p.status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM mentions m JOIN accounts l ON l.id = m.account_id AND l.domain IS NULL WHERE m.status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM quotes q JOIN accounts l ON l.id = q.account_id AND l.domain IS NULL WHERE q.quoted_status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM quotes q JOIN accounts l ON l.id = q.quoted_account_id AND l.domain IS NULL WHERE q.status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM polls p JOIN poll_votes v ON v.poll_id = p.id JOIN accounts l ON l.id = v.account_id AND l.domain IS NULL WHERE p.status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM reports rp WHERE rp.status_ids @> ARRAY[s.id])
  AND NOT EXISTS (SELECT 1 FROM conversation_mutes cm WHERE cm.root_status_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM statuses o JOIN accounts l ON l.id = o.account_id AND l.domain IS NULL WHERE o.id = s.reblog_of_id)
  AND NOT EXISTS (SELECT 1 FROM accounts l WHERE l.id = s.in_reply_to_account_id AND l.domain IS NULL)`;

/** Posts that may go (REMOVABLE), by id after `afterId`, at most `limit` (one batch). */
export async function staleRemoteStatuses(db: Queryable, before: Date, afterId: string, limit: number): Promise<{ id: string; account_id: string }[]> {
  const { rows } = await db.query<{ id: string; account_id: string }>(
    `SELECT s.id::text, s.account_id::text FROM statuses s JOIN accounts a ON a.id = s.account_id
      WHERE s.id > $2 AND ${REMOVABLE}
      ORDER BY s.id LIMIT $3`,
    [before, afterId, limit],
  );
  return rows;
}

export interface PurgedBatch {
  /** The posts removed, and the boosts of them that went with them, with their authors. */
  statuses: { id: string; account_id: string }[];
  /** Files of their attachments (originals, previews, thumbnails, copies of the remote files), to remove after the commit. */
  fileKeys: string[];
  /** Statuses whose rendering changed: counts moved (replies, boosts, quotes), a reply's or quote's link cleared. */
  touchedStatuses: string[];
  /** Accounts whose statuses_count went down. */
  touchedAccounts: string[];
}

/**
 * Removes the rows of a batch of posts found by staleRemoteStatuses, in the caller's transaction: each is locked and
 * checked again first (someone here may have favourited or replied to one since it was found: it stays), then its
 * attachments' rows and ledger entries go, the counts it held move, and the row goes with everything whose key
 * cascades from it (mentions, tag links, polls and votes, edits, preview card links, favourites and boosts by other
 * servers' accounts, notifications, filters' status entries, reply fetches).
 */
export async function purgeStatuses(tx: Queryable, ids: string[], before: Date): Promise<PurgedBatch> {
  const empty: PurgedBatch = { statuses: [], fileKeys: [], touchedStatuses: [], touchedAccounts: [] };
  if (ids.length === 0) return empty;
  // Locked in id order (no deadlock between two runs); a favourite, boost or reply being written now holds a share
  // lock on the row until it commits, and is seen by the check below, which reads after the lock was granted. Polls
  // too: a vote locks its poll, not the status.
  await tx.query(`SELECT 1 FROM statuses WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, [ids]);
  await tx.query(`SELECT 1 FROM polls WHERE status_id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, [ids]);
  const kept = await tx.query<{ id: string }>(
    `SELECT s.id::text FROM statuses s JOIN accounts a ON a.id = s.account_id WHERE s.id = ANY($2::bigint[]) AND ${REMOVABLE}`,
    [before, ids],
  );
  const gone = kept.rows.map((r) => r.id);
  if (gone.length === 0) return empty;
  // The boosts of them (other servers' accounts', none newer than the period) go with them.
  const rows = await tx.query<{ id: string; account_id: string }>(
    `SELECT id::text, account_id::text FROM statuses WHERE id = ANY($1::bigint[])
     UNION SELECT id::text, account_id::text FROM statuses WHERE reblog_of_id = ANY($1::bigint[])`,
    [gone],
  );
  const all = rows.rows.map((r) => r.id);
  // Counts held by live rows among them, on what stays.
  const counted = await tx.query<{ id: string }>(
    `WITH g AS (SELECT * FROM statuses WHERE id = ANY($1::bigint[]) AND deleted_at IS NULL),
     parents AS (UPDATE statuses p SET replies_count = greatest(p.replies_count - c.n, 0)
                   FROM (SELECT in_reply_to_id AS id, count(*)::int AS n FROM g WHERE in_reply_to_id IS NOT NULL GROUP BY 1) c
                  WHERE p.id = c.id AND p.id <> ALL($1::bigint[]) RETURNING p.id),
     originals AS (UPDATE statuses o SET reblogs_count = greatest(o.reblogs_count - c.n, 0)
                     FROM (SELECT reblog_of_id AS id, count(*)::int AS n FROM g WHERE reblog_of_id IS NOT NULL GROUP BY 1) c
                    WHERE o.id = c.id AND o.id <> ALL($1::bigint[]) RETURNING o.id),
     quoted AS (UPDATE statuses o SET quotes_count = greatest(o.quotes_count - c.n, 0)
                  FROM (SELECT q.quoted_status_id AS id, count(*)::int AS n FROM quotes q JOIN g ON g.id = q.status_id
                         WHERE q.state = 'accepted' AND q.quoted_status_id IS NOT NULL GROUP BY 1) c
                 WHERE o.id = c.id AND o.id <> ALL($1::bigint[]) RETURNING o.id)
     SELECT id::text FROM parents UNION SELECT id::text FROM originals UNION SELECT id::text FROM quoted`,
    [all],
  );
  const authors = await tx.query<{ id: string }>(
    `UPDATE accounts a SET statuses_count = greatest(a.statuses_count - c.n, 0)
       FROM (SELECT account_id AS id, count(*)::int AS n FROM statuses WHERE id = ANY($1::bigint[]) AND deleted_at IS NULL GROUP BY 1) c
      WHERE a.id = c.id RETURNING a.id::text`,
    [all],
  );
  // Replies and quotes of them by others lose their link (the keys set it to null): their renderings change too.
  const linked = await tx.query<{ id: string }>(
    `SELECT id::text FROM statuses WHERE in_reply_to_id = ANY($1::bigint[]) AND id <> ALL($1::bigint[])
     UNION SELECT status_id::text FROM quotes WHERE quoted_status_id = ANY($1::bigint[]) AND status_id <> ALL($1::bigint[])`,
    [all],
  );
  const media = await tx.query<{ id: string; keys: (string | null)[] }>(
    `DELETE FROM media_attachments WHERE status_id = ANY($1::bigint[])
     RETURNING id::text, ARRAY[staged_key, original_key, small_key, thumbnail_key] AS keys`,
    [all],
  );
  const copies = media.rows.length === 0 ? { rows: [] } : await tx.query<{ key: string }>(
    `DELETE FROM cached_files WHERE kind = 'attachment' AND owner_id = ANY($1::bigint[]) RETURNING key`, [media.rows.map((m) => m.id)],
  );
  await tx.query(`DELETE FROM statuses WHERE id = ANY($1::bigint[])`, [all]);
  const fileKeys = new Set([...media.rows.flatMap((m) => m.keys.filter((k): k is string => k !== null)), ...copies.rows.map((r) => r.key)]);
  return {
    statuses: rows.rows,
    fileKeys: [...fileKeys],
    touchedStatuses: [...new Set([...counted.rows, ...linked.rows].map((r) => r.id))],
    touchedAccounts: authors.rows.map((r) => r.id),
  };
}
