import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from './route-options.ts';
import { escapeHtml } from '../text/render.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { findStatus } from '../storage/statuses.ts';
import { canSee } from '../services/visibility.ts';
import { isId } from './params.ts';

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title></head><body>${body}</body></html>`;

/**
 * What a browser gets at the URLs other servers know our accounts and statuses by: a redirect from the ActivityPub
 * id to a plain, readable page (ActivityPub clients asking for JSON are answered by Fedify before this).
 */
export default async function pageRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  /** A status of a local account that anyone may see (public or unlisted, not deleted, not a reblog). */
  const publicStatusOf = async (username: string, id: string) => {
    const account = await publishedLocalAccount(ctx, username);
    const status = account && isId(id) ? await findStatus(ctx.db, id) : null;
    if (!account || !status || status.account_id !== account.id || status.reblog_of_id || !(await canSee(ctx.db, null, status))) return null;
    return { account, status };
  };

  // host-meta points older software at WebFinger (Fedify answers WebFinger and NodeInfo itself).
  app.get('/.well-known/host-meta', async (_request, reply) => reply.type('application/xrd+xml; charset=utf-8').send(
    `<?xml version="1.0" encoding="UTF-8"?>\n<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">\n` +
    `  <Link rel="lrdd" template="${escapeHtml(ctx.config.publicUrl)}/.well-known/webfinger?resource={uri}"/>\n</XRD>\n`));

  // Only what exists is redirected to (and only what is public, for statuses): the rest is a plain 404.
  app.get<{ Params: { username: string } }>('/users/:username', async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    if (!account) return reply.code(404).send({ error: 'Record not found' });
    return reply.redirect(`/@${encodeURIComponent(account.username)}`);
  });
  app.get<{ Params: { username: string; id: string } }>('/users/:username/statuses/:id', async (request, reply) => {
    const status = await publicStatusOf(request.params.username, request.params.id);
    if (!status) return reply.code(404).send({ error: 'Record not found' });
    return reply.redirect(`/@${encodeURIComponent(status.account.username)}/${status.status.id}`);
  });

  app.get<{ Params: { username: string } }>('/@:username', async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    if (!account) return reply.code(404).type('text/html; charset=utf-8').send(page('Not found', '<p>No such account.</p>'));
    const name = account.display_name || account.username;
    return reply.type('text/html; charset=utf-8').send(page(`${name} (@${account.username}@${ctx.config.localDomain})`,
      `<h1>${escapeHtml(name)}</h1><p>@${escapeHtml(account.username)}@${escapeHtml(ctx.config.localDomain)}</p><div>${account.note_html}</div>`));
  });

  app.get<{ Params: { username: string; id: string } }>('/@:username/:id', async (request, reply) => {
    const found = await publicStatusOf(request.params.username, request.params.id);
    if (!found) return reply.code(404).type('text/html; charset=utf-8').send(page('Not found', '<p>No such post.</p>'));
    const { account, status } = found;
    const name = account.display_name || account.username;
    const warning = status.spoiler_text ? `<p><strong>${escapeHtml(status.spoiler_text)}</strong></p>` : '';
    // Status content is our own rendering, sanitised when it was made (text/status.ts).
    return reply.type('text/html; charset=utf-8').send(page(`${name}: post`,
      `<p><a href="/@${escapeHtml(account.username)}">${escapeHtml(name)}</a></p>${warning}<article>${status.content}</article><p><time>${status.created_at.toISOString()}</time></p>`));
  });
}
