import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { isId } from '../params.ts';
import type { PageParams } from '../../storage/paging.ts';
import { renderView } from './views.ts';
import { chromeOf, withErrorSaid } from './page.ts';
import { translateOffer } from './client-translation.ts';
import type { Text } from './i18n.ts';

/** Posts (and notifications) per page, as the API's default. */
export const PAGE_SIZE = 20;

/** What the forms of a page need: the CSRF token and the page to come back to after an action. */
export interface ClientForms {
  csrf: string;
  returnTo: string;
  /** Whether a post gets a Translate button (absent without a translation service). */
  canTranslate?: (post: { visibility: string; language: string | null }) => boolean;
}

/** Renders a page of the signed-in client: private, never cached, with the forms' token. */
export async function sendClientPage(
  ctx: AppContext, request: FastifyRequest, reply: FastifyReply, view: string, title: Text, data: Record<string, unknown>, status = 200,
): Promise<FastifyReply> {
  const chrome = { ...(await chromeOf(ctx, request, reply, title)), enhance: true };
  // A page shown again after a refused form (POST) comes back to where that form was: `pagePath`.
  const returnTo = request.method === 'GET' ? request.url : typeof data.pagePath === 'string' ? data.pagePath : '/home';
  const me = await request.signedIn();
  const canTranslate = me ? await translateOffer(ctx, me.account.id) : null;
  const client: ClientForms = { csrf: chrome.csrfToken, returnTo: returnTo.replace(/#.*$/, ''), ...(canTranslate ? { canTranslate } : {}) };
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').header('vary', 'Accept, Cookie')
    .send(renderView(view, { ...withErrorSaid(data, chrome.lang), chrome, client }));
}

/** `max_id` / `min_id` of the query, when they are ids; a page one longer than shown, to know whether there is more. */
export function pagingOf(request: FastifyRequest): PageParams {
  const q = request.query as { max_id?: unknown; min_id?: unknown };
  const id = (v: unknown) => (typeof v === 'string' && isId(v) ? v : undefined);
  const minId = id(q.min_id);
  return { maxId: minId ? undefined : id(q.max_id), minId, limit: PAGE_SIZE + 1 };
}

/** The ids to show of a page read one longer, and the links to the older and newer pages (by these ids). */
export function pageOf(ids: string[], p: PageParams, path: string) {
  const more = ids.length > PAGE_SIZE;
  const shown = p.minId ? ids.slice(more ? ids.length - PAGE_SIZE : 0) : ids.slice(0, PAGE_SIZE);
  const join = path.includes('?') ? '&' : '?';
  const first = shown[0];
  const last = shown.at(-1);
  return {
    ids: shown,
    pager: {
      older: last && (more || p.minId) ? `${path}${join}max_id=${last}` : null,
      newer: p.maxId || (p.minId && more) ? (first ? `${path}${join}min_id=${first}` : path) : null,
    },
  };
}

/** The streaming API's stream a page's script listens to for its new posts (only the newest page of a timeline). */
export interface LiveStream {
  stream: string;
  tag?: string;
  list?: string;
  /** Where the posts are shown, for the viewer's filters (as the page's own posts). */
  context: 'home' | 'public' | 'list';
}

/** The live stream of a timeline page, when it shows the newest posts. */
export function liveOf(p: PageParams, live: LiveStream): LiveStream | null {
  return p.maxId || p.minId ? null : live;
}
