import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { IdList, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import { findRequest, requestsPage } from '../../../storage/notification-policy.ts';
import { settleRequests } from '../../../services/notification-policy.ts';
import { renderNotificationRequests } from '../../serializers/notification-groups.ts';

// Mastodon's filtered notification requests: one per sender whose notifications the notification policy filtered.

const Params = Type.Object({ id: Type.String({ maxLength: 40 }) });
// Mastodon's bulk accept and dismiss take the viewer's requests among these ids and ignore the rest: none is no error.
const Many = Type.Object({ id: Type.Optional(IdList(100)) });

export default async function notificationRequestsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const read = { auth: { kind: 'user' as const, scopes: ['read:notifications'] } };
  const write = { auth: { kind: 'user' as const, scopes: ['write:notifications'] } };

  app.get('/api/v1/notifications/requests', { schema: { querystring: Type.Object(PagingQuery(40, 80)) }, config: read }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const rows = await requestsPage(ctx.db, viewerId, pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.id ?? null, rows.at(-1)?.id ?? null);
    return renderNotificationRequests(ctx, viewerId, rows);
  });

  // Accepting is done at once (in the request's transaction), so accepted requests are always merged.
  app.get('/api/v1/notifications/requests/merged', { config: read }, async (request) => {
    requireViewer(request);
    return { merged: true };
  });

  app.post('/api/v1/notifications/requests/accept', { schema: { body: Many }, config: write }, async (request) => settleRequests(ctx.db, requireViewer(request), request.body?.id ?? [], 'accept').then(() => ({})));
  app.post('/api/v1/notifications/requests/dismiss', { schema: { body: Many }, config: write }, async (request) => settleRequests(ctx.db, requireViewer(request), request.body?.id ?? [], 'dismiss').then(() => ({})));

  app.get('/api/v1/notifications/requests/:id', { schema: { params: Params }, config: read }, async (request) => {
    const viewerId = requireViewer(request);
    const row = isId(request.params.id) ? await findRequest(ctx.db, viewerId, request.params.id) : null;
    const [rendered] = row ? await renderNotificationRequests(ctx, viewerId, [row]) : [];
    if (!rendered) throw notFound();
    return rendered;
  });

  app.post('/api/v1/notifications/requests/:id/accept', { schema: { params: Params }, config: write }, async (request) => settleRequests(ctx.db, requireViewer(request), [request.params.id], 'accept', true).then(() => ({})));
  app.post('/api/v1/notifications/requests/:id/dismiss', { schema: { params: Params }, config: write }, async (request) => settleRequests(ctx.db, requireViewer(request), [request.params.id], 'dismiss', true).then(() => ({})));
}
