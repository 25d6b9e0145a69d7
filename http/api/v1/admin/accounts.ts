import { Type } from '../../../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { Bool, PagingQuery, isId } from '../../../params.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { pageParams, setLinkHeader, type PagingQuery as Paging } from '../../../paging.ts';
import { notFound } from '../../../../errors.ts';
import { findAccountById, type AccountRow } from '../../../../storage/accounts.ts';
import { adminAccountIds, usersOfAccounts, type AdminAccountFilters } from '../../../../storage/moderation.ts';
import * as moderation from '../../../../services/moderation.ts';
import { parseIpRange } from '../../../../services/admin-blocks.ts';
import { deleteSuspendedAccount } from '../../../../services/account-deletion.ts';
import { loadAdminAccounts, renderAdminAccount } from '../../../serializers/admin-account.ts';
import type { AppContext } from '../../../../context.ts';

const READ = { kind: 'admin', scopes: ['admin:read:accounts'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:accounts'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

const Search = {
  username: Type.Optional(Type.String({ maxLength: 100 })),
  display_name: Type.Optional(Type.String({ maxLength: 100 })),
  by_domain: Type.Optional(Type.String({ maxLength: 253 })),
  email: Type.Optional(Type.String({ maxLength: 320 })),
  ip: Type.Optional(Type.String({ maxLength: 64 })),
};

const ListV1 = Type.Object({
  ...PagingQuery(100, 200),
  ...Search,
  local: Type.Optional(Bool()),
  remote: Type.Optional(Bool()),
  active: Type.Optional(Bool()),
  pending: Type.Optional(Bool()),
  disabled: Type.Optional(Bool()),
  silenced: Type.Optional(Bool()),
  suspended: Type.Optional(Bool()),
  sensitized: Type.Optional(Bool()),
  staff: Type.Optional(Bool()),
});

const ListV2 = Type.Object({
  ...PagingQuery(100, 200),
  ...Search,
  origin: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('remote')])),
  status: Type.Optional(Type.Union(['active', 'pending', 'disabled', 'silenced', 'suspended'].map((s) => Type.Literal(s)))),
  permissions: Type.Optional(Type.Literal('staff')),
  role_ids: Type.Optional(Type.Array(Type.String({ maxLength: 40 }), { maxItems: 20 })),
  invited_by: Type.Optional(Type.String({ maxLength: 40 })),
});

const Action = Type.Object({
  type: Type.Union(['none', 'sensitive', 'disable', 'silence', 'suspend'].map((s) => Type.Literal(s))),
  report_id: Type.Optional(Type.String({ maxLength: 40 })),
  warning_preset_id: Type.Optional(Type.String({ maxLength: 40 })),
  text: Type.Optional(Type.String({ maxLength: 5000 })),
  send_email_notification: Type.Optional(Bool()),
});

async function target(ctx: AppContext, id: string): Promise<AccountRow> {
  const account = isId(id) ? await findAccountById(ctx.db, id) : null;
  if (!account) throw notFound();
  return account;
}

/** The account as moderators see it now (after an action, read again). */
async function adminView(ctx: AppContext, id: string) {
  const account = await findAccountById(ctx.db, id);
  if (!account) throw notFound();
  const user = (await usersOfAccounts(ctx.db, [id])).get(id) ?? null;
  return renderAdminAccount(ctx.render, account, user);
}

async function listPage(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, q: Paging & { username?: string | undefined; display_name?: string | undefined; by_domain?: string | undefined; email?: string | undefined; ip?: string | undefined }, filters: AdminAccountFilters) {
  // An address that is no address matches nobody.
  const ip = q.ip ? parseIpRange(q.ip) : undefined;
  if (ip === null) return [];
  const ids = await adminAccountIds(ctx.db, { ...filters, username: q.username, displayName: q.display_name, byDomain: q.by_domain, email: q.email, ip }, pageParams(q, 100));
  setLinkHeader(request, reply, ctx.config.publicUrl, ids[0] ?? null, ids.at(-1) ?? null);
  const rendered = await loadAdminAccounts(ctx.db, ctx.render, ids);
  return ids.map((id) => rendered.get(id)).filter((a) => !!a);
}

/** Mastodon's admin accounts API: list (v1 and v2 filters), view, act (sensitive, disable, silence, suspend), undo, approve, reject, delete. */
export default async function adminAccountsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps = moderation.moderationDeps(ctx);

  app.get('/api/v1/admin/accounts', { schema: { querystring: ListV1 }, config: { auth: READ } }, async (request, reply) => {
    const q = request.query;
    return listPage(ctx, request, reply, q, {
      local: q.local, remote: q.remote, active: q.active, pending: q.pending, disabled: q.disabled,
      silenced: q.silenced, suspended: q.suspended, sensitized: q.sensitized, staff: q.staff,
    });
  });

  app.get('/api/v2/admin/accounts', { schema: { querystring: ListV2 }, config: { auth: READ } }, async (request, reply) => {
    const q = request.query;
    // Roles other than administrator and invitations do not exist here: filtering by them finds nobody.
    if ((q.role_ids && q.role_ids.length > 0) || q.invited_by) return [];
    return listPage(ctx, request, reply, q, {
      local: q.origin === 'local', remote: q.origin === 'remote',
      active: q.status === 'active', pending: q.status === 'pending', disabled: q.status === 'disabled',
      silenced: q.status === 'silenced', suspended: q.status === 'suspended', staff: q.permissions === 'staff',
    });
  });

  app.get('/api/v1/admin/accounts/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) =>
    adminView(ctx, (await target(ctx, request.params.id)).id));

  app.post('/api/v1/admin/accounts/:id/action', { schema: { params: IdParams, body: Action }, config: { auth: WRITE } }, async (request) => {
    const me = requireViewer(request);
    const account = await target(ctx, request.params.id);
    const reportId = request.body.report_id;
    if (reportId !== undefined && !isId(reportId)) throw notFound();
    await moderation.takeAccountAction(deps, me, account, request.body.type as moderation.AccountActionType, {
      reportId, text: request.body.text, sendEmail: request.body.send_email_notification ?? true,
    });
    return {};
  });

  const undo: Record<string, (a: AccountRow, me: string) => Promise<void>> = {
    unsuspend: (a, me) => moderation.unsuspendAccount(deps, a, me),
    unsilence: (a, me) => moderation.setSilenced(deps, a, false, me),
    unsensitive: (a, me) => moderation.setSensitized(deps, a, false, me),
    enable: (a, me) => moderation.setDisabled(deps, a, false, me),
    approve: (a, me) => moderation.approveAccount(deps, a, me),
  };
  for (const [name, act] of Object.entries(undo)) {
    app.post(`/api/v1/admin/accounts/:id/${name}`, { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
      const account = await target(ctx, request.params.id);
      await act(account, requireViewer(request));
      return adminView(ctx, account.id);
    });
  }

  // A rejected sign-up is gone once rejected: the entity is the one it had just before.
  app.post('/api/v1/admin/accounts/:id/reject', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const account = await target(ctx, request.params.id);
    const before = await adminView(ctx, account.id);
    await moderation.rejectAccount(deps, account, requireViewer(request));
    return before;
  });

  app.delete('/api/v1/admin/accounts/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const account = await target(ctx, request.params.id);
    // Suspended accounts only (403 otherwise); the data goes in a job, the answer is the account as it is now.
    await deleteSuspendedAccount(deps, account, requireViewer(request));
    return adminView(ctx, account.id);
  });
}
