import { linkifyit } from 'linkify-it';
import { sanitize, type SanitizeOptions } from './sanitize.ts';
import { escapeHtml } from './render.ts';

const linkify = linkifyit();

// Mastodon's shapes: `@user`, `@user@domain`, `#tag` (a tag needs a letter, so `#1` stays text).
// The domain part may be a bare host (as Mastodon allows) and carry a port (servers on non-standard ports).
const MENTION = /(?<![\p{L}\p{N}_@/.])@([a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)(?:@([a-z0-9-]+(?:\.[a-z0-9-]+)*(?::\d{1,5})?))?/giu;
const HASHTAG = /(?<![\p{L}\p{N}_/&#])#([\p{L}\p{N}_]*[\p{L}_][\p{L}\p{N}_]*)/gu;

export interface MentionRef {
  username: string;
  /** null for a local mention without a domain. */
  domain: string | null;
}

export interface ResolvedMention {
  id: string;
  url: string;
  username: string;
  acct: string;
}

export interface ParsedStatus {
  mentions: MentionRef[];
  tags: string[];
}

/** The mentions and hashtags a status's text contains, outside its URLs. */
export function parseStatusText(text: string): ParsedStatus {
  const mentions = new Map<string, MentionRef>();
  const tags = new Map<string, string>();
  for (const segment of plainSegments(text)) {
    for (const m of segment.matchAll(MENTION)) {
      const ref = { username: m[1]!, domain: m[2]?.toLowerCase() ?? null };
      mentions.set(`${ref.username.toLowerCase()}@${ref.domain ?? ''}`, ref);
    }
    for (const m of segment.matchAll(HASHTAG)) {
      if (m[1]!.length <= 100) tags.set(m[1]!.toLowerCase(), m[1]!);
    }
  }
  return { mentions: [...mentions.values()], tags: [...tags.values()] };
}

function plainSegments(line: string): string[] {
  const out: string[] = [];
  let last = 0;
  for (const m of linkify.match(line) ?? []) {
    if (!/^https?:\/\//i.test(m.url)) continue;
    out.push(line.slice(last, m.index));
    last = m.lastIndex;
  }
  out.push(line.slice(last));
  return out;
}

const SANITIZE: SanitizeOptions = {
  allowedTags: ['p', 'br', 'a', 'span'],
  allowedAttributes: { a: ['href', 'rel', 'target', 'class'], span: ['class'] },
  allowedClasses: { a: ['mention', 'hashtag', 'u-url'], span: ['h-card', 'invisible', 'ellipsis'] },
  allowedSchemes: ['http', 'https'],
};

export interface RenderStatusOptions {
  publicUrl: string;
  /** Looks up a mention; unknown ones stay plain text. Keys are `username@domain` lowercased (domain empty for local). */
  mentions: Map<string, ResolvedMention>;
  localDomain: string;
}

function mentionKey(username: string, domain: string | null, localDomain: string): string {
  const d = domain && domain.toLowerCase() !== localDomain.toLowerCase() ? domain.toLowerCase() : '';
  return `${username.toLowerCase()}@${d}`;
}
export { mentionKey };

function renderPlain(segment: string, o: RenderStatusOptions): string {
  // Escape first, then link: the patterns below match no characters that escaping changes, except `&` in `&#`.
  type Piece = { start: number; end: number; html: string };
  const pieces: Piece[] = [];
  for (const m of segment.matchAll(MENTION)) {
    const found = o.mentions.get(mentionKey(m[1]!, m[2] ?? null, o.localDomain));
    if (!found) continue;
    pieces.push({
      start: m.index!, end: m.index! + m[0].length,
      html: `<span class="h-card"><a href="${escapeHtml(found.url)}" class="u-url mention">@<span>${escapeHtml(found.username)}</span></a></span>`,
    });
  }
  for (const m of segment.matchAll(HASHTAG)) {
    if (pieces.some((p) => m.index! < p.end && m.index! + m[0].length > p.start)) continue;
    pieces.push({
      start: m.index!, end: m.index! + m[0].length,
      html: `<a href="${escapeHtml(`${o.publicUrl}/tags/${encodeURIComponent(m[1]!.toLowerCase())}`)}" class="mention hashtag" rel="tag">#<span>${escapeHtml(m[1]!)}</span></a>`,
    });
  }
  pieces.sort((a, b) => a.start - b.start);
  let out = '';
  let last = 0;
  for (const p of pieces) {
    out += escapeHtml(segment.slice(last, p.start)) + p.html;
    last = p.end;
  }
  return out + escapeHtml(segment.slice(last));
}

function renderLine(line: string, o: RenderStatusOptions): string {
  let out = '';
  let last = 0;
  for (const m of linkify.match(line) ?? []) {
    if (!/^https?:\/\//i.test(m.url)) continue;
    out += renderPlain(line.slice(last, m.index), o);
    out += `<a href="${escapeHtml(m.url)}" target="_blank" rel="nofollow noopener noreferrer">${escapeHtml(m.text)}</a>`;
    last = m.lastIndex;
  }
  return out + renderPlain(line.slice(last), o);
}

/** A status's text as Mastodon renders it: escaped, paragraphs and line breaks, links, mentions and hashtags. */
export function renderStatusText(text: string, o: RenderStatusOptions): string {
  const trimmed = text.replace(/\r\n?/g, '\n').trim();
  if (trimmed === '') return '';
  const html = trimmed.split(/\n{2,}/).map((p) => `<p>${p.split('\n').map((l) => renderLine(l, o)).join('<br />')}</p>`).join('');
  return sanitize(html, SANITIZE);
}
