import { Collection, Hashtag, Mention, Note, Question, type Object as APObject } from '@fedify/vocab';
import type { Context } from '@fedify/fedify';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { findAccountByUri, type AccountRow } from '../storage/accounts.ts';
import { findStatus, findStatusByUri, type StatusRow, type Visibility } from '../storage/statuses.ts';
import { isId } from '../storage/ids.ts';
import { receiveRemoteStatus, type RemotePoll } from '../services/statuses.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { isStatusObject, mediaOf, rawObjectOf, statusTextOf, statusUrlOf, type StatusObject } from './incoming-objects.ts';
import { accountForActorUri } from './remote-accounts.ts';
import { fetchById } from './fetch-object.ts';
import { boundedItems } from './inbound-limits.ts';
import { receiveRemoteEmojis } from './emojis.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { queueStampRetry, quotedUriOf, quotePolicyOfNote, verifyQuote } from './quotes.ts';
import { setRemoteQuotePolicy } from '../storage/quotes.ts';

/**
 * Statuses of other servers as we take them: objects pushed to an inbox, or fetched (signed) by their id when a reply,
 * a boost or a search names one we have not seen. What an object says is read by federation/incoming-objects.ts.
 */
type Fed = Context<AppContext>;

/**
 * The three ways servers write "public": the full IRI, the compact `as:Public` (JSON-LD expands it to the IRI), and
 * the bare `Public`, which JSON-LD reads as a relative IRI and resolves against the document it came in: a URL of
 * the sender's own origin whose last segment is `Public`. (Only the sender can address its own documents so.)
 */
const PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
export function isPublic(u: URL | null | undefined, documentId: URL | null): boolean {
  if (!u) return false;
  if (u.href === PUBLIC || u.href === 'as:Public' || u.href === 'Public') return true;
  return documentId !== null && u.origin === documentId.origin && u.pathname.endsWith('/Public') && u.search === '' && u.hash === '';
}

/** A local account named by one of our actor URIs. */
export async function localActor(fed: Fed, uri: URL | null): Promise<AccountRow | null> {
  if (!uri) return null;
  const parsed = fed.parseUri(uri);
  if (parsed?.type !== 'actor') return null;
  return publishedLocalAccount(fed.data, parsed.identifier);
}

/** A status named by its ActivityPub id: ours by our URL scheme, others' by their stored uri. */
export async function statusByUri(fed: Fed, uri: URL | null): Promise<StatusRow | null> {
  if (!uri) return null;
  const parsed = fed.parseUri(uri);
  if (parsed?.type === 'object' && (parsed.class === Note || parsed.class === Question)) {
    const id = parsed.values.id;
    const status = id && isId(id) ? await findStatus(fed.data.db, id) : null;
    // The URL names its author too: a status is found only under its own author's name.
    const author = status ? await publishedLocalAccount(fed.data, parsed.values.identifier ?? '') : null;
    return status && author && author.id === status.account_id ? status : null;
  }
  return findStatusByUri(fed.data.db, uri.href);
}

/**
 * A Question's poll: its options (`oneOf`, or `anyOf` for a multiple-choice poll) with their counts
 * (`replies.totalItems`), its end (`endTime`, or `closed`) and voters (`votersCount`). Null when it has no options.
 */
export async function remotePollOf(q: Question): Promise<RemotePoll | null> {
  const multiple = q.inclusiveOptionIds.length > 0 || (await boundedItems((o) => q.getInclusiveOptions(o), 1)).length > 0;
  const options: string[] = [];
  const tallies: number[] = [];
  // Options are read inlined only (one named by id ends the list: boundedItems).
  for (const option of await boundedItems((o) => (multiple ? q.getInclusiveOptions(o) : q.getExclusiveOptions(o)), 64)) {
    if (options.length >= 32) break;
    if (!(option instanceof Note) || !option.name) continue;
    const name = String(option.name).slice(0, 200);
    if (options.includes(name)) continue;
    // Inlined counts only: an option whose replies are named by id alone counts 0 (nothing is fetched for it).
    const replies = option.repliesId ? null : await option.getReplies().catch(() => null);
    options.push(name);
    tallies.push(replies instanceof Collection && typeof replies.totalItems === 'number' ? Math.max(0, Math.min(replies.totalItems, 2 ** 31 - 1)) : 0);
  }
  if (options.length === 0) return null;
  const closed = q.closed;
  const end = q.endTime ?? (closed && typeof closed === 'object' ? closed : null);
  return {
    options, tallies, multiple,
    votersCount: typeof q.voters === 'number' ? Math.max(0, Math.min(q.voters, 2 ** 31 - 1)) : null,
    expiresAt: end ? new Date(end.epochMilliseconds) : closed === true ? new Date() : null,
  };
}

