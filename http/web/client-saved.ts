import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../route-options.ts';
import { bookmarksPage, favouritesPage } from '../../storage/status-marks.ts';
import { followRequestsPage } from '../../storage/follows.ts';
import { withAccountEmojis } from '../../services/custom-emojis.ts';
import { renderAccount } from '../serializers/account.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { PAGE_SIZE, clientFrame, pagingOf, sendClientPage } from './client-page.ts';
import { timelineEntries } from './entry-fragments.ts';
import { accountView } from './page-view.ts';

/** Links to the next older page of a list paged by its own ids (a bookmark's, a request's), as the API's Link header. */
function markPager(path: string, lastId: string | null, full: boolean, newer: boolean) {
  return { older: full && lastId ? `${path}?max_id=${lastId}` : null, newer: newer ? path : null };
}

/**
 * What a person kept: their bookmarks and favourites (as GET /api/v1/bookmarks and /favourites list them, newest
 * mark first, with what the viewer may no longer see left out), and the follow requests waiting for their answer.
 */
export default async function clientSavedRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  for (const [path, read, title, empty] of [
    ['/bookmarks', bookmarksPage, 'home.bookmarks', 'saved.no_bookmarks'],
    ['/favourites', favouritesPage, 'home.favourites', 'saved.no_favourites'],
  ] as const) {
    app.get(path, async (request, reply) => {
      const me = await signedInOrRedirect(request, reply);
      if (!me) return reply;
      const p = { ...pagingOf(request), minId: undefined, limit: PAGE_SIZE };
      const marks = await read(ctx.db, me.account.id, p);
      const t = await translatorOf(ctx, request);
      const heading = t(title);
      const frame = await clientFrame(ctx, request, heading);
      return sendClientPage(ctx, request, reply, 'client/timeline', heading, {
        heading, intro: '', compose: null,
        entries: await timelineEntries(ctx, me.account.id, marks.statusIds, null, frame),
        pager: markPager(path, marks.lastId, marks.statusIds.length >= PAGE_SIZE, !!p.maxId),
        empty: t(p.maxId ? 'profile.no_older' : empty),
      }, 200, frame);
    });
  }

  app.get('/follow_requests', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const p = { ...pagingOf(request), minId: undefined, limit: 40 };
    const page = await followRequestsPage(ctx.db, me.account.id, p);
    const accounts = (await withAccountEmojis(ctx.db, page.accounts)).map((a) => accountView(ctx.render, renderAccount(ctx.render, a)));
    return sendClientPage(ctx, request, reply, 'client/follow_requests', { key: 'follow_requests.title' }, {
      accounts, locked: me.account.locked, pager: markPager('/follow_requests', page.lastId, accounts.length >= 40, !!p.maxId),
    });
  });
}
