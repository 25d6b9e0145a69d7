import type { StatusRow } from '../../storage/statuses.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import type { RenderContext } from './context.ts';
import { statusUri } from '../../services/uris.ts';
import { renderAccount } from './account.ts';
import { renderMedia } from './media.ts';
import { renderFilterResult } from './filter.ts';
import { renderPoll } from './poll.ts';
import { renderPreviewCard } from './preview-card.ts';
import { quoteApproval } from '../../services/quotes.ts';
import type { QuoteRow } from '../../storage/quotes.ts';
import { renderEmoji } from './custom-emoji.ts';
import { emojisUsed } from '../../services/custom-emojis.ts';

/** The application a status was posted from (Mastodon's `application`: name and website), or null. */
function applicationOf(b: StatusBundle, s: StatusRow): { name: string; website: string | null } | null {
  const app = s.application_id ? b.applications?.get(s.application_id) : undefined;
  return app ? { name: app.name, website: app.website } : null;
}

/**
 * Mastodon's REST::StatusSerializer#show_application?: everyone sees the application while the author discloses it
 * (the base fields carry it then); the author always does. True when this viewer sees it only as the author.
 */
function applicationForAuthorOnly(b: StatusBundle, s: StatusRow): boolean {
  return s.application_id !== null && b.viewerId === s.account_id && b.accounts.get(s.account_id)?.show_application === false;
}

/** The fields of a Status that are the same for every viewer, without `reblog`. */
function baseFields(ctx: RenderContext, b: StatusBundle, s: StatusRow): Record<string, unknown> {
  const author = b.accounts.get(s.account_id)!;
  const isReblog = s.reblog_of_id !== null;
  const local = author.domain === null;
  const uri = statusUri(ctx, s, author.username);
  return {
    id: s.id,
    uri: isReblog ? `${uri}/activity` : uri,
    url: isReblog ? null : (local ? `${ctx.publicUrl}/@${author.username}/${s.id}` : (s.url ?? s.uri)),
    created_at: s.created_at.toISOString(),
    edited_at: s.edited_at?.toISOString() ?? null,
    account: renderAccount(ctx, author),
    content: s.content,
    visibility: s.visibility,
    // An account a moderator marked sensitive has all its posts shown as sensitive (Mastodon's sensitized).
    sensitive: s.sensitive || !!author.sensitized_at,
    spoiler_text: s.spoiler_text,
    language: s.language,
    in_reply_to_id: s.in_reply_to_id,
    in_reply_to_account_id: s.in_reply_to_account_id,
    application: author.show_application ? applicationOf(b, s) : null,
    media_attachments: (b.media.get(s.id) ?? []).map((m) => renderMedia(ctx, m)),
    mentions: (b.mentions.get(s.id) ?? []).map((id) => b.accounts.get(id)).filter((a) => !!a).map((a) => ({
      id: a.id,
      username: a.username,
      acct: a.domain === null ? a.username : `${a.username}@${a.domain}`,
      url: a.domain === null ? `${ctx.publicUrl}/@${a.username}` : (a.url ?? a.uri ?? ''),
    })),
    tags: (b.tags.get(s.id) ?? []).map((name) => ({ name: name.toLowerCase(), url: `${ctx.publicUrl}/tags/${encodeURIComponent(name.toLowerCase())}` })),
    emojis: (b.emojis?.get(s.id) ?? []).map((e) => renderEmoji(ctx, e)),
    card: b.cards?.get(s.id) ? renderPreviewCard(ctx, b.cards.get(s.id)!) : null,
    poll: pollOf(ctx, b, s),
    replies_count: s.replies_count,
    reblogs_count: s.reblogs_count,
    favourites_count: s.favourites_count,
    quotes_count: s.quotes_count ?? 0,
    // A quote is shown as its viewer may see it: renderStatus puts it in its place (renderQuote).
    quote: null,
    filtered: [],
  };
}

/**
 * The viewer's own relation to a status; absent without a signed-in viewer, as in Mastodon. A reblog carries
 * the viewer's flags of its original (Mastodon's `favourited?`/`reblogged?` look at `status.proper`): one
 * cannot favourite or reblog a reblog itself. Bookmarks and muted conversations are the original's too; `pinned` only on
 * the viewer's own statuses, as Mastodon shows it.
 */
