import type { Queryable } from './db.ts';

export interface InstanceStats {
  userCount: number;
  domainCount: number;
  activeMonth: number;
  /** Local statuses, as Mastodon counts them: the sum of local accounts' statuses_count. */
  statusCount: number;
}

export async function instanceStats(db: Queryable): Promise<InstanceStats> {
  const { rows } = await db.query<{ users: string; domains: string; active: string; statuses: string }>(
    `SELECT (SELECT count(*) FROM users WHERE approved) AS users,
            (SELECT coalesce(sum(statuses_count), 0) FROM accounts WHERE domain IS NULL) AS statuses,
            (SELECT count(DISTINCT lower(domain)) FROM accounts WHERE domain IS NOT NULL) AS domains,
            (SELECT count(DISTINCT t.user_id) FROM oauth_access_tokens t JOIN users u ON u.id = t.user_id AND u.approved
              WHERE t.revoked_at IS NULL AND t.created_at > now() - interval '30 days') AS active`,
  );
  const r = rows[0]!;
  return { userCount: Number(r.users), domainCount: Number(r.domains), activeMonth: Number(r.active), statusCount: Number(r.statuses) };
}

/** Approved users who signed in (were given a token) within the last `days` days. */
export async function activeUsers(db: Queryable, days: number): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(DISTINCT t.user_id) AS n FROM oauth_access_tokens t JOIN users u ON u.id = t.user_id AND u.approved
      WHERE t.revoked_at IS NULL AND t.created_at > now() - make_interval(days => $1)`,
    [days],
  );
  return Number(rows[0]!.n);
}

/** The most peers listed: each is one index probe (a skip scan over accounts_peer_domains). */
export const MAX_PEERS = 50_000;

/** Domains of the remote accounts this server knows, not suspended, in order (GET /api/v1/instance/peers). */
export async function peerDomains(db: Queryable, limit = MAX_PEERS): Promise<string[]> {
  const { rows } = await db.query<{ domain: string }>(
    `WITH RECURSIVE d(domain) AS (
       (SELECT lower(domain) FROM accounts WHERE domain IS NOT NULL AND suspended_at IS NULL ORDER BY lower(domain) LIMIT 1)
       UNION ALL
       SELECT (SELECT lower(a.domain) FROM accounts a
                WHERE a.domain IS NOT NULL AND a.suspended_at IS NULL AND lower(a.domain) > d.domain
                ORDER BY lower(a.domain) LIMIT 1)
         FROM d WHERE d.domain IS NOT NULL
     )
     SELECT domain FROM d WHERE domain IS NOT NULL LIMIT $1`,
    [limit],
  );
  return rows.map((r) => r.domain);
}

export interface WeekCounts {
  statuses: Map<number, number>;
  logins: Map<number, number>;
  registrations: Map<number, number>;
}

/**
 * Activity per week since `since` (a Monday, 00:00 UTC), keyed by weeks after it: local statuses posted (and not
 * deleted; reblogs are not posts), distinct users given a token (nothing records sign-ins, and every sign-in gives
 * a token), users registered. Each reads an index over the period only.
 */
export async function weeklyActivity(db: Queryable, since: Date): Promise<WeekCounts> {
  const week = (column: string) => `floor(extract(epoch FROM ${column} - $1::timestamptz) / 604800)::int`;
  // Local statuses: each local account's own, through statuses_account, from the first id of the period.
  const firstId = (BigInt(since.getTime()) << 16n).toString();
  const [statuses, logins, registrations] = await Promise.all([
    db.query<{ w: number; n: string }>(
      `SELECT ${week('s.created_at')} AS w, count(*) AS n
         FROM users u JOIN statuses s ON s.account_id = u.account_id
        WHERE s.deleted_at IS NULL AND s.id >= $2 AND s.created_at >= $1 AND s.reblog_of_id IS NULL
        GROUP BY 1`,
      [since, firstId],
    ),
    db.query<{ w: number; n: string }>(
      `SELECT ${week('created_at')} AS w, count(DISTINCT user_id) AS n
         FROM oauth_access_tokens WHERE user_id IS NOT NULL AND created_at >= $1 GROUP BY 1`,
      [since],
    ),
    db.query<{ w: number; n: string }>(
      `SELECT ${week('created_at')} AS w, count(*) AS n FROM users WHERE created_at >= $1 GROUP BY 1`,
      [since],
    ),
  ]);
  const toMap = (rows: { w: number; n: string }[]) => new Map(rows.map((r) => [Number(r.w), Number(r.n)]));
  return { statuses: toMap(statuses.rows), logins: toMap(logins.rows), registrations: toMap(registrations.rows) };
}

/**
 * When a text setting last changed: the first call with a new digest records now; later ones, in any process,
 * read the same time back.
 */
export async function settingUpdatedAt(db: Queryable, name: string, digest: string): Promise<Date> {
  const { rows } = await db.query<{ updated_at: Date }>(
    `WITH up AS (
       INSERT INTO instance_setting_versions (name, digest) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET digest = excluded.digest, updated_at = now()
        WHERE instance_setting_versions.digest <> excluded.digest
       RETURNING updated_at
     )
     SELECT updated_at, 0 AS o FROM up
     UNION ALL SELECT updated_at, 1 FROM instance_setting_versions WHERE name = $1
     ORDER BY o LIMIT 1`,
    [name, digest],
  );
  return rows[0]!.updated_at;
}
