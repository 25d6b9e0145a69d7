import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { queueCounts, recentFailedJobs, removeFailedJob, retryFailedJob } from '../../services/job-queues.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';

const NOTICES: Record<string, string> = {
  retried: 'The job is queued again, with all its attempts.',
  removed: 'The job is removed.',
};
/** How many failed jobs the page shows, newest first, of all queues together. */
const FAILED_SHOWN = 50;
const JobParams = Type.Object({ queue: Type.String({ maxLength: 60 }), id: Type.String({ maxLength: 300 }) });

/**
 * The job queues (what Mastodon shows operators in Sidekiq's pages): each BullMQ queue's counts, the latest jobs
 * that failed for good with why and how many attempts they had, and forms to retry or remove one (audit-logged);
 * for roles that may view devops.
 */
export default async function adminJobPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  app.get('/admin/jobs', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const [queues, failed] = await Promise.all([queueCounts(ctx), recentFailedJobs(ctx, FAILED_SHOWN)]);
    return sendFormPage(ctx, request, reply, 'admin/jobs', 'Job queues', {
      queues, failed, shown: FAILED_SHOWN, notice: (request.query.notice && NOTICES[request.query.notice]) || '', error: '',
    });
  });

  for (const [action, act, notice] of [['retry', retryFailedJob, 'retried'], ['remove', removeFailedJob, 'removed']] as const) {
    app.post(`/admin/jobs/:queue/:id/${action}`, { schema: { params: JobParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      if (!(await act(ctx, request.params.queue, request.params.id, me.account.id))) return refusedPage(ctx, request, reply, gone(), '/admin/jobs');
      return reply.redirect(`/admin/jobs?notice=${notice}`, 303);
    });
  }
}
