import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import type { AppContext } from '../../../context.ts';
import { PagingQuery } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import { bookmarksPage, favouritesPage } from '../../../storage/status-marks.ts';
import { renderStatuses, renderTimeline } from '../../serializers/statuses.ts';
import { visibleStatus } from '../../../services/visibility.ts';

// Bookmarks, pins and muted conversations on statuses (services/status-marks.ts, through the account's actor), and
// the lists of a person's bookmarks and favourites.

const StatusParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

/** Each action: its message to the actor, its scopes, and whether a reblog's id stands for its original. */
const ACTIONS = {
  bookmark: { type: 'bookmark', scopes: ['write:bookmarks'], followReblog: true },
  unbookmark: { type: 'unbookmark', scopes: ['write:bookmarks'], followReblog: true },
  // A reblog's id pins the reblog, which is refused (Mastodon's "A boost cannot be pinned").
  pin: { type: 'pin', scopes: ['write:accounts'], followReblog: false },
  unpin: { type: 'unpin', scopes: ['write:accounts'], followReblog: false },
  mute: { type: 'muteConversation', scopes: ['write:mutes'], followReblog: true },
  unmute: { type: 'unmuteConversation', scopes: ['write:mutes'], followReblog: true },
} as const;

async function renderOne(ctx: AppContext, viewerId: string, id: string) {
  const [rendered] = await renderStatuses(ctx, viewerId, [id]);
  if (!rendered) throw notFound();
  return rendered;
}

export default async function statusMarksRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  for (const [action, a] of Object.entries(ACTIONS)) {
    app.post(`/api/v1/statuses/:id/${action}`, {
      schema: { params: StatusParams },
      config: { auth: { kind: 'user', scopes: a.scopes } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      // One the viewer may not see is not found, whatever the action (Mastodon authorizes `show?` first).
      const status = await visibleStatus(ctx.db, viewerId, request.params.id, a.followReblog);
      await ctx.actors.ask(viewerId, { type: a.type, status });
      return renderOne(ctx, viewerId, request.params.id);
    });
  }

  for (const [path, page, scopes] of [
    ['/api/v1/bookmarks', bookmarksPage, ['read:bookmarks']],
    ['/api/v1/favourites', favouritesPage, ['read:favourites']],
  ] as const) {
    app.get(path, {
      schema: { querystring: Type.Object(PagingQuery(20, 40)) },
      config: { auth: { kind: 'user', scopes } },
    }, async (request, reply) => {
      const viewerId = requireViewer(request);
      // Newest first by the bookmark's (favourite's) id, which the Link header pages by; statuses the viewer can no
      // longer see are left out of the page.
      const marks = await page(ctx.db, viewerId, pageParams(request.query, 20));
      setLinkHeader(request, reply, ctx.config.publicUrl, marks.firstId, marks.lastId);
      return reply.type('application/json; charset=utf-8').send(await renderTimeline(ctx, viewerId, marks.statusIds, null));
    });
  }
}
