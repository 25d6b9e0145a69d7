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
