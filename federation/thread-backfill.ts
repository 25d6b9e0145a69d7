import { CollectionPage, type Collection, type Object as APObject } from '@fedify/vocab';
import type { Context } from '@fedify/fedify';
import type { DocumentLoader, RemoteDocument } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { findStatusByUri, type StatusRow } from '../storage/statuses.ts';
import { attachToParent, claimReplyFetch, topmostAncestor } from '../storage/thread-backfill.ts';
import { shouldFetchReplies } from '../services/thread-backfill.ts';
import { fetchById } from './fetch-object.ts';
import { signedLoader } from './instance-actor.ts';
import { fetchNote, statusByUri } from './remote-statuses.ts';

/**
 * A remote thread's missing posts fetched (services/thread-backfill.ts says when): the parents its top post names
 * but we lack, one level at a time as Mastodon's ThreadResolveWorker, and the replies below the status opened, read
 * from each post's `replies` collection and from theirs in turn, as Mastodon's ActivityPub::FetchAllRepliesWorker.
 *
 * Every fetch is a GET signed by the instance actor (as Mastodon's), through Fedify's loader, which refuses private
 * addresses unless ALLOW_PRIVATE_ADDRESSES; each gives up after FETCH_TIMEOUT_MS, and suspended servers are not
 * asked (fetchById). Posts are stored through the one conversion of remote posts (fetchNote). One run takes at most
 * FETCH_REPLIES_MAX_GLOBAL posts and FETCH_REPLIES_MAX_PAGES collection pages in all, at most
 * FETCH_REPLIES_MAX_SINGLE replies of one post, and at most RUN_LIMIT_MS. A collection's pages must come from its
 * post's own server (as Mastodon's), and a page seen before (a `next` that loops back) ends it.
 */
type Fed = Context<AppContext>;

/** As many parents as a thread shows (storage/statuses.ts `threadIds`): fetching more would show nothing more. */
export const ANCESTORS_LIMIT = 40;

/**
 * The longest one run goes on. Mastodon spreads the fetches over many jobs; here one job makes them one after the
 * other, and a server answering each just inside FETCH_TIMEOUT_MS must not hold a pull slot for hours.
 */
export const RUN_LIMIT_MS = 5 * 60_000;

/** What one run may still spend, in all: posts, pages, and time (`until`, a Date.now() value). */
interface Budget { statuses: number; pages: number; until: number }
const spent = (budget: Budget) => budget.statuses <= 0 || Date.now() >= budget.until;

/**
 * Fetches what the thread of `status` lacks; `found` is told of each post new to us as it is stored (the refresh's
 * `result_count`). Returns how many were new. Fetch failures are skipped, never thrown: a thread gets what could be
 * had.
 */
export async function backfillThread(fed: Fed, status: StatusRow, found: (count: number) => Promise<void>): Promise<number> {
  const settings = fed.data.config.fetchReplies;
  const budget: Budget = { statuses: settings.maxGlobal, pages: settings.maxPages, until: Date.now() + RUN_LIMIT_MS };
  // A post just stored is read again at once for its replies: the loader keeps the last few documents it fetched.
  const loader = rememberingLoader(await signedLoader(fed, null), 4);
  let count = 0;
  const onFound = async () => {
    count++;
    await found(1);
  };
  await fetchMissingAncestors(fed, status, loader, budget, onFound);
  if (status.uri !== null) {
    const root = await fetchPost(fed, status.uri, loader);
    if (root) await fetchReplies(fed, root, loader, budget, new Set([status.uri]), onFound);
  }
  return count;
}

/**
 * Joins the thread's top post to the parent it names, fetching that parent when it is not here, then that one's, up
 * to ANCESTORS_LIMIT levels. A parent that cannot be had (gone, refused, not a post) ends it.
 */
async function fetchMissingAncestors(fed: Fed, status: StatusRow, loader: DocumentLoader, budget: Budget, onFound: () => Promise<void>): Promise<void> {
  const db = fed.data.db;
  for (let level = 0; level < ANCESTORS_LIMIT && !spent(budget); level++) {
    const top = await topmostAncestor(db, status.id, ANCESTORS_LIMIT);
    if (!top || top.in_reply_to_id !== null || top.uri === null) return;
    const parentUri = (await fetchPost(fed, top.uri, loader))?.replyTargetId;
    if (!parentUri || parentUri.href === top.uri) return;
    let parent = await statusByUri(fed, parentUri);
    if (!parent) {
      budget.statuses--;
      // One level only (depth 1): this loop goes on up, counting each post it stores.
      parent = await fetchNote(fed, parentUri, { loader, depth: 1 });
      if (!parent) return;
      await onFound();
    }
    if (parent.deleted_at || !(await attachToParent(db, top.id, parent.id))) return;
    await fed.data.versions.bump({ statuses: [top.id, parent.id] });
  }
}

