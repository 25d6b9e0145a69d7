import { transaction, type Db } from '../storage/db.ts';
import { logAction, type Actor } from './action-log.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import type { UserRoleSummary } from '../storage/users.ts';
import { findRoleByName, listRoles, setUserRole, type RoleRow } from '../storage/roles.ts';
import type { TokenInvalidation } from './token-cache.ts';
import { can } from './roles.ts';

export interface RoleAssignmentDeps {
  db: Db;
  versions: Pick<CacheVersions, 'bump'>;
  /** Tells every process's token cache (services/token-cache.ts): the user's permissions change at once everywhere. */
  invalidate: (what: TokenInvalidation) => Promise<void>;
}

export class RoleRefused extends Error {}

/**
 * Gives a local user a role by name, or none (`null`). When an operator does it (`actor`: their role), it must be
 * able to manage roles, and both the user's present role and the new one must be below its own, as Mastodon's
 * UserPolicy#change_role? and its assignable roles have it; an administrator may give any role. Returns the role.
 */
export async function assignRole(
  deps: RoleAssignmentDeps,
  target: { userId: string; accountId: string; role: UserRoleSummary | null },
  roleName: string | null,
  actor?: UserRoleSummary | null,
  /** For the audit log: who gives it (undefined: nobody's doing, logged nowhere) and the account's acct. */
  log?: { by: Actor; acct: string },
): Promise<RoleRow | null> {
  const role = roleName === null ? null : await findRoleByName(deps.db, roleName);
  if (roleName !== null && !role) throw new RoleRefused(`no role named ${roleName} (roles: ${(await listRoles(deps.db)).map((r) => r.name).join(', ')})`);
  if (actor !== undefined) {
    const admin = can(actor?.permissions, 'administrator');
    const below = (r: { position: number } | null) => r === null || (actor !== null && r.position < actor.position);
    if (!can(actor?.permissions, 'manage_roles') || (!admin && (!below(target.role) || !below(role)))) {
      throw new RoleRefused('not allowed: that role is not yours to give');
    }
  }
  await transaction(deps.db, async (tx) => {
    await setUserRole(tx, target.userId, role?.id ?? null);
    if (log) await logAction(tx, log.by, 'change_role', { type: 'Account', id: target.accountId, name: `${log.acct} → ${role?.name ?? 'no role'}` });
  });
  // Profiles show the role (the account's cached entity) and tokens carry its permissions (the token cache).
  await deps.versions.bump({ accounts: [target.accountId] });
  await deps.invalidate({ userId: target.userId });
  return role;
}
