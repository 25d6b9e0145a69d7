import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isId } from '../params.ts';
import { ApiError } from '../../errors.ts';
import * as lists from '../../storage/lists.ts';
import { findAccounts } from '../../services/account-search.ts';
import { withAccountEmojis } from '../../services/custom-emojis.ts';
import { renderAccount } from '../serializers/account.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import { liveOf, pageOf, pagingOf, sendClientPage } from './client-page.ts';
import { clientEntries } from './client-view.ts';
import { notFoundPage } from './error-pages.ts';
import { accountView } from './page-view.ts';
import type { SignedIn } from './session.ts';

const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const POLICIES: [lists.RepliesPolicy, string][] = [['list', 'lists.replies.list'], ['followed', 'lists.replies.followed'], ['none', 'lists.replies.none']];
const ListForm = Type.Object({
  title: Type.Optional(Type.String({ maxLength: 255 })),
  replies_policy: Type.Optional(Type.String({ maxLength: 20 })),
  exclusive: Type.Optional(Type.String({ maxLength: 10 })),
});
const Member = Type.Object({ account_id: Type.Optional(Type.String({ maxLength: 40 })) });
const policyOf = (v: string | undefined) => POLICIES.find(([p]) => p === v)?.[0];

/**
 * Lists: make, rename, delete, their members and their timeline. The changes are the owner's account actor's, as
 * the API's /api/v1/lists routes ask it (services/lists.ts); someone else's list is not there (404), as in the API.
 */
export default async function clientListRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const ownList = (me: SignedIn, id: string) => (isId(id) ? lists.findList(ctx.db, me.account.id, id) : Promise.resolve(null));

  async function indexPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, error = '', title = '', status = 200) {
    return sendClientPage(ctx, request, reply, 'client/lists', { key: 'lists.title' }, {
      lists: await lists.listsOf(ctx.db, me.account.id), policies: POLICIES, error, title, pagePath: '/lists',
    }, status);
  }

  async function listPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, list: lists.ListRow, error = '', status = 200) {
    const viewerId = me.account.id;
    const path = `/lists/${list.id}`;
    const p = request.method === 'GET' ? pagingOf(request) : { limit: 21 };
    let ids = (await ctx.listFeeds.page(list.id, p)).ids;
    if (ids === null) {
      await ctx.actors.ask(viewerId, { type: 'rebuildListFeed', listId: list.id });
      ids = (await ctx.listFeeds.page(list.id, p)).ids ?? [];
    }
    const page = pageOf(ids, p, path);
    const q = request.method === 'GET' ? String((request.query as { q?: unknown }).q ?? '').trim().slice(0, 200) : '';
    const [members, found, entries] = await Promise.all([
      lists.listMembersPage(ctx.db, list.id, { limit: lists.MEMBERS_PER_LIST }),
      // Only people one follows may be members: the search looks among them, as Mastodon's list editor does.
      q ? findAccounts(ctx, viewerId, q, { limit: 10, offset: 0, following: true, resolve: false }) : Promise.resolve([]),
      clientEntries(ctx, viewerId, page.ids, 'list'),
    ]);
    const memberIds = new Set(members.accounts.map((a) => a.id));
    const view = async (rows: typeof members.accounts) => (await withAccountEmojis(ctx.db, rows)).map((a) => accountView(ctx.render, renderAccount(ctx.render, a)));
    return sendClientPage(ctx, request, reply, 'client/list', list.title, {
      list, policies: POLICIES, error, q, pagePath: path,
      members: await view(members.accounts), candidates: await view(found.filter((a) => !memberIds.has(a.id))),
      entries, pager: page.pager, live: request.method === 'GET' ? liveOf(p, { stream: 'list', list: list.id, context: 'list' }) : null,
    }, status);
  }

  /** Runs a change to a list; a refusal (bad title, too many lists) shows the page again with its reason. */
  async function change(request: FastifyRequest, reply: FastifyReply, me: SignedIn, list: lists.ListRow | null, run: () => Promise<unknown>, done: string) {
    try {
      await run();
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      if (err.statusCode === 404 && !list) return notFoundPage(request, reply);
      const t = await translatorOf(ctx, request);
      const message = err.statusCode === 404 ? t('lists.only_followed') : formError(t, err);
      return list ? listPage(request, reply, me, list, message, 422) : indexPage(request, reply, me, message, '', 422);
    }
    return reply.redirect(done, 303);
  }

  app.get('/lists', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me ? indexPage(request, reply, me) : reply;
  });

  app.post('/lists', { schema: { body: ListForm } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const b = request.body;
    try {
      const list = await ctx.actors.ask(me.account.id, { type: 'createList', list: { title: b.title ?? '', repliesPolicy: policyOf(b.replies_policy), exclusive: !!b.exclusive } });
      return reply.redirect(`/lists/${list.id}`, 303);
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      return indexPage(request, reply, me, formError(await translatorOf(ctx, request), err), b.title ?? '', 422);
    }
  });

  app.get('/lists/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const list = await ownList(me, request.params.id);
    return list ? listPage(request, reply, me, list) : notFoundPage(request, reply);
  });

  app.post('/lists/:id', { schema: { params: IdParams, body: ListForm } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const list = await ownList(me, request.params.id);
    if (!list) return notFoundPage(request, reply);
    const b = request.body;
    return change(request, reply, me, list, () => ctx.actors.ask(me.account.id, {
      type: 'updateList', listId: list.id, list: { title: b.title ?? '', repliesPolicy: policyOf(b.replies_policy), exclusive: !!b.exclusive },
    }), `/lists/${list.id}`);
  });

  app.post('/lists/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const list = await ownList(me, request.params.id);
    if (!list) return notFoundPage(request, reply);
    return change(request, reply, me, null, () => ctx.actors.ask(me.account.id, { type: 'deleteList', listId: list.id }), '/lists');
  });

  for (const [action, type] of [['add', 'addListMembers'], ['remove', 'removeListMembers']] as const) {
    app.post(`/lists/:id/${action}`, { schema: { params: IdParams, body: Member } }, async (request, reply) => {
      const me = await signedInOrRedirect(request, reply);
      if (!me) return reply;
      const list = await ownList(me, request.params.id);
      if (!list) return notFoundPage(request, reply);
      const accountId = request.body.account_id ?? '';
      return change(request, reply, me, list, async () => {
        if (!isId(accountId)) throw new ApiError(404, 'Record not found');
        await ctx.actors.ask(me.account.id, { type, listId: list.id, accountIds: [accountId] });
      }, `/lists/${list.id}`);
    });
  }
}
