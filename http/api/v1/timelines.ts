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
import { cachedHomePage } from '../../home-timeline.ts';
import { sendKeptBody } from '../../encoded-body.ts';
import type { AppContext } from '../../../context.ts';
import type { PageParams } from '../../../storage/paging.ts';

const PublicQuery = Type.Object({
  ...PagingQuery(20, 40),
  local: Type.Optional(Bool()),
  remote: Type.Optional(Bool()),
  only_media: Type.Optional(Bool()),
});

/** A page of the home feed as JSON, from the page cache when nothing it was made from has changed (http/home-timeline.ts). */
function homeTimelinePage(ctx: AppContext, viewerId: string, p: PageParams) {
  const key = `${viewerId}/${p.maxId ?? ''}/${p.sinceId ?? ''}/${p.minId ?? ''}/${p.limit}`;
  return cachedHomePage(ctx, ctx.homePages, key, viewerId, p, async (ids) => {
    const { rows, bundle, versions, notAfter } = await loadForViewer(ctx, viewerId, ids, 'home');
    return { body: renderStatusListJson(ctx.render, bundle, rows), versions, notAfter };
  });
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
    // The same page goes to every request until it changes: compressed once for the apps that ask (http/encoded-body.ts).
    return sendKeptBody(request, reply.type('application/json; charset=utf-8'), page.body);
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
