import type { Queryable } from './db.ts';

/**
 * Annual reports ("Wrapstodon"): the rows (one per account and year) and the queries a report is computed from.
 * Every query on statuses or follows is bounded to one year by id range (ids are time-sortable: milliseconds since
 * the epoch shifted left 16 bits, storage/migrations/1763800000000_init.sql), and those on one account's rows go
 * through its (account_id, id) indexes.
 */

export interface AnnualReportRow {
  account_id: string;
  year: number;
  schema_version: number;
  /** NULL while its job computes it. */
  data: Record<string, unknown> | null;
  requested_at: Date;
  generated_at: Date | null;
  viewed_at: Date | null;
}

/** The first and last id a row made in `year` (UTC) can have. */
export function yearIdRange(year: number): { min: string; max: string } {
  const min = BigInt(Date.UTC(year, 0, 1)) << 16n;
  const max = (BigInt(Date.UTC(year + 1, 0, 1)) << 16n) - 1n;
  return { min: min.toString(), max: max.toString() };
}

const COLUMNS = 'account_id, year, schema_version, data, requested_at, generated_at, viewed_at';

export async function findAnnualReport(db: Queryable, accountId: string, year: number): Promise<AnnualReportRow | null> {
  const { rows } = await db.query<AnnualReportRow>(`SELECT ${COLUMNS} FROM annual_reports WHERE account_id = $1 AND year = $2`, [accountId, year]);
  return rows[0] ?? null;
}

/** The account's generated reports not yet viewed (Mastodon's `pending`), newest year first. */
export async function pendingAnnualReports(db: Queryable, accountId: string): Promise<AnnualReportRow[]> {
  const { rows } = await db.query<AnnualReportRow>(
    `SELECT ${COLUMNS} FROM annual_reports WHERE account_id = $1 AND data IS NOT NULL AND viewed_at IS NULL ORDER BY year DESC LIMIT 100`,
    [accountId],
  );
  return rows;
}

/**
 * Records a request for a report: true when this call made the row (its job is to be queued), or when a request
 * left without a report for longer than `staleAfterMs` (its job gave up) is taken over again.
 */
export async function claimAnnualReport(db: Queryable, accountId: string, year: number, staleAfterMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO annual_reports (account_id, year) VALUES ($1, $2)
     ON CONFLICT (account_id, year) DO UPDATE SET requested_at = now()
       WHERE annual_reports.data IS NULL AND annual_reports.requested_at < now() - make_interval(secs => $3)`,
    [accountId, year, staleAfterMs / 1000],
  );
  return (rowCount ?? 0) > 0;
}

/** Stores a computed report; false when there is no row waiting for it (generated already, or the account is gone). */
export async function storeAnnualReport(db: Queryable, accountId: string, year: number, schemaVersion: number, data: object): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE annual_reports SET data = $3, schema_version = $4, generated_at = now()
      WHERE account_id = $1 AND year = $2 AND data IS NULL`,
    [accountId, year, JSON.stringify(data), schemaVersion],
  );
  return (rowCount ?? 0) > 0;
}

