import type { AppContext } from '../context.ts';
import type { PageParams } from '../storage/paging.ts';
import type { VersionsUsed } from '../storage/cache-versions.ts';
import type { TrackingTicket } from '../storage/key-tracking.ts';
import { RenderedPageCache, type PageBody, type RenderedPage } from '../services/page-cache.ts';

/** A home page rendered from the feed's ids: its body, the cache versions it was made under, and until when it holds. */
export interface HomeRendering<B extends PageBody> {
  body: B;
  versions: VersionsUsed;
  notAfter: number | undefined;
}

/**
 * A page of the home feed, rendered, as both the API's home timeline and the home page (`/home`) serve it. The page
 * last rendered for the same `key` (the viewer, the paging and whatever else the rendering depends on) is sent again:
 * - without asking Redis, when every key it was made from is under client tracking and no change to any of them
 *   has arrived by the time the tracking has synced (storage/key-tracking.ts);
 * - otherwise when the feed read (which checks its versions in the same Redis command) shows nothing changed.
 * Whether the viewer may see a status in their own feed changes only with what removes it from the feed
 * (unfollowing) or with a version bump (an edit of its mentions, a deletion). Requests for a page being rendered
 * wait for that rendering rather than repeat it: a request that came while it ran takes its page through the checks
 * above (a change may have come after the rendering read the feed), and if the page changed meanwhile waits for the
 * next rendering, which began after it came, and takes that one's page as it is. Requests arriving during a stream
 * of changes then share one rendering per change rather than each making its own. `render` loads the statuses of the ids
 * read (`loadForViewer`) and says which versions it used: the viewer's filter, relation and flag versions among them,
 * so that a change to any of those is a change to the page.
 */
export async function cachedHomePage<B extends PageBody>(
  ctx: AppContext, cache: RenderedPageCache<B>, key: string, viewerId: string, p: PageParams,
  render: (ids: string[]) => Promise<HomeRendering<B>>, waited = false,
): Promise<RenderedPage<B>> {
  if (cache.getTracked(key) && (await ctx.tracking.sync())) {
    const page = cache.getTracked(key);
    if (page) {
      cache.hits++;
      cache.trackedHits++;
      return page;
    }
  }
  // The same page being rendered for another request: its result, checked as any cached page is.
  const rendering = cache.renderingOf(key);
  if (rendering && !waited) {
    await rendering;
    return cachedHomePage(ctx, cache, key, viewerId, p, render, true);
  }
  if (rendering) {
    // This request waited for a rendering, and a change came after that rendering read the feed. One rendering of a
    // page runs at a time, so this one began after the one waited for had ended, after this request came: it read
    // every change this request must see.
    const page = await rendering;
    if (page) {
      cache.hits++;
      return page;
    }
  }
  let page: RenderedPage<B> | undefined;
  const rendered = cache.startRendering(key);
  let ticket = ctx.tracking.begin();
  try {
    const cached = cache.get(key);
    const read = await ctx.feeds.page(viewerId, p, cached?.versions);
    let ids = read.ids;
    if (ids === null) {
      // A feed lost with Redis (or never built) is rebuilt from PostgreSQL, then read (the rebuild's own change to
      // the keys just read would count against the first ticket).
      await ctx.actors.ask(viewerId, { type: 'rebuildHomeFeed' });
      ctx.tracking.end(ticket);
      ticket = ctx.tracking.begin();
      ids = (await ctx.feeds.page(viewerId, p)).ids ?? [];
    } else if (cached && read.unchanged && RenderedPageCache.sameIds(cached, ids)) {
      cache.set(key, cached, trackedKeys(ctx, ticket, viewerId, cached.versions.keys));
      cache.hits++;
      return (page = cached);
    }
    const { body, versions, notAfter } = await render(ids);
    page = { ids, body, versions: ctx.versions.keysOf(versions), notAfter };
    cache.misses++;
    cache.set(key, page, trackedKeys(ctx, ticket, viewerId, page.versions.keys));
    return page;
  } finally {
    ctx.tracking.end(ticket);
    rendered(page);
  }
}

/** The keys a page was made from, when all were read under tracking and none has changed since; else null. */
function trackedKeys(ctx: AppContext, ticket: TrackingTicket, viewerId: string, versionKeys: string[]): string[] | null {
  const keys = [...ctx.feeds.pageKeys(viewerId), ...versionKeys];
  return ctx.tracking.unchanged(ticket, keys) ? keys : null;
}
