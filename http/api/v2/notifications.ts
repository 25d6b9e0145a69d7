import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import { findMarkers } from '../../../storage/markers.ts';
import { dismissGroup, groupMembersPage, groupsAfter } from '../../../storage/notification-groups.ts';
import { findPolicy, type NotificationPolicy } from '../../../storage/notification-policy.ts';
import { changePolicy, policyWithSummary } from '../../../services/notification-policy.ts';
import { findGroup, groupedPage, groupedTypes } from '../../../services/notification-groups.ts';
import { renderGroupAccounts, renderGroupedNotifications } from '../../serializers/notification-groups.ts';

/** Every notification type Mastodon names (apps send them all in `types[]` and `exclude_types[]`; those we never make match nothing). */
export const MASTODON_NOTIFICATION_TYPES = [
  'mention', 'status', 'reblog', 'follow', 'follow_request', 'favourite', 'poll', 'update', 'admin.sign_up', 'admin.report',
  'severed_relationships', 'moderation_warning', 'quote', 'quoted_update', 'added_to_collection', 'collection_update', 'annual_report',
] as const;
const TypeName = Type.Union(MASTODON_NOTIFICATION_TYPES.map((t) => Type.Literal(t)));
const TypeList = Type.Optional(Type.Array(TypeName, { maxItems: 30 }));
const Action = Type.Union([Type.Literal('accept'), Type.Literal('filter'), Type.Literal('drop')]);
const GroupKey = Type.Object({ group_key: Type.String({ minLength: 1, maxLength: 200 }) });

export default async function notificationsV2Routes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const read = { auth: { kind: 'user' as const, scopes: ['read:notifications'] } };
  const write = { auth: { kind: 'user' as const, scopes: ['write:notifications'] } };

  app.get('/api/v2/notifications', {
    schema: {
      querystring: Type.Object({
        ...PagingQuery(40, 80),
        types: TypeList,
        exclude_types: TypeList,
        grouped_types: TypeList,
        supported_types: TypeList,
        account_id: Type.Optional(Type.String({ maxLength: 40 })),
        expand_accounts: Type.Optional(Type.Union([Type.Literal('full'), Type.Literal('partial_avatars')])),
        include_filtered: Type.Optional(Bool()),
      }),
    },
    config: read,
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const q = request.query;
    const expand = q.expand_accounts ?? 'full';
    if (q.account_id !== undefined && !isId(q.account_id)) return renderGroupedNotifications(ctx, viewerId, [], expand);
    const page = await groupedPage(ctx.db, viewerId, { types: q.types, excludeTypes: q.exclude_types, accountId: q.account_id, includeFiltered: q.include_filtered }, pageParams(q, 40), groupedTypes(q.grouped_types));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.newestId, page.oldestId);
    return renderGroupedNotifications(ctx, viewerId, page.groups, expand);
  });

  app.get('/api/v2/notifications/unread_count', {
    schema: {
      querystring: Type.Object({
        limit: Type.Optional(Type.Integer({ minimum: 1, maximumClamp: 1000 })),
        types: TypeList,
        exclude_types: TypeList,
        grouped_types: TypeList,
        account_id: Type.Optional(Type.String({ maxLength: 40 })),
      }),
    },
    config: read,
  }, async (request) => {
    const viewerId = requireViewer(request);
    const q = request.query;
    if (q.account_id !== undefined && !isId(q.account_id)) return { count: 0 };
    const limit = q.limit ?? 100;
    const [marker] = await findMarkers(ctx.db, viewerId, ['notifications']);
    // Groups among the unread notifications, reading a bounded number of them (a group has at least one).
    const count = await groupsAfter(ctx.db, viewerId, marker?.last_read_id ?? null, { types: q.types, excludeTypes: q.exclude_types, accountId: q.account_id }, groupedTypes(q.grouped_types), limit * 4);
    return { count: Math.min(count, limit) };
  });

  const renderPolicy = (viewerId: string, policy: NotificationPolicy) => policyWithSummary(ctx.db, viewerId, policy);

  app.get('/api/v2/notifications/policy', { config: read }, async (request) => {
    const viewerId = requireViewer(request);
    return renderPolicy(viewerId, await findPolicy(ctx.db, viewerId));
  });

  // Rails' `resource :policy` takes PUT as well as PATCH (masto sends PUT).
  app.route({
    method: ['PATCH', 'PUT'],
    url: '/api/v2/notifications/policy',
    schema: {
      body: Type.Optional(Type.Object({
        for_not_following: Type.Optional(Action),
        for_not_followers: Type.Optional(Action),
        for_new_accounts: Type.Optional(Action),
        for_private_mentions: Type.Optional(Action),
        for_limited_accounts: Type.Optional(Action),
      })),
    },
    config: write,
    handler: async (request) => {
      const viewerId = requireViewer(request);
      const changes = Object.fromEntries(Object.entries(request.body ?? {}).filter(([, v]) => v !== undefined)) as Partial<NotificationPolicy>;
      const policy = await changePolicy(ctx.db, viewerId, changes);
      return renderPolicy(viewerId, policy);
    },
  });

  app.get('/api/v2/notifications/:group_key', {
    schema: { params: GroupKey, querystring: Type.Object({ supported_types: TypeList }) },
    config: read,
  }, async (request) => {
    const viewerId = requireViewer(request);
    const group = await findGroup(ctx.db, viewerId, request.params.group_key);
    const rendered = group ? await renderGroupedNotifications(ctx, viewerId, [group]) : null;
    if (!rendered || rendered.notification_groups.length === 0) throw notFound();
    return rendered;
  });

  app.post('/api/v2/notifications/:group_key/dismiss', { schema: { params: GroupKey }, config: write }, async (request) => {
    // As on Mastodon, dismissing a group that is gone already is no error.
    await dismissGroup(ctx.db, requireViewer(request), request.params.group_key);
    return {};
  });

  app.get('/api/v2/notifications/:group_key/accounts', {
    schema: { params: GroupKey, querystring: Type.Object(PagingQuery(40, 80)) },
    config: read,
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const rows = await groupMembersPage(ctx.db, viewerId, request.params.group_key, pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.id ?? null, rows.at(-1)?.id ?? null);
    return renderGroupAccounts(ctx, viewerId, rows.map((r) => r.from_account_id));
  });
}
