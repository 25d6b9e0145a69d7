import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { DEPENDENCIES, RETRY_AFTER_S, UNAVAILABLE_MESSAGE, type Dependencies } from '../../storage/dependencies.ts';

/** How long a write waits for PostgreSQL and Redis to be back before it is answered 503. */
export const WAIT_FOR_DEPENDENCIES_MS = 2000;

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Mastodon's answer when a backing service is away, with when to try again. */
export function sendUnavailable(reply: FastifyReply): FastifyReply {
  return reply.code(503).header('retry-after', String(RETRY_AFTER_S)).send({ error: UNAVAILABLE_MESSAGE });
}

/**
 * While PostgreSQL or Redis is away, a write waits up to 2 s for it and is then answered 503 before it starts:
 * half a write (committed in PostgreSQL, then failing on Redis) would be an error to the client and a change on
 * the server. Reads go ahead; what they need fails at once and is answered 503 by the errors plugin. Errors that
 * say a dependency is gone make it be looked at now (storage/dependencies.ts), not at its next probe.
 */
async function availabilityPlugin(app: FastifyInstance, { dependencies }: { dependencies: Dependencies }) {
  app.addHook('onRequest', async (request, reply) => {
    if (READS.has(request.method) || dependencies.allUp) return;
    if (await dependencies.waitFor(DEPENDENCIES, WAIT_FOR_DEPENDENCIES_MS)) return;
    return sendUnavailable(reply.header('x-request-id', request.id));
  });
  app.addHook('onError', (_request, _reply, err, done) => {
    dependencies.report(err);
    done();
  });
}

export default fp(availabilityPlugin, { name: 'availability' });
