import { Article, Audio, Document, Event, Image, LanguageString, Link, Note, Page, Question, Video } from '@fedify/vocab';
import type { Object as APObject } from '@fedify/vocab';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { RemoteMedia } from '../storage/media.ts';
import type { MediaType } from '../storage/media.ts';
import { escapeHtml, renderInline, sanitizeRemoteHtml } from '../text/render.ts';
import { boundedItems } from './inbound-limits.ts';
import { sentJsonOf } from './received-json.ts';

/**
 * The one place that reads what other servers send as posts into our model, as Mastodon's StatusParser and
 * MediaAttachmentParser do, so that the inbox, fetches (replies, boosts, search, quotes, pins) and backfill read an
 * object the same way.
 *
 * Note and Question are statuses as they are. Article (WordPress, Ghost, WriteFreely, Friendica long posts), Page
 * (Lemmy), Video (PeerTube), Event (Mobilizon), Image and Audio are "converted" as Mastodon converts them: the text is
 * the title as a heading, the summary, and a link to the object's page (its `url`, else its id); their content is not
 * shown and their summary is not a content warning. Beyond Mastodon, an Event's start (and end) and place are put in
 * the text, and a Video's or Audio's preview image (`icon`, else `image`) becomes its attachment when it has none.
 */

export type StatusObject = Note | Question | Article | Page | Video | Event | Image | Audio;

/** Whether what arrived becomes a status (Mastodon's SUPPORTED_TYPES and CONVERTED_TYPES). */
export function isStatusObject(object: unknown): object is StatusObject {
  return object instanceof Note || object instanceof Question || isConverted(object);
}

/** Whether it is one of the types Mastodon converts (title and link) rather than shows (content). */
export function isConverted(object: unknown): object is Article | Page | Video | Event | Image | Audio {
  return object instanceof Article || object instanceof Page || object instanceof Video || object instanceof Event
    || object instanceof Image || object instanceof Audio;
}

type Json = Record<string, unknown>;

/** The largest text kept of a title or a summary (the whole document is at most 1 MB: inbound-limits.ts). */
const MAX_TITLE = 1000;
const MAX_SUMMARY_HTML = 10_000;

/**
 * The object as its server wrote it (its JSON), for the terms Fedify does not keep (`blurhash`, `focalPoint`, an
 * Event's address): from the activity being handled or a recent fetch (federation/received-json.ts), each only for
 * an object of its origin. Null when neither has it (then those terms are simply absent).
 */
export function rawObjectOf(object: APObject): Json | null {
  return object.id ? sentJsonOf(object.id.href) : null;
}

export interface StatusText {
  /** Sanitised HTML. */
  content: string;
  spoilerText: string;
  /** The language its content or title is marked with (`contentMap`, `nameMap`), if any. */
  language: string | null;
}

/**
 * The text of a status: its content, or for a converted object its title, summary and link (Mastodon's
 * processed_text). `raw` is the object as sent (rawObjectOf), for what Fedify does not keep (an Event's address).
 */
export function statusTextOf(object: StatusObject, raw: Json | null = null): StatusText {
  if (!isConverted(object)) {
    const content = object.content ?? null;
    return {
      content: content !== null && String(content) !== '' ? sanitizeRemoteHtml(String(content)) : sourceAsHtml(object),
      spoilerText: String(object.summary ?? '').slice(0, 1000),
      language: languageOf(object.contents, object.summaries),
    };
  }
  // `name` is plain text (ActivityStreams: no markup), so it is escaped where Mastodon pastes it in.
  const title = object.name != null ? escapeHtml(String(object.name).trim().slice(0, MAX_TITLE)) : '';
  const summary = object.summary != null ? String(object.summary).trim().slice(0, MAX_SUMMARY_HTML) : '';
  const link = pageUrlOf(object) ?? object.id?.href ?? null;
  const parts = [
    title && `<h2>${title}</h2>`,
    summary && (/<(p|div|ul|ol|blockquote|pre|h[1-6])\b/i.test(summary) ? summary : `<p>${summary}</p>`),
    object instanceof Event ? eventDetails(object, raw) : '',
    link && `<p><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>`,
  ];
  return {
    content: sanitizeRemoteHtml(parts.filter(Boolean).join('')),
    spoilerText: '',
    language: languageOf(object.contents, object.names, object.summaries),
  };
}

