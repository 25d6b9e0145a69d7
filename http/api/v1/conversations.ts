import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import { conversationsOf, findConversation } from '../../../storage/conversations.ts';
import { renderConversations } from '../../serializers/conversation.ts';

const Params = Type.Object({ id: Type.String({ maxLength: 40 }) });

/**
 * Direct conversations (Mastodon's ConversationsController): listed newest activity first with Link paging by
 * their last status, marked read and removed through the owner's actor. (GET /api/v1/timelines/direct, removed in
 * Mastodon 3.0, is not a route here either: a 404.)
 */
export default async function conversationsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/conversations', {
    schema: { querystring: Type.Object(PagingQuery(20, 40)) },
    config: { auth: { kind: 'user', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const rows = await conversationsOf(ctx.db, viewerId, pageParams(request.query, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.last_status_id ?? null, rows.at(-1)?.last_status_id ?? null);
    return renderConversations(ctx, viewerId, rows);
  });

  // Read, and (Mastodon 4.5) unread again.
  for (const [action, type] of [['read', 'readConversation'], ['unread', 'unreadConversation']] as const) {
    app.post(`/api/v1/conversations/:id/${action}`, {
      schema: { params: Params },
      config: { auth: { kind: 'user', scopes: ['write:conversations'] } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      if (!isId(request.params.id)) throw notFound();
      await ctx.actors.ask(viewerId, { type, conversationId: request.params.id });
      const row = await findConversation(ctx.db, viewerId, request.params.id);
      if (!row) throw notFound();
      return (await renderConversations(ctx, viewerId, [row]))[0];
    });
  }

  app.delete('/api/v1/conversations/:id', {
    schema: { params: Params },
    config: { auth: { kind: 'user', scopes: ['write:conversations'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    if (!isId(request.params.id)) throw notFound();
    await ctx.actors.ask(viewerId, { type: 'removeConversation', conversationId: request.params.id });
    return {};
  });
}
