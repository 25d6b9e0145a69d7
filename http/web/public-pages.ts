import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../route-options.ts';
import { PublicPageCache } from './public-page-cache.ts';
import { registerErrorPages } from './error-pages.ts';
import instancePageRoutes from './instance-pages.ts';
import accountPageRoutes from './account-pages.ts';
import tagPageRoutes from './tag-pages.ts';
import oembedRoutes from './oembed.ts';
import federationRedirectRoutes from './federation-redirects.ts';

/** Rendered pages kept for strangers, per process (a profile page of 20 posts is some 40 KB). */
const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * The pages a stranger reads, without JavaScript: the instance's about page and policies, profiles, posts with their
 * threads, tags, their RSS feeds and oEmbed, and the 404 and error pages every browser gets (http/plugins/errors.ts).
 */
export default async function publicPageRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  const opts = { ctx, cache: new PublicPageCache(ctx.versions, CACHE_BYTES) };
  // Every page shows the server's title and sign-up state; the about page and policies show more of its settings.
  ctx.settings.onChange(() => opts.cache.clear());
  registerErrorPages(app, ctx);
  await app.register(instancePageRoutes, opts);
  await app.register(accountPageRoutes, opts);
  await app.register(tagPageRoutes, opts);
  await app.register(oembedRoutes, opts);
  await app.register(federationRedirectRoutes, opts);
}
