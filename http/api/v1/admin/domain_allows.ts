import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import type { AppContext } from '../../../../context.ts';
import { PagingQuery, isId } from '../../../params.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { notFound } from '../../../../errors.ts';
import { domainAllowsPage, findDomainAllow } from '../../../../storage/instance-domain-blocks.ts';
import { createDomainAllow, deleteDomainAllow, type DomainAdminDeps } from '../../../../services/domain-blocks.ts';
import { domainPolicy } from '../../../../services/domain-policy.ts';
import { renderAdminDomainAllow } from '../../../serializers/domain-block.ts';

const READ = { kind: 'admin', scopes: ['admin:read:domain_allows'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:domain_allows'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

/** What the admin routes change domain rules with: jobs queued on this process's queue, its policy cache dropped. */
export function adminDomainDeps(ctx: AppContext): DomainAdminDeps {
  return {
    db: ctx.db,
    redis: ctx.redis,
    redisPrefix: ctx.config.redisPrefix,
    enqueue: (row) => ctx.jobs.enqueue(row),
    changed: () => domainPolicy(ctx).clear(),
  };
}

/**
 * Mastodon's /api/v1/admin/domain_allows. Allows matter in limited federation mode (LIMITED_FEDERATION_MODE), where
 * only allowed servers federate.
 */
export default async function adminDomainAllowsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps = adminDomainDeps(ctx);

  app.get('/api/v1/admin/domain_allows', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const allows = await domainAllowsPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, allows[0]?.id ?? null, allows.at(-1)?.id ?? null);
    return allows.map(renderAdminDomainAllow);
  });

  app.get('/api/v1/admin/domain_allows/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) => {
    const allow = isId(request.params.id) ? await findDomainAllow(ctx.db, request.params.id) : null;
    if (!allow) throw notFound();
    return renderAdminDomainAllow(allow);
  });

  app.post('/api/v1/admin/domain_allows', {
    schema: { body: Type.Object({ domain: Type.Optional(Type.String({ maxLength: 300 })) }) },
    config: { auth: WRITE },
  }, async (request) => renderAdminDomainAllow(await createDomainAllow(deps, request.body?.domain, requireViewer(request))));

  app.delete('/api/v1/admin/domain_allows/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const allow = isId(request.params.id) ? await deleteDomainAllow(deps, request.params.id, requireViewer(request)) : null;
    if (!allow) throw notFound();
    return {};
  });
}
