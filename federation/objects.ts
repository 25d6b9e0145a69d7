import { Temporal } from '@js-temporal/polyfill';
import { Announce, Collection, Endpoints, Hashtag, Image, InteractionPolicy, InteractionRule, Mention, Note, Person, PropertyValue, PUBLIC_COLLECTION, Question, QuoteAuthorization, Service, Tombstone, type Recipient } from '@fedify/vocab';
import type { Context } from '@fedify/fedify';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import { findAccountsByIds, movedTarget } from '../storage/accounts.ts';
import { findStatus, mentionsOf, tagsOf } from '../storage/statuses.ts';
import { repliesCollectionOf } from './replies.ts';
import { renderField } from '../text/render.ts';
import { mediaOfStatuses } from '../storage/media.ts';
import { pollOfStatus, pollExpired, type PollRow } from '../storage/polls.ts';
import { accountUri, statusUri } from '../services/uris.ts';
import { quoteOfStatus, type QuoteRow } from '../storage/quotes.ts';
import { effectiveQuotePolicy } from '../services/quotes.ts';
import { localEmojiTags } from './emojis.ts';
import { MediaDocument, StatusNote, StatusQuestion } from './media-terms.ts';
import { accountTexts } from '../services/custom-emojis.ts';

const instant = (d: Date) => Temporal.Instant.fromEpochMilliseconds(d.getTime());

/**
 * A local account as an ActivityPub actor (what Mastodon publishes at /users/:username): a Person, or a Service for
 * a bot account, as Mastodon types them (this server has no group accounts).
 */
export async function personOf(fed: Context<AppContext>, account: AccountRow): Promise<Person | Service> {
  const Actor = account.bot ? Service : Person;
  const identifier = account.username;
  const keys = await fed.getActorKeyPairs(identifier);
  const app = fed.data;
  // What every actor document carries: where it is, its collections, its keys.
  const common = {
    id: fed.getActorUri(identifier),
    preferredUsername: account.username,
    url: new URL(`/@${account.username}`, app.config.publicUrl),
    published: instant(account.created_at),
    inbox: fed.getInboxUri(identifier),
    outbox: fed.getOutboxUri(identifier),
    followers: fed.getFollowersUri(identifier),
    following: fed.getFollowingUri(identifier),
    endpoints: new Endpoints({ sharedInbox: fed.getInboxUri() }),
    publicKey: keys[0]?.cryptographicKey,
    assertionMethods: keys.map((k) => k.multikey),
  };
  // A suspended account is published with its key and nothing else of it, marked suspended (as Mastodon does).
  if (account.suspended_at) return new Actor({ ...common, suspended: true });
  return new Actor({
    ...common,
    name: account.display_name,
    summary: account.note_html,
    featured: fed.getFeaturedUri(identifier),
    featuredTags: fed.getFeaturedTagsUri(identifier),
    manuallyApprovesFollowers: account.locked,
    discoverable: account.discoverable ?? false,
    indexable: account.indexable,
    icon: account.avatar_file ? new Image({ url: new URL(app.fileHost.url(account.avatar_file)), mediaType: account.avatar_content_type, name: account.avatar_description || null }) : null,
    image: account.header_file ? new Image({ url: new URL(app.fileHost.url(account.header_file)), mediaType: account.header_content_type, name: account.header_description || null }) : null,
    // Account moves: the ids it says are also it, and where it moved (Mastodon's alsoKnownAs, movedTo).
    aliases: (account.also_known_as ?? []).filter((u) => URL.canParse(u)).map((u) => new URL(u)),
    successor: movedToUri(app, account),
    attachments: profileFieldsOf(account),
    tags: await actorEmojiTags(app, account),
  });
}

/**
 * Profile fields as Mastodon publishes them: `PropertyValue` attachments (schema.org's, which Fedify's context
 * names), the value as HTML with its links made links, `rel="me"` on them, as Mastodon renders a local field.
 * Whether a link is verified is not published (other servers verify for themselves).
 */
export function profileFieldsOf(account: Pick<AccountRow, 'fields'>): PropertyValue[] {
  return (account.fields ?? []).map((f) => new PropertyValue({ name: f.name, value: renderField(f.value) }));
}

/** The custom emoji a local account's name, bio and fields use, as Emoji tags (Mastodon's actor `tag`). */
function actorEmojiTags(app: AppContext, account: AccountRow) {
  return localEmojiTags(app, accountTexts(account));
}

function movedToUri(app: AppContext, account: AccountRow): URL | null {
  const target = movedTarget(account);
  return target ? new URL(accountUri(app.render, target)) : null;
}

/** An account as Fedify addresses deliveries to it: its id, inbox and shared inbox. */
export function recipientOf(app: AppContext, a: AccountRow): Recipient {
  if (a.domain === null) {
    const id = new URL(accountUri(app.render, a));
    return { id, inboxId: new URL(`${id.href}/inbox`), endpoints: { sharedInbox: new URL('/inbox', app.config.publicUrl) } };
  }
  return {
    id: a.uri ? new URL(a.uri) : null,
    inboxId: a.inbox_url ? new URL(a.inbox_url) : null,
    endpoints: a.shared_inbox_url ? { sharedInbox: new URL(a.shared_inbox_url) } : null,
  };
}

