import { Parser } from 'htmlparser2';
import type { Config } from '../config.ts';

/**
 * Link preview cards, the parts that need no network: which link of a post gets a card, and what a page says about
 * itself. The fetching job is jobs/link-cards.ts.
 */

/** The hosts that are this server: links to them get no card. */
export function ownHosts(config: Pick<Config, 'localDomain' | 'publicUrl'>): Set<string> {
  const hosts = new Set([config.localDomain.toLowerCase()]);
  try {
    hosts.add(new URL(config.publicUrl).host.toLowerCase());
  } catch {
    // a bad public URL is refused at start-up
  }
  return hosts;
}

const SKIPPED_CLASSES = /(^|\s)(mention|hashtag|u-url|h-card)(\s|$)/;

/**
 * The first link of a status's HTML that gets a card, as Mastodon's FetchLinkCardService picks it: an http(s) link
 * that is not a hashtag or a mention (`rel="tag"`, the classes our rendering and Mastodon's give them, or a link text
 * starting with # or @, as other servers' posts have) and not to this server. Null when there is none.
 */
export function firstCardLink(html: string, own: Set<string>): string | null {
  let found: string | null = null;
  let anchor: { href: string; skip: boolean; text: string } | null = null;
  const parser = new Parser({
    onopentag(name, attribs) {
      if (name !== 'a' || found) return;
      const rel = (attribs.rel ?? '').toLowerCase().split(/\s+/);
      anchor = { href: attribs.href ?? '', skip: rel.includes('tag') || SKIPPED_CLASSES.test(attribs.class ?? ''), text: '' };
    },
    ontext(text) {
      if (anchor) anchor.text += text;
    },
    onclosetag(name) {
      if (name !== 'a' || !anchor) return;
      const a: { href: string; skip: boolean; text: string } = anchor;
      anchor = null;
      if (found || a.skip || /^\s*[#@＃]/.test(a.text)) return;
      const url = cardUrl(a.href, own);
      if (url) {
        found = url;
        parser.pause();
      }
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.end(html);
  return found;
}

function cardUrl(href: string, own: Set<string>): string | null {
  let url: URL;
  try {
    url = new URL(href.trim());
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || own.has(url.host.toLowerCase())) return null;
  if (url.username || url.password) return null;
  url.hash = '';
  return url.href;
}

/** What a page says about itself. */
export interface PageDetails {
  title: string;
  description: string;
  /** Absolute http(s) URL of its image, if it names one. */
  image: string | null;
  siteName: string;
  ogType: string;
  author: string;
  publishedAt: Date | null;
  /** The JSON oEmbed endpoint it names, if any. */
  oembedUrl: string | null;
}

const MAX_TITLE = 300;
const MAX_DESCRIPTION = 1000;

const clean = (text: string, max: number) => [...text.replace(/\s+/g, ' ').trim()].slice(0, max).join('');

function absolute(href: string | undefined, base: string): string | null {
  if (!href) return null;
  try {
    const url = new URL(href.trim(), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/**
 * Reads a page's OpenGraph, Twitter card and plain HTML metadata (`<title>`, `<meta name="description">`) and its
 * oEmbed discovery link, with an HTML parser. OpenGraph wins over Twitter, which wins over plain HTML.
 */
export function parsePage(html: string, pageUrl: string): PageDetails {
  const meta = new Map<string, string>();
  let title = '';
  let inTitle = false;
  let titleDone = false;
  let inBody = false;
  let oembedUrl: string | null = null;
  const parser = new Parser({
    onopentag(name, attribs) {
      if (name === 'body') inBody = true;
      if (name === 'title' && !titleDone && !inBody) inTitle = true;
      if (name === 'meta') {
        const key = (attribs.property ?? attribs.name ?? '').trim().toLowerCase();
        const content = attribs.content;
        if (key && content !== undefined && !meta.has(key)) meta.set(key, content);
      }
      if (name === 'link' && !oembedUrl) {
        const rel = (attribs.rel ?? '').toLowerCase().split(/\s+/);
        if (rel.includes('alternate') && (attribs.type ?? '').trim().toLowerCase() === 'application/json+oembed') oembedUrl = absolute(attribs.href, pageUrl);
      }
    },
    ontext(text) {
      if (inTitle) title += text;
    },
    onclosetag(name) {
      if (name === 'title' && inTitle) {
        inTitle = false;
        titleDone = true;
      }
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.end(html);
  const first = (...keys: string[]) => keys.map((k) => meta.get(k)?.trim()).find((v) => !!v) ?? '';
  const published = Date.parse(first('article:published_time', 'og:published_time'));
  return {
    title: clean(first('og:title', 'twitter:title') || title, MAX_TITLE),
    description: clean(first('og:description', 'twitter:description', 'description'), MAX_DESCRIPTION),
    image: absolute(first('og:image', 'og:image:url', 'og:image:secure_url', 'twitter:image', 'twitter:image:src'), pageUrl),
    siteName: clean(first('og:site_name', 'application-name'), MAX_TITLE),
    ogType: first('og:type').toLowerCase(),
    author: clean(first('author', 'article:author', 'twitter:creator'), MAX_TITLE),
    publishedAt: Number.isFinite(published) ? new Date(published) : null,
    oembedUrl,
  };
}

/** What an oEmbed answer adds to a card. */
export interface OEmbedDetails {
  type: 'link' | 'photo' | 'video' | 'rich';
  title: string;
  authorName: string;
  authorUrl: string;
  providerName: string;
  providerUrl: string;
  /** An `<iframe>` rebuilt from the answer's HTML (video, rich), nothing else of it. */
  html: string;
  /** The photo's URL (photo). */
  embedUrl: string;
  width: number;
  height: number;
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The first `<iframe>` of an oEmbed answer's HTML with an https source, rebuilt with its size and nothing else
 * (Mastodon keeps only iframes of embeds too). Empty when there is none.
 */
export function embedIframe(html: string): string {
  let out = '';
  const parser = new Parser({
    onopentag(name, attribs) {
      if (out || name !== 'iframe') return;
      const src = absolute(attribs.src, 'https://invalid.invalid/');
      if (!src || !src.startsWith('https://')) return;
      const size = (v: string | undefined) => (v && /^\d{1,5}$/.test(v) ? v : null);
      const width = size(attribs.width);
      const height = size(attribs.height);
      out = `<iframe src="${escapeAttr(src)}"${width ? ` width="${width}"` : ''}${height ? ` height="${height}"` : ''} frameborder="0" allowfullscreen="true"></iframe>`;
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.end(html);
  return out;
}

/** Reads an oEmbed JSON answer; null when it is not one. */
export function parseOEmbed(json: unknown, pageUrl: string): OEmbedDetails | null {
  if (!json || typeof json !== 'object' || Array.isArray(json)) return null;
  const o = json as Record<string, unknown>;
  const str = (v: unknown, max = MAX_TITLE) => (typeof v === 'string' ? clean(v, max) : '');
  const url = (v: unknown) => (typeof v === 'string' ? (absolute(v, pageUrl) ?? '') : '');
  const int = (v: unknown) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
    return Number.isInteger(n) && n > 0 && n < 100_000 ? n : 0;
  };
  const type = o.type === 'photo' || o.type === 'video' || o.type === 'rich' || o.type === 'link' ? o.type : null;
  if (!type) return null;
  const html = type === 'video' || type === 'rich' ? embedIframe(typeof o.html === 'string' ? o.html : '') : '';
  const embedUrl = type === 'photo' ? url(o.url) : '';
  return {
    // An embed we cannot show (no iframe, no photo) is a plain link with the answer's names.
    type: (type === 'photo' && !embedUrl) || ((type === 'video' || type === 'rich') && !html) ? 'link' : type,
    title: str(o.title),
    authorName: str(o.author_name),
    authorUrl: url(o.author_url),
    providerName: str(o.provider_name),
    providerUrl: url(o.provider_url),
    html,
    embedUrl,
    width: int(o.width),
    height: int(o.height),
  };
}
