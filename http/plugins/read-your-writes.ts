import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The account a request acted as: a user's token, or a page's signed-in session. */
async function actingAccount(request: FastifyRequest): Promise<string | null> {
  if (request.viewerId) return request.viewerId;
  if (typeof request.signedIn !== 'function') return null;
  return (await request.signedIn().catch(() => null))?.account.id ?? null;
}

/**
 * With read replicas, a signed-in viewer's writing request, once answered by its handler (its transactions
 * committed), leaves the primary's WAL position behind before the answer is sent: the viewer's next reads go to
 * the primary until a replica has replayed that far (storage/replica.ts).
 */
async function readYourWritesPlugin(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const replicas = ctx.replicas;
  if (!replicas) return;
  app.addHook('onSend', async (request, reply, payload) => {
    if (SAFE_METHODS.has(request.method) || reply.statusCode >= 500) return payload;
    const viewerId = await actingAccount(request);
    if (viewerId) {
      // Not remembered (PostgreSQL or Redis away): the viewer may read from a replica a moment behind, no worse.
      await replicas.rememberWrite(viewerId).catch((err: unknown) => request.log.warn({ err }, 'could not remember a write for read-your-writes'));
    }
    return payload;
  });
}

export default fp(readYourWritesPlugin, { name: 'read-your-writes' });
