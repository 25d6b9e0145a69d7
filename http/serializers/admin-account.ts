import type { Queryable } from '../../storage/db.ts';
import { findAccountsByIds, type AccountRow } from '../../storage/accounts.ts';
import { usersOfAccounts, type ModeratedUser } from '../../storage/moderation.ts';
import type { RenderContext } from './context.ts';
import { renderAccount, renderRole } from './account.ts';

/**
 * Mastodon's Admin::Account: what moderators see of an account. A remote account has no user, so no email, role or
 * locale (null, as Mastodon sends them). No sign-in addresses are kept here, so `ip` is null and `ips` empty.
 */
export function renderAdminAccount(ctx: RenderContext, a: AccountRow, u: ModeratedUser | null) {
  return {
    id: a.id,
    username: a.username,
    domain: a.domain,
    created_at: (u?.created_at ?? a.created_at).toISOString(),
    email: u?.email ?? null,
    ip: null,
    ips: [],
    role: u ? renderRole(u.role) : null,
    // No e-mail confirmation step exists here: a local user is confirmed from the start.
    confirmed: u !== null,
    suspended: a.suspended_at !== null,
    silenced: a.silenced_at !== null,
    sensitized: a.sensitized_at !== null,
    disabled: u?.disabled ?? false,
    approved: u?.approved ?? true,
    locale: u?.locale ?? null,
    invite_request: u?.reason ?? null,
    created_by_application_id: u?.created_by_application_id ?? null,
    invited_by_account_id: u?.invited_by_account_id ?? null,
    account: renderAccount(ctx, a),
  };
}

export type AdminAccountEntity = ReturnType<typeof renderAdminAccount>;

/** Admin::Account entities of these accounts by id (those that exist), loaded in two queries. */
export async function loadAdminAccounts(db: Queryable, ctx: RenderContext, ids: string[]): Promise<Map<string, AdminAccountEntity>> {
  const unique = [...new Set(ids)];
  const [accounts, users] = await Promise.all([findAccountsByIds(db, unique), usersOfAccounts(db, unique)]);
  return new Map(accounts.map((a) => [a.id, renderAdminAccount(ctx, a, users.get(a.id) ?? null)]));
}
