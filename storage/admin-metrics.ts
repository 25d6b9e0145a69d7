// The SQL of the admin dashboard (POST /api/v1/admin/measures, /dimensions, /retention).
//
// Days are UTC days. Statuses, favourites, follows, reports and accounts are ranged by id: ids are time-sortable
// (milliseconds << 16), so a time range is an id range on the primary key (or on an index ending in id), and the day
// of a row is read from its id. For remote statuses that is the time this server received them, which is what this
// server can vouch for. users.created_at, users.last_sign_in_at and reports.action_taken_at have their own indexes.
import type { Queryable } from './db.ts';

/** A range of whole UTC days, both ends included, as 'YYYY-MM-DD'. */
export interface DayRange {
  start: string;
  end: string;
}

const DAY_MS = 86_400_000;
const MAX_ID = (2n ** 63n - 1n).toString();

const dayMs = (day: string) => Date.parse(`${day}T00:00:00Z`);
const idAt = (ms: number) => (BigInt(Math.max(0, Math.floor(ms))) << 16n).toString();
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Number of days in the range (both ends included). */
export const daysIn = (r: DayRange) => Math.round((dayMs(r.end) - dayMs(r.start)) / DAY_MS) + 1;

/** The UTC day of a time-sortable id column. */
const idDay = (col: string) => `(to_timestamp((${col} >> 16) / 1000.0) AT TIME ZONE 'UTC')::date`;
const tsDay = (col: string) => `(${col} AT TIME ZONE 'UTC')::date`;

/**
 * The parameters every measure query gets:
 * $1 first day of the range, $2 its last day, $3/$4 the time window read ([from, to)), $5/$6 the same as ids,
 * $7 the measure's argument (a tag id or a domain). The window starts at the previous period when one is asked for.
 */
const ARGS = `args AS (SELECT $1::date, $2::date, $3::timestamptz, $4::timestamptz, $5::bigint, $6::bigint, $7::text)`;

type Agg = 'count' | 'distinct' | 'sum';
const AGG: Record<Agg, string> = { count: 'count(*)', distinct: 'count(DISTINCT k)', sum: 'coalesce(sum(v), 0)' };

/** Accounts of the domain in $7, or of it and its subdomains (through the accounts_domain_variants index). */
const domainOf = (alias: string, subdomains: boolean) => subdomains
  ? `domain_variants(lower(${alias}.domain)) @> ARRAY[lower($7::text)] AND ${alias}.domain IS NOT NULL`
  : `lower(${alias}.domain) = lower($7::text)`;

interface MeasureSql {
  agg: Agg;
  /** Rows of (day, k, v) in the window; k is what `distinct` counts, v what `sum` adds. */
  events: (subdomains: boolean) => string;
  /** Mastodon's instance measures total the domain's whole history (and have no previous total). */
  allTime?: boolean;
  /** Zeros with no query: what this server does not store (see instance_media_attachments). */
  none?: boolean;
  /** What the measure is of: a tag (by id) or a server (by domain); without one every value is 0. */
  of?: 'tag' | 'domain';
}

const tagStatuses = `FROM statuses_tags st JOIN statuses s ON s.id = st.status_id AND s.deleted_at IS NULL
  WHERE st.tag_id = $7::bigint AND st.status_id >= $5 AND st.status_id < $6`;

