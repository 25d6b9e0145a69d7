import { isStaff } from '../../services/roles.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { renderView, type PageChrome } from './views.ts';
import type { SignedIn } from './session.ts';
import { pageLocale, translator, type Text, type Translate } from './i18n.ts';
import { serviceMessage } from './service-errors.ts';

/**
 * Route options for the pages an OAuth sign-in passes through (sign-in, its second step, authorize): without
 * helmet's `Cross-Origin-Opener-Policy: same-origin`, which would cut a web client's popup (Phanpy opens these pages
 * in one) from the window that opened it, so the client never hears of the code. Every other header stays.
 */
export const KEEPS_OPENER = { helmet: { crossOriginOpenerPolicy: false } } as const;

/** Page status codes and headers every signed-in or form page shares: never cached, never framed. */
function privatePage(reply: FastifyReply, status: number) {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store');
}

/** The classes on <html> that apply a person's Appearance settings (the stylesheet reads them). */
export function appearanceClasses(user: Pick<SignedIn['user'], 'theme' | 'reduce_motion' | 'larger_text'>): string {
  return [user.theme === 'light' || user.theme === 'dark' ? `theme-${user.theme}` : '', user.reduce_motion ? 'reduce-motion' : '', user.larger_text ? 'larger-text' : '']
    .filter(Boolean).join(' ');
}

/** The layout's data for a page with forms: who is signed in, and a CSRF token for its forms. */
export async function chromeOf(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, title: Text): Promise<PageChrome> {
  return signedInChrome(ctx, request, await request.signedIn(), title, reply.generateCsrf());
}

/** The layout's data for the signed-in person (or a stranger, null), with this token (or a mark for it) for its forms. */
export function signedInChrome(ctx: AppContext, request: FastifyRequest, signedIn: SignedIn | null, title: Text, csrfToken: string): PageChrome {
  const lang = pageLocale(request, signedIn?.user ?? null, ctx.config.instanceLanguages);
  return {
    title: `${translator(lang).text(title)} - ${ctx.config.instanceTitle}`,
    instanceTitle: ctx.config.instanceTitle,
    signedInAs: signedIn ? { username: signedIn.account.username, admin: isStaff(signedIn.user.role?.permissions) } : null,
    csrfToken,
    registrationsOpen: ctx.config.registrationsMode !== 'none',
    lang,
    htmlClass: signedIn ? appearanceClasses(signedIn.user) : '',
  };
}

/** The translator of the request's page language, for words a handler puts on a page. */
export async function translatorOf(ctx: AppContext, request: FastifyRequest): Promise<Translate> {
  const signedIn = await request.signedIn();
  return translator(pageLocale(request, signedIn?.user ?? null, ctx.config.instanceLanguages));
}

/**
 * A page's `error`, when it is a service's refusal in the services' words ("The current password is wrong."), in the
 * page's language (http/web/service-errors.ts); words the page itself chose pass as they are.
 */
export function withErrorSaid(data: Record<string, unknown>, lang: string): Record<string, unknown> {
  return typeof data.error === 'string' && data.error ? { ...data, error: serviceMessage(translator(lang), data.error) } : data;
}

/** Renders a form page (sign-in, sign-up, settings): private, uncached. */
export async function sendFormPage(
  ctx: AppContext, request: FastifyRequest, reply: FastifyReply,
  view: string, title: Text, data: Record<string, unknown> = {}, status = 200,
) {
  const chrome = await chromeOf(ctx, request, reply, title);
  return privatePage(reply, status).send(renderView(view, { ...withErrorSaid(data, chrome.lang), chrome }));
}

/** A short page with a heading and a message (after sign-up, a sent mail, a used link), in the page's language. */
export async function sendMessagePage(
  ctx: AppContext, request: FastifyRequest, reply: FastifyReply,
  title: Text, message: Text, options: { status?: number; kind?: 'notice' | 'error'; link?: { href: string; text: Text } } = {},
) {
  const t = await translatorOf(ctx, request);
  return sendFormPage(ctx, request, reply, 'message', title, {
    heading: t.text(title), message: t.text(message), kind: options.kind ?? 'notice',
    link: options.link ? { href: options.link.href, text: t.text(options.link.text) } : null,
  }, options.status ?? 200);
}

/** Field errors of a failed validation, by form field, for the templates. */
export type FieldErrors = Record<string, string[]>;

/**
 * Every settings page is for the signed-in person; others are sent to sign in and brought back. Undefined (not null)
 * when redirected, so that a handler's `return me && page(...)` sends nothing more.
 */
export async function signedInOrRedirect(request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> {
  const me = await request.signedIn();
  if (!me) {
    const back = request.method === 'GET' ? request.url : '/settings/profile';
    await reply.redirect(`/auth/sign_in?return_to=${encodeURIComponent(back)}`, 303);
    return undefined;
  }
  return me;
}

/**
 * Drops `form-action` from this page's policy: a form here (single sign-on's button) is answered with a redirect to
 * another origin, which browsers that apply `form-action` to redirects would otherwise block.
 */
export function letFormsRedirectAway(reply: FastifyReply): void {
  const policy = reply.getHeader('content-security-policy');
  if (typeof policy === 'string') reply.header('content-security-policy', policy.split(';').filter((d) => !/^\s*form-action\b/.test(d)).join(';'));
}
