import { Type } from '../../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { PagingQuery, isId } from '../../../params.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { notFound } from '../../../../errors.ts';
import { emailDomainBlocksPage, findEmailDomainBlock, type EmailDomainBlockRow } from '../../../../storage/admin-blocks.ts';
import { createEmailDomainBlock, emailDomainBlockHistories, removeEmailDomainBlock } from '../../../../services/admin-blocks.ts';
import { renderAdminEmailDomainBlock } from '../../../serializers/admin-blocks.ts';

const READ = { kind: 'admin', scopes: ['admin:read:email_domain_blocks'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write:email_domain_blocks'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const CreateBody = Type.Object({ domain: Type.Optional(Type.Union([Type.String({ maxLength: 300 }), Type.Null()])) });

/**
 * Mastodon's /api/v1/admin/email_domain_blocks (index, show, create, destroy; Mastodon has no update and no test
 * endpoint for these): e-mail domains, and every domain below them, that nobody may sign up with.
 */
export default async function adminEmailDomainBlocksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const render = async (blocks: EmailDomainBlockRow[]) => {
    const histories = await emailDomainBlockHistories(ctx.redis, ctx.config.redisPrefix, blocks.map((b) => b.id));
    return blocks.map((b) => renderAdminEmailDomainBlock(b, histories.get(b.id) ?? []));
  };

  app.get('/api/v1/admin/email_domain_blocks', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const blocks = await emailDomainBlocksPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, blocks[0]?.id ?? null, blocks.at(-1)?.id ?? null);
    return render(blocks);
  });

  app.get('/api/v1/admin/email_domain_blocks/:id', { schema: { params: IdParams }, config: { auth: READ } }, async (request) => {
    const block = isId(request.params.id) ? await findEmailDomainBlock(ctx.db, request.params.id) : null;
    if (!block) throw notFound();
    return (await render([block]))[0];
  });

  app.post('/api/v1/admin/email_domain_blocks', { schema: { body: CreateBody }, config: { auth: WRITE } }, async (request) => {
    const block = await createEmailDomainBlock(ctx.db, request.body?.domain, requireViewer(request));
    return (await render([block]))[0];
  });

  app.delete('/api/v1/admin/email_domain_blocks/:id', { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
    const block = isId(request.params.id) ? await removeEmailDomainBlock(ctx.db, request.params.id, requireViewer(request)) : null;
    if (!block) throw notFound();
    return {};
  });
}
