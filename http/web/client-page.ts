import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { isId } from '../params.ts';
import type { PageParams } from '../../storage/paging.ts';
import { randomBytes } from 'node:crypto';
import { renderView, type PageChrome } from './views.ts';
import { signedInChrome, withErrorSaid } from './page.ts';
import { translateOffer, type TranslateOffer } from './client-translation.ts';
import type { Text } from './i18n.ts';
import { SLOT, SlottedPage } from './page-slots.ts';

/** Posts (and notifications) per page, as the API's default. */
export const PAGE_SIZE = 20;

/** What the forms of a page need: the CSRF token and the page to come back to after an action. */
export interface ClientForms {
  csrf: string;
  returnTo: string;
  /** Whether a post gets a Translate button (absent without a translation service). */
  canTranslate?: TranslateOffer;
}

/** What every signed-in page is given besides its own data: the layout's and the forms'. */
export interface ClientFrame {
  chrome: PageChrome;
  client: ClientForms;
}

/**
 * The layout's data and the forms' for a signed-in page, with marks (page-slots.ts) where each response puts its own
 * form token and way back.
 */
export async function clientFrame(ctx: AppContext, request: FastifyRequest, title: Text): Promise<ClientFrame> {
  const me = await request.signedIn();
  const chrome = { ...signedInChrome(ctx, request, me, title, SLOT.csrf), enhance: true };
  const canTranslate = me ? await translateOffer(ctx, me.account.id) : null;
  return { chrome, client: { csrf: SLOT.csrf, returnTo: SLOT.returnTo, ...(canTranslate ? { canTranslate } : {}) } };
}

/** Renders a page of the signed-in client: private, never cached by the browser, with the forms' token. */
export async function sendClientPage(
  ctx: AppContext, request: FastifyRequest, reply: FastifyReply, view: string, title: Text, data: Record<string, unknown>, status = 200,
  frame?: ClientFrame,
): Promise<FastifyReply> {
  const { chrome, client } = frame ?? (await clientFrame(ctx, request, title));
  const page = new SlottedPage(renderView(view, { ...withErrorSaid(data, chrome.lang), chrome, client }));
  return sendSlottedPage(request, reply, page, typeof data.pagePath === 'string' ? data.pagePath : undefined, status);
}

// Random bytes for the keys, asked for 256 keys at a time: one call per page was a noticeable part of a page's cost.
let randomPool = Buffer.alloc(0);
let randomAt = 0;

/** 16 random bytes, base64url: a compose form's idempotency key. */
function newIdempotencyKey(): string {
  if (randomAt + 16 > randomPool.length) {
    randomPool = randomBytes(4096);
    randomAt = 0;
  }
  randomAt += 16;
  return randomPool.toString('base64url', randomAt - 16, randomAt);
}

/**
 * Sends a rendered signed-in page with this response's values: a CSRF token, the way back (the page itself, or, for a
 * page shown again after a refused form (POST), where that form was: `pagePath`), a new idempotency key for a compose
 * form.
 */
export function sendSlottedPage(request: FastifyRequest, reply: FastifyReply, page: SlottedPage, pagePath: string | undefined, status = 200): FastifyReply {
  const returnTo = request.method === 'GET' ? request.url : pagePath ?? '/home';
  const body = page.fill({
    csrf: reply.generateCsrf(),
    returnTo: returnTo.replace(/#.*$/, ''),
    // A new key for each form shown: the same form sent twice (a double click, a resend) makes one post.
    idempotencyKey: newIdempotencyKey(),
  });
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').header('vary', 'Accept, Cookie').send(body);
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
