import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { UserRoleSummary } from '../storage/users.ts';
import { deleteRole, findRoleByName, insertRole, listRoles, updateRole, usersOfRole, type RoleRow } from '../storage/roles.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import type { TokenInvalidation } from './token-cache.ts';
import { logAction, type Actor } from './action-log.ts';
import { can, effectivePermissions, PERMISSION_FLAGS, permissionBits, type Permission } from './roles.ts';

/**
 * Making, changing and deleting the server's roles, as Mastodon's UserRole validations and UserRolePolicy have it:
 * an operator acting (`actor`: their role) must be able to manage roles, and may only touch a role below their own
 * position, give it a position below their own, and give it only permissions they have themselves. Without an actor
 * (the shell's operator on the command line) all of it is allowed. Users of a changed or deleted role learn of it at
 * once (their tokens' cached permissions are dropped everywhere). Each change is in the operators' audit log (`by`:
 * the operator's account, null for the shell's operator), written in the change's transaction.
 */
export interface RoleManagementDeps {
  db: Db;
  /** Profiles show a highlighted role: its holders' cached accounts are renewed. */
  versions: Pick<CacheVersions, 'bump'>;
  invalidate: (what: TokenInvalidation) => Promise<void>;
}

export class RoleChangeRefused extends Error {}

export interface RoleInput {
  name: string;
  permissions: readonly string[];
  position: number;
  color?: string;
  highlighted?: boolean;
}

const COLOR = /^#([0-9a-f]{3}){1,2}$/i;

/** `kept`: permission bits the role holds that the actor lacks; they stay as they are, beyond the actor's reach. */
function checked(input: RoleInput, actor: UserRoleSummary | null | undefined, kept = 0) {
  const name = input.name.trim();
  if (name === '' || name.length > 100) throw new RoleChangeRefused('a role\'s name is 1 to 100 characters');
  const unknown = input.permissions.find((p) => !(p in PERMISSION_FLAGS));
  if (unknown !== undefined) throw new RoleChangeRefused(`no permission named ${unknown} (permissions: ${Object.keys(PERMISSION_FLAGS).join(', ')})`);
  if (!Number.isInteger(input.position) || Math.abs(input.position) > 1_000_000) throw new RoleChangeRefused('a position is a whole number');
  const color = (input.color ?? '').trim();
  if (color !== '' && !COLOR.test(color)) throw new RoleChangeRefused('a colour is #rgb or #rrggbb');
  const bits = permissionBits(input.permissions as Permission[]);
  if (actor !== undefined) {
    if (input.position >= (actor?.position ?? 0)) throw new RoleChangeRefused('not allowed: a role\'s position must be below your own role\'s');
    if ((bits & ~effectivePermissions(actor?.permissions)) !== 0) throw new RoleChangeRefused('not allowed: you cannot give permissions your own role lacks');
  }
  return { name, color, position: input.position, permissions: bits | kept, highlighted: input.highlighted ?? false };
}

/** An operator's right to touch an existing role: manage_roles, and the role below their own. */
function mayTouch(role: RoleRow, actor: UserRoleSummary | null | undefined): void {
  if (actor === undefined) return;
  if (!can(actor?.permissions, 'manage_roles') || role.position >= (actor?.position ?? 0)) {
    throw new RoleChangeRefused(`not allowed: ${role.name} is not below your own role`);
  }
}

async function existing(db: Db, name: string): Promise<RoleRow> {
  const role = await findRoleByName(db, name);
  if (!role) throw new RoleChangeRefused(`no role named ${name} (roles: ${(await listRoles(db)).map((r) => r.name).join(', ')})`);
  return role;
}

export async function createRole(deps: RoleManagementDeps, input: RoleInput, actor?: UserRoleSummary | null, by?: Actor): Promise<RoleRow> {
  if (actor !== undefined && !can(actor?.permissions, 'manage_roles')) throw new RoleChangeRefused('not allowed: your role cannot manage roles');
  const values = checked(input, actor);
  if (await findRoleByName(deps.db, values.name)) throw new RoleChangeRefused(`a role named ${values.name} exists`);
  return transaction(deps.db, async (tx) => {
    const role = await insertRole(tx, values);
    await logAction(tx, by, 'create', roleTarget(role));
    return role;
  });
}

const roleTarget = (role: RoleRow, gone = false) => ({ type: 'UserRole' as const, id: gone ? null : role.id, name: role.name });

/** Changes a role, by its present name; what is not given keeps its value. */
export async function changeRole(deps: RoleManagementDeps, name: string, change: Partial<RoleInput>, actor?: UserRoleSummary | null, by?: Actor): Promise<RoleRow> {
  const role = await existing(deps.db, name);
  mayTouch(role, actor);
  // An operator changes only the permissions they have themselves: those of the role beyond their own are kept,
  // neither given nor taken away (a form cannot offer them, so leaving them out means no change).
  const beyond = actor === undefined ? 0 : Number(role.permissions) & ~effectivePermissions(actor?.permissions);
  const current = Object.entries(PERMISSION_FLAGS).filter(([, bit]) => (Number(role.permissions) & bit & ~beyond) !== 0).map(([p]) => p);
  const requested = change.permissions?.filter((p) => !(p in PERMISSION_FLAGS) || (PERMISSION_FLAGS[p as Permission] & beyond) === 0);
  const values = checked({
    name: change.name ?? role.name, permissions: requested ?? current, position: change.position ?? role.position,
    color: change.color ?? role.color, highlighted: change.highlighted ?? role.highlighted,
  }, actor, beyond);
  const other = values.name.toLowerCase() !== role.name.toLowerCase() ? await findRoleByName(deps.db, values.name) : null;
  if (other) throw new RoleChangeRefused(`a role named ${values.name} exists`);
  const updated = await transaction(deps.db, async (tx) => {
    const row = await updateRole(tx, role.id, values);
    if (row) await logAction(tx, by, 'update', roleTarget(row));
    return row;
  });
  if (!updated) throw new RoleChangeRefused(`no role named ${name}`);
  await holdersChanged(deps, await usersOfRole(deps.db, role.id));
  return updated;
}

/** Deletes a role; its users are left without one. Returns how many they were. */
export async function removeRole(deps: RoleManagementDeps, name: string, actor?: UserRoleSummary | null, by?: Actor): Promise<number> {
  const role = await existing(deps.db, name);
  mayTouch(role, actor);
  const users = await usersOfRole(deps.db, role.id);
  await transaction(deps.db, async (tx) => {
    if (await deleteRole(tx, role.id)) await logAction(tx, by, 'destroy', roleTarget(role, true));
  });
  await holdersChanged(deps, users);
  return users.length;
}

async function holdersChanged(deps: RoleManagementDeps, users: { id: string; account_id: string }[]): Promise<void> {
  if (users.length === 0) return;
  await deps.versions.bump({ accounts: users.map((u) => u.account_id) });
  for (const u of users) await deps.invalidate({ userId: u.id });
}
