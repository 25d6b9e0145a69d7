import type { Queryable } from './db.ts';

/** Mastodon's Suggestion sources, in the order they are offered. */
export type SuggestionSource = 'featured' | 'friends_of_friends' | 'most_interactions' | 'most_followed';

// Bounds on the friends-of-friends walk: the viewer's latest follows, and the latest follows of each of them.
export const FOF_FIRST_DEGREE = 100;
export const FOF_SECOND_DEGREE = 100;
// How many accounts each global list keeps, and how much recent activity most_interactions reads.
export const GLOBAL_LIST_SIZE = 200;
export const RECENT_INTERACTIONS = 10_000;
export const FEATURED_MAX = 200;

/**
 * Who may be suggested to viewer `$1` (the alias names the candidate's `accounts` row, `u` its optional `users` row):
 * not the viewer, not suspended, approved if local, not followed or requested by the viewer, not dismissed by them.
 *
 * Blocks and mutes (and domain blocks) do not exist yet. When they do, add here, in both directions as Mastodon's
 * `not_excluded_by_account` does:
 *   AND NOT EXISTS (SELECT 1 FROM blocks x WHERE (x.account_id = $1 AND x.target_account_id = a.id) OR (x.account_id = a.id AND x.target_account_id = $1))
 *   AND NOT EXISTS (SELECT 1 FROM mutes x WHERE x.account_id = $1 AND x.target_account_id = a.id)
 * Every source goes through this one fragment.
 */
function suggestible(a: string): string {
  return `${a}.id <> $1 AND ${a}.suspended_at IS NULL AND (${a}.domain IS NOT NULL OR u.approved)
    AND NOT EXISTS (SELECT 1 FROM follows x WHERE x.account_id = $1 AND x.target_account_id = ${a}.id)
    AND NOT EXISTS (SELECT 1 FROM follow_requests x WHERE x.account_id = $1 AND x.target_account_id = ${a}.id)
    AND NOT EXISTS (SELECT 1 FROM suggestion_dismissals x WHERE x.account_id = $1 AND x.target_account_id = ${a}.id)
    AND NOT EXISTS (SELECT 1 FROM blocks x WHERE (x.account_id = $1 AND x.target_account_id = ${a}.id) OR (x.account_id = ${a}.id AND x.target_account_id = $1))
    AND NOT EXISTS (SELECT 1 FROM mutes x WHERE x.account_id = $1 AND x.target_account_id = ${a}.id)`;
}

/**
 * friends_of_friends: accounts followed by those the viewer follows, most shared first, then most followed.
 * Bounded: the viewer's latest FOF_FIRST_DEGREE follows (not those who hide their follows, as Mastodon skips them),
 * and the latest FOF_SECOND_DEGREE follows of each, read through follows_account. Only discoverable accounts.
 */
export async function friendsOfFriends(db: Queryable, viewerId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH first AS (
       SELECT f.target_account_id AS id FROM follows f WHERE f.account_id = $1 ORDER BY f.id DESC LIMIT $2
     ), second AS (
       SELECT s.target_account_id AS id, count(*) AS frequency
         FROM first JOIN accounts fa ON fa.id = first.id AND NOT fa.hide_collections AND fa.suspended_at IS NULL
         CROSS JOIN LATERAL (
           SELECT target_account_id FROM follows WHERE account_id = first.id ORDER BY id DESC LIMIT $3
         ) s
        GROUP BY s.target_account_id
     )
     SELECT a.id::text AS id FROM second JOIN accounts a ON a.id = second.id LEFT JOIN users u ON u.account_id = a.id
      WHERE a.discoverable AND ${suggestible('a')}
      ORDER BY second.frequency DESC, a.followers_count DESC, a.id
      LIMIT $4`,
    [viewerId, FOF_FIRST_DEGREE, FOF_SECOND_DEGREE, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Which of `ids` may be suggested to the viewer, in the given order, each with its `discoverable` flag (the caller
 * decides per source whether it must be true). One indexed lookup per candidate.
 */
export async function suggestibleAmong(db: Queryable, viewerId: string, ids: string[]): Promise<{ id: string; discoverable: boolean | null }[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string; discoverable: boolean | null }>(
    `SELECT a.id::text AS id, a.discoverable
       FROM unnest($2::bigint[]) WITH ORDINALITY AS c(id, ord)
       JOIN accounts a ON a.id = c.id LEFT JOIN users u ON u.account_id = a.id
      WHERE ${suggestible('a')}
      ORDER BY c.ord`,
    [viewerId, ids],
  );
  return rows;
}

/** most_followed: local, approved, discoverable accounts with the most followers (accounts_local_most_followed). */
export async function mostFollowed(db: Queryable, limit = GLOBAL_LIST_SIZE): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id::text AS id FROM accounts a JOIN users u ON u.account_id = a.id
      WHERE a.domain IS NULL AND a.suspended_at IS NULL AND a.discoverable AND a.followers_count > 0 AND u.approved
      ORDER BY a.followers_count DESC, a.id
      LIMIT $1`,
    [limit],
  );
  return rows.map((r) => r.id);
}