/** The language of the first text marked with one (`contentMap`, then `nameMap`, then `summaryMap`, as Mastodon reads it). */
function languageOf(...texts: readonly (string | LanguageString)[][]): string | null {
  const value = texts.flatMap((t) => t.slice(0, 8)).find((t): t is LanguageString => t instanceof LanguageString && t.locale.baseName !== 'und');
  if (!value) return null;
  const tag = value.locale.baseName;
  // `und` (undetermined: Akkoma's default `@language`) says nothing.
  return /^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*$/.test(tag) && tag !== 'und' ? tag.split('-')[0]!.toLowerCase() : null;
}

/**
 * A post that came with no `content` but with its `source` as plain text or Markdown (some Pleroma and Akkoma
 * versions, bridges): shown as plain text, escaped and linked, a paragraph per blank line. Mastodon would show nothing.
 * Misskey's MFM (`text/x.misskeymarkdown`) is never shown so: its functions (`$[spin …]`) and markup would show raw;
 * Misskey sends its HTML rendering as `content`, which is what is shown.
 */
function sourceAsHtml(object: Note | Question): string {
  const source = object.source;
  const text = source?.content != null ? String(source.content).slice(0, 100_000) : '';
  const type = source?.mediaType ?? 'text/plain';
  if (!text.trim()) return '';
  if (type === 'text/html') return sanitizeRemoteHtml(text);
  if (!/^text\/(plain|markdown)(;|$)/.test(type)) return '';
  return sanitizeRemoteHtml(text.trim().split(/\n\s*\n/).map((para) => `<p>${para.split('\n').map(renderInline).join('<br>')}</p>`).join(''));
}

/** An Event's start and end (UTC, as the object gives them) and where it takes place, as a paragraph. */
function eventDetails(event: Event, raw: Json | null): string {
  const when = (t: { epochMilliseconds: number } | null) => (t ? `${new Date(t.epochMilliseconds).toISOString().slice(0, 16).replace('T', ' ')} UTC` : null);
  const start = when(event.startTime);
  const end = when(event.endTime);
  const lines: string[] = [];
  if (start) lines.push(escapeHtml(end ? `${start} – ${end}` : start));
  const place = placeName(raw);
  if (place) lines.push(escapeHtml(place));
  return lines.length > 0 ? `<p>${lines.join('<br>')}</p>` : '';
}

/**
 * The place of an Event, inlined (Mobilizon's `location`: a Place with a name and a schema.org address), read from
 * the raw object since Fedify keeps no address. Events whose place is named by id alone show no place.
 */
function placeName(raw: Json | null): string | null {
  const location = raw && typeof raw.location === 'object' ? (Array.isArray(raw.location) ? raw.location[0] : raw.location) as Json | null : null;
  if (!location || typeof location !== 'object') return null;
  const str = (v: unknown) => (typeof v === 'string' ? v.trim().slice(0, 200) : '');
  const address = typeof location.address === 'object' && location.address !== null ? (location.address as Json) : null;
  const parts = [str(location.name), ...(address ? [str(address.streetAddress), str(address.postalCode), str(address.addressLocality), str(address.addressCountry)] : [])];
  const seen = new Set<string>();
  const text = parts.filter((p) => p && !seen.has(p) && seen.add(p)).join(', ');
  return text || null;
}

/**
 * The object's page for people (`url`): the `text/html` link when it gives several (PeerTube gives the page and its
 * video files), else the first; http(s) only. Mastodon's url_to_href(url, 'text/html').
 */
export function pageUrlOf(object: APObject): string | null {
  const urls = object.urls.slice(0, 32);
  const html = urls.find((u) => u instanceof Link && u.mediaType === 'text/html');
  const first = html ?? urls.find((u) => u instanceof URL || (u instanceof Link && (!u.mediaType || u.mediaType.startsWith('text/'))));
  const url = first instanceof Link ? first.href : first instanceof URL ? first : null;
  return url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.href : null;
}

