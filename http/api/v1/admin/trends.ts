import { Type } from '../../../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../../route-options.ts';
import { PagingQuery } from '../../../params.ts';
import { requireViewer } from '../../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../../paging.ts';
import { notFound } from '../../../../errors.ts';
import { setOffsetLinks } from '../trends.ts';
import { renderPreviewCard } from '../../../serializers/preview-card.ts';
import { renderTag } from '../../../serializers/tag.ts';
import { renderStatuses } from '../../../serializers/statuses.ts';
import { cardsByIds, publishersPage, type PublisherRow } from '../../../../storage/trend-reviews.ts';
import {
  adminStatusTrends, adminTagTrends, linkCandidates, reviewLink, reviewPublisherOf, reviewStatus, reviewTag,
  type AdminTagTrend, type LinkCandidate,
} from '../../../../services/trend-reviews.ts';
import type { AppContext } from '../../../../context.ts';

// Mastodon's admin trends API (/api/v1/admin/trends/…): what is trending, reviewed or not, and the approvals and
// rejections that decide what the public trends show (services/trend-reviews.ts).

const READ = { kind: 'admin', scopes: ['admin:read'] } as const;
const WRITE = { kind: 'admin', scopes: ['admin:write'] } as const;
const IdParams = Type.Object({ id: Type.String({ maxLength: 255 }) });
const OffsetQuery = (defaultLimit: number, maxLimit: number) => Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, default: defaultLimit, maximumClamp: maxLimit })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
});
const ACTIONS = [['approve', true], ['reject', false]] as const;

/** Admin::Trends::Links::PreviewCardProviderSerializer. */
const renderPublisher = (p: PublisherRow) => ({
  id: p.id,
  domain: p.domain,
  trendable: p.trendable,
  reviewed_at: p.reviewed_at?.toISOString() ?? null,
  requested_review_at: p.requested_review_at?.toISOString() ?? null,
  requires_review: p.reviewed_at === null,
});

/** Admin::TagSerializer: the Tag with its review. */
const renderAdminTag = (ctx: AppContext, t: AdminTagTrend) => ({
  ...renderTag(ctx.config.publicUrl, t),
  trendable: t.trendable,
  usable: true,
  listable: true,
  requires_review: t.requiresReview,
});

/** Admin::Trends::LinkSerializer: the Trends::Link with its card id and review. */
async function renderAdminLinks(ctx: AppContext, links: LinkCandidate[]) {
  const cards = await cardsByIds(ctx.db, links.map((l) => l.id));
  return links.filter((l) => cards.has(l.id)).map((l) => ({
    ...renderPreviewCard(ctx.render, cards.get(l.id)!),
    history: l.history,
    id: l.id,
    requires_review: l.requiresReview,
  }));
}

function page<T>(request: FastifyRequest, reply: FastifyReply, ctx: AppContext, all: T[], q: { limit?: number | undefined; offset?: number | undefined }, defaultLimit: number): T[] {
  const limit = q.limit ?? defaultLimit;
  const offset = q.offset ?? 0;
  const slice = all.slice(offset, offset + limit);
  setOffsetLinks(request, reply, ctx.config.publicUrl, offset, limit, slice.length);
  return slice;
}

export default async function adminTrendsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // Links: every candidate, reviewed or not.
  app.get('/api/v1/admin/trends/links', { schema: { querystring: OffsetQuery(10, 20) }, config: { auth: READ } }, async (request, reply) =>
    renderAdminLinks(ctx, page(request, reply, ctx, await linkCandidates(ctx), request.query, 10)));

  for (const [action, trendable] of ACTIONS) {
    app.post(`/api/v1/admin/trends/links/:id/${action}`, { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
      const link = await reviewLink(ctx, request.params.id, trendable);
      if (!link) throw notFound();
      return (await renderAdminLinks(ctx, [link]))[0];
    });
  }

  // Publishers (the hosts of candidate links), by id; approval or rejection by id or by domain.
  app.get('/api/v1/admin/trends/links/publishers', { schema: { querystring: Type.Object(PagingQuery(100, 200)) }, config: { auth: READ } }, async (request, reply) => {
    const rows = await publishersPage(ctx.db, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.id ?? null, rows.at(-1)?.id ?? null);
    return rows.map(renderPublisher);
  });

  for (const [action, trendable] of ACTIONS) {
    app.post(`/api/v1/admin/trends/links/publishers/:id/${action}`, { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
      // A domain nobody linked yet may be decided in advance; an unknown id is a 404.
      const row = await reviewPublisherOf(ctx, request.params.id, trendable);
      if (!row) throw notFound();
      return renderPublisher(row);
    });
  }

  // Statuses: the trending ones, rejected included, as Status entities with `requires_review`.
  app.get('/api/v1/admin/trends/statuses', { schema: { querystring: OffsetQuery(20, 40) }, config: { auth: READ } }, async (request, reply) => {
    const trends = page(request, reply, ctx, await adminStatusTrends(ctx), request.query, 20);
    const rendered = await renderStatuses(ctx, requireViewer(request), trends.map((t) => t.id), null);
    const pending = new Map(trends.map((t) => [t.id, t.requiresReview]));
    return rendered.map((s) => ({ ...s, requires_review: pending.get(String(s.id)) ?? false }));
  });

  for (const [action, trendable] of ACTIONS) {
    app.post(`/api/v1/admin/trends/statuses/:id/${action}`, { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
      const id = request.params.id;
      if (!(await reviewStatus(ctx, id, trendable))) throw notFound();
      const [rendered] = await renderStatuses(ctx, requireViewer(request), [id], null);
      if (!rendered) throw notFound();
      return { ...rendered, requires_review: false };
    });
  }

  // Tags: the trending ones, rejected included, as Admin::Tag entities.
  app.get('/api/v1/admin/trends/tags', { schema: { querystring: OffsetQuery(10, 20) }, config: { auth: READ } }, async (request, reply) =>
    page(request, reply, ctx, await adminTagTrends(ctx), request.query, 10).map((t) => renderAdminTag(ctx, t)));

  for (const [action, trendable] of ACTIONS) {
    app.post(`/api/v1/admin/trends/tags/:id/${action}`, { schema: { params: IdParams }, config: { auth: WRITE } }, async (request) => {
      const tag = await reviewTag(ctx, request.params.id, trendable);
      if (!tag) throw notFound();
      return renderAdminTag(ctx, tag);
    });
  }
}
