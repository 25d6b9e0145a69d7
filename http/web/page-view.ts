// What the public page templates show of an account or a status, taken from the API's own entities (the
// serializers), so that a page shows exactly what an app would: the templates only choose how.
import type { RenderContext } from '../serializers/context.ts';
import { renderAccount } from '../serializers/account.ts';
import { interactionPath } from './interaction.ts';

type AccountEntity = ReturnType<typeof renderAccount>;

/** The fields of Mastodon's Status entity that the pages use (http/serializers/status.ts renders them). */
interface StatusEntity {
  id: string;
  uri: string;
  url: string | null;
  created_at: string;
  edited_at: string | null;
  account: AccountEntity;
  content: string;
  visibility: string;
  sensitive: boolean;
  spoiler_text: string;
  language: string | null;
  in_reply_to_id: string | null;
  media_attachments: MediaEntity[];
  tags: { name: string; url: string }[];
  poll: PollEntity | null;
  replies_count: number;
  reblogs_count: number;
  favourites_count: number;
  reblog: StatusEntity | null;
  /** Mastodon 4.5's Quote (`quoted_status`), or a ShallowQuote (`quoted_status_id`) inside a quoted status. */
  quote?: QuoteEntity | null;
}

interface QuoteEntity {
  state: string;
  quoted_status?: StatusEntity | null;
  quoted_status_id?: string | null;
}

interface MediaEntity {
  id: string;
  type: string;
  url: string | null;
  preview_url: string | null;
  remote_url: string | null;
  description: string | null;
  meta: { small?: { width?: number; height?: number }; original?: { width?: number; height?: number } } | null;
}

interface PollEntity {
  id: string;
  voted?: boolean;
  own_votes?: number[];
  expires_at: string | null;
  expired: boolean;
  multiple: boolean;
  votes_count: number;
  voters_count: number | null;
  options: { title: string; votes_count: number | null }[];
}

export interface DateView {
  iso: string;
  text: string;
}

export interface AccountView {
  id: string;
  username: string;
  /** user@domain, always with the domain (what a stranger types into their own server). */
  handle: string;
  /** The account's page on this server: `/@user` for ours, `/@user@domain` for another server's. */
  path: string;
  displayName: string;
  url: string;
  /** The ActivityPub actor id. */
  uri: string;
  avatar: string;
  /** The account's own description of its avatar and header, or a plain statement of whose they are (in English, for `<meta>`). */
  avatarAlt: string;
  /** The account's own descriptions of its avatar and header; '' where it gave none (the page says whose they are). */
  avatarDescription: string;
  headerDescription: string;
  header: string | null;
  headerAlt: string;
  noteHtml: string;
  /** The bio as plain text, for descriptions in `<meta>`. */
  noteText: string;
  fields: { name: string; valueHtml: string; verified: boolean; verifiedAt: DateView | null }[];
  statusesCount: number;
  followingCount: number;
  followersCount: number;
  hideCollections: boolean;
  bot: boolean;
  locked: boolean;
  joined: DateView;
}

export interface MediaView {
  kind: 'image' | 'video' | 'audio' | 'link';
  url: string;
  preview: string | null;
  /** The author's description, or a plain statement that there is none (never empty: the image is no decoration). */
  alt: string;
  described: boolean;
  width: number | null;
  height: number | null;
}

export interface PollView {
  id: string;
  /** The viewer voted in it (or may not: it is theirs); absent for a stranger. */
  voted: boolean;
  options: { title: string; votes: number | null; percent: number | null }[];
  hidden: boolean;
  expired: boolean;
  endsAt: DateView | null;
  people: number;
  multiple: boolean;
}

export interface StatusView {
  id: string;
  url: string;
  uri: string;
  author: AccountView;
  created: DateView;
  edited: DateView | null;
  contentHtml: string;
  /** The content as plain text (descriptions in `<meta>`, titles). */
  text: string;
  spoiler: string;
  sensitive: boolean;
  visibility: string;
  language: string | null;
  reply: boolean;
  media: MediaView[];
  poll: PollView | null;
  tags: { name: string; url: string }[];
  replies: number;
  reblogs: number;
  favourites: number;
  /** Where a stranger's Reply, Boost or Favourite leads (http/web/interaction.ts). */
  interactPath: string;
  /** The post it quotes, as the API shows it to this viewer; null when it quotes nothing. */
  quote: QuoteView | null;
}