/** Attachments Mastodon keeps per post. */
export const MAX_MEDIA = 4;

/**
 * The attachments of a status: Documents (Image, Video, Audio, Document) with a URL, as Mastodon's
 * MediaAttachmentParser reads them: description from `summary` or `name`, `blurhash`, `focalPoint` (the latter two
 * from the raw object, `raw`, when Fedify dropped them). A server whose media is rejected has them kept as links
 * only (`unknown`). A Video object with no attachment of its own (PeerTube's) shows its best MP4 file within
 * `maxVideoBytes` as a video with its preview image; one without such a file, and an Audio object, show the preview
 * image alone.
 */
export async function mediaOf(object: StatusObject, options: { raw: Json | null; rejectMedia: boolean; loader?: DocumentLoader; maxVideoBytes?: number }): Promise<RemoteMedia[]> {
  const media: RemoteMedia[] = [];
  const rawAttachments = asArray(options.raw?.attachment).filter((a): a is Json => a !== null && typeof a === 'object');
  for (const attachment of await boundedItems((o) => object.getAttachments(o), 16, options.loader)) {
    if (media.length >= MAX_MEDIA) break;
    if (!(attachment instanceof Document)) continue; // Image, Video and Audio are Documents too; Links are not media
    const url = attachmentUrl(attachment);
    if (!url) continue;
    const raw = rawAttachments.find((r) => rawUrls(r.url).includes(url)) ?? null;
    media.push(mediaEntry(url, attachment.mediaType ?? null, attachment, raw, options.rejectMedia));
  }
  if (media.length === 0 && (object instanceof Video || object instanceof Audio)) {
    const preview = await previewImageOf(object);
    const file = object instanceof Video ? videoFileOf(object, options.raw, options.maxVideoBytes ?? Infinity) : null;
    if (file) {
      media.push({
        ...mediaEntry(file.url, 'video/mp4', null, null, options.rejectMedia),
        description: String(object.name ?? '').slice(0, 1500), width: file.width, height: file.height, previewUrl: preview?.url ?? null,
      });
    } else if (preview) media.push({ ...mediaEntry(preview.url, preview.mediaType, null, null, options.rejectMedia), description: String(object.name ?? '').slice(0, 1500), width: preview.width, height: preview.height });
  }
  return media;
}

function mediaEntry(url: string, contentType: string | null, attachment: Document | null, raw: Json | null, rejectMedia: boolean): RemoteMedia {
  const type: MediaType = contentType?.startsWith('image/') ? 'image' : contentType?.startsWith('video/') ? 'video' : contentType?.startsWith('audio/') ? 'audio'
    : attachment instanceof Image ? 'image' : attachment instanceof Video ? 'video' : attachment instanceof Audio ? 'audio' : 'unknown';
  const description = (typeof raw?.summary === 'string' && raw.summary.trim()) || String(attachment?.summary ?? '') || String(attachment?.name ?? '');
  return {
    type: rejectMedia ? 'unknown' : type,
    remoteUrl: url,
    contentType,
    description: description.slice(0, 1500),
    width: positiveInt(attachment?.width),
    height: positiveInt(attachment?.height),
    blurhash: blurhashOf(raw?.blurhash),
    focus: focusOf(raw?.focalPoint),
  };
}

function positiveInt(n: unknown): number | null {
  return typeof n === 'number' && Number.isInteger(n) && n > 0 && n < 100_000 ? n : null;
}

function attachmentUrl(attachment: Document): string | null {
  const urls = attachment.urls.slice(0, 8);
  const first = urls.find((u) => u instanceof URL) ?? urls.find((u) => u instanceof Link);
  const url = first instanceof Link ? first.href : first instanceof URL ? first : null;
  return url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.href : null;
}

function asArray(v: unknown): unknown[] {
  return v === undefined || v === null ? [] : Array.isArray(v) ? v.slice(0, 16) : [v];
}

function rawUrls(v: unknown): string[] {
  return asArray(v).map((u) => (typeof u === 'string' ? u : u && typeof u === 'object' && typeof (u as Json).href === 'string' ? ((u as Json).href as string) : null))
    .filter((u): u is string => u !== null).map((u) => (URL.canParse(u) ? new URL(u).href : u));
}

