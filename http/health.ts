import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from './app.ts';

/** Answers 200 only when both PostgreSQL and Redis answer. */
export default async function healthRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/health', async (_request, reply) => {
    const timeout = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref())]);
    const [pg, redis] = await Promise.allSettled([timeout(ctx.db.query('SELECT 1')), timeout(ctx.redis.ping())]);
    const ok = pg.status === 'fulfilled' && redis.status === 'fulfilled';
    return reply.code(ok ? 200 : 503).send({
      status: ok ? 'ok' : 'unavailable',
      postgres: pg.status === 'fulfilled' ? 'ok' : 'unavailable',
      redis: redis.status === 'fulfilled' ? 'ok' : 'unavailable',
    });
  });
}
