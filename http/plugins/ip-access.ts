import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../storage/db.ts';
import { ipAccessList } from '../../services/admin-blocks.ts';

/**
 * The operator's `no_access` IP blocks: a request from such a range gets nothing, API, pages, files or ActivityPub
 * alike. Mastodon refuses them in Rack::Attack's blocklist, before Rails, with its default answer: a 403 whose body
 * is the plain text `Forbidden` (loopback is never refused, as Mastodon's safelist has it). The list is kept in
 * memory and read again every few seconds, so a request costs no query.
 */
async function ipAccessPlugin(app: FastifyInstance, opts: { db: Db }) {
  const list = ipAccessList(opts.db);
  app.addHook('onRequest', (request, reply, done) => {
    const decide = () => {
      if (!list.blocks(request.ip)) return done();
      reply.code(403).header('content-type', 'text/plain; charset=utf-8').send('Forbidden\n');
    };
    if (!list.stale) return decide();
    // A list that cannot be read keeps the last one (a PostgreSQL outage is answered by the routes, not here).
    list.refresh().catch((err: unknown) => request.log.warn({ err }, 'IP blocks could not be read')).then(decide, decide);
  });
}

export default fp(ipAccessPlugin, { name: 'ip-access' });