export const MEASURES = {
  // Who used the server each day, as far as it can tell: local users who posted (any status, boosts included), and
  // users whose latest sign-in falls on that day. users.last_sign_in_at keeps only the latest sign-in, so earlier
  // sign-ins of someone who signed in again later are not seen: a user who only reads counts on their last day only.
  active_users: {
    agg: 'distinct',
    events: () => `SELECT ${idDay('s.id')} AS day, s.account_id AS k, 0 AS v FROM statuses s JOIN users u ON u.account_id = s.account_id
      WHERE s.id >= $5 AND s.id < $6
      UNION ALL
      SELECT ${tsDay('u.last_sign_in_at')}, u.account_id, 0 FROM users u WHERE u.last_sign_in_at >= $3 AND u.last_sign_in_at < $4`,
  },
  new_users: {
    agg: 'count',
    events: () => `SELECT ${tsDay('u.created_at')} AS day, NULL::bigint AS k, 0 AS v FROM users u WHERE u.created_at >= $3 AND u.created_at < $4`,
  },
  // Favourites, boosts and replies of local posts, on the day they were made.
  interactions: {
    agg: 'count',
    events: () => `SELECT ${idDay('f.id')} AS day, NULL::bigint AS k, 0 AS v FROM favourites f
        JOIN statuses o ON o.id = f.status_id JOIN accounts oa ON oa.id = o.account_id AND oa.domain IS NULL
        WHERE f.id >= $5 AND f.id < $6
      UNION ALL
      SELECT ${idDay('s.id')}, NULL, 0 FROM statuses s
        JOIN statuses o ON o.id = coalesce(s.reblog_of_id, s.in_reply_to_id) JOIN accounts oa ON oa.id = o.account_id AND oa.domain IS NULL
        WHERE s.id >= $5 AND s.id < $6 AND s.deleted_at IS NULL AND (s.reblog_of_id IS NOT NULL OR s.in_reply_to_id IS NOT NULL)`,
  },
  opened_reports: {
    agg: 'count',
    events: () => `SELECT ${idDay('r.id')} AS day, NULL::bigint AS k, 0 AS v FROM reports r WHERE r.id >= $5 AND r.id < $6`,
  },
  resolved_reports: {
    agg: 'count',
    events: () => `SELECT ${tsDay('r.action_taken_at')} AS day, NULL::bigint AS k, 0 AS v FROM reports r
      WHERE r.action_taken_at >= $3 AND r.action_taken_at < $4`,
  },
  tag_accounts: { of: 'tag', agg: 'distinct', events: () => `SELECT ${idDay('st.status_id')} AS day, s.account_id AS k, 0 AS v ${tagStatuses}` },
  tag_uses: { of: 'tag', agg: 'count', events: () => `SELECT ${idDay('st.status_id')} AS day, NULL::bigint AS k, 0 AS v ${tagStatuses}` },
  // Other servers whose accounts used the tag (local posts are not a server here, as in Mastodon).
  tag_servers: {
    agg: 'distinct', of: 'tag',
    events: () => `SELECT ${idDay('st.status_id')} AS day, lower(a.domain) AS k, 0 AS v ${tagStatuses.replace('WHERE', 'JOIN accounts a ON a.id = s.account_id AND a.domain IS NOT NULL WHERE')}`,
  },
  instance_accounts: {
    agg: 'count', allTime: true, of: 'domain',
    events: (sub) => `SELECT ${idDay('a.id')} AS day, NULL::bigint AS k, 0 AS v FROM accounts a WHERE ${domainOf('a', sub)} AND a.id >= $5 AND a.id < $6`,
  },
  // Remote media is not copied here (attachments keep their remote URL and are shown from there): no space is used.
  instance_media_attachments: { agg: 'sum', allTime: true, none: true, of: 'domain', events: () => '' },
  instance_reports: {
    agg: 'count', allTime: true, of: 'domain',
    events: (sub) => `SELECT ${idDay('r.id')} AS day, NULL::bigint AS k, 0 AS v FROM accounts a JOIN reports r ON r.target_account_id = a.id
      WHERE ${domainOf('a', sub)} AND r.id >= $5 AND r.id < $6`,
  },
  instance_statuses: {
    agg: 'count', allTime: true, of: 'domain',
    events: (sub) => `SELECT ${idDay('s.id')} AS day, NULL::bigint AS k, 0 AS v FROM accounts a JOIN statuses s ON s.account_id = a.id AND s.deleted_at IS NULL
      WHERE ${domainOf('a', sub)} AND s.id >= $5 AND s.id < $6`,
  },
  // Follows of the domain's accounts (by anyone this server knows of), and follows made by them.
  instance_follows: {
    agg: 'count', allTime: true, of: 'domain',
    events: (sub) => `SELECT ${idDay('f.id')} AS day, NULL::bigint AS k, 0 AS v FROM accounts a JOIN follows f ON f.target_account_id = a.id
      WHERE ${domainOf('a', sub)} AND f.id >= $5 AND f.id < $6`,
  },
  instance_followers: {
    agg: 'count', allTime: true, of: 'domain',
    events: (sub) => `SELECT ${idDay('f.id')} AS day, NULL::bigint AS k, 0 AS v FROM accounts a JOIN follows f ON f.account_id = a.id
      WHERE ${domainOf('a', sub)} AND f.id >= $5 AND f.id < $6`,
  },
} satisfies Record<string, MeasureSql>;

