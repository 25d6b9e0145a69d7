import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { findRoleById, listRoles, roleHolderCounts, type RoleRow } from '../../storage/roles.ts';
import { isId } from '../../storage/ids.ts';
import { changeRole, createRole, removeRole, RoleChangeRefused, type RoleManagementDeps } from '../../services/role-management.ts';
import { can, effectivePermissions, PERMISSION_FLAGS, type Permission } from '../../services/roles.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import type { SignedIn } from './session.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const NOTICES: Record<string, string> = {
  created: 'The role is created.',
  changed: 'The role is saved; its holders\' permissions changed at once.',
  deleted: 'The role is deleted; the people who held it have no role now.',
};
/** Mastodon's words for each permission flag, in its order. */
const PERMISSION_LABELS: Record<Permission, [string, string]> = {
  administrator: ['Administrator', 'Users with this permission will bypass every permission'],
  view_dashboard: ['View dashboard', 'Allows users to access the dashboard and various metrics'],
  view_audit_log: ['View audit log', 'Allows users to see a history of administrative actions on the server'],
  view_devops: ['DevOps', 'Allows users to see the job queues'],
  view_feeds: ['View live and topic feeds', 'Allows users to access the live and topic feeds regardless of server settings'],
  manage_users: ['Manage users', 'Allows users to view other users\' details and perform moderation actions against them'],
  manage_user_access: ['Manage user access', 'Allows users to disable other users\' two-factor authentication, change their e-mail address, and reset their password'],
  delete_user_data: ['Delete user data', 'Allows users to delete other users\' data without delay'],
  manage_reports: ['Manage reports', 'Allows users to review reports and perform moderation actions against them'],
  manage_appeals: ['Manage appeals', 'Allows users to review appeals against moderation actions'],
  manage_federation: ['Manage federation', 'Allows users to block or allow federation with other domains, and control deliverability'],
  manage_blocks: ['Manage blocks', 'Allows users to block e-mail providers and IP addresses'],
  manage_taxonomies: ['Manage taxonomies', 'Allows users to review trending content and update hashtag settings'],
  manage_settings: ['Manage settings', 'Allows users to change site settings'],
  manage_rules: ['Manage rules', 'Allows users to change server rules'],
  manage_announcements: ['Manage announcements', 'Allows users to manage announcements on the server'],
  manage_custom_emojis: ['Manage custom emojis', 'Allows users to manage custom emojis on the server'],
  manage_webhooks: ['Manage webhooks', 'Allows users to set up webhooks for administrative events'],
  manage_invites: ['Manage invites', 'Allows users to browse and deactivate invite links'],
  invite_users: ['Invite users', 'Allows users to invite new people to the server'],
  manage_roles: ['Manage roles', 'Allows users to manage and assign roles below theirs'],
};
const RoleForm = Type.Object({
  name: Type.String({ maxLength: 400 }),
  position: Type.String({ maxLength: 20 }),
  color: Type.Optional(Type.String({ maxLength: 20 })),
  highlighted: Type.Optional(Type.String({ maxLength: 5 })),
  permissions: Type.Optional(Type.Array(Type.String({ maxLength: 40 }), { maxItems: 64 })),
});
type Typed = { name: string; position: string; color: string; highlighted: boolean; permissions: string[] };
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

const namesOf = (bits: number | string) => (Object.keys(PERMISSION_FLAGS) as Permission[]).filter((p) => (Number(bits) & PERMISSION_FLAGS[p]) !== 0);

/**
 * Roles (Mastodon's Administration > Roles), for roles with manage_roles, over the service `npm run cli -- roles …`
 * uses: its rules decide what an operator may do (only roles below their own position, only permissions they have).
 */
