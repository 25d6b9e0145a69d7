import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

export interface TagRow {
  id: string;
  name: string;
}

export async function findTagByName(db: Queryable, name: string): Promise<TagRow | null> {
  const { rows } = await db.query<TagRow>(`SELECT id::text, name FROM tags WHERE lower(name) = lower($1)`, [name]);
  return rows[0] ?? null;
}

/** The tag of this name, made if it is new (as posting a status with it would). */
export async function ensureTag(db: Queryable, name: string): Promise<TagRow> {
  await db.query(`INSERT INTO tags (name) VALUES ($1) ON CONFLICT (lower(name)) DO NOTHING`, [name]);
  return (await findTagByName(db, name))!;
}

export async function insertTagFollow(db: Queryable, accountId: string, tagId: string): Promise<void> {
  await db.query(`INSERT INTO tag_follows (account_id, tag_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [accountId, tagId]);
}

export async function deleteTagFollow(db: Queryable, accountId: string, tagId: string): Promise<void> {
  await db.query(`DELETE FROM tag_follows WHERE account_id = $1 AND tag_id = $2`, [accountId, tagId]);
}

/** Of these tags, the ones the account follows. */
export async function followedAmong(db: Queryable, accountId: string, tagIds: string[]): Promise<Set<string>> {
  if (tagIds.length === 0) return new Set();
  const { rows } = await db.query<{ tag_id: string }>(
    `SELECT tag_id::text FROM tag_follows WHERE account_id = $1 AND tag_id = ANY($2::bigint[])`, [accountId, tagIds],
  );
  return new Set(rows.map((r) => r.tag_id));
}

/** An account's followed tags, paged by the follow's id (newest first), as Mastodon pages them. */
export async function followedTagsOf(db: Queryable, accountId: string, p: PageParams): Promise<(TagRow & { follow_id: string })[]> {
  const values: unknown[] = [accountId];
  const c = pageClause('tf.id', p, values);
  const { rows } = await db.query<TagRow & { follow_id: string }>(
    `SELECT t.id::text, t.name, tf.id::text AS follow_id FROM tag_follows tf JOIN tags t ON t.id = tf.tag_id
      WHERE tf.account_id = $1 AND ${c.where} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p);
}

/**
 * Local accounts following any of these tags, by the follow's id after `afterId` (fan-out batches), less the author
 * and the author's followers (their feeds have the status already).
 */
export async function tagFollowersBatch(db: Queryable, tagIds: string[], authorId: string, afterId: string, limit: number): Promise<{ followId: string; accountId: string }[]> {
  const { rows } = await db.query<{ id: string; account_id: string }>(
    `SELECT tf.id::text, tf.account_id::text FROM tag_follows tf
      WHERE tf.tag_id = ANY($1::bigint[]) AND tf.id > $3 AND tf.account_id <> $2
        AND NOT EXISTS (SELECT 1 FROM follows f WHERE f.account_id = tf.account_id AND f.target_account_id = $2)
      ORDER BY tf.id LIMIT $4`,
    [tagIds, authorId, afterId, limit],
  );
  return rows.map((r) => ({ followId: r.id, accountId: r.account_id }));
}

export async function tagIdsOfStatus(db: Queryable, statusId: string): Promise<string[]> {
  const { rows } = await db.query<{ tag_id: string }>(`SELECT tag_id::text FROM statuses_tags WHERE status_id = $1 LIMIT 100`, [statusId]);
  return rows.map((r) => r.tag_id);
}