/**
 * A quote as the API's Status entity gives it to the viewer (Mastodon 4.5): its `state` for them, and the quoted post
 * only where the API gives it (`accepted`, or the viewer blocks or mutes its author or server, where the page folds it
 * away as Mastodon's web does). Inside a quoted post, its own quote is shallow: a state and whether it names a post.
 */
export interface QuoteView {
  state: string;
  post: StatusView | null;
  /** The viewer's block or mute that folds the quoted post away: whom it names. */
  hiddenBy: { reason: 'blocked_account' | 'muted_account'; name: string } | { reason: 'blocked_domain'; name: string } | null;
  /** A quote within a quoted post (a ShallowQuote): its post is not shown, only that there is one. */
  shallow: boolean;
  /** The shallow quote names a post the viewer may be shown. */
  names: boolean;
}

/** An entry of a list of posts: a post, or a boost of one (then `post` is the original and `boostedBy` who boosted). */
export interface EntryView {
  id: string;
  post: StatusView;
  boostedBy: AccountView | null;
  boostedAt: DateView | null;
}

// Made at the first page that shows a date: building it touches ~5 MB of ICU's data, which a process that serves
// no page (an API-only or streaming one) would otherwise keep resident.
let dateFormat: Intl.DateTimeFormat | undefined;

// A page shows the same posts' dates again and again: each date's text is kept once made (bounded, emptied when full).
const dateTexts = new Map<number, string>();

