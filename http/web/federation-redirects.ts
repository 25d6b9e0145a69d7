import type { FastifyInstance } from 'fastify';
import { escapeHtml } from '../../text/render.ts';
import { publishedLocalAccount } from '../../services/local-accounts.ts';
import { canSee } from '../../services/visibility.ts';
import { findStatus } from '../../storage/statuses.ts';
import { findAccountByUsername } from '../../storage/accounts.ts';
import { isId } from '../params.ts';
import { acceptsHtml, notFoundPage } from './error-pages.ts';
import type { PublicPageOptions } from './page-serving.ts';

/**
 * What a browser gets at the URLs other servers know our accounts and statuses by: a redirect from the ActivityPub
 * id to the readable page (ActivityPub clients asking for JSON are answered by Fedify before this: federation/mount.ts).
 */
export default async function federationRedirectRoutes(app: FastifyInstance, { ctx }: PublicPageOptions) {
  // host-meta points older software at WebFinger (Fedify answers WebFinger and NodeInfo itself).
  app.get('/.well-known/host-meta', async (_request, reply) => reply.type('application/xrd+xml; charset=utf-8').send(
    `<?xml version="1.0" encoding="UTF-8"?>\n<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">\n` +
    `  <Link rel="lrdd" template="${escapeHtml(ctx.config.publicUrl)}/.well-known/webfinger?resource={uri}"/>\n</XRD>\n`));

  // Only what exists is redirected to (and only what anyone may see, for statuses): the rest is a 404, a page for
  // a browser and Mastodon's JSON for anything else.
  app.get<{ Params: { username: string } }>('/users/:username', async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    // A deleted account's actor is gone for good (Mastodon answers 410 for it), not merely unknown.
    if (!account && (await findAccountByUsername(ctx.db, request.params.username, null))?.deleted_at) {
      return reply.code(410).header('cache-control', 'public, max-age=180').send({ error: 'Gone' });
    }
    if (!account) return acceptsHtml(request) ? notFoundPage(request, reply) : reply.code(404).send({ error: 'Record not found' });
    return reply.redirect(`/@${encodeURIComponent(account.username)}`);
  });

  app.get<{ Params: { username: string; id: string } }>('/users/:username/statuses/:id', async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    const status = account && isId(request.params.id) ? await findStatus(ctx.db, request.params.id) : null;
    if (!account || !status || status.account_id !== account.id || status.reblog_of_id || !(await canSee(ctx.db, null, status))) {
      return acceptsHtml(request) ? notFoundPage(request, reply) : reply.code(404).send({ error: 'Record not found' });
    }
    return reply.redirect(`/@${encodeURIComponent(account.username)}/${status.id}`);
  });
}