/** How a Note is addressed, in Mastodon's terms. */
export function visibilityOf(note: StatusObject, author: AccountRow): Visibility {
  const to = note.toIds;
  const cc = note.ccIds;
  const pub = (u: URL) => isPublic(u, note.id);
  if (to.some(pub)) return 'public';
  if (cc.some(pub)) return 'unlisted';
  const followers = author.followers_url;
  if (followers && [...to, ...cc].some((u) => u.href === followers)) return 'private';
  return 'direct';
}

/**
 * Stores a remote status once (a repeated Create is a no-op), with its mentions, tags and thread. What it says is read
 * by federation/incoming-objects.ts (Note and Question as they are, Article, Page, Video, Event, Image and Audio
 * converted as Mastodon converts them).
 */
export async function receiveNote(fed: Fed, note: StatusObject, author: AccountRow, depth = 0, loader?: DocumentLoader): Promise<StatusRow | null> {
  const app = fed.data;
  const known = await findStatusByUri(app.db, note.id!.href);
  if (known) return known;
  const mentioned: AccountRow[] = [];
  const tags: string[] = [];
  // Each tag may cost a query: a Note with thousands of them is cut short. Tags and attachments named by id are
  // fetched a few at most, and one that cannot be had ends the list rather than failing the post (boundedItems).
  for (const tag of await boundedItems((o) => note.getTags(o), 100, loader ?? fed.documentLoader)) {
    if (tag instanceof Mention && tag.href) {
      const local = await localActor(fed, tag.href);
      const account = local ?? (await findAccountByUri(app.db, tag.href.href));
      if (account && !mentioned.some((a) => a.id === account.id)) mentioned.push(account);
    } else if (tag instanceof Hashtag && tag.name) {
      const name = String(tag.name).replace(/^#/, '');
      if (/^[\p{L}\p{N}_]{1,100}$/u.test(name)) tags.push(name);
    }
    if (mentioned.length >= 50 || tags.length >= 50) break;
  }
  const raw = rawObjectOf(note);
  // A server whose media is rejected has its attachments kept as links only (`unknown`), never shown inline.
  const rejectMedia = await domainPolicy(app).rejectsMedia(author.domain);
  const media = await mediaOf(note, { raw, rejectMedia, loader: loader ?? fed.documentLoader, maxVideoBytes: app.config.maxVideoBytes });
  const text = statusTextOf(note, raw);
  // The post replied to joins the thread too: fetched when unknown, one level up (its own parent is not followed).
  const parent = (await statusByUri(fed, note.replyTargetId)) ?? (depth < 1 ? await fetchNote(fed, note.replyTargetId, { depth: depth + 1, loader }) : null);
  // The post quoted (FEP-044f `quote`, or Misskey's and Fedibird's terms) is fetched when unknown, one level deep as a
  // parent is; what it takes to count as approved is verifyQuote's. Only Notes and Questions quote.
  const quoting = note instanceof Note || note instanceof Question ? note : null;
  const quotedUri = quoting ? quotedUriOf(quoting) : null;
  let quote = null;
  if (quoting && quotedUri && quotedUri.href !== note.id!.href) {
    const quoted = (await statusByUri(fed, quotedUri)) ?? (depth < 1 ? await fetchNote(fed, quotedUri, { depth: depth + 1, loader }) : null);
    if (quoted && !quoted.deleted_at && !quoted.reblog_of_id) quote = { quoted, ...(await verifyQuote(fed, quoting, author, quoted, loader)) };
  }
  // Its custom emoji first: the status is rendered with them as soon as it is stored.
  await receiveRemoteEmojis(app, note, author.domain, loader ?? fed.documentLoader);
  const id = await receiveRemoteStatus(app.actors.deps, {
    accountId: author.id,
    uri: note.id!.href,
    url: statusUrlOf(note),
    content: text.content,
    spoilerText: text.spoilerText,
    sensitive: note.sensitive ?? false,
    visibility: visibilityOf(note, author),
    language: text.language,
    parent: parent && !parent.deleted_at ? parent : null,
    mentioned,
    tags,
    media,
    createdAt: note.published ? new Date(note.published.epochMilliseconds) : null,
    poll: note instanceof Question ? await remotePollOf(note) : null,
    quote,
  });
  if (id) {
    // Who may quote it (FEP-044f `interactionPolicy.canQuote`), and a stamp to try again that could not be had now.
    if (await setRemoteQuotePolicy(app.db, id, quotePolicyOfNote(note, author))) await app.versions.bump({ statuses: [id] });
    if (quote?.retryStamp) await queueStampRetry(app, id, quote.retryStamp);
  }
  return id ? findStatus(app.db, id) : findStatusByUri(app.db, note.id!.href);
}

/**
 * A Note of another server fetched by its id (Fedify checks it comes from its own origin) and stored with its
 * author. The GET is signed by `loader` (the acting local account's key), else by the context's own loader (in an
 * inbox, the recipient's or the instance actor's), so servers that refuse unsigned fetches answer it.
 */
export function fetchNote(fed: Fed, id: URL | null, options: { depth?: number; loader?: DocumentLoader } = {}): Promise<StatusRow | null> {
  if (!id || fed.parseUri(id) !== null) return Promise.resolve(null);
  // A post boosted by many at once is fetched once by this process, not once per Announce (fetches made as a
  // particular person are their own: what they may see differs).
  if (options.loader) return fetchNoteNow(fed, id, options);
  const key = `${id.href} ${options.depth ?? 0}`;
  let pending = fetching.get(key);
  if (!pending) {
    pending = fetchNoteNow(fed, id, options).finally(() => fetching.delete(key));
    fetching.set(key, pending);
  }
  return pending;
}

const fetching = new Map<string, Promise<StatusRow | null>>();

/**
 * Whatever a remote id names (a post, an activity, anything), fetched signed from its own origin by the context's
 * loader, once per process while the fetch is under way (many Announces of one object at once cost one GET). Null
 * when it cannot be had. Only the fetch is shared: what is done with it is the caller's.
 */
export function fetchObjectOnce(fed: Fed, id: URL): Promise<APObject | null> {
  if (fed.parseUri(id) !== null) return Promise.resolve(null);
  let pending = objectFetches.get(id.href);
  if (!pending) {
    pending = fetchById(fed, id.href, fed.documentLoader).catch(() => null).finally(() => objectFetches.delete(id.href));
    objectFetches.set(id.href, pending);
  }
  return pending;
}

const objectFetches = new Map<string, Promise<APObject | null>>();

async function fetchNoteNow(fed: Fed, id: URL, options: { depth?: number; loader?: DocumentLoader }): Promise<StatusRow | null> {
  try {
    const note = await fetchById(fed, id.href, options.loader ?? fed.documentLoader);
    return isStatusObject(note) ? await storeFetchedNote(fed, note, options) : null;
  } catch {
    return null; // unreachable or not a note: the boost or reply goes without it
  }
}

/**
 * A status object fetched from its server (or vouched for by it), stored with its author (fetched too when unknown)
 * unless either is refused. Its author is the first `attributedTo` (PeerTube names the account, then the channel).
 */
export async function storeFetchedNote(fed: Fed, note: StatusObject, options: { depth?: number; loader?: DocumentLoader } = {}): Promise<StatusRow | null> {
  if (!note.id || !note.attributionId || note.id.origin !== note.attributionId.origin) return null;
  const author = await accountForActorUri(fed.data, fed, note.attributionId.href, options.loader);
  if (!author || author.domain === null || author.suspended_at) return null;
  return receiveNote(fed, note, author, options.depth ?? 0, options.loader);
}
