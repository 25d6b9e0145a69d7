import type { Queryable } from './db.ts';
import type { UserRoleSummary } from './users.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** What moderators see of a local user beside its account (Admin::Account). */
export interface ModeratedUser {
  id: string;
  account_id: string;
  email: string;
  /** Its role, null for none. */
  role: UserRoleSummary | null;
  approved: boolean;
  disabled: boolean;
  locale: string | null;
  reason: string | null;
  created_by_application_id: string | null;
  /** Who made the invite the person joined with, if any. */
  invited_by_account_id: string | null;
  created_at: Date;
}

const USER_COLUMNS = `id::text, account_id::text, email,
  (SELECT jsonb_build_object('id', r.id::text, 'name', r.name, 'color', r.color, 'position', r.position,
     'permissions', r.permissions::text, 'highlighted', r.highlighted) FROM user_roles r WHERE r.id = users.role_id) AS role, approved, disabled, locale, reason,
  created_by_application_id::text, (SELECT i.account_id::text FROM invites i WHERE i.id = users.invite_id) AS invited_by_account_id, created_at`;

export async function usersOfAccounts(db: Queryable, accountIds: string[]): Promise<Map<string, ModeratedUser>> {
  if (accountIds.length === 0) return new Map();
  const { rows } = await db.query<ModeratedUser>(
    `SELECT ${USER_COLUMNS} FROM users WHERE account_id = ANY($1::bigint[])`,
    [accountIds],
  );
  return new Map(rows.map((u) => [u.account_id, u]));
}

export type AccountFlag = 'suspended' | 'silenced' | 'sensitized';
const FLAG_COLUMN: Record<AccountFlag, string> = { suspended: 'suspended_at', silenced: 'silenced_at', sensitized: 'sensitized_at' };

/** Sets or clears a moderation mark; returns whether the account exists. A mark already set keeps its time. */
export async function setAccountFlag(db: Queryable, accountId: string, flag: AccountFlag, on: boolean): Promise<boolean> {
  const column = FLAG_COLUMN[flag];
  const { rowCount } = await db.query(
    `UPDATE accounts SET ${column} = CASE WHEN $2::boolean THEN coalesce(${column}, now()) END, updated_at = now() WHERE id = $1`,
    [accountId, on],
  );
  return rowCount === 1;
}

export async function setUserDisabled(db: Queryable, accountId: string, disabled: boolean): Promise<void> {
  await db.query(`UPDATE users SET disabled = $2, updated_at = now() WHERE account_id = $1`, [accountId, disabled]);
}

/** A local account that never was approved, removed with everything that hangs off it (a rejected sign-up). */
export async function deletePendingAccount(db: Queryable, accountId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM accounts a USING users u WHERE a.id = $1 AND u.account_id = a.id AND a.domain IS NULL AND NOT u.approved`,
    [accountId],
  );
  return rowCount === 1;
}

/** Mastodon's admin account filters (v1 names; v2's origin/status/permissions map onto them). */
export interface AdminAccountFilters {
  local?: boolean | undefined;
  remote?: boolean | undefined;
  active?: boolean | undefined;
  pending?: boolean | undefined;
  disabled?: boolean | undefined;
  silenced?: boolean | undefined;
  suspended?: boolean | undefined;
  sensitized?: boolean | undefined;
  staff?: boolean | undefined;
  username?: string | undefined;
  displayName?: string | undefined;
  byDomain?: string | undefined;
  email?: string | undefined;
  /** An address range in canonical form (services/admin-blocks.ts parseIpRange); anything else is refused by PostgreSQL. */
  ip?: string | undefined;
}

const likePrefix = (s: string) => `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Account ids for the admin list, newest first, paged by id. Each true filter narrows the walk down the primary key
 * (or a partial index on the mark); a page is bounded by its limit.
 */
export async function adminAccountIds(db: Queryable, f: AdminAccountFilters, p: PageParams): Promise<string[]> {
  const values: unknown[] = [];
  const where: string[] = [];
  const add = (sql: string, value?: unknown) => {
    if (value !== undefined) values.push(value);
    where.push(sql.replace('$?', `$${values.length}`));
  };
  if (f.local) add('a.domain IS NULL');
  if (f.remote) add('a.domain IS NOT NULL');
  if (f.byDomain) add('lower(a.domain) = lower($?)', f.byDomain);
  if (f.active) add('a.suspended_at IS NULL');
  if (f.suspended) add('a.suspended_at IS NOT NULL');
  if (f.silenced) add('a.silenced_at IS NOT NULL');
  if (f.sensitized) add('a.sensitized_at IS NOT NULL');
  if (f.pending) add('u.id IS NOT NULL AND NOT u.approved');
  if (f.disabled) add('u.disabled');
  if (f.staff) add('u.role_id IS NOT NULL');
  if (f.username) add(`lower(a.username) LIKE lower($?)`, likePrefix(f.username));
  if (f.displayName) add(`a.display_name ILIKE $?`, `%${f.displayName.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  if (f.email) add(`lower(u.email) LIKE lower($?)`, likePrefix(f.email));
  // The range (canonical, as services/admin-blocks.ts parseIpRange writes it) holds the last sign-in's address or a
  // browser session's (Mastodon's user_ips).
  if (f.ip) {
    values.push(f.ip);
    const n = `$${values.length}::cidr`;
    where.push(`(u.last_sign_in_ip <<= ${n} OR EXISTS (SELECT 1 FROM web_sessions s WHERE s.user_id = u.id AND s.ip <<= ${n}))`);
  }
  const c = pageClause('a.id', p, values);
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id::text FROM accounts a LEFT JOIN users u ON u.account_id = a.id
      WHERE ${[...where, c.where].join(' AND ')} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p).map((r) => r.id);
}

/** Where a local account signed in from (Mastodon's user_ips): its last sign-in and its browser sessions, newest first. */
export async function accountIps(db: Queryable, accountId: string, limit = 50): Promise<{ ip: string; used_at: Date }[]> {
  const { rows } = await db.query<{ ip: string; used_at: Date }>(
    `SELECT host(ip) AS ip, max(used_at) AS used_at FROM (
       SELECT u.last_sign_in_ip AS ip, u.last_sign_in_at AS used_at FROM users u WHERE u.account_id = $1 AND u.last_sign_in_ip IS NOT NULL
       UNION ALL
       SELECT s.ip, s.last_active_at FROM web_sessions s JOIN users u ON u.id = s.user_id WHERE u.account_id = $1 AND s.ip IS NOT NULL
     ) a WHERE used_at IS NOT NULL GROUP BY ip ORDER BY max(used_at) DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows;
}
