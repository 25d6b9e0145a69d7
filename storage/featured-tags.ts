import type { Queryable } from './db.ts';

// Hashtags featured on profiles, with how often the account used them (Mastodon's FeaturedTag).

export const FEATURED_TAGS_LIMIT = 10;
/** Statuses counted per featured tag: an account's count is read from its own posts, at most this many. */
const COUNT_CAP = 10_000;

export interface FeaturedTagRow {
  id: string;
  name: string;
  statuses_count: number;
  last_status_at: Date | null;
}

/** An account's featured tags, oldest first, with its public and unlisted posts that carry each. */
export async function featuredTagsOf(db: Queryable, accountId: string): Promise<FeaturedTagRow[]> {
  const { rows } = await db.query<FeaturedTagRow>(
    `SELECT f.id::text, f.name, c.n::int AS statuses_count, c.last AS last_status_at
       FROM featured_tags f
       CROSS JOIN LATERAL (
         SELECT count(*) AS n, max(s.created_at) AS last FROM (
           SELECT s.created_at FROM statuses s JOIN statuses_tags st ON st.status_id = s.id AND st.tag_id = f.tag_id
            WHERE s.account_id = f.account_id AND s.deleted_at IS NULL AND s.visibility IN ('public', 'unlisted')
            ORDER BY s.id DESC LIMIT ${COUNT_CAP}) s) c
      WHERE f.account_id = $1 ORDER BY f.id LIMIT ${FEATURED_TAGS_LIMIT}`,
    [accountId],
  );
  return rows;
}

/**
 * Features a tag (made if nobody used it yet); the existing one when already featured; null when the account has
 * FEATURED_TAGS_LIMIT already. Taken under a lock on the account, so racing requests cannot pass the limit.
 */
export async function featureTag(db: Queryable, accountId: string, name: string): Promise<string | null> {
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
  await db.query(`INSERT INTO tags (name) VALUES ($1) ON CONFLICT (lower(name)) DO NOTHING`, [name]);
  const { rows } = await db.query<{ id: string }>(
    `WITH t AS (SELECT id FROM tags WHERE lower(name) = lower($2))
     SELECT f.id::text FROM featured_tags f, t WHERE f.account_id = $1 AND f.tag_id = t.id`,
    [accountId, name],
  );
  if (rows[0]) return rows[0].id;
  const inserted = await db.query<{ id: string }>(
    `INSERT INTO featured_tags (account_id, tag_id, name)
     SELECT $1, t.id, $2 FROM tags t WHERE lower(t.name) = lower($2)
        AND (SELECT count(*) FROM featured_tags WHERE account_id = $1) < ${FEATURED_TAGS_LIMIT}
     RETURNING id::text`,
    [accountId, name],
  );
  return inserted.rows[0]?.id ?? null;
}

export async function unfeatureTagNamed(db: Queryable, accountId: string, name: string): Promise<void> {
  await db.query(`DELETE FROM featured_tags WHERE account_id = $1 AND lower(name) = lower($2)`, [accountId, name]);
}

/** Of these tag names, those the account features (lower-cased). */
export async function featuredTagNames(db: Queryable, accountId: string, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const { rows } = await db.query<{ name: string }>(
    `SELECT lower(name) AS name FROM featured_tags WHERE account_id = $1 AND lower(name) = ANY($2::text[])`,
    [accountId, names.map((n) => n.toLowerCase())],
  );
  return new Set(rows.map((r) => r.name));
}

export async function unfeatureTag(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM featured_tags WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}

/** Tags the account used in its latest 200 posts, most recent first, that it does not feature yet (up to 10). */
export async function recentlyUsedTags(db: Queryable, accountId: string): Promise<{ id: string; name: string }[]> {
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT t.id::text, t.name FROM (
       SELECT st.tag_id, max(s.id) AS latest FROM (
         SELECT id FROM statuses WHERE account_id = $1 AND deleted_at IS NULL ORDER BY id DESC LIMIT 200) s
         JOIN statuses_tags st ON st.status_id = s.id GROUP BY st.tag_id) u
       JOIN tags t ON t.id = u.tag_id
      WHERE NOT EXISTS (SELECT 1 FROM featured_tags f WHERE f.account_id = $1 AND f.tag_id = u.tag_id)
      ORDER BY u.latest DESC LIMIT 10`,
    [accountId],
  );
  return rows;
}
