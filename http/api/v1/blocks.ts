import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, PagingQuery } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { visibleAccount } from '../../../services/accounts.ts';
import { MAX_MUTE_SECONDS, muteOptions, normalizeDomain } from '../../../services/blocks.ts';
import * as follows from '../../../storage/follows.ts';
import { blocksPage, domainBlocksPage, mutesPage } from '../../../storage/blocks.ts';
import { renderAccount } from '../../serializers/account.ts';
import { renderRelationship } from '../../serializers/relationship.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

const AccountIdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const BLOCKS = { kind: 'user', scopes: ['follow', 'write:blocks'] } as const;
const MUTES = { kind: 'user', scopes: ['follow', 'write:mutes'] } as const;

export default async function blocksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const r = ctx.render;

  const relationshipOf = async (viewerId: string, targetId: string) =>
    renderRelationship(targetId, (await follows.relationships(ctx.db, viewerId, [targetId])).get(targetId));

  app.post('/api/v1/accounts/:id/block', { schema: { params: AccountIdParams }, config: { auth: BLOCKS } }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'block', targetId: target.id });
    return relationshipOf(viewerId, target.id);
  });

  app.post('/api/v1/accounts/:id/unblock', { schema: { params: AccountIdParams }, config: { auth: BLOCKS } }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'unblock', targetId: target.id });
    return relationshipOf(viewerId, target.id);
  });

  app.post('/api/v1/accounts/:id/mute', {
    schema: {
      params: AccountIdParams,
      body: Type.Optional(Type.Object({
        notifications: Type.Optional(Bool()),
        // Seconds; 0 (or none) is until unmuted. Bounded at ten years, past which "for ever" is meant.
        duration: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: MAX_MUTE_SECONDS }), Type.Null()])),
      })),
    },
    config: { auth: MUTES },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    const body = request.body ?? {};
    await ctx.actors.ask(viewerId, { type: 'mute', targetId: target.id, options: muteOptions(body.notifications, body.duration) });
    return relationshipOf(viewerId, target.id);
  });

  app.post('/api/v1/accounts/:id/unmute', { schema: { params: AccountIdParams }, config: { auth: MUTES } }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'unmute', targetId: target.id });
    return relationshipOf(viewerId, target.id);
  });

  app.get('/api/v1/blocks', {
    schema: { querystring: Type.Object(PagingQuery(40, 80)) },
    config: { auth: { kind: 'user', scopes: ['follow', 'read:blocks'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const page = await blocksPage(ctx.db, viewerId, pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    await withAccountEmojis(ctx.db, page.entries.map((e) => e.account));
    return page.entries.map((e) => renderAccount(r, e.account));
  });

  app.get('/api/v1/mutes', {
    schema: { querystring: Type.Object(PagingQuery(40, 80)) },
    config: { auth: { kind: 'user', scopes: ['follow', 'read:mutes'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const page = await mutesPage(ctx.db, viewerId, pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    // Mastodon's MutedAccountSerializer: the account, and when its mute ends.
    await withAccountEmojis(ctx.db, page.entries.map((e) => e.account));
    return page.entries.map((e) => ({ ...renderAccount(r, e.account), mute_expires_at: e.expiresAt?.toISOString() ?? null }));
  });

  app.get('/api/v1/domain_blocks', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: { kind: 'user', scopes: ['follow', 'read:blocks'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const page = await domainBlocksPage(ctx.db, viewerId, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    return page.entries;
  });

  // The domain comes in the body (JSON or form) or, from some clients, in the query string.
  const DomainBody = Type.Optional(Type.Object({ domain: Type.Optional(Type.String({ maxLength: 300 })) }));
  const DomainQuery = Type.Object({ domain: Type.Optional(Type.String({ maxLength: 300 })) });
  for (const method of ['post', 'delete'] as const) {
    app[method]('/api/v1/domain_blocks', {
      schema: { body: DomainBody, querystring: DomainQuery },
      config: { auth: BLOCKS },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const domain = normalizeDomain(request.body?.domain ?? request.query.domain);
      await ctx.actors.ask(viewerId, method === 'post' ? { type: 'blockDomain', domain } : { type: 'unblockDomain', domain });
      return {};
    });
  }
}
