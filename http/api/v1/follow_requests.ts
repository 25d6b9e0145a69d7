import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import { findAccountById } from '../../../storage/accounts.ts';
import * as follows from '../../../storage/follows.ts';
import { renderAccount } from '../../serializers/account.ts';
import { renderRelationship } from '../../serializers/relationship.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

export default async function followRequestsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/follow_requests', {
    schema: { querystring: Type.Object(PagingQuery(40, 80)) },
    config: { auth: { kind: 'user', scopes: ['read:follows', 'follow'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const page = await follows.followRequestsPage(ctx.db, viewerId, pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    return (await withAccountEmojis(ctx.db, page.accounts)).map((a) => renderAccount(ctx.render, a));
  });

  for (const action of ['authorize', 'reject'] as const) {
    app.post(`/api/v1/follow_requests/:id/${action}`, {
      schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
      config: { auth: { kind: 'user', scopes: ['write:follows', 'follow'] } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const requesterId = request.params.id;
      const requester = isId(requesterId) ? await findAccountById(ctx.db, requesterId) : null;
      if (!requester) throw notFound();
      const type = action === 'authorize' ? 'authorizeFollowRequest' : 'rejectFollowRequest';
      const found = await ctx.actors.ask(viewerId, { type, requesterId });
      if (!found) throw notFound();
      const rels = await follows.relationships(ctx.db, viewerId, [requesterId]);
      return renderRelationship(requesterId, rels.get(requesterId));
    });
  }
}
