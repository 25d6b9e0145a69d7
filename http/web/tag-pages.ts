import type { FastifyInstance, FastifyReply } from 'fastify';
import { isId } from '../params.ts';
import { publicTimelineIds } from '../../storage/statuses.ts';
import { renderView } from './views.ts';
import { headTags, publicChrome, viewerOf } from './page-chrome.ts';
import { clientTagPage } from './client-pages.ts';
import { notFoundPage } from './error-pages.ts';
import { renderRss } from './feeds.ts';
import { loadEntries, servePage, type PageResult, type PublicPageOptions } from './page-serving.ts';
import { translator } from './i18n.ts';
import { VERSION } from '../serializers/instance.ts';

const PAGE_SIZE = 20;
const TTL_MS = 10 * 60_000;
/** What a hashtag may be made of (letters, marks, digits, underscores), as posting recognises them. */
const TAG = /^[\p{L}\p{M}\p{N}_]{1,100}$/u;

/**
 * `/tags/:tag` and `/tags/:tag.rss`: a tag's public posts, newest first, as its API timeline has them (public only,
 * no boosts, nothing of suspended or limited accounts). The list has no version of its own, so its ids are read on
 * every request and a kept page is served only when they are the same.
 */
export default async function tagPageRoutes(app: FastifyInstance, opts: PublicPageOptions) {
  const { ctx } = opts;

  app.get<{ Params: { tag: string }; Querystring: { max_id?: string } }>('/tags/:tag', async (request, reply) => {
    let tag = request.params.tag;
    const rss = tag.endsWith('.rss');
    if (rss) tag = tag.slice(0, -4);
    if (!TAG.test(tag)) return notFoundPage(request, reply);
    const name = tag.toLowerCase();
    const me = rss ? null : await viewerOf(request);
    if (me) return clientTagPage(ctx, request, reply, me, name);
    const maxId = !rss && typeof request.query.max_id === 'string' && isId(request.query.max_id) ? request.query.max_id : undefined;
    const ids = await publicTimelineIds(ctx.db, { local: false, remote: false, tag: name, viewerId: null }, { maxId, limit: PAGE_SIZE + 1 });
    const pageIds = ids.slice(0, PAGE_SIZE);
    const path = `/tags/${encodeURIComponent(name)}`;
    return servePage(opts, request, reply, `${path}${rss ? '.rss' : ''}?${maxId ?? ''}`, ids, async (viewer, locale): Promise<PageResult | FastifyReply> => {
      const { entries, versions } = await loadEntries(ctx, pageIds);
      const cache = { used: versions, ttlMs: TTL_MS };
      const url = `${ctx.config.publicUrl}${path}`;
      if (rss) {
        const body = renderRss({ title: `#${name}`, description: `Public posts tagged #${name}`, link: url, self: `${url}.rss`, generator: VERSION }, entries);
        return { contentType: 'application/rss+xml; charset=utf-8', body, cache };
      }
      const last = pageIds.at(-1);
      const t = translator(locale);
      const description = t('tag.description', { tag: name, title: ctx.config.instanceTitle });
      const body = renderView('public/tag', {
        chrome: publicChrome(ctx.config, viewer, `#${name}`, headTags({
          description,
          canonical: maxId ? undefined : url,
          alternates: [{ type: 'application/rss+xml', href: `${url}.rss`, title: t('tag.posts_label', { tag: name }) }],
          og: [['og:type', 'website'], ['og:site_name', ctx.config.instanceTitle], ['og:title', `#${name}`], ['og:description', description], ['og:url', url]],
          twitter: [['twitter:card', 'summary'], ['twitter:title', `#${name}`], ['twitter:description', description]],
        }), locale),
        tag: name,
        rssUrl: `${url}.rss`,
        entries,
        olderPage: !!maxId,
        pager: { older: ids.length > PAGE_SIZE && last ? `${path}?max_id=${last}` : null, newest: maxId ? path : null },
      });
      return { body, cache };
    });
  });
}
