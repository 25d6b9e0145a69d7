import fp from 'fastify-plugin';
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/**
 * Where web clients on other origins (Elk, Phanpy, Semaphore) may call us, as Mastodon's rack-cors set-up allows:
 * the API (streaming included), the token endpoints, discovery documents and public ActivityPub documents. Sign-in,
 * settings and every other page stay same-origin: no CORS headers there, and their preflights get a 404.
 */
const CROSS_ORIGIN_PATH = /^\/(?:api\/|oauth\/(?:token|revoke|userinfo)$|\.well-known\/|nodeinfo\/|users\/)/;

const API = {
  origin: '*',
  credentials: false,
  methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
  // Without Link a web client cannot page; the rate-limit headers let it back off; Mastodon-Async-Refresh says a
  // thread is being fetched and may be asked for again.
  exposedHeaders: ['Link', 'X-RateLimit-Reset', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-Request-Id', 'Mastodon-Async-Refresh'],
  maxAge: 7200,
};
const NONE = { origin: false };

async function corsPlugin(app: FastifyInstance) {
  await app.register(cors, {
    hook: 'onRequest',
    delegator: (request, callback) => {
      const path = request.url.split('?', 1)[0]!;
      // The same objects every time: @fastify/cors copies them into its own per request and never changes them.
      callback(null, CROSS_ORIGIN_PATH.test(path) ? API : NONE);
    },
  });
}

export default fp(corsPlugin, { name: 'cors' });
