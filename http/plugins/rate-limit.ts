import fp from 'fastify-plugin';
import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TokenCache } from '../../services/token-cache.ts';
import { RateLimitCounters } from '../../storage/rate-limit-counters.ts';
import type { AppContext } from '../../context.ts';

/** Limits shared through Redis, so every web process counts together. */
export const LIMITS = {
  // Mastodon: 300 API requests per 5 minutes per token (or per address without one); RATE_LIMIT_API_PER_5MIN.
  api: { max: 300, timeWindow: 5 * 60 * 1000 },
  // Password guessing on the sign-in page.
  signIn: { max: 25, timeWindow: 5 * 60 * 1000 },
  // Mastodon: 5 registrations per 30 minutes per address.
  registration: { max: 5, timeWindow: 30 * 60 * 1000 },
} as const;

/** Per token (its SHA-256, known without hashing again for a token the token cache holds), else per address. */
function clientKey(tokens: TokenCache): (request: FastifyRequest) => string {
  return (request) => {
    const header = request.headers.authorization;
    const token = header && /^Bearer\s+(\S+)/i.exec(header)?.[1];
    return token ? `token:${tokens.hashOf(token)}` : `ip:${request.ip}`;
  };
}

/**
 * The plugin's store over counters batched to Redis (storage/rate-limit-counters.ts) instead of its Redis store's
 * one script call per request. Keys are named as that store names them: the global limit under the namespace,
 * a route's own limit under the namespace, its method and URL.
 */
function sharedStore(counters: RateLimitCounters, namespace: string) {
  return class SharedStore implements FastifyRateLimitStore {
    private readonly prefix: string;
    constructor(_options?: unknown, prefix = namespace) {
      this.prefix = prefix;
    }

    incr(key: string, done: (err: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number, max: number): void {
      counters.hit(this.prefix + key, timeWindow, max, done);
    }

    read(key: string, done: (err: Error | null, result?: { current: number; ttl: number }) => void): void {
      counters.read(this.prefix + key, done);
    }

    // The plugin passes the route's merged limit settings, the route itself as `routeInfo` (its typings say otherwise).
    child(routeOptions: object): FastifyRateLimitStore {
      const route = (routeOptions as { routeInfo: { method: string; url: string } }).routeInfo;
      return new SharedStore(undefined, `${namespace}${route.method}${route.url}-`);
    }
  };
}

async function rateLimitPlugin(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  // Imported here, not at start: with RATE_LIMITS=false this plugin is never registered and the package (with
  // ip-address: ~12 modules) never loaded.
  const { default: rateLimit } = await import('@fastify/rate-limit');
  const counters = new RateLimitCounters(ctx.redis);
  app.addHook('onClose', () => counters.close());
  await app.register(rateLimit, {
    global: true,
    ...LIMITS.api,
    max: ctx.config.rateLimitApiPer5Min,
    store: sharedStore(counters, `${ctx.config.redisPrefix}rate-limit:`),
    keyGenerator: clientKey(ctx.tokens),
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