export type MeasureKey = keyof typeof MEASURES;
export const isMeasureKey = (k: string): k is MeasureKey => Object.hasOwn(MEASURES, k);

export interface MeasureResult {
  key: MeasureKey;
  total: string;
  /** null where the measure has none (Mastodon's instance measures). */
  previousTotal: string | null;
  data: { day: string; value: string }[];
}

/** One measure over the range: every day present, values as decimal strings. */
export async function measure(db: Queryable, key: MeasureKey, range: DayRange, arg: string | null, subdomains = false): Promise<MeasureResult> {
  const def: MeasureSql = MEASURES[key];
  const days = daysIn(range);
  const from = dayMs(range.start);
  const to = dayMs(range.end) + DAY_MS;
  if (def.none || (def.of && arg === null)) {
    const data = Array.from({ length: days }, (_, i) => ({ day: isoDay(from + i * DAY_MS), value: '0' }));
    return { key, total: '0', previousTotal: def.allTime ? null : '0', data };
  }
  const agg = AGG[def.agg];
  const events = def.events(subdomains);
  // The previous period (as long as this one, just before it) is read in the same pass, unless it has no use.
  const windowFrom = def.allTime ? from : from - days * DAY_MS;
  const params = (lo: number, hi: number) => [range.start, range.end, new Date(lo).toISOString(), hi === Infinity ? 'infinity' : new Date(hi).toISOString(), idAt(lo), hi === Infinity ? MAX_ID : idAt(hi), arg];
  const { rows } = await db.query<{ data: { day: string; value: string }[]; total: string; previous_total: string }>(
    `WITH ${ARGS},
     ev AS MATERIALIZED (${events}),
     days AS (SELECT d::date AS day FROM generate_series($1::date, $2::date, interval '1 day') d),
     daily AS (SELECT day, ${agg} AS value FROM ev WHERE day >= $1::date GROUP BY day)
     SELECT (SELECT json_agg(json_build_object('day', to_char(days.day, 'YYYY-MM-DD'), 'value', coalesce(daily.value, 0)::text) ORDER BY days.day)
               FROM days LEFT JOIN daily USING (day)) AS data,
            (SELECT ${agg} FROM ev WHERE day >= $1::date)::text AS total,
            (SELECT ${agg} FROM ev WHERE day < $1::date)::text AS previous_total`,
    params(windowFrom, to),
  );
  const row = rows[0]!;
  if (!def.allTime) return { key, total: row.total, previousTotal: row.previous_total, data: row.data };
  // The domain's whole history: bounded by the domain (its accounts through their index), not by the range.
  const all = await db.query<{ total: string }>(`WITH ${ARGS} SELECT (${agg})::text AS total FROM (${events}) ev`, params(0, Infinity));
  return { key, total: all.rows[0]!.total, previousTotal: null, data: row.data };
}

export interface DimensionRow {
  key: string;
  value: string;
}

const rangeParams = (range: DayRange) => {
  const from = dayMs(range.start);
  const to = dayMs(range.end) + DAY_MS;
  return { fromTs: new Date(from).toISOString(), toTs: new Date(to).toISOString(), fromId: idAt(from), toId: idAt(to) };
};