function viewerFields(b: StatusBundle, s: StatusRow): Record<string, boolean> {
  if (!b.viewerId) return {};
  const proper = s.reblog_of_id ?? s.id;
  return {
    favourited: b.favourited.has(proper),
    reblogged: b.reblogged.has(proper),
    muted: b.muted?.has(proper) ?? false,
    bookmarked: b.bookmarked?.has(proper) ?? false,
    ...(s.account_id === b.viewerId && !s.reblog_of_id ? { pinned: b.pinned?.has(s.id) ?? false } : {}),
  };
}

/**
 * Mastodon 4.5's `quote_approval`: the original's policy, and whether this viewer could quote it. Every viewer has it
 * (nobody signed in: `denied`).
 */
function approvalFields(b: StatusBundle, s: StatusRow): { quote_approval: ReturnType<typeof quoteApproval> } {
  const proper = s.reblog_of_id ? (b.statuses.get(s.reblog_of_id) ?? s) : s;
  return { quote_approval: quoteApproval(proper, b.viewerId, b.following?.has(proper.account_id) ?? false) };
}

/** The states in which the quoted status is shown (Mastodon's BaseQuoteSerializer). */
const SHOWN_STATES = new Set(['accepted', 'blocked_account', 'blocked_domain', 'muted_account']);

/**
 * A quote's state for this viewer: as stored unless accepted; then `deleted` when the quoted status is gone,
 * `unauthorized` when the viewer may not see it, and `blocked_account`, `blocked_domain` or `muted_account` when the
 * viewer blocks or mutes its author (or server).
 */
function quoteState(b: StatusBundle, q: QuoteRow): string {
  if (q.state !== 'accepted') return q.state;
  const quoted = q.quoted_status_id ? b.statuses.get(q.quoted_status_id) : undefined;
  if (!quoted || quoted.deleted_at) return 'deleted';
  if (!b.quoteVisible?.has(quoted.id)) return 'unauthorized';
  const r = b.relations;
  if (r && b.viewerId && quoted.account_id !== b.viewerId) {
    if (r.blocking.has(quoted.account_id)) return 'blocked_account';
    const domain = b.accounts.get(quoted.account_id)?.domain?.toLowerCase();
    if (domain && r.domains.has(domain)) return 'blocked_domain';
    if (r.muting.has(quoted.account_id)) return 'muted_account';
  }
  return 'accepted';
}

/** Quote (the quoted status rendered) at the top, ShallowQuote (its id) inside a quoted status; null for no quote. */
function renderQuote(ctx: RenderContext, b: StatusBundle, s: StatusRow, shallow: boolean): Record<string, unknown> | null {
  const q = b.quotes?.get(s.id);
  if (!q) return null;
  const state = quoteState(b, q);
  const shown = SHOWN_STATES.has(state) ? q.quoted_status_id : null;
  if (shallow) return { state, quoted_status_id: shown };
  const quoted = shown ? b.statuses.get(shown) : undefined;
  return { state, quoted_status: quoted && b.accounts.has(quoted.account_id) ? renderStatus(ctx, b, quoted, { shallowQuote: true }) : null };
}

/** The status's poll as its viewer sees it (their votes), or null. */
function pollOf(ctx: RenderContext, b: StatusBundle, s: StatusRow): Record<string, unknown> | null {
  const poll = b.polls?.get(s.id);
  if (!poll) return null;
  // The poll's emoji: those of its status that its options use.
  const emojis = emojisUsed(b.emojis?.get(s.id) ?? [], poll.options).map((e) => renderEmoji(ctx, e));
  return renderPoll(poll, b.viewerId ? { accountId: b.viewerId, choices: b.ownVotes?.get(poll.id) ?? [] } : null, emojis);
}

/**
 * The fields of a status's entity that depend on its viewer, as renderStatus gives them: the filters that matched it,
 * the viewer's marks and whether they may quote it (what the signed-in pages' forms are made of).
 */
export function renderViewerFields(b: StatusBundle, s: StatusRow): Record<string, unknown> {
  const filtered = b.filtered?.get(s.id);
  return { ...(filtered ? { filtered: filtered.map(renderFilterResult) } : {}), ...viewerFields(b, s), ...approvalFields(b, s) };
}

/** Mastodon's Status entity. The internal deleted flag is never part of it. */
export function renderStatus(ctx: RenderContext, b: StatusBundle, s: StatusRow, options: { withSource?: boolean; shallowQuote?: boolean } = {}): Record<string, unknown> {
  const original = s.reblog_of_id ? b.statuses.get(s.reblog_of_id) : undefined;
  const filtered = b.filtered?.get(s.id);
  return {
    ...baseFields(ctx, b, s),
    ...(applicationForAuthorOnly(b, s) ? { application: applicationOf(b, s) } : {}),
    quote: renderQuote(ctx, b, s, options.shallowQuote ?? false),
    ...(filtered ? { filtered: filtered.map(renderFilterResult) } : {}),
    reblog: original ? renderStatus(ctx, b, original) : null,
    ...viewerFields(b, s),
    ...approvalFields(b, s),
    ...(options.withSource ? { text: s.text } : {}),
  };
}

