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

// Trend scores (trend_scores, written by the refreshTrends job through services/trends.ts).

export type TrendKind = 'link' | 'status' | 'tag';

/** How many links or tags one refresh scores from recent use, at most (the most used first). */
export const USAGE_CANDIDATES = 1_000;
/** How many trend rows of a kind are read or kept, at most. */
export const TREND_ROWS_KEPT = 5_000;

export interface TrendUsage {
  id: string;
  /** Distinct accounts since `today` (midnight UTC). */
  observed: number;
  /** Distinct accounts on the day before. */
  expected: number;
  language: string | null;
}

/**
 * Today's and yesterday's public posts, each day's newest WINDOW_STATUSES apart (one shared window would leave a busy
 * server's yesterday empty, and every trend would then be measured against nothing): what the usage queries count.
 * Parameters: $1 and $2 the start of yesterday (as a first id and a date), $3 and $5 the start of today. A day is
 * the posts' `created_at` (a post received today may have been written yesterday), its ids only a lower bound.
 */
const TWO_DAYS = (reblogs: boolean) => {
  const columns = 'SELECT s.id, s.account_id, s.created_at, coalesce(s.reblog_of_id, s.id) AS proper_id FROM statuses s';
  const kept = `s.deleted_at IS NULL AND s.visibility = 'public' ${reblogs ? '' : 'AND s.reblog_of_id IS NULL'}`;
  return `recent AS (
  (${columns} WHERE ${kept} AND s.id >= $1 AND s.created_at >= $2 AND s.created_at < $3 ORDER BY s.id DESC LIMIT ${WINDOW_STATUSES})
  UNION ALL
  (${columns} WHERE ${kept} AND s.id >= $5 AND s.created_at >= $3 ORDER BY s.id DESC LIMIT ${WINDOW_STATUSES})
)`;
};

const toUsage = (r: { id: string; observed: string; expected: string; language?: string | null }): TrendUsage =>
  ({ id: r.id, observed: Number(r.observed), expected: Number(r.expected), language: r.language ?? null });

/**
 * Tags used today, with the distinct accounts that used them today and yesterday (Mastodon's Trends::Tags: public
 * posts, not boosts, by accounts neither suspended nor silenced).
 */
export async function tagUsage(db: Queryable, yesterday: Date, today: Date, limit = USAGE_CANDIDATES): Promise<TrendUsage[]> {
  const { rows } = await db.query<{ id: string; observed: string; expected: string }>(
    `WITH ${TWO_DAYS(false)}
     SELECT st.tag_id::text AS id,
            count(DISTINCT r.account_id) FILTER (WHERE r.created_at >= $3) AS observed,
            count(DISTINCT r.account_id) FILTER (WHERE r.created_at < $3) AS expected
       FROM recent r
       JOIN accounts a ON a.id = r.account_id AND a.suspended_at IS NULL AND a.silenced_at IS NULL
       JOIN statuses_tags st ON st.status_id = r.id
      GROUP BY st.tag_id
     HAVING count(*) FILTER (WHERE r.created_at >= $3) > 0
      ORDER BY 2 DESC, 1 DESC
      LIMIT $4`,
    [firstIdAt(yesterday), yesterday, today, limit, firstIdAt(today)],
  );
  return rows.map(toUsage);
}

/**
 * Links (preview cards) shared today, with the distinct accounts that shared them today and yesterday, as Mastodon's
 * Trends::Links counts them: public posts and their public boosts (the booster shares the link too), the post
 * without a content warning and not sensitive, neither author nor booster silenced or suspended. A link's language is
 * the one most of the posts sharing it are written in (cards here carry none of their own).
 */
