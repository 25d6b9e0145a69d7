import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { Bool, PagingQuery, isId } from '../../../params.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { notFound } from '../../../../errors.ts';
import { findUsernameBlock, usernameBlocksPage } from '../../../../storage/username-blocks.ts';
import { createUsernameBlock, removeUsernameBlock, updateUsernameBlock } from '../../../../services/username-blocks.ts';
import { renderAdminUsernameBlock } from '../../../serializers/admin-blocks.ts';

// Mastodon 4.5 asks for the admin scopes themselves here (there is no admin:read:username_blocks).
const READ = { kind: 'admin', scopes: ['admin:read'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
// JSON and form bodies alike; the service answers a blank, long or repeated name, or another comparison, with a 422.
const Fields = Type.Object({
  username: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
  comparison: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
  allow_with_approval: Type.Optional(Bool()),
});

/**
 * Mastodon 4.5's /api/v1/admin/username_blocks (index, show, create, update, destroy): names that may not sign up, or
 * only with approval (services/username-blocks.ts), for roles that may manage blocks.
 */
export default async function adminUsernameBlocksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/admin/username_blocks', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const blocks = await usernameBlocksPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, blocks[0]?.id ?? null, blocks.at(-1)?.id ?? null);
    return blocks.map(renderAdminUsernameBlock);
  });

  app.get('/api/v1/admin/username_blocks/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) => {
    const block = isId(request.params.id) ? await findUsernameBlock(ctx.db, request.params.id) : null;
    if (!block) throw notFound();
    return renderAdminUsernameBlock(block);
  });

  app.post('/api/v1/admin/username_blocks', { schema: { body: Fields }, config: { auth: WRITE } }, async (request) =>
    renderAdminUsernameBlock(await createUsernameBlock(ctx.db, request.body ?? {}, requireViewer(request))));

  app.put('/api/v1/admin/username_blocks/:id', { schema: { params: IdParams, body: Fields }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await updateUsernameBlock(ctx.db, request.params.id, request.body ?? {}, requireViewer(request)) : null;
    if (!block) throw notFound();
    return renderAdminUsernameBlock(block);
  });

  app.delete('/api/v1/admin/username_blocks/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await removeUsernameBlock(ctx.db, request.params.id, requireViewer(request)) : null;
    if (!block) throw notFound();
    return {};
  });
}
