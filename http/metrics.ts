import { can } from '../services/roles.ts';
import fp from 'fastify-plugin';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RouteOptions } from './route-options.ts';
import { ApiError } from '../errors.ts';
import { metricsOf } from '../services/metrics.ts';
import { grantsAny, parseScopes } from './oauth/scopes.ts';

/** ActivityPub paths Fedify answers before Fastify's routes (no route pattern of ours names them), as labels. */
const FEDERATION_ROUTES: [RegExp, string][] = [
  [/^\/inbox$/, '/inbox'],
  [/^\/users\/[^/]+\/inbox$/, '/users/:username/inbox'],
  [/^\/users\/[^/]+\/statuses\/[^/]+$/, '/users/:username/statuses/:id'],
  [/^\/users\/[^/]+\/(followers|following|outbox)$/, '/users/:username/$1'],
  [/^\/users\/[^/]+\/collections\/(featured|tags)$/, '/users/:username/collections/$1'],
  [/^\/users\/[^/]+$/, '/users/:username'],
  [/^\/\.well-known\/(webfinger|nodeinfo|host-meta)$/, '/.well-known/$1'],
  [/^\/nodeinfo\/[^/]+$/, '/nodeinfo/:version'],
];

/** The route a request went to, as a pattern (never the raw URL: labels must stay few). */
function routeLabel(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  if (pattern) return pattern;
  const path = request.url.split('?', 1)[0]!;
  for (const [re, label] of FEDERATION_ROUTES) if (re.test(path)) return path.replace(re, label);
  return 'unmatched';
}

/** Counts every answered request by route and status, in memory (services/metrics.ts). */
async function requestMetrics(app: FastifyInstance, { ctx }: RouteOptions) {
  const metrics = metricsOf(ctx);
  app.addHook('onResponse', (request, reply, done) => {
    metrics.request(request.method, routeLabel(request), reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
export const requestMetricsPlugin = fp(requestMetrics, { name: 'request-metrics' });

const sameSecret = (a: string, b: string) => timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

/**
 * `GET /metrics` in Prometheus's text format. With METRICS_TOKEN set, a scraper sends it as a bearer token; an
 * operator's OAuth token with `admin:read`, whose role may view devops, is taken too. Anyone else gets 401 (no token) or 403.
 */
export default async function metricsRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/metrics', { config: { auth: { kind: 'anonymous' } } }, async (request, reply) => {
    const raw = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!raw) throw new ApiError(401, 'The access token is invalid');
    const byToken = ctx.config.metricsToken !== '' && sameSecret(raw, ctx.config.metricsToken);
    if (!byToken) {
      const token = await ctx.tokens.lookup(ctx.db, raw);
      if (!token) throw new ApiError(401, 'The access token is invalid');
      if (!can(token.role_permissions, 'view_devops') || token.suspended || !grantsAny(parseScopes(token.scopes), ['admin:read'])) throw new ApiError(403, 'This action is not allowed');
    }
    const { contentType, body } = await metricsOf(ctx).render();
    return reply.type(contentType).header('cache-control', 'no-store').send(body);
  });
}
