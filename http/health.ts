import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from './route-options.ts';
import { RETRY_AFTER_S } from '../storage/dependencies.ts';

/**
 * Each dependency as this process sees it, probed now: 200 when PostgreSQL and Redis both answer, 503 (and
 * Retry-After) when either does not, so a load balancer takes the process out until they are back.
 */
export default async function healthRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/health', async (_request, reply) => {
    const up = await ctx.dependencies.check();
    const ok = up.postgres && up.redis;
    if (!ok) reply.header('retry-after', String(RETRY_AFTER_S));
    return reply.code(ok ? 200 : 503).send({
      status: ok ? 'ok' : 'unavailable',
      postgres: up.postgres ? 'ok' : 'unavailable',
      redis: up.redis ? 'ok' : 'unavailable',
    });
  });
}
