import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { PagingQuery, isId } from '../../../params.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { notFound } from '../../../../errors.ts';
import { findIpBlock, ipBlocksPage } from '../../../../storage/admin-blocks.ts';
import { createIpBlock, removeIpBlock, updateIpBlock, type IpBlockInput } from '../../../../services/admin-blocks.ts';
import { renderAdminIpBlock } from '../../../serializers/admin-blocks.ts';

const READ = { kind: 'admin', scopes: ['admin:read:ip_blocks'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:ip_blocks'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

// JSON and form bodies alike; `expires_in` in seconds (a form sends it as text, '' or null for no expiry).
const Fields = Type.Object({
  ip: Type.Optional(Type.String({ maxLength: 100 })),
  severity: Type.Optional(Type.String({ maxLength: 40 })),
  comment: Type.Optional(Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()])),
  // Null first: with type coercion on, a null would otherwise become 0 (expiring at once).
  expires_in: Type.Optional(Type.Union([Type.Null(), Type.Integer(), Type.String({ maxLength: 20 })])),
});

/** Mastodon's /api/v1/admin/ip_blocks: ranges that may not sign up, sign up only with approval, or reach nothing. */
export default async function adminIpBlocksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/admin/ip_blocks', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const blocks = await ipBlocksPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, blocks[0]?.id ?? null, blocks.at(-1)?.id ?? null);
    return blocks.map(renderAdminIpBlock);
  });

  app.get('/api/v1/admin/ip_blocks/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) => {
    const block = isId(request.params.id) ? await findIpBlock(ctx.db, request.params.id) : null;
    if (!block) throw notFound();
    return renderAdminIpBlock(block);
  });

  app.post('/api/v1/admin/ip_blocks', { schema: { body: Fields }, config: { auth: WRITE } }, async (request) => {
    return renderAdminIpBlock(await createIpBlock(ctx.db, (request.body ?? {}) as IpBlockInput, requireViewer(request)));
  });

  app.put('/api/v1/admin/ip_blocks/:id', { schema: { params: IdParams, body: Fields }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await updateIpBlock(ctx.db, request.params.id, (request.body ?? {}) as IpBlockInput, requireViewer(request)) : null;
    if (!block) throw notFound();
    return renderAdminIpBlock(block);
  });

  app.delete('/api/v1/admin/ip_blocks/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await removeIpBlock(ctx.db, request.params.id, requireViewer(request)) : null;
    if (!block) throw notFound();
    return {};
  });
}