/** Marks a generated report viewed; false when there is none. */
export async function markAnnualReportViewed(db: Queryable, accountId: string, year: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE annual_reports SET viewed_at = COALESCE(viewed_at, now()) WHERE account_id = $1 AND year = $2 AND data IS NOT NULL`,
    [accountId, year],
  );
  return (rowCount ?? 0) > 0;
}

/** Whether the account posted anything (not deleted) in the year. */
export async function hasStatusesInYear(db: Queryable, accountId: string, year: number): Promise<boolean> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query(
    `SELECT 1 FROM statuses WHERE account_id = $1 AND id BETWEEN $2 AND $3 AND deleted_at IS NULL LIMIT 1`, [accountId, min, max],
  );
  return rows.length > 0;
}

export interface YearCounts {
  total: number;
  reblogs: number;
  /** Replies to others (a reply to oneself is a standalone post, as on Mastodon). */
  replies: number;
  standalone: number;
  polls: number;
}

/** The account's statuses of the year by kind, in one pass over its index. */
export async function yearCounts(db: Queryable, accountId: string, year: number): Promise<YearCounts> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<Record<keyof YearCounts, string>>(
    `SELECT count(*) AS total,
            count(*) FILTER (WHERE s.reblog_of_id IS NOT NULL) AS reblogs,
            count(*) FILTER (WHERE s.in_reply_to_id IS NOT NULL AND s.in_reply_to_account_id IS DISTINCT FROM s.account_id) AS replies,
            count(*) FILTER (WHERE s.reblog_of_id IS NULL
                               AND (s.in_reply_to_id IS NULL OR s.in_reply_to_account_id = s.account_id)) AS standalone,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM polls p WHERE p.status_id = s.id)) AS polls
       FROM statuses s WHERE s.account_id = $1 AND s.id BETWEEN $2 AND $3 AND s.deleted_at IS NULL`,
    [accountId, min, max],
  );
  const r = rows[0]!;
  return { total: Number(r.total), reblogs: Number(r.reblogs), replies: Number(r.replies), standalone: Number(r.standalone), polls: Number(r.polls) };
}

/** Per month (1–12, UTC) of the year: statuses posted, accounts followed, followers gained (follows still in place). */
export async function monthlyCounts(db: Queryable, accountId: string, year: number): Promise<{ month: number; statuses: number; following: number; followers: number }[]> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<{ month: number; kind: string; n: string }>(
    `SELECT date_part('month', created_at AT TIME ZONE 'UTC')::int AS month, 'statuses' AS kind, count(*) AS n
       FROM statuses WHERE account_id = $1 AND id BETWEEN $2 AND $3 AND deleted_at IS NULL GROUP BY 1
     UNION ALL
     SELECT date_part('month', created_at AT TIME ZONE 'UTC')::int, 'following', count(*)
       FROM follows WHERE account_id = $1 AND id BETWEEN $2 AND $3 GROUP BY 1
     UNION ALL
     SELECT date_part('month', created_at AT TIME ZONE 'UTC')::int, 'followers', count(*)
       FROM follows WHERE target_account_id = $1 AND id BETWEEN $2 AND $3 GROUP BY 1`,
    [accountId, min, max],
  );
  const months = Array.from({ length: 12 }, (_, i) => ({ month: i + 1, statuses: 0, following: 0, followers: 0 }));
  for (const r of rows) {
    const m = months[r.month - 1];
    if (m) m[r.kind as 'statuses' | 'following' | 'followers'] += Number(r.n);
  }
  return months;
}

/** Hashtags the account used more than once in the year, most used first (Mastodon keeps 40). */
export async function topHashtags(db: Queryable, accountId: string, year: number, limit: number): Promise<{ name: string; count: number }[]> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<{ name: string; count: string }>(
    `SELECT t.name, count(*) AS count
       FROM statuses s JOIN statuses_tags st ON st.status_id = s.id JOIN tags t ON t.id = st.tag_id
      WHERE s.account_id = $1 AND s.id BETWEEN $2 AND $3 AND s.deleted_at IS NULL
      GROUP BY t.id, t.name HAVING count(*) > 1 ORDER BY count(*) DESC, lower(t.name) LIMIT $4`,
    [accountId, min, max, limit],
  );
  return rows.map((r) => ({ name: r.name, count: Number(r.count) }));
}

/**
 * The account's public posts of the year with the most boosts, then (another one) favourites, then (another one)
 * replies, as Mastodon picks them; a post with none of the kind is not picked.
 */
export async function topStatuses(db: Queryable, accountId: string, year: number) {
  const { min, max } = yearIdRange(year);
  const pick = async (column: 'reblogs_count' | 'favourites_count' | 'replies_count', not: (string | null)[]) => {
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM statuses
        WHERE account_id = $1 AND id BETWEEN $2 AND $3 AND deleted_at IS NULL AND reblog_of_id IS NULL
          AND visibility = 'public' AND ${column} > 0 AND NOT (id = ANY($4::bigint[]))
        ORDER BY ${column} DESC, id DESC LIMIT 1`,
      [accountId, min, max, not.filter((x): x is string => x !== null)],
    );
    return rows[0]?.id ?? null;
  };
  const byReblogs = await pick('reblogs_count', []);
  const byFavourites = await pick('favourites_count', [byReblogs]);
  const byReplies = await pick('replies_count', [byReblogs, byFavourites]);
  return { by_reblogs: byReblogs, by_favourites: byFavourites, by_replies: byReplies };
}

