import type { Queryable } from './db.ts';

export interface InstanceStats {
  userCount: number;
  domainCount: number;
  activeMonth: number;
}

export async function instanceStats(db: Queryable): Promise<InstanceStats> {
  const { rows } = await db.query<{ users: string; domains: string; active: string }>(
    `SELECT (SELECT count(*) FROM users WHERE approved) AS users,
            (SELECT count(DISTINCT lower(domain)) FROM accounts WHERE domain IS NOT NULL) AS domains,
            (SELECT count(*) FROM oauth_access_tokens WHERE user_id IS NOT NULL AND revoked_at IS NULL
               AND created_at > now() - interval '30 days') AS active`,
  );
  const r = rows[0]!;
  return { userCount: Number(r.users), domainCount: Number(r.domains), activeMonth: Number(r.active) };
}