export async function linkUsage(db: Queryable, yesterday: Date, today: Date, limit = USAGE_CANDIDATES): Promise<TrendUsage[]> {
  const { rows } = await db.query<{ id: string; observed: string; expected: string; language: string | null }>(
    `WITH ${TWO_DAYS(true)}
     SELECT pcs.preview_card_id::text AS id,
            count(DISTINCT r.account_id) FILTER (WHERE r.created_at >= $3) AS observed,
            count(DISTINCT r.account_id) FILTER (WHERE r.created_at < $3) AS expected,
            mode() WITHIN GROUP (ORDER BY o.language) AS language
       FROM recent r
       JOIN accounts a ON a.id = r.account_id AND a.suspended_at IS NULL AND a.silenced_at IS NULL
       JOIN statuses o ON o.id = r.proper_id AND o.deleted_at IS NULL AND o.visibility = 'public' AND NOT o.sensitive AND o.spoiler_text = ''
       JOIN accounts oa ON oa.id = o.account_id AND oa.suspended_at IS NULL AND oa.silenced_at IS NULL
       JOIN preview_cards_statuses pcs ON pcs.status_id = o.id
      GROUP BY pcs.preview_card_id
     HAVING count(*) FILTER (WHERE r.created_at >= $3) > 0
      ORDER BY 2 DESC, 1 DESC
      LIMIT $4`,
    [firstIdAt(yesterday), yesterday, today, limit, firstIdAt(today)],
  );
  return rows.map(toUsage);
}

/** Statuses favourited or boosted since `since` (Mastodon's recently used ids of Trends::Statuses), at most `limit`. */
export async function interactedStatusIds(db: Queryable, since: Date, limit = USAGE_CANDIDATES): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text FROM (
       (SELECT f.status_id AS id FROM favourites f WHERE f.id >= $1 AND f.created_at >= $2 ORDER BY f.id DESC LIMIT ${WINDOW_STATUSES})
       UNION
       (SELECT s.reblog_of_id FROM statuses s WHERE s.id >= $1 AND s.created_at >= $2 AND s.reblog_of_id IS NOT NULL AND s.deleted_at IS NULL
         ORDER BY s.id DESC LIMIT ${WINDOW_STATUSES})
     ) u ORDER BY id DESC LIMIT $3`,
    [firstIdAt(since), since, limit],
  );
  return rows.map((r) => r.id);
}

export interface StatusTrendFacts {
  id: string;
  /** Boosts and favourites, as Mastodon's Trends::Statuses counts them. */
  interactions: number;
  createdAt: Date;
  language: string | null;
  /**
   * Mastodon's Trends::Statuses#eligible?: public, not a reply, no content warning, not sensitive, by an author
   * neither silenced nor suspended who did not opt out of discovery (an unset `discoverable` counts as in).
   */
  eligible: boolean;
}

/** What scoring needs of these statuses (deleted ones are absent). */
export async function statusTrendFacts(db: Queryable, ids: string[]): Promise<StatusTrendFacts[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string; interactions: string; created_at: Date; language: string | null; eligible: boolean }>(
    `SELECT s.id::text, s.favourites_count + s.reblogs_count AS interactions, s.created_at, s.language,
            (s.visibility = 'public' AND s.reblog_of_id IS NULL AND s.in_reply_to_id IS NULL AND s.spoiler_text = '' AND NOT s.sensitive
             AND a.suspended_at IS NULL AND a.silenced_at IS NULL AND a.discoverable IS NOT FALSE) AS eligible
       FROM statuses s JOIN accounts a ON a.id = s.account_id
      WHERE s.id = ANY($1::bigint[]) AND s.deleted_at IS NULL`,
    [ids],
  );
  return rows.map((r) => ({ id: r.id, interactions: Number(r.interactions), createdAt: r.created_at, language: r.language, eligible: r.eligible }));
}

export interface TrendScoreRow {
  id: string;
  score: number;
  maxScore: number;
  maxScoreAt: Date | null;
  language: string | null;
  allowed: boolean;
}

/** The trend rows of a kind, highest peak first, at most TREND_ROWS_KEPT. */
export async function trendScoreRows(db: Queryable, kind: TrendKind): Promise<TrendScoreRow[]> {
  const { rows } = await db.query<{ id: string; score: number; max_score: number; max_score_at: Date | null; language: string | null; allowed: boolean }>(
    `SELECT target_id::text AS id, score, max_score, max_score_at, language, allowed FROM trend_scores
      WHERE kind = $1 ORDER BY max_score DESC, target_id DESC LIMIT ${TREND_ROWS_KEPT}`,
    [kind],
  );
  return rows.map((r) => ({ id: r.id, score: r.score, maxScore: r.max_score, maxScoreAt: r.max_score_at, language: r.language, allowed: r.allowed }));
}

/**
 * Replaces the scores of a kind with one refresh's: these rows written, every other row of the kind dropped (what a
 * refresh leaves out no longer trends, and its peak is past the cooldown).
 */
export async function replaceTrendScores(db: Queryable, kind: TrendKind, rows: TrendScoreRow[]): Promise<void> {
  await db.query(
    `INSERT INTO trend_scores (kind, target_id, score, max_score, max_score_at, language, allowed, refreshed_at)
     SELECT $1, * , now() FROM unnest($2::bigint[], $3::float8[], $4::float8[], $5::timestamptz[], $6::text[], $7::boolean[])
     ON CONFLICT (kind, target_id) DO UPDATE SET score = EXCLUDED.score, max_score = EXCLUDED.max_score, max_score_at = EXCLUDED.max_score_at,
       language = EXCLUDED.language, allowed = EXCLUDED.allowed, refreshed_at = EXCLUDED.refreshed_at`,
    [kind, rows.map((r) => r.id), rows.map((r) => r.score), rows.map((r) => r.maxScore), rows.map((r) => r.maxScoreAt),
      rows.map((r) => r.language), rows.map((r) => r.allowed)],
  );
  await db.query(`DELETE FROM trend_scores WHERE kind = $1 AND NOT (target_id = ANY($2::bigint[]))`, [kind, rows.map((r) => r.id)]);
  // A review made while the refresh ran wins over what the refresh read before it (an item's own review decides).
  await db.query(
    `UPDATE trend_scores ts SET allowed = rv.trendable FROM trend_reviews rv
      WHERE ts.kind = $1 AND rv.kind = ts.kind AND rv.target_id = ts.target_id AND ts.allowed <> rv.trendable`,
    [kind],
  );
}

/** Sets what the reviews decided for these trend rows. */
export async function setTrendsAllowed(db: Queryable, kind: TrendKind, ids: string[], allowed: boolean): Promise<void> {
  if (ids.length === 0) return;
  await db.query(`UPDATE trend_scores SET allowed = $3 WHERE kind = $1 AND target_id = ANY($2::bigint[]) AND allowed <> $3`, [kind, ids, allowed]);
}

/** The ids of what trends of a kind (links: to apply a publisher's review), at most TREND_ROWS_KEPT. */
export async function trendRowIds(db: Queryable, kind: TrendKind): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT target_id::text AS id FROM trend_scores WHERE kind = $1 AND score > 0 ORDER BY score DESC, target_id DESC LIMIT ${TREND_ROWS_KEPT}`, [kind]);
  return rows.map((r) => r.id);
}

