import type { Queryable } from './db.ts';

/** A person's automated post deletion policy (Mastodon's account_statuses_cleanup_policies). */
export interface CleanupPolicyRow {
  account_id: string;
  enabled: boolean;
  /** Seconds: posts younger than this are kept. */
  min_status_age: number;
  keep_direct: boolean;
  keep_pinned: boolean;
  keep_polls: boolean;
  keep_media: boolean;
  keep_self_fav: boolean;
  keep_self_bookmark: boolean;
  min_favs: number | null;
  min_reblogs: number | null;
}

export type CleanupPolicy = Omit<CleanupPolicyRow, 'account_id'>;

const COLUMNS = `account_id::text, enabled, min_status_age, keep_direct, keep_pinned, keep_polls, keep_media, keep_self_fav, keep_self_bookmark, min_favs, min_reblogs`;

export async function findCleanupPolicy(db: Queryable, accountId: string): Promise<CleanupPolicyRow | null> {
  const { rows } = await db.query<CleanupPolicyRow>(`SELECT ${COLUMNS} FROM account_statuses_cleanup_policies WHERE account_id = $1`, [accountId]);
  return rows[0] ?? null;
}

export async function saveCleanupPolicy(db: Queryable, accountId: string, p: CleanupPolicy): Promise<void> {
  await db.query(
    `INSERT INTO account_statuses_cleanup_policies (account_id, enabled, min_status_age, keep_direct, keep_pinned, keep_polls, keep_media, keep_self_fav, keep_self_bookmark, min_favs, min_reblogs)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (account_id) DO UPDATE SET enabled = $2, min_status_age = $3, keep_direct = $4, keep_pinned = $5, keep_polls = $6,
       keep_media = $7, keep_self_fav = $8, keep_self_bookmark = $9, min_favs = $10, min_reblogs = $11, updated_at = now()`,
    [accountId, p.enabled, p.min_status_age, p.keep_direct, p.keep_pinned, p.keep_polls, p.keep_media, p.keep_self_fav, p.keep_self_bookmark, p.min_favs, p.min_reblogs],
  );
}

/**
 * Up to `limit` enabled policies of local accounts that may post (not suspended or deleted), those run longest ago
 * first; each is marked as run now, so the next call takes others.
 */
export async function takeDueCleanupPolicies(db: Queryable, limit: number): Promise<CleanupPolicyRow[]> {
  const { rows } = await db.query<CleanupPolicyRow>(
    `UPDATE account_statuses_cleanup_policies p SET last_run_at = now()
      WHERE p.account_id IN (
        SELECT q.account_id FROM account_statuses_cleanup_policies q JOIN accounts a ON a.id = q.account_id
         WHERE q.enabled AND a.domain IS NULL AND a.suspended_at IS NULL AND a.deleted_at IS NULL
         ORDER BY q.last_run_at NULLS FIRST LIMIT $1 FOR UPDATE OF q SKIP LOCKED)
      RETURNING ${COLUMNS.replace(/(^|, )(?=[a-z])/g, '$1p.')}`,
    [limit],
  );
  return rows;
}

/** The ids of an account's posts the policy deletes, oldest first, at most `limit`. */
export async function statusesToClean(db: Queryable, p: CleanupPolicyRow, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id::text FROM statuses s
      WHERE s.account_id = $1 AND s.deleted_at IS NULL AND s.created_at < now() - make_interval(secs => $2)
        AND NOT ($3 AND s.visibility = 'direct')
        AND NOT ($4 AND EXISTS (SELECT 1 FROM status_pins x WHERE x.status_id = s.id AND x.account_id = $1))
        AND NOT ($5 AND EXISTS (SELECT 1 FROM polls x WHERE x.status_id = s.id))
        AND NOT ($6 AND EXISTS (SELECT 1 FROM media_attachments x WHERE x.status_id = s.id))
        AND NOT ($7 AND EXISTS (SELECT 1 FROM favourites x WHERE x.status_id = s.id AND x.account_id = $1))
        AND NOT ($8 AND EXISTS (SELECT 1 FROM bookmarks x WHERE x.status_id = s.id AND x.account_id = $1))
        AND ($9::int IS NULL OR s.favourites_count < $9)
        AND ($10::int IS NULL OR s.reblogs_count < $10)
      ORDER BY s.id LIMIT $11`,
    [p.account_id, p.min_status_age, p.keep_direct, p.keep_pinned, p.keep_polls, p.keep_media, p.keep_self_fav, p.keep_self_bookmark, p.min_favs, p.min_reblogs, limit],
  );
  return rows.map((r) => r.id);
}