export default async function adminRoleRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps: RoleManagementDeps = {
    db: ctx.db, versions: ctx.versions, invalidate: (what) => publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, what),
  };

  const list = async (request: FastifyRequest, reply: FastifyReply, me: SignedIn, notice: string, error: string, status = 200) => {
    const [roles, counts] = await Promise.all([listRoles(ctx.db), roleHolderCounts(ctx.db)]);
    const mine = me.user.role;
    return sendFormPage(ctx, request, reply, 'admin/roles', 'Roles', {
      roles: roles.slice().reverse().map((r) => ({
        ...r, holders: counts.get(r.id) ?? 0, permissionCount: namesOf(effectivePermissions(r.permissions)).length,
        administrator: can(r.permissions, 'administrator'), editable: r.position < (mine?.position ?? 0),
      })),
      notice, error,
    }, status);
  };

  /** The form of a new role (role null) or of one to change, with what was typed when refused. */
  const form = (request: FastifyRequest, reply: FastifyReply, me: SignedIn, role: RoleRow | null, typed: Typed, error: string, status = 200) => {
    const own = effectivePermissions(me.user.role?.permissions);
    return sendFormPage(ctx, request, reply, 'admin/role_form', role ? `Edit role ${role.name}` : 'New role', {
      role, typed, error, ownPosition: me.user.role?.position ?? 0,
      permissions: (Object.keys(PERMISSION_LABELS) as Permission[]).map((p) => ({
        name: p, label: PERMISSION_LABELS[p][0], hint: PERMISSION_LABELS[p][1], checked: typed.permissions.includes(p), allowed: (own & PERMISSION_FLAGS[p]) !== 0,
      })),
    }, status);
  };
  const typedOf = (body: { name: string; position: string; color?: string; highlighted?: string; permissions?: string[] }): Typed =>
    ({ name: body.name, position: body.position.trim(), color: (body.color ?? '').trim(), highlighted: body.highlighted === '1', permissions: body.permissions ?? [] });
  const inputOf = (t: Typed) => {
    if (!/^-?\d{1,7}$/.test(t.position)) throw new RoleChangeRefused('a position is a whole number');
    return { name: t.name, position: Number(t.position), color: t.color, highlighted: t.highlighted, permissions: t.permissions };
  };
  const roleOf = async (id: string) => (isId(id) ? findRoleById(ctx.db, id) : null);

  app.get('/admin/roles', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    return list(request, reply, me, (request.query.notice && NOTICES[request.query.notice]) || '', '');
  });

  app.get('/admin/roles/new', async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const below = Math.max(0, (me.user.role?.position ?? 0) - 1);
    return form(request, reply, me, null, { name: '', position: String(Math.min(below, 10)), color: '', highlighted: false, permissions: [] }, '');
  });

  app.post('/admin/roles', { schema: { body: RoleForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const typed = typedOf(request.body);
    try {
      await createRole(deps, inputOf(typed), me.user.role, me.account.id);
    } catch (err) {
      if (err instanceof RoleChangeRefused) return form(request, reply, me, null, typed, sentence(err.message), 422);
      throw err;
    }
    return reply.redirect('/admin/roles?notice=created', 303);
  });

  app.get('/admin/roles/:id/edit', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const role = await roleOf(request.params.id);
    if (!role) return list(request, reply, me, '', 'That role no longer exists.', 404);
    if (role.position >= (me.user.role?.position ?? 0)) return list(request, reply, me, '', `Not allowed: ${role.name} is not below your own role.`, 403);
    return form(request, reply, me, role, {
      name: role.name, position: String(role.position), color: role.color, highlighted: role.highlighted, permissions: namesOf(role.permissions),
    }, '');
  });

  app.post('/admin/roles/:id', { schema: { params: IdParams, body: RoleForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const role = await roleOf(request.params.id);
    if (!role) return list(request, reply, me, '', 'That role no longer exists.', 404);
    const typed = typedOf(request.body);
    try {
      await changeRole(deps, role.name, inputOf(typed), me.user.role, me.account.id);
    } catch (err) {
      if (err instanceof RoleChangeRefused) return form(request, reply, me, role, typed, sentence(err.message), err.message.startsWith('not allowed') ? 403 : 422);
      throw err;
    }
    return reply.redirect('/admin/roles?notice=changed', 303);
  });

  app.post('/admin/roles/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const role = await roleOf(request.params.id);
    if (!role) return list(request, reply, me, '', 'That role no longer exists.', 404);
    try {
      await removeRole(deps, role.name, me.user.role, me.account.id);
    } catch (err) {
      if (err instanceof RoleChangeRefused) return list(request, reply, me, '', sentence(err.message), 403);
      throw err;
    }
    return reply.redirect('/admin/roles?notice=deleted', 303);
  });
}

function sentence(message: string): string {
  const s = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}
