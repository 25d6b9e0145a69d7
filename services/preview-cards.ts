import { Parser } from 'htmlparser2';
import type { Config } from '../config.ts';
import { isLanguage } from './languages.ts';

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

/** A stored card is fetched again after this long (Mastodon: two weeks). */
export const CARD_REFRESH_AFTER_MS = 14 * 24 * 3600_000;

/**
 * Whether a stored card will do as it is for a status whose author's media we take: fresh, and with its image if its
 * page named one (an embed has none). Otherwise the link-card job fetches it (again), as Mastodon's
 * FetchLinkCardService does for a missing, old or imageless card.
 */
export function storedCardWillDo(card: { updated_at: Date; image_remote_url: string | null; image_key: string | null; html: string | null }): boolean {
  if (Date.now() - card.updated_at.getTime() > CARD_REFRESH_AFTER_MS) return false;
  return !card.image_remote_url || !!card.image_key || !!card.html;
}

const SKIPPED_CLASSES = /(^|\s)(mention|hashtag|u-url|h-card)(\s|$)/;

/**
 * The first link of a status's HTML that gets a card, as Mastodon's FetchLinkCardService picks it: an http(s) link
 * that is not a hashtag or a mention (`rel="tag"`, the classes our rendering and Mastodon's give them, or a link text
 * starting with # or @, as other servers' posts have) and not to this server. Null when there is none.
 */
export function firstCardLink(html: string, own: Set<string>): string | null {
  // Most posts have no link at all: no parser for them (every post is looked at once when made, again in its job).
  if (!/<a[\s>]/i.test(html)) return null;
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
  /** The image's alt text (og:image:alt). */
  imageDescription: string;
  siteName: string;
  /** og:site, as a URL (Mastodon's provider_url of an OpenGraph card); empty when not given. */
  siteUrl: string;
  ogType: string;
  author: string;
  /** The author's page (JSON-LD author.url); empty when not given. */
  authorUrl: string;
  /** The `fediverse:creator` handle (Mastodon 4.3), `user@domain` without the leading @; null when none. */
  creator: string | null;
  /** The page's language as a code of services/languages.ts (JSON-LD inLanguage, og:locale, `<html lang>`). */
  language: string | null;
  publishedAt: Date | null;
  /** The JSON oEmbed endpoint it names, if any. */
  oembedUrl: string | null;
}

const MAX_TITLE = 300;
const MAX_DESCRIPTION = 1000;
/** JSON-LD blocks read per page, and the size of each: a page is at most 1 MiB, but parsing is bounded anyway. */
const MAX_JSON_LD_BLOCKS = 20;
const MAX_JSON_LD_CHARS = 256 * 1024;

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

/** The schema.org types whose JSON-LD describes the page itself (Mastodon reads NewsArticle and WebPage; kin added). */
const STRUCTURED_TYPES = new Set(['NewsArticle', 'Article', 'BlogPosting', 'ReportageNews', 'AnalysisNewsArticle', 'OpinionNewsArticle', 'ScholarlyArticle', 'TechArticle', 'WebPage']);

type JsonObject = Record<string, unknown>;
const isObject = (v: unknown): v is JsonObject => !!v && typeof v === 'object' && !Array.isArray(v);
const firstOf = (v: unknown): unknown => (Array.isArray(v) ? v[0] : v);
const typeMatches = (o: JsonObject) => (Array.isArray(o['@type']) ? o['@type'] : [o['@type']]).some((t) => typeof t === 'string' && STRUCTURED_TYPES.has(t));

// Some publishers wrap JSON-LD in commented-out CDATA markers (as Mastodon's extractor strips them).
const CDATA_JUNK = /^\s*(\/\*\s*<!\[CDATA\[\s*\*\/|\/\/\s*<!\[CDATA\[|\/\*\s*\]\]>\s*\*\/|\/\/\s*\]\]>)\s*$/gm;

/**
 * The page's description of itself in a JSON-LD block: the first object (at the top, in a top-level array or in an
 * `@graph`) of a supported type; null when the block is not JSON or has none. Blocks that do not parse are skipped,
 * as many pages have more than one and some are broken.
 */
