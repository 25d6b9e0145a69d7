import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';
import { adminAccountIds } from '../../storage/moderation.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { ACTIONS, TARGET_TYPES } from '../../services/action-log.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const PAGE = 50;
const Query = Type.Object({
  account_id: Type.Optional(Type.String({ maxLength: 20 })),
  action_type: Type.Optional(Type.String({ maxLength: 40 })),
  target_type: Type.Optional(Type.String({ maxLength: 40 })),
  max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })),
});

/** Where an entry's target is looked at, while it exists. */
function targetLink(type: string, id: string | null): string | null {
  if (!id) return null;
  switch (type) {
    case 'Account': return `/admin/accounts/${id}`;
    case 'Report': return `/admin/reports/${id}`;
    default: return null;
  }
}

/** The audit log (Mastodon's Admin::ActionLogsController): who did what to what, newest first, by operator and action. */
export default async function adminActionLogPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  app.get('/admin/action_logs', { schema: { querystring: Query } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const q = request.query;
    // A filter that is no actor, action or kind matches nothing rather than everything.
    const accountId = q.account_id ? (/^\d{1,19}$/.test(q.account_id) ? q.account_id : '0') : undefined;
    const action = q.action_type || undefined;
    const targetType = q.target_type || undefined;
    const rows = await actionLogsPage(ctx.db, { accountId, action, targetType }, { limit: PAGE + 1, maxId: q.max_id });
    const page = rows.slice(0, PAGE);
    // The filter offers the operators (accounts with a role), as Mastodon's does.
    const actorIds = await adminAccountIds(ctx.db, { staff: true }, { limit: 200 });
    const names = new Map((await findAccountsByIds(ctx.db, [...new Set([...actorIds, ...page.flatMap((r) => (r.account_id ? [r.account_id] : []))])])).map((a) => [a.id, a.username]));
    const next = new URLSearchParams(Object.entries({ ...q, max_id: page.at(-1)?.id }).filter((e): e is [string, string] => !!e[1]));
    return sendFormPage(ctx, request, reply, 'admin/action-logs', 'Audit log', {
      q, actions: [...new Set(ACTIONS)].sort(), targetTypes: TARGET_TYPES,
      actors: actorIds.map((id) => ({ id, name: names.get(id) ?? id })).sort((a, b) => a.name.localeCompare(b.name)),
      entries: page.map((r) => ({
        who: r.account_id ? `@${names.get(r.account_id) ?? '?'}` : 'the command line',
        action: r.action, targetType: r.target_type, name: r.human_identifier, link: targetLink(r.target_type, r.target_id), createdAt: r.created_at,
      })),
      nextPage: rows.length > PAGE ? `/admin/action_logs?${next}` : '',
      notice: '', error: '',
    });
  });
}