/** Languages of local posts in the range, most used first. */
export async function languagesOfLocalPosts(db: Queryable, range: DayRange, limit: number): Promise<DimensionRow[]> {
  const p = rangeParams(range);
  const { rows } = await db.query<DimensionRow>(
    `SELECT s.language AS key, count(*)::text AS value FROM statuses s JOIN accounts a ON a.id = s.account_id AND a.domain IS NULL
      WHERE s.id >= $1 AND s.id < $2 AND s.deleted_at IS NULL AND s.reblog_of_id IS NULL AND s.language IS NOT NULL
      GROUP BY s.language ORDER BY count(*) DESC, s.language LIMIT $3`,
    [p.fromId, p.toId, limit],
  );
  return rows;
}

/** The applications people signed up with in the range (null: without one, e.g. the web sign-up page). */
export async function signUpSources(db: Queryable, range: DayRange, limit: number): Promise<{ key: string | null; value: string }[]> {
  const p = rangeParams(range);
  const { rows } = await db.query<{ key: string | null; value: string }>(
    `SELECT app.name AS key, count(*)::text AS value FROM users u LEFT JOIN oauth_applications app ON app.id = u.created_by_application_id
      WHERE u.created_at >= $1 AND u.created_at < $2 GROUP BY app.name ORDER BY count(*) DESC, app.name NULLS FIRST LIMIT $3`,
    [p.fromTs, p.toTs, limit],
  );
  return rows;
}

/** Other servers by how many of their posts arrived in the range. */
export async function postingServers(db: Queryable, range: DayRange, limit: number): Promise<DimensionRow[]> {
  const p = rangeParams(range);
  const { rows } = await db.query<DimensionRow>(
    `SELECT lower(a.domain) AS key, count(*)::text AS value FROM statuses s JOIN accounts a ON a.id = s.account_id AND a.domain IS NOT NULL
      WHERE s.id >= $1 AND s.id < $2 AND s.deleted_at IS NULL GROUP BY lower(a.domain) ORDER BY count(*) DESC, lower(a.domain) LIMIT $3`,
    [p.fromId, p.toId, limit],
  );
  return rows;
}

/** Servers (null: this one) posting with a tag in the range. */
export async function tagServers(db: Queryable, tagId: string, range: DayRange, limit: number): Promise<{ key: string | null; value: string }[]> {
  const p = rangeParams(range);
  const { rows } = await db.query<{ key: string | null; value: string }>(
    `SELECT lower(a.domain) AS key, count(*)::text AS value FROM statuses_tags st
       JOIN statuses s ON s.id = st.status_id AND s.deleted_at IS NULL JOIN accounts a ON a.id = s.account_id
      WHERE st.tag_id = $1 AND st.status_id >= $2 AND st.status_id < $3
      GROUP BY lower(a.domain) ORDER BY count(*) DESC, lower(a.domain) NULLS FIRST LIMIT $4`,
    [tagId, p.fromId, p.toId, limit],
  );
  return rows;
}

/** Languages of posts with a tag in the range. */
export async function tagLanguages(db: Queryable, tagId: string, range: DayRange, limit: number): Promise<DimensionRow[]> {
  const p = rangeParams(range);
  const { rows } = await db.query<DimensionRow>(
    `SELECT s.language AS key, count(*)::text AS value FROM statuses_tags st JOIN statuses s ON s.id = st.status_id AND s.deleted_at IS NULL
      WHERE st.tag_id = $1 AND st.status_id >= $2 AND st.status_id < $3 AND s.language IS NOT NULL
      GROUP BY s.language ORDER BY count(*) DESC, s.language LIMIT $4`,
    [tagId, p.fromId, p.toId, limit],
  );
  return rows;
}

/** A domain's most followed accounts (followers as that server reported them). */
export async function instanceAccounts(db: Queryable, domain: string, limit: number): Promise<DimensionRow[]> {
  const { rows } = await db.query<DimensionRow>(
    `SELECT a.username AS key, a.followers_count::text AS value FROM accounts a
      WHERE lower(a.domain) = lower($1) ORDER BY a.followers_count DESC, a.id LIMIT $2`,
    [domain, limit],
  );
  return rows;
}