/**
 * most_interactions: local accounts that posted in the last 30 days, by how many distinct others favourited or
 * reblogged their statuses in that time. Reads at most the latest RECENT_INTERACTIONS favourites (by primary key,
 * ids being time-ordered) and as many reblogs (statuses_reblogs_recent) of the window, then looks up each status and
 * author by primary key (the LIMIT 1 subqueries keep the planner from hashing whole tables instead).
 */
export async function mostInteractions(db: Queryable, limit = GLOBAL_LIST_SIZE): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH recent AS (
       (SELECT f.account_id AS from_id, f.status_id FROM favourites f WHERE f.id > $3 ORDER BY f.id DESC LIMIT $2)
       UNION ALL
       (SELECT r.account_id, r.reblog_of_id FROM statuses r
         WHERE r.reblog_of_id IS NOT NULL AND r.deleted_at IS NULL AND r.id > $3 ORDER BY r.id DESC LIMIT $2)
     ), by_status AS (
       SELECT status_id, array_agg(DISTINCT from_id) AS fans FROM recent GROUP BY status_id
     ), by_author AS (
       SELECT author.account_id, count(DISTINCT fan) AS fans
         FROM by_status
         CROSS JOIN LATERAL (SELECT s.account_id FROM statuses s WHERE s.id = by_status.status_id AND s.deleted_at IS NULL LIMIT 1) author
         CROSS JOIN LATERAL unnest(by_status.fans) AS fan
        WHERE fan <> author.account_id
        GROUP BY author.account_id
     )
     SELECT by_author.account_id::text AS id
       FROM by_author
       CROSS JOIN LATERAL (
         SELECT 1 FROM accounts a JOIN users u ON u.account_id = a.id
          WHERE a.id = by_author.account_id AND a.domain IS NULL AND a.suspended_at IS NULL AND a.discoverable AND u.approved
            AND a.last_status_at > now() - interval '30 days'
          LIMIT 1
       ) eligible
      ORDER BY by_author.fans DESC, by_author.account_id
      LIMIT $1`,
    [limit, RECENT_INTERACTIONS, idAt(Date.now() - 30 * 24 * 3600 * 1000)],
  );
  return rows.map((r) => r.id);
}

/** The smallest id made at a moment (ids are milliseconds shifted left 16 bits, plus a sequence). */
const idAt = (ms: number) => (BigInt(Math.floor(ms)) << 16n).toString();

/** The featured accounts' ids, oldest choice first. */
export async function featuredIds(db: Queryable, limit = FEATURED_MAX): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT account_id::text AS id FROM featured_suggestions ORDER BY created_at, account_id LIMIT $1`, [limit],
  );
  return rows.map((r) => r.id);
}

/** Features an account; returns false when it already was. */
export async function featureAccount(db: Queryable, accountId: string): Promise<boolean> {
  const { rowCount } = await db.query(`INSERT INTO featured_suggestions (account_id) VALUES ($1) ON CONFLICT DO NOTHING`, [accountId]);
  return rowCount === 1;
}

/** Stops featuring an account; returns false when it was not. */
export async function unfeatureAccount(db: Queryable, accountId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM featured_suggestions WHERE account_id = $1`, [accountId]);
  return rowCount === 1;
}

export interface FeaturedListing {
  id: string;
  username: string;
  domain: string | null;
  suspended: boolean;
  approved: boolean;
  discoverable: boolean | null;
}

/** The featured accounts for the operator, with what would keep them from being suggested. */
export async function listFeatured(db: Queryable): Promise<FeaturedListing[]> {
  const { rows } = await db.query<FeaturedListing>(
    `SELECT a.id::text AS id, a.username, a.domain, a.suspended_at IS NOT NULL AS suspended,
            (a.domain IS NOT NULL OR coalesce(u.approved, false)) AS approved, a.discoverable
       FROM featured_suggestions f JOIN accounts a ON a.id = f.account_id LEFT JOIN users u ON u.account_id = a.id
      ORDER BY f.created_at, f.account_id`,
  );
  return rows;
}

/** Hides target from viewer's suggestions for good. */
export async function dismissSuggestion(db: Queryable, viewerId: string, targetId: string): Promise<void> {
  await db.query(
    `INSERT INTO suggestion_dismissals (account_id, target_account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
    [viewerId, targetId],
  );
}
