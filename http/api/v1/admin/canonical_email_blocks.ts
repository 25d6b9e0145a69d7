import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { PagingQuery, isId } from '../../../params.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { notFound } from '../../../../errors.ts';
import { canonicalEmailBlocksPage, findCanonicalEmailBlock } from '../../../../storage/admin-blocks.ts';
import { canonicalEmailBlocksMatching, createCanonicalEmailBlock, removeCanonicalEmailBlock } from '../../../../services/admin-blocks.ts';
import { renderAdminCanonicalEmailBlock } from '../../../serializers/admin-blocks.ts';

const READ = { kind: 'admin', scopes: ['admin:read:canonical_email_blocks'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:canonical_email_blocks'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Text = Type.Optional(Type.Union([Type.String({ maxLength: 320 }), Type.Null()]));
const CreateBody = Type.Object({ email: Text, canonical_email_hash: Text });
const TestBody = Type.Object({ email: Text });

/**
 * Mastodon's /api/v1/admin/canonical_email_blocks: addresses (by the SHA-256 of their canonical form) that may not
 * sign up again, and `POST …/test` to find the blocks an address meets.
 */
export default async function adminCanonicalEmailBlocksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/admin/canonical_email_blocks', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const blocks = await canonicalEmailBlocksPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, blocks[0]?.id ?? null, blocks.at(-1)?.id ?? null);
    return blocks.map(renderAdminCanonicalEmailBlock);
  });

  app.get('/api/v1/admin/canonical_email_blocks/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) => {
    const block = isId(request.params.id) ? await findCanonicalEmailBlock(ctx.db, request.params.id) : null;
    if (!block) throw notFound();
    return renderAdminCanonicalEmailBlock(block);
  });

  // A read, though a POST (the address stays out of URLs and logs), as in Mastodon.
  app.post('/api/v1/admin/canonical_email_blocks/test', { schema: { body: TestBody }, config: { auth: READ } }, async (request) => {
    const email = request.body?.email ?? '';
    return email.trim() === '' ? [] : (await canonicalEmailBlocksMatching(ctx.db, email)).map(renderAdminCanonicalEmailBlock);
  });

  app.post('/api/v1/admin/canonical_email_blocks', { schema: { body: CreateBody }, config: { auth: WRITE } }, async (request) => {
    return renderAdminCanonicalEmailBlock(await createCanonicalEmailBlock(ctx.db, request.body ?? {}, requireViewer(request)));
  });

  app.delete('/api/v1/admin/canonical_email_blocks/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await removeCanonicalEmailBlock(ctx.db, request.params.id, requireViewer(request)) : null;
    if (!block) throw notFound();
    return {};
  });
}