/** The apps the account posted from in the year, most used first (Mastodon keeps 10). */
export async function mostUsedApps(db: Queryable, accountId: string, year: number, limit: number): Promise<{ name: string; count: number }[]> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<{ name: string; count: string }>(
    `SELECT a.name, count(*) AS count
       FROM statuses s JOIN oauth_applications a ON a.id = s.application_id
      WHERE s.account_id = $1 AND s.id BETWEEN $2 AND $3 AND s.deleted_at IS NULL
      GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT $4`,
    [accountId, min, max, limit],
  );
  return rows.map((r) => ({ name: r.name, count: Number(r.count) }));
}

/** The accounts the account replied to more than once in the year (itself left out), most first (Mastodon keeps 40). */
export async function commonlyInteractedWith(db: Queryable, accountId: string, year: number, limit: number): Promise<{ account_id: string; count: number }[]> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<{ account_id: string; count: string }>(
    `SELECT in_reply_to_account_id::text AS account_id, count(*) AS count
       FROM statuses
      WHERE account_id = $1 AND id BETWEEN $2 AND $3 AND deleted_at IS NULL
        AND in_reply_to_account_id IS NOT NULL AND in_reply_to_account_id <> $1
      GROUP BY in_reply_to_account_id HAVING count(*) > 1 ORDER BY count(*) DESC, in_reply_to_account_id LIMIT $4`,
    [accountId, min, max, limit],
  );
  return rows.map((r) => ({ account_id: r.account_id, count: Number(r.count) }));
}

/** The accounts whose posts the account boosted more than once in the year (itself left out), most first (Mastodon keeps 10). */
export async function mostRebloggedAccounts(db: Queryable, accountId: string, year: number, limit: number): Promise<{ account_id: string; count: number }[]> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<{ account_id: string; count: string }>(
    `SELECT o.account_id::text AS account_id, count(*) AS count
       FROM statuses s JOIN statuses o ON o.id = s.reblog_of_id
      WHERE s.account_id = $1 AND s.id BETWEEN $2 AND $3 AND s.deleted_at IS NULL AND s.reblog_of_id IS NOT NULL
        AND o.account_id <> $1
      GROUP BY o.account_id HAVING count(*) > 1 ORDER BY count(*) DESC, o.account_id LIMIT $4`,
    [accountId, min, max, limit],
  );
  return rows.map((r) => ({ account_id: r.account_id, count: Number(r.count) }));
}

/**
 * Mastodon's percentiles: of the local accounts that gained followers (posted) in the year, the share with fewer
 * than this account, in percent (`fewer / (all + 1) * 100`). Followers are follows of the year still in place.
 */
export async function percentiles(db: Queryable, accountId: string, year: number): Promise<{ followers: number; statuses: number }> {
  const { min, max } = yearIdRange(year);
  const { rows } = await db.query<{ fewer_followers: string; any_followers: string; fewer_statuses: string; any_statuses: string }>(
    `WITH gained AS (
       SELECT f.target_account_id AS account_id, count(*) AS n
         FROM follows f JOIN accounts a ON a.id = f.target_account_id AND a.domain IS NULL
        WHERE f.id BETWEEN $2 AND $3 GROUP BY f.target_account_id
     ), posted AS (
       SELECT s.account_id, count(*) AS n
         FROM statuses s JOIN accounts a ON a.id = s.account_id AND a.domain IS NULL
        WHERE s.id BETWEEN $2 AND $3 AND s.deleted_at IS NULL GROUP BY s.account_id
     ), mine AS (
       SELECT (SELECT count(*) FROM follows WHERE target_account_id = $1 AND id BETWEEN $2 AND $3) AS followers,
              (SELECT count(*) FROM statuses WHERE account_id = $1 AND id BETWEEN $2 AND $3 AND deleted_at IS NULL) AS statuses
     )
     SELECT (SELECT count(*) FROM gained, mine WHERE gained.n < mine.followers) AS fewer_followers,
            (SELECT count(*) FROM gained) AS any_followers,
            (SELECT count(*) FROM posted, mine WHERE posted.n < mine.statuses) AS fewer_statuses,
            (SELECT count(*) FROM posted) AS any_statuses`,
    [accountId, min, max],
  );
  const r = rows[0]!;
  return {
    followers: (Number(r.fewer_followers) / (Number(r.any_followers) + 1)) * 100,
    statuses: (Number(r.fewer_statuses) / (Number(r.any_statuses) + 1)) * 100,
  };
}
