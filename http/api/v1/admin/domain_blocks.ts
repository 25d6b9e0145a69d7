import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { Bool, PagingQuery, isId } from '../../../params.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { notFound } from '../../../../errors.ts';
import { domainBlocksPage, findDomainBlock } from '../../../../storage/instance-domain-blocks.ts';
import { createDomainBlock, deleteDomainBlock, updateDomainBlock, type DomainBlockInput } from '../../../../services/domain-blocks.ts';
import { renderAdminDomainBlock, renderExistingDomainBlockError } from '../../../serializers/domain-block.ts';
import { adminDomainDeps } from './domain_allows.ts';

const READ = { kind: 'admin', scopes: ['admin:read:domain_blocks'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:domain_blocks'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

// Form and JSON bodies alike; comments may be sent as null (masto does) to clear them.
const Comment = Type.Optional(Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]));
const BlockFields = {
  severity: Type.Optional(Type.String({ maxLength: 20 })),
  reject_media: Type.Optional(Bool()),
  reject_reports: Type.Optional(Bool()),
  private_comment: Comment,
  public_comment: Comment,
  obfuscate: Type.Optional(Bool()),
};
const CreateBody = Type.Object({ domain: Type.Optional(Type.String({ maxLength: 300 })), ...BlockFields });
const UpdateBody = Type.Object(BlockFields);

/** Mastodon's /api/v1/admin/domain_blocks: an administrator's user token with admin:read / admin:write (or the granular scopes). */
export default async function adminDomainBlocksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps = adminDomainDeps(ctx);

  app.get('/api/v1/admin/domain_blocks', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const blocks = await domainBlocksPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, blocks[0]?.id ?? null, blocks.at(-1)?.id ?? null);
    return blocks.map(renderAdminDomainBlock);
  });

  app.get('/api/v1/admin/domain_blocks/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) => {
    const block = isId(request.params.id) ? await findDomainBlock(ctx.db, request.params.id) : null;
    if (!block) throw notFound();
    return renderAdminDomainBlock(block);
  });

  app.post('/api/v1/admin/domain_blocks', { schema: { body: CreateBody }, config: { auth: WRITE } }, async (request, reply) => {
    const { domain, ...input } = request.body ?? {};
    const result = await createDomainBlock(deps, domain, input as DomainBlockInput, requireViewer(request));
    if ('existing' in result) return reply.code(422).send(renderExistingDomainBlockError(result.existing));
    return renderAdminDomainBlock(result.block);
  });

  app.put('/api/v1/admin/domain_blocks/:id', { schema: { params: IdParams, body: UpdateBody }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await updateDomainBlock(deps, request.params.id, (request.body ?? {}) as DomainBlockInput, requireViewer(request)) : null;
    if (!block) throw notFound();
    return renderAdminDomainBlock(block);
  });

  app.delete('/api/v1/admin/domain_blocks/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await deleteDomainBlock(deps, request.params.id, requireViewer(request)) : null;
    if (!block) throw notFound();
    return {};
  });
}
