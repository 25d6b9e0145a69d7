import type { Queryable } from './db.ts';

// Trends from recent public activity, local and remote. Each query reads the newest public statuses of its period
// through statuses_public (ids are time-ordered, so a period is an id range), at most WINDOW_STATUSES of them.

/** The most recent public statuses any trend query looks at. */
export const WINDOW_STATUSES = 20_000;

/** The first id a status stored at `at` or later can have (ids are milliseconds shifted left 16 bits). */
export const firstIdAt = (at: Date): string => (BigInt(Math.max(0, at.getTime())) << 16n).toString();

/** A public status of the period, by a non-suspended author, not a reblog: the CTE every trend reads. */
const RECENT = `recent AS (
  SELECT s.id, s.account_id, s.favourites_count, s.reblogs_count FROM statuses s
   WHERE s.deleted_at IS NULL AND s.visibility = 'public' AND s.reblog_of_id IS NULL AND s.id >= $1 AND s.created_at >= $2
   ORDER BY s.id DESC LIMIT ${WINDOW_STATUSES}
)`;

export interface TrendingTagRow {
  id: string;
  name: string;
  accounts: number;
  uses: number;
}

/** Leaves out what an operator rejected (trend_reviews) unless $4 (`withRejected`) is true. */
const notRejected = (kind: 'tag' | 'status', id: string) =>
  `($4::boolean OR NOT EXISTS (SELECT 1 FROM trend_reviews rv WHERE rv.kind = '${kind}' AND rv.target_id = ${id} AND NOT rv.trendable))`;

/**
 * Hashtags of public statuses since `since`, by how many accounts used them, then how often, then how recently;
 * those an operator rejected only `withRejected` (the admin's list).
 */
export async function trendingTags(db: Queryable, since: Date, limit: number, withRejected = false): Promise<TrendingTagRow[]> {
  const { rows } = await db.query<{ id: string; name: string; accounts: string; uses: string }>(
    `WITH ${RECENT}
     SELECT t.id::text, t.name, count(DISTINCT r.account_id) AS accounts, count(*) AS uses
       FROM recent r
       JOIN accounts a ON a.id = r.account_id AND a.suspended_at IS NULL
       JOIN statuses_tags st ON st.status_id = r.id
       JOIN tags t ON t.id = st.tag_id
      WHERE ${notRejected('tag', 't.id')}
      GROUP BY t.id, t.name
      ORDER BY count(DISTINCT r.account_id) DESC, count(*) DESC, max(r.id) DESC
      LIMIT $3`,
    [firstIdAt(since), since, limit, withRejected],
  );
  return rows.map((r) => ({ id: r.id, name: r.name, accounts: Number(r.accounts), uses: Number(r.uses) }));
}

export interface TagDayRow {
  tagId: string;
  /** Midnight UTC of the day, in seconds since the epoch. */
  day: number;
  uses: number;
  accounts: number;
}

/**
 * Uses of these tags in public statuses per UTC day since `since`: each tag's statuses of the period through
 * statuses_tags' (tag_id, status_id) key.
 */
export async function tagDailyUse(db: Queryable, tagIds: string[], since: Date): Promise<TagDayRow[]> {
  if (tagIds.length === 0) return [];
  const { rows } = await db.query<{ tag_id: string; day: string; uses: string; accounts: string }>(
    `SELECT st.tag_id::text, (floor(extract(epoch FROM s.created_at) / 86400) * 86400)::bigint AS day,
            count(*) AS uses, count(DISTINCT s.account_id) AS accounts
       FROM statuses_tags st
       JOIN statuses s ON s.id = st.status_id
       JOIN accounts a ON a.id = s.account_id AND a.suspended_at IS NULL
      WHERE st.tag_id = ANY($1::bigint[]) AND st.status_id >= $2 AND s.created_at >= $3
        AND s.deleted_at IS NULL AND s.visibility = 'public' AND s.reblog_of_id IS NULL
      GROUP BY 1, 2`,
    [tagIds, firstIdAt(since), since],
  );
  return rows.map((r) => ({ tagId: r.tag_id, day: Number(r.day), uses: Number(r.uses), accounts: Number(r.accounts) }));
}

/**
 * Public statuses posted since `since` with the most favourites and reblogs (at least one), newest first on ties;
 * those an operator rejected only `withRejected`.
 */
export async function trendingStatusIds(db: Queryable, since: Date, limit: number, withRejected = false): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH ${RECENT}
     SELECT r.id::text FROM recent r JOIN accounts a ON a.id = r.account_id AND a.suspended_at IS NULL
      WHERE r.favourites_count + r.reblogs_count > 0 AND ${notRejected('status', 'r.id')}
      ORDER BY r.favourites_count + r.reblogs_count DESC, r.id DESC
      LIMIT $3`,
    [firstIdAt(since), since, limit, withRejected],
  );
  return rows.map((r) => r.id);
}
