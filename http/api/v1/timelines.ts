import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, PagingQuery } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { publicTimelineIds } from '../../../storage/statuses.ts';
import { loadForViewer, renderTimeline } from '../../serializers/statuses.ts';
import { renderStatusListJson } from '../../serializers/status.ts';
import { RenderedPageCache } from '../../../services/page-cache.ts';
import type { AppContext } from '../../../context.ts';
import type { PageParams } from '../../../storage/paging.ts';
import type { TrackingTicket } from '../../../storage/key-tracking.ts';

const PublicQuery = Type.Object({
  ...PagingQuery(20, 40),
  local: Type.Optional(Bool()),
  remote: Type.Optional(Bool()),
  only_media: Type.Optional(Bool()),
});

/**
 * A page of the home feed, rendered. The page last rendered for the same viewer and paging is sent again:
 * - without asking Redis, when every key it was made from is under client tracking and no change to any of them
 *   has arrived by the time the tracking has synced (storage/key-tracking.ts);
 * - otherwise when the feed read (which checks its versions in the same Redis command) shows nothing changed.
 * Whether the viewer may see a status in their own feed changes only with what removes it from the feed
 * (unfollowing) or with a version bump (an edit of its mentions, a deletion).
 */
async function homeTimelinePage(ctx: AppContext, viewerId: string, p: PageParams, waited = false): Promise<{ ids: string[]; body: Buffer }> {
  const key = `${viewerId}/${p.maxId ?? ''}/${p.sinceId ?? ''}/${p.minId ?? ''}/${p.limit}`;
  if (ctx.homePages.getTracked(key) && (await ctx.tracking.sync())) {
    const page = ctx.homePages.getTracked(key);
    if (page) {
      ctx.homePages.hits++;
      ctx.homePages.trackedHits++;
      return page;
    }
  }
  // The same page being rendered for another request: its result, checked as any cached page is (once: a change
  // that came meanwhile makes this request render it).
  const rendering = waited ? undefined : ctx.homePages.renderingOf(key);
  if (rendering) {
    await rendering;
    return homeTimelinePage(ctx, viewerId, p, true);
  }
  const rendered = ctx.homePages.startRendering(key);
  let ticket = ctx.tracking.begin();
  try {
    const cached = ctx.homePages.get(key);
    const read = await ctx.feeds.page(viewerId, p, cached?.versions);
    let ids = read.ids;
    if (ids === null) {
      // A feed lost with Redis (or never built) is rebuilt from PostgreSQL, then read (the rebuild's own change to
      // the keys just read would count against the first ticket).
      await ctx.actors.ask(viewerId, { type: 'rebuildHomeFeed' });
      ctx.tracking.end(ticket);
      ticket = ctx.tracking.begin();
      ids = (await ctx.feeds.page(viewerId, p)).ids ?? [];
    } else if (cached && read.unchanged && RenderedPageCache.sameIds(cached, ids)) {
      ctx.homePages.set(key, cached, trackedKeys(ctx, ticket, viewerId, cached.versions.keys));
      ctx.homePages.hits++;
      return cached;
    }
    // The viewer's filter version is among the versions read, so a change to their filters is a change to the page.
    const { rows, bundle, versions, notAfter } = await loadForViewer(ctx, viewerId, ids, 'home');
    const page = { ids, body: renderStatusListJson(ctx.render, bundle, rows), versions: ctx.versions.keysOf(versions), notAfter };
    ctx.homePages.misses++;
    ctx.homePages.set(key, page, trackedKeys(ctx, ticket, viewerId, page.versions.keys));
    return page;
  } finally {
    ctx.tracking.end(ticket);
    rendered();
  }
}

/** The keys a page was made from, when all were read under tracking and none has changed since; else null. */
function trackedKeys(ctx: AppContext, ticket: TrackingTicket, viewerId: string, versionKeys: string[]): string[] | null {
  const keys = [...ctx.feeds.pageKeys(viewerId), ...versionKeys];
  return ctx.tracking.unchanged(ticket, keys) ? keys : null;
}

/** The Link header last sent with a cached page, and the request URL it was made for. */
const links = new WeakMap<object, { url: string; value: string }>();

export default async function timelinesRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/timelines/home', {
    schema: { querystring: Type.Object(PagingQuery(20, 40)) },
    config: { auth: { kind: 'user', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const page = await homeTimelinePage(ctx, viewerId, pageParams(request.query, 20));
    // A page served again from the cache is mostly asked for with the same URL: its Link header is kept with it.
    const link = links.get(page);
    if (link?.url === request.url) reply.header('link', link.value);
    else {
      setLinkHeader(request, reply, ctx.config.publicUrl, page.ids[0] ?? null, page.ids.at(-1) ?? null);
      const value = reply.getHeader('link');
      if (typeof value === 'string') links.set(page, { url: request.url, value });
    }
    return reply.type('application/json; charset=utf-8').send(page.body);
  });

  app.get('/api/v1/timelines/public', {
    schema: { querystring: PublicQuery },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const q = request.query;
    const ids = await publicTimelineIds(await ctx.readDb(request.viewerId), { local: q.local ?? false, remote: q.remote ?? false, onlyMedia: q.only_media ?? false, viewerId: request.viewerId }, pageParams(q, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, ids[0] ?? null, ids.at(-1) ?? null);
    return reply.type('application/json; charset=utf-8').send(await renderTimeline(ctx, request.viewerId, ids, 'public'));
  });

  app.get('/api/v1/timelines/tag/:hashtag', {
    schema: { params: Type.Object({ hashtag: Type.String({ minLength: 1, maxLength: 100 }) }), querystring: PublicQuery },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const q = request.query;
    const tag = request.params.hashtag.replace(/^#/, '');
    const ids = await publicTimelineIds(await ctx.readDb(request.viewerId), { local: q.local ?? false, remote: q.remote ?? false, tag, onlyMedia: q.only_media ?? false, viewerId: request.viewerId }, pageParams(q, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, ids[0] ?? null, ids.at(-1) ?? null);
    return reply.type('application/json; charset=utf-8').send(await renderTimeline(ctx, request.viewerId, ids, 'public'));
  });
}
