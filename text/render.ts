import { linkifyit } from 'linkify-it';
import { sanitize, type SanitizeOptions } from './sanitize.ts';

const linkify = linkifyit();

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** What our own rendering may produce; sanitize-html enforces it on the way out as a second line of defence. */
const SANITIZE: SanitizeOptions = {
  allowedTags: ['p', 'br', 'a', 'span'],
  allowedAttributes: { a: ['href', 'rel', 'target', 'class'], span: ['class'] },
  allowedSchemes: ['http', 'https'],
};

function linkifyLine(line: string, rel = 'nofollow noopener noreferrer'): string {
  const matches = linkify.match(line) ?? [];
  let out = '';
  let last = 0;
  for (const m of matches) {
    if (!/^https?:\/\//i.test(m.url)) continue; // bare domains and mail addresses stay text, as in Mastodon
    out += escapeHtml(line.slice(last, m.index));
    out += `<a href="${escapeHtml(m.url)}" target="_blank" rel="${rel}">${escapeHtml(m.text)}</a>`;
    last = m.lastIndex;
  }
  return out + escapeHtml(line.slice(last));
}

/** One line: escaped and linked, no paragraph. */
export function renderInline(text: string): string {
  return sanitize(linkifyLine(text.replace(/\s+/g, ' ').trim()), SANITIZE);
}

/**
 * A profile field's value as Mastodon renders a local one: one line, escaped, its links linked with `rel="me"` (the
 * link says the account is the same person as the page, the other half of a verified link).
 */
export function renderField(text: string): string {
  return sanitize(linkifyLine(text.replace(/\s+/g, ' ').trim(), 'nofollow noopener me'), SANITIZE);
}

/**
 * HTML from other servers (notes, profiles), reduced to what Mastodon keeps: text formatting and links, no
 * scripts, styles, images or event handlers; links open elsewhere and carry no referrer.
 */
const REMOTE: SanitizeOptions = {
  allowedTags: ['p', 'br', 'span', 'a', 'del', 's', 'pre', 'blockquote', 'code', 'b', 'strong', 'u', 'i', 'em', 'ul', 'ol', 'li', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6'],
  allowedAttributes: { a: ['href', 'rel', 'class', 'translate', 'target'], span: ['class', 'translate'], ol: ['start', 'reversed'], li: ['value'] },
  allowedClasses: { a: ['mention', 'hashtag', 'u-url', 'h-card'], span: ['h-card', 'invisible', 'ellipsis', 'mention', 'hashtag'] },
  allowedSchemes: ['http', 'https', 'dat', 'dweb', 'ipfs', 'ipns', 'ssb', 'gopher', 'xmpp', 'magnet', 'gemini'],
  transformTags: {
    a: (tagName, attribs) => ({ tagName, attribs: { ...attribs, rel: 'nofollow noopener noreferrer', target: '_blank' } }),
  },
};

export function sanitizeRemoteHtml(html: string): string {
  return sanitize(html, REMOTE);
}
