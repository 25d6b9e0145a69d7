import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Server } from 'node:http';
import type { AppContext } from '../../context.ts';
import { renderView } from './views.ts';
import { publicChrome } from './page-chrome.ts';

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

export interface ErrorPage {
  heading: string;
  message: string;
}

const STANDARD: Record<number, ErrorPage> = {
  400: { heading: 'Bad request', message: 'The request could not be understood.' },
  401: { heading: 'Sign-in needed', message: 'You need to sign in to see this page.' },
  403: { heading: 'Not allowed', message: 'You are not allowed to see this page.' },
  404: { heading: 'Page not found', message: 'The page you are looking for is not here. It may have been deleted, or the address may be mistyped.' },
  410: { heading: 'Gone', message: 'This page has been removed.' },
  413: { heading: 'Too large', message: 'What you sent is too large.' },
  422: { heading: 'Could not be processed', message: 'What you sent could not be processed.' },
  429: { heading: 'Too many requests', message: 'Too many requests have come from you in a short time. Wait a moment and try again.' },
  500: { heading: 'Something went wrong', message: 'We are sorry: something went wrong on our side. Try again in a moment.' },
  503: { heading: 'Temporarily unavailable', message: 'The server is busy or under maintenance. Try again in a moment.' },
};

/** The page's words for a status code, or for the given error code (a refused form). */
export function errorPageFor(statusCode: number, code?: string): ErrorPage {
  if (code === 'FST_REQ_FILE_TOO_LARGE') return FILE_TOO_LARGE;
  if (code?.startsWith('FST_CSRF_')) return { heading: 'Invalid or expired form', message: 'Invalid or expired form; go back, reload and try again.' };
  return STANDARD[statusCode] ?? (statusCode >= 500 ? STANDARD[500]! : STANDARD[400]!);
}

// Pages answered outside the pages' own scope (its helmet headers) carry the same policy: nothing runs, styles are ours.
const ERROR_PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The 404 and error pages' renderer, per server (registered by the pages' scope, used by http/plugins/errors.ts). */
const renderers = new WeakMap<Server, (statusCode: number, page: ErrorPage) => string>();

export function registerErrorPages(app: FastifyInstance, ctx: AppContext): void {
  renderers.set(app.server, (statusCode, page) =>
    renderView('public/error', { chrome: publicChrome(ctx.config, null, page.heading), statusCode, page: withLimits(ctx, page) }));
}

/** A file over the largest upload the server takes: the page says how large each kind may be. */
const FILE_TOO_LARGE: ErrorPage = { heading: 'File too large', message: 'A file you attached is larger than this server takes.' };

function withLimits(ctx: AppContext, page: ErrorPage): ErrorPage {
  if (page !== FILE_TOO_LARGE) return page;
  const mb = (bytes: number) => `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;
  return { ...page, message: `${page.message} Images may be up to ${mb(ctx.config.maxImageBytes)}, videos and audio up to ${mb(ctx.config.maxVideoBytes)}. Go back and choose a smaller file.` };
}

/**
 * Answers a browser's request with the HTML page for this status instead of JSON; false (nothing sent) when the
 * request is not a browser's or no renderer is registered.
 */
export function sendErrorPage(request: FastifyRequest, reply: FastifyReply, statusCode: number, code?: string): boolean {
  const render = renderers.get(request.server.server);
  if (!render || !wantsHtml(request)) return false;
  const body = render(statusCode, errorPageFor(statusCode, code));
  reply.code(statusCode).header('content-security-policy', ERROR_PAGE_CSP).header('x-content-type-options', 'nosniff')
    .header('vary', 'Accept').type('text/html; charset=utf-8').send(body);
  return true;
}

/** The HTML 404 page, for the pages' own routes (whatever the client accepts: the URL is a page's). */
export function notFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const render = renderers.get(request.server.server)!;
  return reply.code(404).header('vary', 'Accept, Cookie').type('text/html; charset=utf-8').send(render(404, errorPageFor(404)));
}
