import type { Queryable } from './db.ts';

/**
 * Other servers' posts older than `before` that nobody on this server interacted with: no favourite, boost, reply,
 * bookmark, pin or poll vote by a local account, no mention of one, no local post quoting it (Mastodon's
 * `tootctl statuses remove` keeps the same). Reblogs (Announces) of other servers count as posts of their own. By id
 * after `afterId`, at most `limit` (one batch).
 */
export async function staleRemoteStatuses(db: Queryable, before: Date, afterId: string, limit: number): Promise<{ id: string; account_id: string }[]> {
  const { rows } = await db.query<{ id: string; account_id: string }>(
    `SELECT s.id::text, s.account_id::text
       FROM statuses s JOIN accounts a ON a.id = s.account_id
      WHERE s.id > $2 AND a.domain IS NOT NULL AND s.deleted_at IS NULL AND s.created_at < $1
        AND NOT EXISTS (SELECT 1 FROM favourites f JOIN accounts l ON l.id = f.account_id AND l.domain IS NULL WHERE f.status_id = s.id)
        AND NOT EXISTS (SELECT 1 FROM statuses r JOIN accounts l ON l.id = r.account_id AND l.domain IS NULL WHERE r.reblog_of_id = s.id AND r.reblog_of_id IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM statuses r JOIN accounts l ON l.id = r.account_id AND l.domain IS NULL WHERE r.in_reply_to_id = s.id AND r.in_reply_to_id IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.status_id = s.id)
        AND NOT EXISTS (SELECT 1 FROM status_pins p WHERE p.status_id = s.id)
        AND NOT EXISTS (SELECT 1 FROM mentions m JOIN accounts l ON l.id = m.account_id AND l.domain IS NULL WHERE m.status_id = s.id)
        AND NOT EXISTS (SELECT 1 FROM quotes q JOIN accounts l ON l.id = q.account_id AND l.domain IS NULL WHERE q.quoted_status_id = s.id)
        AND NOT EXISTS (SELECT 1 FROM polls p JOIN poll_votes v ON v.poll_id = p.id JOIN accounts l ON l.id = v.account_id AND l.domain IS NULL WHERE p.status_id = s.id)
      ORDER BY s.id LIMIT $3`,
    [before, afterId, limit],
  );
  return rows;
}
