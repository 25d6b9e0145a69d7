import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { VersionsUsed } from '../../storage/cache-versions.ts';
import type { PublicPageCache } from './public-page-cache.ts';
import type { SignedIn } from './session.ts';
import { viewerOf } from './page-chrome.ts';
import { renderStatus } from '../serializers/status.ts';
import { entryView, type EntryView } from './page-view.ts';
import { pageLocale } from './i18n.ts';
import { sendKeptBody } from '../encoded-body.ts';

export interface PublicPageOptions {
  ctx: AppContext;
  cache: PublicPageCache;
}

export type Versions = Pick<VersionsUsed, 's' | 'a' | 'v'>;

/** A rendered page; `cache` when a stranger's rendering may be kept (see PublicPageCache.set). */
export interface PageResult {
  statusCode?: number;
  contentType?: string;
  body: string;
  cache?: { used: Versions; ttlMs: number };
}

export const HTML = 'text/html; charset=utf-8';

/** Versions read first win: a row read after a version is at least as new, never older (storage/cache-versions.ts). */
export function mergeVersions(first: Versions, later: Versions): Versions {
  const merge = (a: Map<string, string>, b: Map<string, string>) => new Map([...b, ...a]);
  return { s: merge(first.s, later.s), a: merge(first.a, later.a), v: merge(first.v, later.v) };
}

/** Versions of nothing: for pages made of nothing that changes but with time (the about page). */
export const NO_VERSIONS: Versions = { s: new Map(), a: new Map(), v: new Map() };

/**
 * Serves a public page: a stranger gets the bytes kept for `key` in their language (as `Accept-Language` asks) while
 * they are current (one Redis read), or a fresh rendering, kept for the next stranger; a signed-in visitor always
 * gets a fresh rendering (their name in the chrome, their language). `render` returns the page in the given locale,
 * or the reply when it answered otherwise (a redirect, a 404 page).
 * `ids`: for pages whose list of posts has no version (a tag's), the ids just read.
 */
const VARY = 'Accept, Accept-Language, Cookie';

export async function servePage(
  opts: PublicPageOptions, request: FastifyRequest, reply: FastifyReply, key: string, ids: string[] | null,
  render: (viewer: SignedIn | null, locale: string) => Promise<PageResult | FastifyReply>,
): Promise<FastifyReply> {
  const viewer = await viewerOf(request);
  const locale = pageLocale(request, viewer?.user ?? null, opts.ctx.config.instanceLanguages);
  key = `${locale} ${key}`;
  if (!viewer) {
    const hit = await opts.cache.get(key, ids);
    if (hit) return sendKeptBody(request, reply.code(hit.statusCode).header('vary', VARY).type(hit.contentType), hit.body);
  }
  const result = await render(viewer, locale);
  if (!('body' in result)) return result;
  const page = { statusCode: result.statusCode ?? 200, contentType: result.contentType ?? HTML, body: Buffer.from(result.body) };
  if (!viewer && result.cache) {
    opts.cache.set(key, page, result.cache.used, result.cache.ttlMs, ids);
    return sendKeptBody(request, reply.code(page.statusCode).header('vary', VARY).type(page.contentType), page.body);
  }
  return reply.code(page.statusCode).header('vary', VARY).type(page.contentType).send(page.body);
}

/**
 * Posts by id as a stranger sees them, in the order given: what is not public or unlisted, deleted, or by a
 * suspended account (a suspended server's included) is left out by the loader (services/hydrate.ts). Rendered
 * through the API's Status entity; `versions` were read before the rows.
 */
export async function loadEntries(ctx: AppContext, ids: string[], authors: string[] = []): Promise<{ entries: EntryView[]; versions: Versions }> {
  if (ids.length === 0) return { entries: [], versions: { s: new Map(), a: new Map(), v: new Map() } };
  const { rows, bundle, versions } = await ctx.statusLoader.load(null, ids, authors);
  return { entries: rows.map((row) => entryView(ctx.render, renderStatus(ctx.render, bundle, row))), versions };
}

/** An ActivityPub client (`Accept: application/activity+json` or the ld+json profile) rather than a browser. */
export function wantsActivityJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /application\/(?:activity\+json|ld\+json)/.test(accept) && !accept.includes('text/html');
}
