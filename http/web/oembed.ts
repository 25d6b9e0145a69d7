import type { FastifyInstance } from 'fastify';
import { isId } from '../params.ts';
import { publishedLocalAccount } from '../../services/local-accounts.ts';
import { findStatus } from '../../storage/statuses.ts';
import { escapeHtml } from '../../text/render.ts';
import { loadEntries, type PublicPageOptions } from './page-serving.ts';

/** How wide the embed says it is, as Mastodon's; a smaller `maxwidth` is honoured. */
const WIDTH = 400;

/** Our post URLs: the page (`/@user/123`) and the ActivityPub id (`/users/user/statuses/123`). */
const POST_PATH = /^\/(?:@([^/@]+)|users\/([^/]+)\/statuses)\/(\d+)\/?$/;

/**
 * `GET /api/oembed?url=…`: Mastodon's oEmbed answer for one of our posts that anyone may see (public or unlisted,
 * by a published account), a 404 for anything else. Its `html` is the post itself in a blockquote with a link back,
 * since no script of ours runs on other sites.
 */
export default async function oembedRoutes(app: FastifyInstance, { ctx }: PublicPageOptions) {
  app.get<{ Querystring: { url?: string; maxwidth?: string; format?: string } }>('/api/oembed', {
    config: { auth: { kind: 'anonymous' } },
  }, async (request, reply) => {
    const notFound = () => reply.code(404).send({ error: 'Record not found' });
    const { url, maxwidth, format } = request.query;
    // oEmbed's answer for a format it does not serve.
    if (format !== undefined && format !== 'json') return reply.code(501).send({ error: 'Only the json format is supported' });
    if (typeof url !== 'string' || !URL.canParse(url)) return notFound();
    const target = new URL(url);
    const match = POST_PATH.exec(target.pathname);
    if (target.origin !== new URL(ctx.config.publicUrl).origin || !match) return notFound();
    let username: string;
    try {
      username = decodeURIComponent(match[1] ?? match[2]!);
    } catch {
      return notFound(); // a malformed escape is no post of ours
    }
    const id = match[3]!;
    const account = isId(id) ? await publishedLocalAccount(ctx, username) : null;
    const status = account ? await findStatus(ctx.db, id) : null;
    if (!account || !status || status.account_id !== account.id || status.reblog_of_id) return notFound();
    const [entry] = (await loadEntries(ctx, [status.id])).entries;
    if (!entry) return notFound();
    const p = entry.post;
    const a = p.author;
    const width = Math.min(WIDTH, Math.max(100, Number(maxwidth) || WIDTH));
    const text = p.spoiler ? `<p>Content warning: ${escapeHtml(p.spoiler)}</p>` : p.contentHtml;
    const html = `<blockquote class="mastodon-embed" data-embed-url="${escapeHtml(p.url)}">${text}` +
      `<p>— <a href="${escapeHtml(a.url)}">${escapeHtml(a.displayName)} (@${escapeHtml(a.handle)})</a>, ` +
      `<a href="${escapeHtml(p.url)}"><time datetime="${p.created.iso}">${escapeHtml(p.created.text)}</time></a></p></blockquote>`;
    return {
      type: 'rich',
      version: '1.0',
      title: `New status by ${a.handle.split('@')[0]}`,
      author_name: a.displayName,
      author_url: a.url,
      provider_name: ctx.config.localDomain,
      provider_url: `${ctx.config.publicUrl}/`,
      cache_age: 86400,
      html,
      width,
      height: null,
    };
  });
}