/** Who a status is addressed to, as Mastodon addresses it. */
export function audienceOf(fed: Context<AppContext>, author: AccountRow, s: StatusRow, mentioned: AccountRow[]): { to: URL[]; cc: URL[] } {
  const followers = fed.getFollowersUri(author.username);
  const mentions = mentioned.map((a) => new URL(accountUri(fed.data.render, a)));
  switch (s.visibility) {
    case 'public': return { to: [PUBLIC_COLLECTION], cc: [followers, ...mentions] };
    case 'unlisted': return { to: [followers], cc: [PUBLIC_COLLECTION, ...mentions] };
    case 'private': return { to: [followers], cc: mentions };
    case 'direct': return { to: mentions, cc: [] };
  }
}

/**
 * A local account's reblog as the Announce that published it, addressed as Mastodon does by the reblog's own
 * visibility: public to Public, unlisted to followers with Public in cc, private to followers only; the author
 * of the original is always in cc.
 */
export function announceOf(fed: Context<AppContext>, reblogger: AccountRow, reblog: StatusRow, author: AccountRow, original: StatusRow): Announce {
  const followers = fed.getFollowersUri(reblogger.username);
  const authorUri = new URL(accountUri(fed.data.render, author));
  return new Announce({
    id: new URL(`${statusUri(fed.data.render, reblog, reblogger.username)}/activity`),
    actor: new URL(accountUri(fed.data.render, reblogger)),
    object: new URL(statusUri(fed.data.render, original, author.username)),
    published: instant(reblog.created_at),
    tos: reblog.visibility === 'public' ? [PUBLIC_COLLECTION] : [followers],
    ccs: [authorUri, ...(reblog.visibility === 'public' ? [followers] : reblog.visibility === 'unlisted' ? [PUBLIC_COLLECTION] : [])],
  });
}

/** A status of a local account as a Note, with what the wire needs and nothing internal (no deleted flag). */
export async function noteOf(fed: Context<AppContext>, author: AccountRow, s: StatusRow): Promise<{ note: Note; mentioned: AccountRow[] }> {
  const { values, mentioned } = await noteValues(fed, author, s);
  return { note: new StatusNote(values), mentioned };
}

/** A status as other servers are sent it: its Note, or a Question when it has a poll (as Mastodon sends polls). */
export async function statusObjectOf(fed: Context<AppContext>, author: AccountRow, s: StatusRow): Promise<{ note: Note | Question; mentioned: AccountRow[] }> {
  const [{ values, mentioned }, poll] = await Promise.all([noteValues(fed, author, s), pollOfStatus(fed.data.db, s.id)]);
  return { note: poll ? new StatusQuestion({ ...values, ...questionFields(poll) }) : new StatusNote(values), mentioned };
}

async function noteValues(fed: Context<AppContext>, author: AccountRow, s: StatusRow) {
  const app = fed.data;
  const [mentionIds, tagNames, parent, media, quoteFields, replies] = await Promise.all([
    mentionsOf(app.db, [s.id]).then((m) => m.get(s.id) ?? []),
    tagsOf(app.db, [s.id]).then((t) => t.get(s.id) ?? []),
    s.in_reply_to_id ? findStatus(app.db, s.in_reply_to_id) : Promise.resolve(null),
    mediaOfStatuses(app.db, [s.id]).then((m) => m.get(s.id) ?? []),
    quoteValues(app, s),
    repliesCollectionOf(app, author, s),
  ]);
  const [related, emojiTags] = await Promise.all([
    findAccountsByIds(app.db, [...mentionIds, ...(parent ? [parent.account_id] : [])]),
    localEmojiTags(app, [s.spoiler_text, s.content]),
  ]);
  const mentioned = related.filter((a) => mentionIds.includes(a.id));
  const parentAuthor = parent ? related.find((a) => a.id === parent.account_id) : undefined;
  const { to, cc } = audienceOf(fed, author, s, mentioned);
  const values = {
    id: new URL(statusUri(app.render, s, author.username)),
    url: new URL(`/@${author.username}/${s.id}`, app.config.publicUrl),
    attribution: fed.getActorUri(author.username),
    content: s.content,
    summary: s.spoiler_text === '' ? null : s.spoiler_text,
    sensitive: s.sensitive,
    published: instant(s.created_at),
    updated: s.edited_at ? instant(s.edited_at) : null,
    replyTarget: parent && parentAuthor ? new URL(statusUri(app.render, parent, parentAuthor.username)) : null,
    tos: to,
    ccs: cc,
    attachments: media.filter((m) => m.original_key).map((m) => {
      const original = (m.meta as { original?: { width?: number; height?: number } }).original;
      // As Mastodon: the blurhash when there is one, the focal point when the author moved it from the centre.
      return new MediaDocument({
        url: new URL(app.fileHost.url(m.original_key!)), mediaType: m.original_type, name: m.description === '' ? null : m.description,
        width: original?.width ?? null, height: original?.height ?? null,
        blurhash: m.blurhash, focalPoint: m.focus_x !== 0 || m.focus_y !== 0 ? [m.focus_x, m.focus_y] : null,
      });
    }),
    tags: [
      ...mentioned.map((a) => new Mention({ href: new URL(accountUri(app.render, a)), name: `@${a.username}@${a.domain ?? app.config.localDomain}` })),
      ...tagNames.map((name) => new Hashtag({ href: new URL(`/tags/${encodeURIComponent(name.toLowerCase())}`, app.config.publicUrl), name: `#${name}` })),
      ...emojiTags,
    ],
    ...quoteFields,
    replies,
    interactionPolicy: interactionPolicyOf(fed, author, s),
  };
  return { values, mentioned };
}

