import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isId } from '../params.ts';
import { ApiError } from '../../errors.ts';
import { scheduledStatusesOf, SCHEDULED_TOTAL_LIMIT } from '../../storage/scheduled-statuses.ts';
import { signedInOrRedirect, sendMessagePage, translatorOf } from './page.ts';
import { sendClientPage } from './client-page.ts';
import { dateView } from './page-view.ts';

// Message keys of the words for each visibility.
const VISIBILITY_WORDS: Record<string, string> = { public: 'compose.visibility.public', unlisted: 'compose.visibility.unlisted', private: 'compose.visibility.private', direct: 'compose.visibility.direct' };

/**
 * Scheduled posts (made by the compose form's "Schedule", or an app's `scheduled_at`): listed as
 * GET /api/v1/scheduled_statuses lists them, each with Cancel (the author's actor removes it, as
 * DELETE /api/v1/scheduled_statuses/:id does).
 */
export default async function clientScheduledRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/scheduled_statuses', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 20 })) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const rows = await scheduledStatusesOf(ctx.db, me.account.id, { limit: SCHEDULED_TOTAL_LIMIT });
    const items = rows.sort((a, b) => a.scheduled_at.getTime() - b.scheduled_at.getTime()).map((r) => ({
      id: r.id, at: dateView(r.scheduled_at), text: r.params.text, spoiler: r.params.spoilerText,
      visibility: VISIBILITY_WORDS[r.params.visibility] ?? 'compose.visibility.public', media: r.params.mediaIds.length, quote: !!r.params.quotedStatusId,
    }));
    const t = await translatorOf(ctx, request);
    const notice = request.query.notice === 'scheduled' ? t('scheduled.notice_scheduled') : request.query.notice === 'cancelled' ? t('scheduled.notice_cancelled') : '';
    return sendClientPage(ctx, request, reply, 'client/scheduled', { key: 'scheduled.title' }, { items, notice });
  });

  app.post('/scheduled_statuses/:id/cancel', { schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    try {
      if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
      await ctx.actors.ask(me.account.id, { type: 'unscheduleStatus', scheduledStatusId: request.params.id });
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      return sendMessagePage(ctx, request, reply, { key: 'refused.title' }, { key: 'scheduled.not_there' }, { status: err.statusCode, kind: 'error', link: { href: '/scheduled_statuses', text: { key: 'common.go_back' } } });
    }
    return reply.redirect('/scheduled_statuses?notice=cancelled', 303);
  });
}
