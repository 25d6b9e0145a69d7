// RSS 2.0 feeds of a profile's and a tag's public posts, as Mastodon publishes them (`/@user.rss`, `/tags/x.rss`):
// each post's HTML as the item's description, its media as Media RSS, its tags as categories.
import type { EntryView } from './page-view.ts';

export interface FeedChannel {
  title: string;
  description: string;
  /** The page the feed is of. */
  link: string;
  /** The feed's own address (atom:link rel=self). */
  self: string;
  image?: { url: string; title: string; link: string } | undefined;
  generator: string;
}

// Characters XML 1.0 cannot carry at all (controls other than tab and newlines, lone surrogates, U+FFFE/U+FFFF).
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

export function xmlText(text: string): string {
  return text.replace(NOT_XML, '').replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);
}

const MEDIUM: Record<string, string> = { image: 'image', video: 'video', audio: 'audio' };

function item(e: EntryView): string {
  const p = e.post;
  // A content warning stays in front of the text, as the page puts it before the post.
  const html = p.spoiler ? `<p>Content warning: ${xmlText(p.spoiler)}</p>${p.contentHtml}` : p.contentHtml;
  const lines = [
    '<item>',
    `<guid isPermaLink="true">${xmlText(p.url)}</guid>`,
    `<link>${xmlText(p.url)}</link>`,
    `<pubDate>${new Date(p.created.iso).toUTCString()}</pubDate>`,
    `<description>${xmlText(html)}</description>`,
  ];
  for (const m of p.media) {
    const medium = MEDIUM[m.kind];
    lines.push(`<media:content url="${xmlText(m.url)}"${medium ? ` medium="${medium}"` : ''}>`);
    if (m.described) lines.push(`<media:description type="plain">${xmlText(m.alt)}</media:description>`);
    if (p.sensitive) lines.push('<media:rating scheme="urn:simple">adult</media:rating>');
    lines.push('</media:content>');
  }
  for (const t of p.tags) lines.push(`<category>${xmlText(t.name)}</category>`);
  lines.push('</item>');
  return lines.join('\n');
}

export function renderRss(channel: FeedChannel, entries: EntryView[]): string {
  const newest = entries[0]?.post.created.iso;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">',
    '<channel>',
    `<title>${xmlText(channel.title)}</title>`,
    `<description>${xmlText(channel.description)}</description>`,
    `<link>${xmlText(channel.link)}</link>`,
    `<atom:link href="${xmlText(channel.self)}" rel="self" type="application/rss+xml"/>`,
    ...(channel.image ? [`<image><url>${xmlText(channel.image.url)}</url><title>${xmlText(channel.image.title)}</title><link>${xmlText(channel.image.link)}</link></image>`] : []),
    ...(newest ? [`<lastBuildDate>${new Date(newest).toUTCString()}</lastBuildDate>`] : []),
    `<generator>${xmlText(channel.generator)}</generator>`,
    ...entries.map(item),
    '</channel>',
    '</rss>',
    '',
  ].join('\n');
}