export function dateView(iso: string | Date): DateView {
  const d = typeof iso === 'string' ? new Date(iso) : iso;
  const time = d.getTime();
  let text = dateTexts.get(time);
  if (text === undefined) {
    dateFormat ??= new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
    text = `${dateFormat.format(d)} UTC`;
    if (dateTexts.size >= 20_000) dateTexts.clear();
    dateTexts.set(time, text);
  }
  return { iso: d.toISOString(), text };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Sanitised HTML as plain text: paragraphs and line breaks become spaces, tags go, entities are decoded. */
export function htmlToText(html: string): string {
  return html
    .replace(/<br\s*\/?>|<\/p>\s*<p[^>]*>|<\/(?:li|h[1-6]|blockquote)>/gi, ' ')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, code: string) => {
      if (code[0] !== '#') return ENTITIES[code.toLowerCase()] ?? m;
      const n = code[1] === 'x' || code[1] === 'X' ? parseInt(code.slice(2), 16) : parseInt(code.slice(1), 10);
      return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : m;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

/** At most `max` characters, cut at a word where one is near, with an ellipsis. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const cut = chars.slice(0, max - 1).join('');
  const space = cut.lastIndexOf(' ');
  return `${space > max * 0.6 ? cut.slice(0, space) : cut}…`;
}

export function accountView(ctx: RenderContext, a: AccountEntity): AccountView {
  const local = a.acct === a.username;
  const missingHeader = a.header.endsWith('/headers/original/missing.png');
  const displayName = a.display_name.trim() || a.username;
  return {
    id: a.id,
    username: a.username,
    handle: local ? `${a.username}@${ctx.localDomain}` : a.acct,
    path: `/@${a.acct}`,
    displayName,
    url: a.url ?? a.uri,
    uri: a.uri,
    avatar: a.avatar,
    avatarAlt: a.avatar_description?.trim() || `Avatar of ${displayName}`,
    avatarDescription: a.avatar_description?.trim() ?? '',
    headerDescription: a.header_description?.trim() ?? '',
    header: missingHeader ? null : a.header,
    headerAlt: a.header_description?.trim() || `Header image of ${displayName}`,
    noteHtml: a.note,
    noteText: htmlToText(a.note),
    fields: a.fields.map((f) => ({ name: f.name, valueHtml: f.value, verified: !!f.verified_at, verifiedAt: f.verified_at ? dateView(f.verified_at) : null })),
    statusesCount: a.statuses_count,
    followingCount: a.following_count,
    followersCount: a.followers_count,
    hideCollections: a.hide_collections,
    bot: a.bot,
    locked: a.locked,
    joined: dateView(a.created_at),
  };
}

const size = (m: MediaEntity) => {
  const dims = m.meta?.small ?? m.meta?.original;
  return typeof dims?.width === 'number' && typeof dims.height === 'number' ? { width: dims.width, height: dims.height } : { width: null, height: null };
};

function mediaView(m: MediaEntity): MediaView | null {
  const url = m.url ?? m.remote_url;
  if (!url) return null; // still processing: nothing to show yet
  const described = !!m.description?.trim();
  const kind = m.type === 'image' ? 'image' : m.type === 'video' || m.type === 'gifv' ? 'video' : m.type === 'audio' ? 'audio' : 'link';
  const what = kind === 'image' ? 'Image' : kind === 'video' ? 'Video' : kind === 'audio' ? 'Audio' : 'Attachment';
  return {
    kind, url, preview: m.preview_url, described, ...size(m),
    alt: described ? m.description!.trim() : `${what} without a description`,
  };
}

function pollView(p: PollEntity): PollView {
  // Multiple-choice polls count each voter once in the whole, as Mastodon's percentages do.
  const whole = p.multiple ? (p.voters_count ?? p.votes_count) : p.votes_count;
  const hidden = p.options.some((o) => o.votes_count === null);
  return {
    id: p.id,
    voted: p.voted === true,
    options: p.options.map((o) => ({
      title: o.title,
      votes: o.votes_count,
      percent: o.votes_count === null ? null : whole > 0 ? Math.round((o.votes_count / whole) * 100) : 0,
    })),
    hidden,
    expired: p.expired,
    endsAt: p.expires_at ? dateView(p.expires_at) : null,
    people: p.voters_count ?? p.votes_count,
    multiple: p.multiple,
  };
}

function statusView(ctx: RenderContext, s: StatusEntity): StatusView {
  return {
    id: s.id,
    url: s.url ?? s.uri,
    uri: s.uri,
    author: accountView(ctx, s.account),
    created: dateView(s.created_at),
    edited: s.edited_at ? dateView(s.edited_at) : null,
    contentHtml: s.content,
    text: htmlToText(s.content),
    spoiler: s.spoiler_text,
    sensitive: s.sensitive,
    visibility: s.visibility,
    language: s.language,
    reply: s.in_reply_to_id !== null,
    media: s.media_attachments.map(mediaView).filter((m): m is MediaView => m !== null),
    poll: s.poll ? pollView(s.poll) : null,
    tags: s.tags,
    replies: s.replies_count,
    reblogs: s.reblogs_count,
    favourites: s.favourites_count,
    interactPath: interactionPath(`/@${s.account.acct}/${s.id}`),
    quote: quoteView(ctx, s.quote),
  };
}

/** The states in which the API gives the quoted post (Mastodon's BaseQuoteSerializer), as http/serializers/status.ts. */
const SHOWN_QUOTE_STATES = new Set(['accepted', 'blocked_account', 'blocked_domain', 'muted_account']);

function quoteView(ctx: RenderContext, q: QuoteEntity | null | undefined): QuoteView | null {
  if (!q) return null;
  if (q.quoted_status === undefined) {
    return { state: q.state, post: null, hiddenBy: null, shallow: true, names: SHOWN_QUOTE_STATES.has(q.state) && !!q.quoted_status_id };
  }
  const post = q.quoted_status && SHOWN_QUOTE_STATES.has(q.state) ? statusView(ctx, q.quoted_status) : null;
  let hiddenBy: QuoteView['hiddenBy'] = null;
  if (post && (q.state === 'blocked_account' || q.state === 'muted_account')) hiddenBy = { reason: q.state, name: post.author.handle };
  if (post && q.state === 'blocked_domain') hiddenBy = { reason: 'blocked_domain', name: post.author.handle.slice(post.author.handle.indexOf('@') + 1) };
  return { state: q.state, post, hiddenBy, shallow: false, names: post !== null };
}

/** A Status entity (as http/serializers/status.ts renders it) as an entry of a page. */
export function entryView(ctx: RenderContext, entity: Record<string, unknown>): EntryView {
  const s = entity as unknown as StatusEntity;
  if (s.reblog) return { id: s.id, post: statusView(ctx, s.reblog), boostedBy: accountView(ctx, s.account), boostedAt: dateView(s.created_at) };
  return { id: s.id, post: statusView(ctx, s), boostedBy: null, boostedAt: null };
}
