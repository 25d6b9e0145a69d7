import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashSecret } from '../../storage/oauth.ts';
import type { AppContext } from '../../context.ts';

/** Limits shared through Redis, so every web process counts together. */
export const LIMITS = {
  // Mastodon: 300 API requests per 5 minutes per token (or per address without one).
  api: { max: 300, timeWindow: 5 * 60 * 1000 },
  // Password guessing on the sign-in page.
  signIn: { max: 25, timeWindow: 5 * 60 * 1000 },
  // Mastodon: 5 registrations per 30 minutes per address.
  registration: { max: 5, timeWindow: 30 * 60 * 1000 },
} as const;

function clientKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const token = header && /^Bearer\s+(\S+)/i.exec(header)?.[1];
  return token ? `token:${hashSecret(token)}` : `ip:${request.ip}`;
}

async function rateLimitPlugin(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  await app.register(rateLimit, {
    global: true,
    ...LIMITS.api,
    redis: ctx.redis,
    nameSpace: `${ctx.config.redisPrefix}rate-limit:`,
    keyGenerator: clientKey,
    // A Redis outage must not take the API down with it; /health reports it.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      error: 'Too many requests',
      message: `Too many requests, retry in ${context.after}`,
    }),
  });
}

export default fp(rateLimitPlugin, { name: 'rate-limit' });
