import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { PagingQuery } from '../../params.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import { findCardByUrl } from '../../../storage/preview-cards.ts';
import { linkTimelineIds } from '../../../storage/trend-reviews.ts';
import { trendingLinks } from '../../../services/trend-reviews.ts';
import { renderTimeline } from '../../serializers/statuses.ts';

const LinkQuery = Type.Object({
  ...PagingQuery(20, 40),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
});

/**
 * `GET /api/v1/timelines/link?url=` (Mastodon 4.3): public posts showing the card of a link that is trending now
 * (approved and among the public link trends), newest first with id paging; any other link is a 404, as in Mastodon.
 */
export default async function linkTimelineRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/timelines/link', {
    schema: { querystring: LinkQuery },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const q = request.query;
    const card = await findCardByUrl(ctx.db, q.url);
    if (!card || !(await trendingLinks(ctx)).some((t) => t.id === String(card.id))) throw notFound();
    const ids = await linkTimelineIds(ctx.db, String(card.id), request.viewerId ?? null, pageParams(q, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, ids[0] ?? null, ids.at(-1) ?? null);
    return reply.type('application/json; charset=utf-8').send(await renderTimeline(ctx, request.viewerId, ids, 'public'));
  });
}
