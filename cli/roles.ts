// The server's roles: `npm run cli -- roles …` (dispatched from cli/admin.ts), over services/role-management.ts. Run
// with --as <username>, the operator's role must be able to manage roles, and may touch only roles below its own.
import { parseArgs } from 'node:util';
import { listRoles } from '../storage/roles.ts';
import type { UserRoleSummary } from '../storage/users.ts';
import type { Actor } from '../services/action-log.ts';
import { changeRole, createRole, removeRole, RoleChangeRefused, type RoleManagementDeps } from '../services/role-management.ts';
import { PERMISSION_FLAGS } from '../services/roles.ts';

export const ROLES_USAGE = `  roles list
      Prints every role, lowest position first: name, position, permissions, and whether profiles show it.
  roles create <name> --position <n> [--permissions <flag,flag…>] [--color <#rrggbb>] [--highlighted]
      Makes a role of the server's own with Mastodon's permission flags: ${Object.keys(PERMISSION_FLAGS).join(', ')}.
      A role acts only on roles below its position (Moderator 10, Admin 100, Owner 1000).
  roles edit <name> [--name <new name>] [--position <n>] [--permissions <flag,flag…>] [--color <#rrggbb>] [--highlighted | --not-highlighted]
      Changes a role; what is not given stays. Its holders' permissions change at once in every running server.
  roles delete <name>
      Deletes a role; the people who held it are left without one.`;

export class RolesUsageError extends Error {}

const flags = (v: string | undefined) => (v === undefined ? undefined : v.split(',').map((f) => f.trim()).filter((f) => f !== ''));
function position(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^-?\d{1,7}$/.test(v)) throw new RolesUsageError('--position takes a whole number');
  return Number(v);
}

export async function rolesCommand(argv: string[], deps: RoleManagementDeps, actor: UserRoleSummary | null | undefined, out: (line: string) => void, by: Actor = null): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true,
    options: { name: { type: 'string' }, position: { type: 'string' }, permissions: { type: 'string' }, color: { type: 'string' }, highlighted: { type: 'boolean' }, 'not-highlighted': { type: 'boolean' } },
  });
  const [command, name, ...rest] = positionals;
  if (rest.length > 0) throw new RolesUsageError(`unexpected argument: ${rest[0]} (quote a name with spaces)`);
  try {
    switch (command) {
      case 'list': {
        for (const r of await listRoles(deps.db)) {
          const bits = Number(r.permissions);
          const names = Object.entries(PERMISSION_FLAGS).filter(([, bit]) => (bits & bit) !== 0).map(([p]) => p);
          out(`${r.name}  position ${r.position}  ${names.join(',') || 'no permissions'}${r.highlighted ? '  shown on profiles' : ''}${r.color ? `  ${r.color}` : ''}`);
        }
        return;
      }
      case 'create': {
        if (!name) throw new RolesUsageError('roles create takes the role\'s name');
        const at = position(values.position);
        if (at === undefined) throw new RolesUsageError('--position is required (below your own role\'s when run --as an operator)');
        const role = await createRole(deps, { name, position: at, permissions: flags(values.permissions) ?? [], color: values.color ?? '', highlighted: values.highlighted ?? false }, actor, by);
        out(`role ${role.name} created`);
        return;
      }
      case 'edit': {
        if (!name) throw new RolesUsageError('roles edit takes the role\'s name');
        const highlighted = values.highlighted ? true : values['not-highlighted'] ? false : undefined;
        const change = {
          ...(values.name !== undefined ? { name: values.name } : {}),
          ...(values.position !== undefined ? { position: position(values.position)! } : {}),
          ...(values.permissions !== undefined ? { permissions: flags(values.permissions)! } : {}),
          ...(values.color !== undefined ? { color: values.color } : {}),
          ...(highlighted !== undefined ? { highlighted } : {}),
        };
        const role = await changeRole(deps, name, change, actor, by);
        out(`role ${role.name} changed`);
        return;
      }
      case 'delete': {
        if (!name) throw new RolesUsageError('roles delete takes the role\'s name');
        const holders = await removeRole(deps, name, actor, by);
        out(`role ${name} deleted; ${holders} ${holders === 1 ? 'person' : 'people'} left without a role`);
        return;
      }
      default:
        throw new RolesUsageError(command ? `unknown command: roles ${command}` : 'roles list, create, edit or delete');
    }
  } catch (err) {
    if (err instanceof RoleChangeRefused) throw new Error(err.message);
    throw err;
  }
}