// Serialised viewer-independent parts, kept as UTF-8 bytes: encoding a 50 KB page of text on every response
// was the largest single cost of a timeline read. Reused while the rows they were made from are the cached ones
// (a changed status or account is a new row object: see services/hydrate.ts).
const baseJson = new WeakMap<StatusRow, { deps: unknown[]; json: Buffer }>();

function cachedBase(ctx: RenderContext, b: StatusBundle, s: StatusRow): Buffer {
  const mentions = b.mentions.get(s.id) ?? [];
  const app = s.application_id ? b.applications?.get(s.application_id) : undefined;
  const deps: unknown[] = [b.accounts.get(s.account_id), app, mentions, b.tags.get(s.id), b.media.get(s.id), b.cards?.get(s.id), b.emojis?.get(s.id), ...mentions.map((id) => b.accounts.get(id))];
  const hit = baseJson.get(s);
  if (hit && hit.deps.length === deps.length && hit.deps.every((d, i) => d === deps[i])) return hit.json;
  const json = Buffer.from(JSON.stringify(baseFields(ctx, b, s)).slice(0, -1)); // without the closing brace
  baseJson.set(s, { deps, json });
  return json;
}

const ascii = (text: string) => Buffer.from(text, 'latin1');
const NULL_REBLOG_END = ascii(',"reblog":null}');
const REBLOG_START = ascii(',"reblog":');
const CLOSE = ascii('}');
const viewerJson = new Map<string, Buffer>();

/** The viewer's fields as bytes; there are only a few distinct combinations, so each is made once. */
function viewerBytes(b: StatusBundle, s: StatusRow): Buffer {
  const viewer = viewerFields(b, s);
  let text = '';
  for (const key in viewer) text += `,"${key}":${viewer[key]}`;
  text += `,"quote_approval":${JSON.stringify(approvalFields(b, s).quote_approval)}`;
  let bytes = viewerJson.get(text);
  if (!bytes) viewerJson.set(text, (bytes = ascii(text)));
  return bytes;
}

/** The same entity as renderStatus, as JSON bytes appended to `out`, built from cached pieces: what timelines send. */
export function renderStatusJson(ctx: RenderContext, b: StatusBundle, s: StatusRow, out: Buffer[] = []): Buffer[] {
  // A status a filter matched carries its results; the cached pieces say `"filtered":[]`, so it is encoded whole.
  // So is one with a poll: the poll shows the viewer's votes, and whether it has ended by now.
  // And one that quotes: its quote is shown as the viewer may see it. And the author's own whose application the
  // author does not disclose: the cached pieces, shared by every viewer, leave it out.
  const original = s.reblog_of_id ? b.statuses.get(s.reblog_of_id) : undefined;
  if (b.filtered?.has(s.id) || b.polls?.has(s.id) || (s.reblog_of_id && b.polls?.has(s.reblog_of_id)) || b.quotes?.has(s.id) || (s.reblog_of_id && b.quotes?.has(s.reblog_of_id))
    || applicationForAuthorOnly(b, s) || (original && applicationForAuthorOnly(b, original))) {
    out.push(Buffer.from(JSON.stringify(renderStatus(ctx, b, s))));
    return out;
  }
  out.push(cachedBase(ctx, b, s), viewerBytes(b, s));
  if (!original) {
    out.push(NULL_REBLOG_END);
    return out;
  }
  out.push(REBLOG_START);
  renderStatusJson(ctx, b, original, out);
  out.push(CLOSE);
  return out;
}

const OPEN_LIST = ascii('[');
const COMMA = ascii(',');
const CLOSE_LIST = ascii(']');

/** A JSON array of statuses as one buffer. */
export function renderStatusListJson(ctx: RenderContext, b: StatusBundle, rows: StatusRow[]): Buffer {
  const out: Buffer[] = [OPEN_LIST];
  rows.forEach((s, i) => {
    if (i > 0) out.push(COMMA);
    renderStatusJson(ctx, b, s, out);
  });
  out.push(CLOSE_LIST);
  return Buffer.concat(out);
}