/** A blurhash as Mastodon accepts one: its alphabet, a sane length, and 1-9 components each way. */
export function blurhashOf(v: unknown): string | null {
  if (typeof v !== 'string' || v.length < 6 || v.length > 200 || !/^[0-9A-Za-z#$%*+,\-.:;=?@[\]^_{|}~]+$/.test(v)) return null;
  return v;
}

/** A focal point ([x, y], each from -1 to 1), else null (Mastodon keeps the centre then). */
export function focusOf(v: unknown): { x: number; y: number } | null {
  const list = Array.isArray(v) ? v : v && typeof v === 'object' && Array.isArray((v as Json)['@list']) ? ((v as Json)['@list'] as unknown[]) : null;
  if (!list || list.length !== 2) return null;
  const [x, y] = list.map((n) => (typeof n === 'number' ? n : typeof n === 'string' ? Number(n) : NaN));
  if (!Number.isFinite(x) || !Number.isFinite(y) || Math.abs(x!) > 1 || Math.abs(y!) > 1) return null;
  return { x: Math.round(x! * 100) / 100, y: Math.round(y! * 100) / 100 };
}

/**
 * The MP4 file to show of a Video whose `url` lists its files (PeerTube: the watch page, an MP4 per resolution with
 * its `size`, their torrents and magnets, an HLS playlist whose fragmented MP4s sit in its `tag`): of the MP4 Links
 * at the top of `url` that are video (not PeerTube's audio-only or fragmented files) and within `maxBytes` (a file
 * whose size is not given is tried, the copy being capped all the same), the tallest. Null when there is none.
 */
function videoFileOf(video: Video, raw: Json | null, maxBytes: number): { url: string; width: number | null; height: number | null } | null {
  const rawLinks = asArray(raw?.url).filter((u): u is Json => u !== null && typeof u === 'object' && typeof (u as Json).href === 'string');
  let best: { url: string; width: number | null; height: number | null } | null = null;
  for (const link of video.urls.slice(0, 32)) {
    if (!(link instanceof Link) || link.mediaType !== 'video/mp4' || !link.href) continue;
    if (link.href.protocol !== 'https:' && link.href.protocol !== 'http:') continue;
    const sent = rawLinks.find((r) => URL.canParse(r.href as string) && new URL(r.href as string).href === link.href!.href);
    const size = typeof sent?.size === 'number' ? sent.size : null;
    if (size !== null && size > maxBytes) continue;
    const flags = asArray(sent?.attachment).filter((a): a is Json => a !== null && typeof a === 'object');
    if (flags.some((f) => (f.name === 'ffprobe_codec_type' && f.value === 'audio') || (f.name === 'peertube_format_flag' && f.value === 'fragmented'))) continue;
    const height = positiveInt(link.height);
    if (!best || (height ?? 0) > (best.height ?? 0)) best = { url: link.href.href, width: positiveInt(link.width), height };
  }
  return best;
}

/** A Video's or Audio's preview image: the largest inlined `icon` (PeerTube's thumbnails), else its `image`. */
async function previewImageOf(object: Video | Audio): Promise<{ url: string; mediaType: string | null; width: number | null; height: number | null } | null> {
  const images = [
    ...(await boundedItems((o) => object.getIcons(o), 8)),
    ...(await boundedItems((o) => object.getImages(o), 8)),
  ];
  let best: { url: string; mediaType: string | null; width: number | null; height: number | null } | null = null;
  for (const image of images) {
    if (!(image instanceof Image)) continue;
    const url = attachmentUrl(image);
    if (!url) continue;
    const width = positiveInt(image.width);
    if (!best || (width ?? 0) > (best.width ?? 0)) best = { url, mediaType: image.mediaType ?? 'image/jpeg', width, height: positiveInt(image.height) };
  }
  return best;
}

/** The http(s) URL of an object's page to store as the status's `url`: on the object's own host, as Mastodon requires. */
export function statusUrlOf(object: StatusObject): string | null {
  const url = pageUrlOf(object);
  return url && object.id && new URL(url).host === object.id.host ? url : null;
}