/** Languages of a domain's posts that arrived in the range. */
export async function instanceLanguages(db: Queryable, domain: string, range: DayRange, limit: number): Promise<DimensionRow[]> {
  const p = rangeParams(range);
  const { rows } = await db.query<DimensionRow>(
    `SELECT s.language AS key, count(*)::text AS value FROM accounts a JOIN statuses s ON s.account_id = a.id AND s.deleted_at IS NULL
      WHERE lower(a.domain) = lower($1) AND s.id >= $2 AND s.id < $3 AND s.language IS NOT NULL
      GROUP BY s.language ORDER BY count(*) DESC, s.language LIMIT $4`,
    [domain, p.fromId, p.toId, limit],
  );
  return rows;
}

/** The database's size on disk, and PostgreSQL's version. */
export async function postgresFacts(db: Queryable): Promise<{ bytes: string; version: string }> {
  const { rows } = await db.query<{ bytes: string; version: string }>(
    `SELECT pg_database_size(current_database())::text AS bytes, current_setting('server_version') AS version`,
  );
  return rows[0]!;
}

export interface CohortRow {
  period: string;
  date: string;
  size: string;
  value: string;
}

/**
 * Retention: users who signed up in each period of the range (day or month), and how many of them were active in
 * that period and each later one up to the range's end. Active means posted then (any status), or signed in last
 * then: users.last_sign_in_at keeps only the latest sign-in, so earlier sign-ins are not seen.
 */
export async function retention(db: Queryable, range: DayRange, frequency: 'day' | 'month'): Promise<CohortRow[]> {
  // Months are whole: the range's first month from its start, its last to the end of the month it ends in.
  const startMs = frequency === 'month' ? Date.parse(`${range.start.slice(0, 7)}-01T00:00:00Z`) : dayMs(range.start);
  const endDay = new Date(dayMs(range.end));
  const endMs = frequency === 'month' ? Date.UTC(endDay.getUTCFullYear(), endDay.getUTCMonth() + 1, 1) : dayMs(range.end) + DAY_MS;
  const bucket = (expr: string) => `date_trunc($3::text, ${expr} AT TIME ZONE 'UTC')::date`;
  const { rows } = await db.query<CohortRow>(
    `WITH periods AS (SELECT p::date AS p FROM generate_series($1::timestamptz AT TIME ZONE 'UTC', ($2::timestamptz AT TIME ZONE 'UTC') - interval '1 day', ('1 ' || $3::text)::interval) p),
     cohort AS (SELECT u.account_id, ${bucket('u.created_at')} AS p FROM users u WHERE u.created_at >= $1::timestamptz AND u.created_at < $2::timestamptz),
     activity AS (
       SELECT c.account_id, ${bucket('to_timestamp((s.id >> 16) / 1000.0)')} AS q
         FROM cohort c JOIN statuses s ON s.account_id = c.account_id AND s.deleted_at IS NULL AND s.id >= $4::bigint AND s.id < $5::bigint
       UNION
       SELECT c.account_id, ${bucket('u.last_sign_in_at')}
         FROM cohort c JOIN users u ON u.account_id = c.account_id WHERE u.last_sign_in_at >= $1::timestamptz AND u.last_sign_in_at < $2::timestamptz),
     sizes AS (SELECT p, count(*) AS n FROM cohort GROUP BY p),
     active AS (SELECT c.p, a.q, count(*) AS n FROM activity a JOIN cohort c USING (account_id) WHERE a.q >= c.p GROUP BY c.p, a.q)
     SELECT to_char(cp.p, 'YYYY-MM-DD') AS period, to_char(q.p, 'YYYY-MM-DD') AS date, coalesce(sizes.n, 0)::text AS size, coalesce(active.n, 0)::text AS value
       FROM periods cp JOIN periods q ON q.p >= cp.p
       LEFT JOIN sizes ON sizes.p = cp.p LEFT JOIN active ON active.p = cp.p AND active.q = q.p
      ORDER BY cp.p, q.p`,
    [new Date(startMs).toISOString(), new Date(endMs).toISOString(), frequency, idAt(startMs), idAt(endMs)],
  );
  return rows;
}