/**
 * Who may quote a status, as Mastodon 4.5 publishes it (FEP-044f `interactionPolicy.canQuote.automaticApproval`):
 * Public, the author's followers, or (nobody else) the author alone. Only automatic approval exists here.
 */
export function interactionPolicyOf(fed: Context<AppContext>, author: AccountRow, s: StatusRow): InteractionPolicy {
  const policy = effectiveQuotePolicy(s.visibility, s.quote_approval_policy);
  const approved = policy === 'public' ? PUBLIC_COLLECTION : policy === 'followers' ? fed.getFollowersUri(author.username) : fed.getActorUri(author.username);
  return new InteractionPolicy({ canQuote: new InteractionRule({ automaticApprovals: [approved] }) });
}

/** The URL of the stamp (QuoteAuthorization) we issue for an accepted quote of a local post (Mastodon's route). */
export function quoteAuthorizationUri(app: AppContext, quotedAuthor: Pick<AccountRow, 'username'>, quoteId: string): URL {
  return new URL(`/users/${quotedAuthor.username}/quote_authorizations/${quoteId}`, app.config.publicUrl);
}

/**
 * What a quoting Note carries, as Mastodon's NoteSerializer writes it: `quote` (FEP-044f) naming the quoted post, the
 * same under `quoteUrl`, `_misskey_quote` and `quoteUri` for older software (Fedify writes the three from `quoteUrl`),
 * and `quoteAuthorization`: the stamp, ours for an accepted quote of a local post, the remote author's as received.
 */
async function quoteValues(app: AppContext, s: StatusRow): Promise<{ quote?: URL; quoteUrl?: URL; quoteAuthorization?: URL }> {
  const q = await quoteOfStatus(app.db, s.id);
  if (!q?.quoted_status_id) return {};
  const quoted = await findStatus(app.db, q.quoted_status_id);
  const [quotedAuthor] = quoted ? await findAccountsByIds(app.db, [quoted.account_id]) : [];
  if (!quoted || !quotedAuthor || quoted.deleted_at) return {};
  const uri = new URL(statusUri(app.render, quoted, quotedAuthor.username));
  const stamp = stampUriOf(app, q, quotedAuthor);
  return { quote: uri, quoteUrl: uri, ...(stamp ? { quoteAuthorization: stamp } : {}) };
}

/** Mastodon's approval_uri_for: ours when the quoted author is local and the quote accepted, else the stored stamp. */
export function stampUriOf(app: AppContext, q: QuoteRow, quotedAuthor: AccountRow): URL | null {
  if (quotedAuthor.domain === null) return q.state === 'accepted' ? quoteAuthorizationUri(app, quotedAuthor, q.id) : null;
  return q.state === 'accepted' && q.approval_uri && URL.canParse(q.approval_uri) ? new URL(q.approval_uri) : null;
}

/** The stamp of an accepted quote of a local post (FEP-044f QuoteAuthorization), served at its URL. */
export function quoteAuthorizationOf(app: AppContext, q: QuoteRow, quoting: StatusRow, quoter: AccountRow, quoted: StatusRow, quotedAuthor: AccountRow): QuoteAuthorization {
  return new QuoteAuthorization({
    id: quoteAuthorizationUri(app, quotedAuthor, q.id),
    attribution: new URL(accountUri(app.render, quotedAuthor)),
    interactingObject: new URL(statusUri(app.render, quoting, quoter.username)),
    interactionTarget: new URL(statusUri(app.render, quoted, quotedAuthor.username)),
  });
}

/** A poll as Mastodon writes it in a Question: its options with their tallies, when it ends, how many voted. */
function questionFields(p: PollRow) {
  const options = p.options.map((name, i) => new Note({ name, replies: new Collection({ totalItems: p.cached_tallies[i] ?? 0 }) }));
  const end = p.expires_at ? instant(p.expires_at) : null;
  return {
    ...(p.multiple ? { inclusiveOptions: options } : { exclusiveOptions: options }),
    endTime: end,
    closed: end && pollExpired(p) ? end : null,
    voters: p.voters_count ?? 0,
  };
}

/** What replaces a deleted status on the wire: a Tombstone with its id, never the status with a flag. */
export function tombstoneOf(app: AppContext, author: AccountRow, s: StatusRow): Tombstone {
  return new Tombstone({ id: new URL(statusUri(app.render, s, author.username)) });
}
