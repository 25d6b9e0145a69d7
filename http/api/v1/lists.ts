import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, IdList, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import { visibleAccount } from '../../../services/accounts.ts';
import * as lists from '../../../storage/lists.ts';
import { renderAccount } from '../../serializers/account.ts';
import { renderList } from '../../serializers/list.ts';
import { loadForViewer } from '../../serializers/statuses.ts';
import { renderStatusListJson } from '../../serializers/status.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

const ListParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const RepliesPolicy = Type.Union([Type.Literal('followed'), Type.Literal('list'), Type.Literal('none')]);
const ListBody = Type.Object({
  title: Type.Optional(Type.String({ maxLength: 255 })),
  replies_policy: Type.Optional(RepliesPolicy),
  exclusive: Type.Optional(Bool()),
});
const Members = Type.Object({ account_ids: Type.Optional(IdList(lists.MEMBERS_PER_LIST)) });
const READ = { kind: 'user', scopes: ['read:lists'] } as const;
const WRITE = { kind: 'user', scopes: ['write:lists'] } as const;

export default async function listsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  /** The viewer's own list, or a 404 (someone else's lists do not exist for them). */
  const ownList = async (viewerId: string, id: string) => {
    const list = isId(id) ? await lists.findList(ctx.db, viewerId, id) : null;
    if (!list) throw notFound();
    return list;
  };
  const memberIds = (ids: string[] | undefined) => {
    const wanted = [...new Set(ids ?? [])];
    if (wanted.length === 0) throw unprocessable('Validation failed: account_ids must name at least one account');
    if (!wanted.every(isId)) throw notFound();
    return wanted;
  };

  app.get('/api/v1/lists', { config: { auth: READ } }, async (request) => {
    return (await lists.listsOf(ctx.db, requireViewer(request))).map(renderList);
  });

  app.get('/api/v1/lists/:id', { schema: { params: ListParams }, config: { auth: READ } }, async (request) => {
    return renderList(await ownList(requireViewer(request), request.params.id));
  });

  app.post('/api/v1/lists', { schema: { body: ListBody }, config: { auth: WRITE } }, async (request) => {
    const viewerId = requireViewer(request);
    const b = request.body;
    return renderList(await ctx.actors.ask(viewerId, { type: 'createList', list: { title: b.title, repliesPolicy: b.replies_policy, exclusive: b.exclusive } }));
  });

  app.put('/api/v1/lists/:id', { schema: { params: ListParams, body: ListBody }, config: { auth: WRITE } }, async (request) => {
    const viewerId = requireViewer(request);
    const list = await ownList(viewerId, request.params.id);
    const b = request.body;
    return renderList(await ctx.actors.ask(viewerId, { type: 'updateList', listId: list.id, list: { title: b.title, repliesPolicy: b.replies_policy, exclusive: b.exclusive } }));
  });

  app.delete('/api/v1/lists/:id', { schema: { params: ListParams }, config: { auth: WRITE } }, async (request) => {
    const viewerId = requireViewer(request);
    const list = await ownList(viewerId, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'deleteList', listId: list.id });
    return {};
  });

  app.get('/api/v1/lists/:id/accounts', {
    schema: { params: ListParams, querystring: Type.Object({ ...PagingQuery(40, 80), limit: Type.Optional(Type.Integer({ minimum: 0, default: 40, maximumClamp: 80 })) }) },
    config: { auth: READ },
  }, async (request, reply) => {
    const list = await ownList(requireViewer(request), request.params.id);
    // limit=0 is every member, as in Mastodon (a list holds at most MEMBERS_PER_LIST).
    const limit = request.query.limit === 0 ? lists.MEMBERS_PER_LIST : (request.query.limit ?? 40);
    const page = await lists.listMembersPage(ctx.db, list.id, { ...pageParams(request.query, 40), limit });
    if (request.query.limit !== 0) setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    return (await withAccountEmojis(ctx.db, page.accounts)).map((a) => renderAccount(ctx.render, a));
  });

  for (const method of ['post', 'delete'] as const) {
    app[method]('/api/v1/lists/:id/accounts', {
      schema: { params: ListParams, body: Type.Optional(Members), querystring: Members },
      config: { auth: WRITE },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const list = await ownList(viewerId, request.params.id);
      const accountIds = memberIds(request.body?.account_ids ?? request.query.account_ids);
      await ctx.actors.ask(viewerId, { type: method === 'post' ? 'addListMembers' : 'removeListMembers', listId: list.id, accountIds });
      return {};
    });
  }

  app.get('/api/v1/accounts/:id/lists', { schema: { params: ListParams }, config: { auth: READ } }, async (request) => {
    const viewerId = requireViewer(request);
    const account = await visibleAccount(ctx.db, request.params.id);
    return (await lists.listsHolding(ctx.db, viewerId, account.id)).map(renderList);
  });

  app.get('/api/v1/timelines/list/:id', {
    schema: { params: ListParams, querystring: Type.Object(PagingQuery(20, 40)) },
    config: { auth: { kind: 'user', scopes: ['read:lists'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const list = await ownList(viewerId, request.params.id);
    const p = pageParams(request.query, 20);
    let ids = (await ctx.listFeeds.page(list.id, p)).ids;
    if (ids === null) {
      await ctx.actors.ask(viewerId, { type: 'rebuildListFeed', listId: list.id });
      ids = (await ctx.listFeeds.page(list.id, p)).ids ?? [];
    }
    // Lists take the viewer's home filters, blocks and mutes, as Mastodon's list feeds do.
    const { rows, bundle } = await loadForViewer(ctx, viewerId, ids, 'list');
    setLinkHeader(request, reply, ctx.config.publicUrl, ids[0] ?? null, ids.at(-1) ?? null);
    return reply.type('application/json; charset=utf-8').send(renderStatusListJson(ctx.render, bundle, rows));
  });
}
