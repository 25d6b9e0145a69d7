import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { cardsByIds, publishersPage } from '../../storage/trend-reviews.ts';
import {
  adminStatusTrends, adminTagTrends, hostOf, linkCandidates, reviewLink, reviewPublisherOf, reviewStatus, reviewTag,
} from '../../services/trend-reviews.ts';
import { renderStatuses } from '../serializers/statuses.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';

const NOTICES: Record<string, string> = {
  approved: 'Approved: it may trend.',
  rejected: 'Rejected: it no longer trends.',
};
const IdParams = Type.Object({ id: Type.String({ maxLength: 255 }) });
/** How many publishers the page lists, newest first. */
const PUBLISHERS = 100;

/** A review's standing as the page says it: approved, rejected, or (shown meanwhile or not) waiting for review. */
const standing = (x: { trendable: boolean; requiresReview: boolean }) =>
  (x.requiresReview ? (x.trendable ? 'shown, not reviewed' : 'waiting for review') : x.trendable ? 'approved' : 'rejected');

/**
 * The trends' review (Mastodon's Admin::Trends pages): what trends among links (and their publishers), posts and
 * hashtags, rejected ones included, with approve and reject, through the same services as the admin trends API
 * (services/trend-reviews.ts); for roles that may manage taxonomies.
 */
export default async function adminTrendPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  app.get('/admin/trends', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const [candidates, statusTrends, tags, publishers] = await Promise.all([
      linkCandidates(ctx), adminStatusTrends(ctx), adminTagTrends(ctx), publishersPage(ctx.db, { limit: PUBLISHERS }),
    ]);
    const cards = await cardsByIds(ctx.db, candidates.map((l) => l.id));
    const links = candidates.flatMap((l) => {
      const card = cards.get(l.id);
      return card ? [{ id: l.id, url: card.url, title: card.title || card.url, host: hostOf(card.url) ?? '', today: l.history[0]!, standing: standing(l), trendable: l.trendable, reviewed: !l.requiresReview }] : [];
    });
    const rendered = new Map((await renderStatuses(ctx, me.account.id, statusTrends.map((t) => t.id), null)).map((st) => [String(st.id), st]));
    const statuses = statusTrends.flatMap((t) => {
      const st = rendered.get(t.id);
      return st ? [{ id: t.id, status: st, standing: standing(t), trendable: t.trendable, reviewed: !t.requiresReview }] : [];
    });
    return sendFormPage(ctx, request, reply, 'admin/trends', 'Trends', {
      links, statuses,
      tags: tags.map((t) => ({ id: t.id, name: t.name, today: t.history[0]!, standing: standing(t), trendable: t.trendable, reviewed: !t.requiresReview })),
      publishers: publishers.map((p) => ({ id: p.id, domain: p.domain, standing: standing({ trendable: p.trendable, requiresReview: p.reviewed_at === null }), trendable: p.trendable, reviewed: p.reviewed_at !== null })),
      notice: (request.query.notice && NOTICES[request.query.notice]) || '', error: '',
    });
  });

  const KINDS = [
    ['links', async (id: string, trendable: boolean) => (await reviewLink(ctx, id, trendable)) !== null],
    ['statuses', (id: string, trendable: boolean) => reviewStatus(ctx, id, trendable)],
    ['tags', async (id: string, trendable: boolean) => (await reviewTag(ctx, id, trendable)) !== null],
    ['publishers', async (id: string, trendable: boolean) => (await reviewPublisherOf(ctx, id, trendable)) !== null],
  ] as const;
  for (const [kind, act] of KINDS) {
    for (const [action, trendable] of [['approve', true], ['reject', false]] as const) {
      app.post(`/admin/trends/${kind}/:id/${action}`, { schema: { params: IdParams } }, async (request, reply) => {
        if (!(await operator(request, reply))) return;
        if (!(await act(request.params.id, trendable))) return refusedPage(ctx, request, reply, gone(), '/admin/trends');
        return reply.redirect(`/admin/trends?notice=${trendable ? 'approved' : 'rejected'}#${kind}`, 303);
      });
    }
  }
}