function structuredData(block: string): JsonObject | null {
  let root: unknown;
  try {
    root = JSON.parse(block.replace(CDATA_JUNK, ''));
  } catch {
    return null;
  }
  const candidates: unknown[] = Array.isArray(root) ? root.slice(0, 100) : [root];
  for (const c of [...candidates]) if (isObject(c) && Array.isArray(c['@graph'])) candidates.push(...c['@graph'].slice(0, 100));
  return (candidates.find((c) => isObject(c) && typeMatches(c)) as JsonObject | undefined) ?? null;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', '#39': "'" };

/** HTML entities in a JSON-LD string decoded (publishers often write them there; Mastodon decodes them too). */
function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,6});/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const jsonText = (v: unknown): string => (typeof v === 'string' ? decodeEntities(v) : '');

/** JSON-LD inLanguage: a code, the first of several, or a Language object (its alternateName or name). */
function jsonLanguage(v: unknown): string {
  const lang = firstOf(v);
  if (isObject(lang)) return jsonText(lang.alternateName) || jsonText(lang.name);
  return jsonText(lang);
}

/**
 * Mastodon's valid_locale_or_nil: the code as given if it is a known language, else its part before a region
 * (`en_US`, `pt-BR` → `en`, `pt`); null otherwise.
 */
export function pageLanguage(value: string): string | null {
  const v = value.trim();
  if (!v) return null;
  if (isLanguage(v)) return v;
  const code = v.split(/[_-]/)[0]!.toLowerCase();
  return isLanguage(code) ? code : null;
}

/** `@user@domain` or `user@domain` as `user@domain` (the domain lower-cased); null when it is not a handle. */
export function creatorHandle(value: string): string | null {
  const m = /^@?([A-Za-z0-9_.-]{1,100})@([A-Za-z0-9.-]{1,253}(?::\d{1,5})?)$/.exec(value.trim());
  return m ? `${m[1]}@${m[2]!.toLowerCase()}` : null;
}

/**
 * Reads a page as Mastodon's LinkDetailsExtractor does, with an HTML parser: its JSON-LD (schema.org NewsArticle,
 * Article, WebPage…) first, then OpenGraph, then Twitter card and plain HTML metadata (`<title>`,
 * `<meta name="description">`, `<html lang>`), and its oEmbed discovery link and `fediverse:creator`.
 */
