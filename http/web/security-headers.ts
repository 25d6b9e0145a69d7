import fp from 'fastify-plugin';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import type { FastifyHelmetOptions } from '@fastify/helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: Error) => void) => void;
type HeaderOptions = Omit<FastifyHelmetOptions, 'global' | 'enableCSPNonces'>;

// Helmet itself, the very module @fastify/helmet calls (its own dependency).
const helmet = createRequire(import.meta.resolve('@fastify/helmet'))('helmet') as (options: HeaderOptions) => Middleware;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's security headers, made once from its `helmet` options over the scope's. */
    securityHeaders?: Middleware;
  }
}

/**
 * The pages' security headers (Content-Security-Policy, X-Frame-Options, Referrer-Policy…), as @fastify/helmet sets
 * them, with the same options and the same per-route `helmet` options over them, but made once: @fastify/helmet makes
 * helmet's middleware again for every request (its directives parsed, each header's function built), which cost a
 * page more than sending the page itself.
 */
async function securityHeaders(app: FastifyInstance, options: HeaderOptions) {
  const scope = helmet(options);
  app.addHook('onRoute', (route) => {
    if (route.helmet === undefined) return;
    if (route.helmet === false) throw new Error('a route without security headers is not offered');
    route.config = Object.assign(route.config ?? Object.create(null), { securityHeaders: helmet(Object.assign(Object.create(null), options, route.helmet)) });
  });
  app.addHook('onRequest', (request, reply, done) => {
    (request.routeOptions.config.securityHeaders ?? scope)(request.raw, reply.raw, done);
  });
}

export default fp(securityHeaders, { name: 'web-security-headers' });
