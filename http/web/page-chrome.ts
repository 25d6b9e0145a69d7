import { isStaff } from '../../services/roles.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { PageChrome } from './views.ts';
import { SESSION_COOKIE, type SignedIn } from './session.ts';
import { escapeHtml } from '../../text/render.ts';
import { truncate } from './page-view.ts';
import { SOURCE_LOCALE } from './i18n.ts';

/**
 * The layout's chrome for a public page: for a stranger when `signedIn` is null (the form that is cached, one per
 * locale: `servePage` gives the render its locale).
 */
export function publicChrome(config: AppContext['config'], signedIn: SignedIn | null, title: string, head = '', locale = SOURCE_LOCALE): PageChrome {
  return {
    // Titles are what search results and tabs show: kept short.
    title: truncate(title, 70),
    instanceTitle: config.instanceTitle,
    signedInAs: signedIn ? { username: signedIn.account.username, admin: isStaff(signedIn.user.role?.permissions) } : null,
    csrfToken: '',
    head,
    registrationsOpen: config.registrationsMode !== 'none',
    lang: locale,
  };
}

/** Who is looking, when the request carries a session cookie at all (a stranger's request costs no query). */
export async function viewerOf(request: FastifyRequest): Promise<SignedIn | null> {
  return request.cookies?.[SESSION_COOKIE] ? request.signedIn() : null;
}

/** What goes into `<head>` besides the title: discovery links, OpenGraph and Twitter cards, robots. */
export interface HeadTags {
  description?: string | undefined;
  canonical?: string | undefined;
  noindex?: boolean | undefined;
  /** `<link rel="alternate">`s: ActivityPub document, feeds, oEmbed. */
  alternates?: { type: string; href: string; title?: string }[];
  /** OpenGraph properties (`og:title`…), in order. */
  og?: [string, string][];
  /** Twitter card names (`twitter:card`…), in order. */
  twitter?: [string, string][];
}

export function headTags(t: HeadTags): string {
  const lines: string[] = [];
  if (t.noindex) lines.push('<meta name="robots" content="noindex, noarchive">');
  if (t.description !== undefined) lines.push(`<meta name="description" content="${escapeHtml(t.description)}">`);
  if (t.canonical) lines.push(`<link rel="canonical" href="${escapeHtml(t.canonical)}">`);
  for (const a of t.alternates ?? []) {
    lines.push(`<link rel="alternate" type="${escapeHtml(a.type)}" href="${escapeHtml(a.href)}"${a.title ? ` title="${escapeHtml(a.title)}"` : ''}>`);
  }
  for (const [property, content] of t.og ?? []) lines.push(`<meta property="${escapeHtml(property)}" content="${escapeHtml(content)}">`);
  for (const [name, content] of t.twitter ?? []) lines.push(`<meta name="${escapeHtml(name)}" content="${escapeHtml(content)}">`);
  return lines.join('\n');
}

/** Sends a rendered page; `vary` because the same URL answers ActivityPub clients and signed-in people differently. */
export function sendHtml(reply: FastifyReply, statusCode: number, body: string | Buffer): FastifyReply {
  return reply.code(statusCode).header('vary', 'Accept, Cookie').type('text/html; charset=utf-8').send(body);
}