/**
 * The replies of one post (its document in hand), each stored when new, and then each one's own replies, depth
 * first. A reply already here is read again only when its own replies may be fetched (not in their cooldown).
 */
async function fetchReplies(fed: Fed, post: APObject, loader: DocumentLoader, budget: Budget, seen: Set<string>, onFound: () => Promise<void>): Promise<void> {
  const app = fed.data;
  const settings = app.config.fetchReplies;
  for (const uri of await replyUrisOf(post, loader, budget, settings.maxSingle)) {
    if (spent(budget)) return;
    if (seen.has(uri)) continue;
    seen.add(uri);
    const url = new URL(uri);
    // Ours are all here already.
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || fed.parseUri(url) !== null) continue;
    const known = await findStatusByUri(app.db, uri);
    if (known) {
      // Nothing more to read of it once the pages are spent.
      if (budget.pages <= 0 || !shouldFetchReplies(app.config, known) || !(await claimReplyFetch(app.db, known.id, settings.cooldownMinutes))) continue;
      budget.statuses--;
    } else {
      budget.statuses--;
      const stored = await fetchNote(fed, url, { loader });
      if (!stored) continue;
      await onFound();
      await claimReplyFetch(app.db, stored.id, settings.cooldownMinutes);
    }
    // Its own replies, while pages are left (the replies found on the pages read are stored all the same, as
    // Mastodon queues them).
    const reply = budget.pages > 0 ? await fetchPost(fed, uri, loader) : null;
    if (reply) await fetchReplies(fed, reply, loader, budget, seen, onFound);
  }
}

/**
 * The ids of a post's replies, from its `replies` collection (a Collection or OrderedCollection, inlined or by id):
 * its `first` page, then each `next`, reading `items` or `orderedItems`, inlined items by their id. Pages come only
 * from the post's own server; a page seen before ends the walk, as does the budget of pages.
 */
async function replyUrisOf(post: APObject, loader: DocumentLoader, budget: Budget, max: number): Promise<string[]> {
  const origin = post.id?.origin;
  if (!origin || budget.pages <= 0) return [];
  const pages: DocumentLoader = (url, options) =>
    new URL(url).origin === origin ? loader(url, options) : Promise.reject(new Error(`${url} is not on ${origin}`));
  const collection = await post.getReplies({ documentLoader: pages }).catch(() => null);
  if (!collection) return [];
  const first = await collection.getFirst({ documentLoader: pages }).catch(() => null);
  if (!first && collection.firstId) return [];
  let page: Collection | null = first ?? collection;
  const seenPages = new Set<string>(collection.id ? [collection.id.href] : []);
  const uris: string[] = [];
  while (page && budget.pages > 0 && Date.now() < budget.until) {
    if (page !== collection && page.id) {
      if (seenPages.has(page.id.href)) break;
      seenPages.add(page.id.href);
    }
    budget.pages--;
    for (const id of page.itemIds) {
      if (uris.length >= max) return uris;
      uris.push(id.href);
    }
    if (!(page instanceof CollectionPage) || budget.pages <= 0) break;
    const next = page.nextId;
    if (next && seenPages.has(next.href)) break; // a `next` seen before: the collection loops
    page = await page.getNext({ documentLoader: pages }).catch(() => null);
  }
  return uris;
}

/** A post's document, fetched signed (or from the loader's last few), or null when it cannot be had. */
function fetchPost(fed: Fed, uri: string, loader: DocumentLoader): Promise<APObject | null> {
  return fetchById(fed, uri, loader).catch(() => null);
}

/** A loader that keeps the last `size` documents it fetched, so a post stored and then read for its replies is fetched once. */
function rememberingLoader(loader: DocumentLoader, size: number): DocumentLoader {
  const recent = new Map<string, RemoteDocument>();
  return async (url, options) => {
    const kept = recent.get(url);
    if (kept) return kept;
    const document = await loader(url, options);
    recent.set(url, document);
    if (recent.size > size) recent.delete(recent.keys().next().value!);
    return document;
  };
}
