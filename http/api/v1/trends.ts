import { Type } from '../../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { preferredLanguages, tagTrends, trendIds } from '../../../services/trends.ts';
import { renderTag } from '../../serializers/tag.ts';
import { followedAmong } from '../../../storage/tag-follows.ts';
import { renderTimeline } from '../../serializers/statuses.ts';
import { linkDetails } from '../../../services/trend-reviews.ts';
import { cardsByIds } from '../../../storage/trend-reviews.ts';
import { renderPreviewCard } from '../../serializers/preview-card.ts';

const TrendsQuery = (defaultLimit: number, maxLimit: number) => Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, default: defaultLimit, maximumClamp: maxLimit })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
});

/** Mastodon's offset paging: `next` while the page was full, `prev` after the first page. */
export function setOffsetLinks(request: FastifyRequest, reply: FastifyReply, publicUrl: string, offset: number, limit: number, count: number): void {
  const path = request.url.split('?')[0];
  const links: string[] = [];
  if (count === limit) links.push(`<${publicUrl}${path}?limit=${limit}&offset=${offset + limit}>; rel="next"`);
  if (offset > 0) links.push(`<${publicUrl}${path}?limit=${limit}&offset=${Math.max(0, offset - limit)}>; rel="prev"`);
  if (links.length > 0) reply.header('link', links.join(', '));
}

/**
 * Trends from recent public activity, local and remote, as the refreshTrends job scored them (services/trends.ts):
 * what an operator did not reject (links: what one approved), by score; statuses and links in the viewer's language
 * first (their locale, else Accept-Language), as Mastodon. Anyone may read them, as on Mastodon.
 */
export default async function trendsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const tags = async (request: FastifyRequest, reply: FastifyReply, q: { limit?: number | undefined; offset?: number | undefined }) => {
    const limit = q.limit ?? 10;
    const offset = q.offset ?? 0;
    const trending = await tagTrends(ctx, { offset, limit });
    // `following` for a signed-in viewer (one query on the shared list), as Mastodon gives it.
    const viewerId = request.viewerId;
    const followed = viewerId ? await followedAmong(ctx.db, viewerId, trending.map((t) => t.id)) : null;
    const page = trending.map((t) => ({ ...renderTag(ctx.config.publicUrl, t), ...(followed ? { following: followed.has(t.id) } : {}) }));
    setOffsetLinks(request, reply, ctx.config.publicUrl, offset, limit, page.length);
    return page;
  };
  app.get('/api/v1/trends/tags', {
    schema: { querystring: TrendsQuery(10, 20) },
    config: { auth: { kind: 'public' } },
  }, async (request, reply) => tags(request, reply, request.query));
  // Mastodon's older path for the same list.
  app.get('/api/v1/trends', {
    schema: { querystring: TrendsQuery(10, 20) },
    config: { auth: { kind: 'public' } },
  }, async (request, reply) => tags(request, reply, request.query));

  app.get('/api/v1/trends/statuses', {
    schema: { querystring: TrendsQuery(20, 40) },
    config: { auth: { kind: 'public' } },
  }, async (request, reply) => {
    const limit = request.query.limit ?? 20;
    const offset = request.query.offset ?? 0;
    reply.header('vary', 'Authorization, Accept-Language');
    const languages = await preferredLanguages(ctx, request.viewerId, request.headers['accept-language']);
    const ids = await trendIds(ctx, 'status', { offset, limit, languages });
    // Rendered for the viewer (their favourites and reblogs, their filters of public timelines, as Mastodon's explore).
    const body = await renderTimeline(ctx, request.viewerId, ids, 'public');
    setOffsetLinks(request, reply, ctx.config.publicUrl, offset, limit, ids.length);
    return reply.type('application/json; charset=utf-8').send(body);
  });

  // Links an operator approved (services/trend-reviews.ts), as Trends::Link entities: the card and its history.
  app.get('/api/v1/trends/links', {
    schema: { querystring: TrendsQuery(10, 20) },
    config: { auth: { kind: 'public' } },
  }, async (request, reply) => {
    const limit = request.query.limit ?? 10;
    const offset = request.query.offset ?? 0;
    reply.header('vary', 'Authorization, Accept-Language');
    const languages = await preferredLanguages(ctx, request.viewerId, request.headers['accept-language']);
    const ids = await trendIds(ctx, 'link', { offset, limit, languages });
    const cards = await cardsByIds(ctx.db, ids);
    const trending = await linkDetails(ctx, ids.filter((id) => cards.has(id)).map((id) => ({ id, url: cards.get(id)!.url })));
    setOffsetLinks(request, reply, ctx.config.publicUrl, offset, limit, ids.length);
    return trending.map((t) => ({ ...renderPreviewCard(ctx.render, cards.get(t.id)!), history: t.history }));
  });
}
