import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from './app.ts';
import { escapeHtml } from '../text/render.ts';
import { publishedLocalAccount } from '../federation/index.ts';
import { findStatus } from '../storage/statuses.ts';
import { canSee } from '../services/visibility.ts';

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title></head><body>${body}</body></html>`;

/**
 * What a browser gets at the URLs other servers know our accounts and statuses by: a redirect from the ActivityPub
 * id to a plain, readable page (ActivityPub clients asking for JSON are answered by Fedify before this).
 */
export default async function pageRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get<{ Params: { username: string } }>('/users/:username', async (request, reply) => reply.redirect(`/@${encodeURIComponent(request.params.username)}`));
  app.get<{ Params: { username: string; id: string } }>('/users/:username/statuses/:id', async (request, reply) =>
    reply.redirect(`/@${encodeURIComponent(request.params.username)}/${encodeURIComponent(request.params.id)}`));

  app.get<{ Params: { username: string } }>('/@:username', async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    if (!account) return reply.code(404).type('text/html; charset=utf-8').send(page('Not found', '<p>No such account.</p>'));
    const name = account.display_name || account.username;
    return reply.type('text/html; charset=utf-8').send(page(`${name} (@${account.username}@${ctx.config.localDomain})`,
      `<h1>${escapeHtml(name)}</h1><p>@${escapeHtml(account.username)}@${escapeHtml(ctx.config.localDomain)}</p><div>${account.note_html}</div>`));
  });

  app.get<{ Params: { username: string; id: string } }>('/@:username/:id', async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    const status = account && /^\d{1,20}$/.test(request.params.id) ? await findStatus(ctx.db, request.params.id) : null;
    if (!account || !status || status.account_id !== account.id || status.reblog_of_id || !(await canSee(ctx.db, null, status))) {
      return reply.code(404).type('text/html; charset=utf-8').send(page('Not found', '<p>No such post.</p>'));
    }
    const name = account.display_name || account.username;
    const warning = status.spoiler_text ? `<p><strong>${escapeHtml(status.spoiler_text)}</strong></p>` : '';
    // Status content is our own rendering, sanitised when it was made (text/status.ts).
    return reply.type('text/html; charset=utf-8').send(page(`${name}: post`,
      `<p><a href="/@${escapeHtml(account.username)}">${escapeHtml(name)}</a></p>${warning}<article>${status.content}</article><p><time>${status.created_at.toISOString()}</time></p>`));
  });
}