export function parsePage(html: string, pageUrl: string): PageDetails {
  const meta = new Map<string, string>();
  let title = '';
  let inTitle = false;
  let titleDone = false;
  let inBody = false;
  let htmlLang = '';
  let oembedUrl: string | null = null;
  let jsonLd: string | null = null;
  const jsonLdBlocks: string[] = [];
  const parser = new Parser({
    onopentag(name, attribs) {
      if (name === 'html' && !htmlLang) htmlLang = attribs.lang ?? attribs['xml:lang'] ?? '';
      if (name === 'body') inBody = true;
      if (name === 'title' && !titleDone && !inBody) inTitle = true;
      if (name === 'meta') {
        const content = attribs.content;
        // Mastodon matches either attribute: pages use name= and property= for the same keys.
        for (const key of new Set([attribs.property, attribs.name].map((k) => (k ?? '').trim().toLowerCase()))) {
          if (key && content !== undefined && !meta.has(key)) meta.set(key, content);
        }
      }
      if (name === 'link' && !oembedUrl) {
        const rel = (attribs.rel ?? '').toLowerCase().split(/\s+/);
        if (rel.includes('alternate') && (attribs.type ?? '').trim().toLowerCase() === 'application/json+oembed') oembedUrl = absolute(attribs.href, pageUrl);
      }
      if (name === 'script' && (attribs.type ?? '').trim().toLowerCase() === 'application/ld+json' && jsonLdBlocks.length < MAX_JSON_LD_BLOCKS) jsonLd = '';
    },
    ontext(text) {
      if (inTitle) title += text;
      if (jsonLd !== null && jsonLd.length < MAX_JSON_LD_CHARS) jsonLd += text;
    },
    onclosetag(name) {
      if (name === 'title' && inTitle) {
        inTitle = false;
        titleDone = true;
      }
      if (name === 'script' && jsonLd !== null) {
        // A block cut at the limit would not parse anyway: it is left out.
        if (jsonLd.length < MAX_JSON_LD_CHARS) jsonLdBlocks.push(jsonLd);
        jsonLd = null;
      }
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.end(html);
  let ld: JsonObject = {};
  for (const block of jsonLdBlocks) {
    const found = structuredData(block);
    if (found) {
      ld = found;
      break;
    }
  }
  const author = firstOf(ld.author);
  const publisher = isObject(firstOf(ld.publisher)) ? (firstOf(ld.publisher) as JsonObject) : {};
  const ldImage = firstOf(ld.image);
  const first = (...keys: string[]) => keys.map((k) => meta.get(k)?.trim()).find((v) => !!v) ?? '';
  const ldPublished = jsonText(ld.datePublished);
  const published = Date.parse(ldPublished || first('article:published_time', 'og:published_time'));
  const site = first('og:site');
  const creator = first('fediverse:creator');
  return {
    title: clean(jsonText(ld.headline) || first('og:title', 'twitter:title') || title, MAX_TITLE),
    description: clean(jsonText(ld.description) || first('og:description', 'twitter:description', 'description'), MAX_DESCRIPTION),
    image: absolute(first('og:image', 'og:image:url', 'og:image:secure_url', 'twitter:image', 'twitter:image:src'), pageUrl)
      ?? absolute(isObject(ldImage) ? jsonText(ldImage.url) : jsonText(ldImage), pageUrl),
    imageDescription: clean(first('og:image:alt', 'twitter:image:alt'), MAX_DESCRIPTION),
    siteName: clean(jsonText(publisher.name) || first('og:site_name', 'application-name'), MAX_TITLE),
    siteUrl: /^https?:\/\//i.test(site) ? (absolute(site, pageUrl) ?? '') : /^[a-z0-9.-]+(:\d{1,5})?\/?$/i.test(site) ? (absolute(`http://${site}`, pageUrl) ?? '') : '',
    ogType: first('og:type').toLowerCase(),
    author: clean((isObject(author) ? jsonText(author.name) : jsonText(author)) || first('og:author', 'og:author:username', 'author', 'twitter:creator'), MAX_TITLE),
    authorUrl: (isObject(author) ? absolute(jsonText(author.url), pageUrl) : null) ?? '',
    creator: creator ? creatorHandle(creator) : null,
    language: pageLanguage(jsonLanguage(ld.inLanguage)) ?? pageLanguage(first('og:locale')) ?? pageLanguage(htmlLang),
    publishedAt: Number.isFinite(published) ? new Date(published) : null,
    oembedUrl,
  };
}

/**
 * The character set of a page, as browsers find it: a byte order mark, else the Content-Type header's charset, else
 * a `<meta charset>` or `<meta http-equiv="content-type">` early in the page; UTF-8 when none is said or it is one
 * TextDecoder does not know. A meta naming UTF-16 means UTF-8 (the HTML standard's rule: the page was read as ASCII).
 */
export function pageEncoding(body: Uint8Array, headerCharset: string | null): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  const known = (label: string | null | undefined): string | null => {
    if (!label) return null;
    try {
      return new TextDecoder(label.trim()).encoding;
    } catch {
      return null;
    }
  };
  const fromHeader = known(headerCharset);
  if (fromHeader) return fromHeader;
  // The HTML standard's prescan looks at the first 1024 bytes; pages with long heads put it later, so a bit more is read.
  const head = Buffer.from(body.subarray(0, 4096)).toString('latin1');
  const declared = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1];
  const fromMeta = known(declared);
  if (!fromMeta) return 'utf-8';
  return fromMeta.startsWith('utf-16') ? 'utf-8' : fromMeta;
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
