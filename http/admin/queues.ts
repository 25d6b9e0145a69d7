import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../route-options.ts';
import { requireViewer } from '../plugins/auth.ts';
import { listServerHealth } from '../../storage/federation-health.ts';
import { serializeFederationServer } from '../serializers/federation-server.ts';

/**
 * For operators: how much work waits in the job queues (fan-out, fetches from other sites, transcodes, deliveries to other servers) and what failed
 * for good, and each remote server's federation health (federation/health.ts; written every few seconds, so up to
 * that much behind). Operators whose role may view devops (services/roles.ts), with a token that has `admin:read`.
 */
export default async function adminQueueRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/admin/queues', {
    config: { auth: { kind: 'admin', scopes: ['admin:read'] } },
  }, async (request) => {
    requireViewer(request);
    const [fanout, pull, media, federation, failures, servers] = await Promise.all([
      ctx.jobs.fanout.getJobCounts('waiting', 'active', 'delayed', 'failed'),
      ctx.jobs.pull.getJobCounts('waiting', 'active', 'delayed', 'failed'),
      ctx.jobs.media.getJobCounts('waiting', 'active', 'delayed', 'failed'),
      ctx.federationQueue.getDepth(),
      ctx.federationQueue.recentFailures(50),
      listServerHealth(ctx.db, 100),
    ]);
    const [fanoutFailed, pullFailed, mediaFailed] = await Promise.all([ctx.jobs.fanout.getFailed(0, 49), ctx.jobs.pull.getFailed(0, 49), ctx.jobs.media.getFailed(0, 49)]);
    const failure = (j: (typeof fanoutFailed)[number]) => ({ id: j.id, kind: j.name, reason: j.failedReason, attempts: j.attemptsMade, at: j.finishedOn ? new Date(j.finishedOn).toISOString() : null });
    return {
      fanout: { ...fanout, recent_failures: fanoutFailed.map(failure) },
      // Fetches from other sites (link preview cards), on a queue of their own (jobs/queues.ts).
      pull: { ...pull, recent_failures: pullFailed.map(failure) },
      // Transcodes of video, audio, animated images and HEIC photos (jobs/queues.ts).
      media: { ...media, recent_failures: mediaFailed.map(failure) },
      federation: { ...federation, recent_failures: failures.map((f) => ({ queue: f.queue, id: f.id, reason: f.failedReason, at: f.finishedOn ? new Date(f.finishedOn).toISOString() : null })) },
      // Servers with the latest failures or drops first.
      servers: servers.map(serializeFederationServer),
    };
  });
}
