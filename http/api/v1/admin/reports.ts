import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { Bool, IdList, PagingQuery, isId } from '../../../params.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { notFound, unprocessable } from '../../../../errors.ts';
import * as reports from '../../../../storage/reports.ts';
import { listRules } from '../../../../storage/rules.ts';
import { renderAdminReports } from '../../../serializers/report.ts';
import type { AppContext } from '../../../../context.ts';
import { changeReport, moderationDeps, reportActions } from '../../../../services/moderation.ts';

const READ = { kind: 'admin', scopes: ['admin:read:reports'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:reports'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

const ListQuery = Type.Object({
  ...PagingQuery(100, 200),
  resolved: Type.Optional(Bool()),
  account_id: Type.Optional(Type.String({ maxLength: 40 })),
  target_account_id: Type.Optional(Type.String({ maxLength: 40 })),
});

const Update = Type.Object({
  category: Type.Optional(Type.Union([Type.Literal('spam'), Type.Literal('legal'), Type.Literal('violation'), Type.Literal('other')])),
  rule_ids: Type.Optional(IdList(50)),
});

async function one(ctx: AppContext, report: reports.ReportRow | null) {
  if (!report) throw notFound();
  const [rendered] = await renderAdminReports(ctx.db, ctx.render, [report]);
  if (!rendered) throw notFound();
  return rendered;
}

const reportId = (id: string) => {
  if (!isId(id)) throw notFound();
  return id;
};

/** Mastodon's admin reports API (/api/v1/admin/reports): list, view, assign, resolve, reopen, recategorise. */
export default async function adminReportsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps = moderationDeps(ctx);

  app.get('/api/v1/admin/reports', {
    schema: { querystring: ListQuery },
    config: { auth: READ },
  }, async (request, reply) => {
    const q = request.query;
    // An id that is no id matches nothing (rather than everything).
    if ((q.account_id && !isId(q.account_id)) || (q.target_account_id && !isId(q.target_account_id))) return [];
    const page = await reports.reportsPage(ctx.db, { resolved: q.resolved, accountId: q.account_id, targetAccountId: q.target_account_id }, pageParams(q, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, page[0]?.id ?? null, page.at(-1)?.id ?? null);
    return renderAdminReports(ctx.db, ctx.render, page);
  });

  app.get('/api/v1/admin/reports/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) =>
    one(ctx, await reports.findReport(ctx.db, reportId(request.params.id))));

  app.put('/api/v1/admin/reports/:id', { schema: { params: IdParams, body: Update }, config: { auth: WRITE } }, async (request) => {
    const id = reportId(request.params.id);
    const existing = await reports.findReport(ctx.db, id);
    if (!existing) throw notFound();
    const ruleIds = request.body.rule_ids;
    if (ruleIds) {
      const known = new Set((await listRules(ctx.db)).map((r) => r.id));
      if (ruleIds.some((r) => !known.has(r))) throw unprocessable('Validation failed: Rule ids contains an unknown rule');
    }
    return one(ctx, await changeReport(deps, requireViewer(request), 'update', (tx) => reports.updateReport(tx, id, { category: request.body.category, ruleIds })));
  });

  const actions = {
    assign_to_self: reportActions.assignToSelf,
    unassign: reportActions.unassign,
    resolve: reportActions.resolve,
    reopen: reportActions.reopen,
  };
  for (const [name, act] of Object.entries(actions)) {
    app.post(`/api/v1/admin/reports/:id/${name}`, { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
      const me = requireViewer(request);
      return one(ctx, await act(deps, reportId(request.params.id), me));
    });
  }
}