/**
 * One page of what trends, by score (`allowedOnly`: what the public sees; else the operators' list). As Mastodon's
 * Trends::Query, items in one of `languages` come first, each group by score: the top TREND_ROWS_KEPT read through
 * the index, then ordered.
 */
export async function trendPage(db: Queryable, kind: TrendKind, o: { allowedOnly: boolean; languages: string[]; offset: number; limit: number }): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT t.target_id::text AS id FROM (
       SELECT target_id, score, language FROM trend_scores
        WHERE kind = $1 AND score > 0 ${o.allowedOnly ? 'AND allowed' : ''}
        ORDER BY score DESC, target_id DESC LIMIT ${TREND_ROWS_KEPT}
     ) t
     ORDER BY CASE WHEN t.language = ANY($2::text[]) THEN 1 ELSE 0 END DESC, t.score DESC, t.target_id DESC
     OFFSET $3 LIMIT $4`,
    [kind, o.languages, o.offset, o.limit],
  );
  return rows.map((r) => r.id);
}

/** A signed-in viewer's interface locale (users.locale), if they chose one. */
export async function viewerLocale(db: Queryable, accountId: string): Promise<string | null> {
  const { rows } = await db.query<{ locale: string | null }>(`SELECT locale FROM users WHERE account_id = $1`, [accountId]);
  return rows[0]?.locale ?? null;
}

/** Tag names by id (absent ids left out). */
export async function tagNamesByIds(db: Queryable, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; name: string }>(`SELECT id::text, name FROM tags WHERE id = ANY($1::bigint[])`, [ids]);
  return new Map(rows.map((r) => [r.id, r.name]));
}
