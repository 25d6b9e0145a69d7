import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, IdList, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound } from '../../../errors.ts';
import { findAccountById } from '../../../storage/accounts.ts';
import { fileReport, moderationDeps } from '../../../services/moderation.ts';
import { renderReport } from '../../serializers/report.ts';

const Category = Type.Union([Type.Literal('spam'), Type.Literal('legal'), Type.Literal('violation'), Type.Literal('other')]);

const FileReport = Type.Object({
  account_id: Type.String({ maxLength: 40 }),
  status_ids: Type.Optional(IdList(100)),
  rule_ids: Type.Optional(IdList(50)),
  collection_ids: Type.Optional(IdList(50)),
  comment: Type.Optional(Type.String({ maxLength: 10_000 })),
  category: Type.Optional(Category),
  forward: Type.Optional(Bool()),
  forward_to_domains: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 20 })),
});

/** POST /api/v1/reports: a person reports an account (and some of its statuses) to this server's moderators. */
export default async function reportsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/api/v1/reports', {
    schema: { body: FileReport },
    config: { auth: { kind: 'user', scopes: ['write:reports'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const body = request.body;
    if (!isId(body.account_id) || !(body.status_ids ?? []).every((id) => isId(id))) throw notFound();
    const reporter = (await findAccountById(ctx.db, viewerId))!;
    const report = await fileReport(moderationDeps(ctx), reporter, {
      accountId: body.account_id,
      statusIds: body.status_ids ?? [],
      ruleIds: body.rule_ids ?? [],
      comment: body.comment ?? '',
      category: body.category ?? 'other',
      forward: body.forward ?? false,
    });
    const target = (await findAccountById(ctx.db, report.target_account_id))!;
    return renderReport(ctx.render, report, target);
  });
}
