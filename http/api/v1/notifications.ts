import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import * as notifications from '../../../storage/notifications.ts';
import { findMarkers } from '../../../storage/markers.ts';
import { renderNotifications } from '../../serializers/statuses.ts';

const TypeName = Type.Union(notifications.NOTIFICATION_TYPES.map((t) => Type.Literal(t)));

export default async function notificationsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const read = { auth: { kind: 'user' as const, scopes: ['read:notifications'] } };
  const write = { auth: { kind: 'user' as const, scopes: ['write:notifications'] } };

  app.get('/api/v1/notifications', {
    schema: {
      querystring: Type.Object({
        ...PagingQuery(40, 80),
        types: Type.Optional(Type.Array(TypeName, { maxItems: 20 })),
        exclude_types: Type.Optional(Type.Array(TypeName, { maxItems: 20 })),
        account_id: Type.Optional(Type.String({ maxLength: 40 })),
        include_filtered: Type.Optional(Bool()),
      }),
    },
    config: read,
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const q = request.query;
    if (q.account_id !== undefined && !isId(q.account_id)) return [];
    const rows = await notifications.notificationsPage(ctx.db, viewerId, { types: q.types, excludeTypes: q.exclude_types, accountId: q.account_id, includeFiltered: q.include_filtered }, pageParams(q, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.id ?? null, rows.at(-1)?.id ?? null);
    return renderNotifications(ctx, viewerId, rows);
  });

  app.get('/api/v1/notifications/unread_count', {
    schema: { querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximumClamp: 1000 })) }) },
    config: read,
  }, async (request) => {
    const viewerId = requireViewer(request);
    const [marker] = await findMarkers(ctx.db, viewerId, ['notifications']);
    return { count: await notifications.unreadCount(ctx.db, viewerId, marker?.last_read_id ?? null, request.query.limit ?? 100) };
  });

  app.post('/api/v1/notifications/clear', { config: write }, async (request) => {
    await notifications.clearNotifications(ctx.db, requireViewer(request));
    return {};
  });

  app.get('/api/v1/notifications/:id', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
    config: read,
  }, async (request) => {
    const viewerId = requireViewer(request);
    const row = isId(request.params.id) ? await notifications.findNotification(ctx.db, viewerId, request.params.id) : null;
    const [rendered] = row ? await renderNotifications(ctx, viewerId, [row]) : [];
    if (!rendered) throw notFound();
    return rendered;
  });

  app.post('/api/v1/notifications/:id/dismiss', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
    config: write,
  }, async (request) => {
    const viewerId = requireViewer(request);
    if (!isId(request.params.id) || !(await notifications.dismissNotification(ctx.db, viewerId, request.params.id))) throw notFound();
    return {};
  });
}
