import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Server } from 'node:http';
import type { AppContext } from '../../context.ts';
import { renderView } from './views.ts';
import { publicChrome } from './page-chrome.ts';
import { matchLocale, negotiate, SOURCE_LOCALE, translator } from './i18n.ts';

/**
 * Paths that answer programs, never people: the API, OAuth's token endpoints, ActivityPub and discovery documents,
 * health and metrics. Their errors stay Mastodon's JSON whatever the client accepts.
 */
const MACHINE_PATH = /^\/(?:api\/|admin\/queues|oauth\/(?:token|revoke|introspect|userinfo)|\.well-known\/|nodeinfo\/|users\/|inbox|system\/|health|metrics|instance\/|files\/)/;

/** A browser (it sends `Accept: text/html,…`). */
export function acceptsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && accept.includes('text/html');
}

/** A browser asking for a page, on a path that is not the API's. */
export function wantsHtml(request: FastifyRequest): boolean {
  return acceptsHtml(request) && !MACHINE_PATH.test(request.url);
}

/** An error page's words: message keys (its heading and message), said in the request's language. */
export interface ErrorPage {
  heading: string;
  message: string;
}

const page = (code: number | string): ErrorPage => ({ heading: `error_page.${code}.heading`, message: `error_page.${code}.message` });
const STANDARD: Record<number, ErrorPage> = Object.fromEntries([400, 401, 403, 404, 410, 413, 422, 429, 500, 503].map((code) => [code, page(code)]));
/** A file over the largest upload the server takes: the page says how large each kind may be. */
const FILE_TOO_LARGE = page('file_too_large');
const INVALID_FORM = page('invalid_form');

/** The page's words for a status code, or for the given error code (a refused form). */
export function errorPageFor(statusCode: number, code?: string): ErrorPage {
  if (code === 'FST_REQ_FILE_TOO_LARGE') return FILE_TOO_LARGE;
  if (code?.startsWith('FST_CSRF_')) return INVALID_FORM;
  return STANDARD[statusCode] ?? (statusCode >= 500 ? STANDARD[500]! : STANDARD[400]!);
}

// Pages answered outside the pages' own scope (its helmet headers) carry the same policy: nothing runs, styles are ours.
const ERROR_PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The 404 and error pages' renderer, per server (registered by the pages' scope, used by http/plugins/errors.ts). */
const renderers = new WeakMap<Server, (request: FastifyRequest, statusCode: number, page: ErrorPage) => string>();

/**
 * Error pages speak the language the browser asks for (`Accept-Language`), else the server's first language: they are
 * answered before, or without, reading a session, so a signed-in person's own choice is not known here.
 */
export function registerErrorPages(app: FastifyInstance, ctx: AppContext): void {
  renderers.set(app.server, (request, statusCode, page) => {
    const locale = negotiate(request.headers['accept-language']) ?? matchLocale(ctx.config.instanceLanguages[0]) ?? SOURCE_LOCALE;
    const t = translator(locale);
    const heading = t(page.heading);
    let message = t(page.message);
    if (page === FILE_TOO_LARGE) message = `${message} ${t('error_page.file_limits', { image: mb(ctx.config.maxImageBytes), video: mb(ctx.config.maxVideoBytes) })}`;
    return renderView('public/error', { chrome: publicChrome(ctx.config, null, heading, '', locale), statusCode, page: { heading, message } });
  });
}

const mb = (bytes: number) => `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;

/**
 * Answers a browser's request with the HTML page for this status instead of JSON; false (nothing sent) when the
 * request is not a browser's or no renderer is registered.
 */
export function sendErrorPage(request: FastifyRequest, reply: FastifyReply, statusCode: number, code?: string): boolean {
  const render = renderers.get(request.server.server);
  if (!render || !wantsHtml(request)) return false;
  const body = render(request, statusCode, errorPageFor(statusCode, code));
  reply.code(statusCode).header('content-security-policy', ERROR_PAGE_CSP).header('x-content-type-options', 'nosniff')
    .header('vary', 'Accept, Accept-Language').type('text/html; charset=utf-8').send(body);
  return true;
}

/** The HTML 404 page, for the pages' own routes (whatever the client accepts: the URL is a page's). */
export function notFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const render = renderers.get(request.server.server)!;
  return reply.code(404).header('vary', 'Accept, Accept-Language, Cookie').type('text/html; charset=utf-8').send(render(request, 404, errorPageFor(404)));
}
