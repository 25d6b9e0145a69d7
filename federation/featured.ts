import { Add, Collection, Note, Remove, type Actor } from '@fedify/vocab';
import type { Context, InboxContext, RequestContext } from '@fedify/fedify';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { findStatusRecord } from '../storage/statuses.ts';
import * as marks from '../storage/status-marks.ts';
import { transaction } from '../storage/db.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { canSee } from '../services/visibility.ts';
import { accountUri, statusUri } from '../services/uris.ts';
import { MAX_PINS } from '../services/status-marks.ts';
import { noteOf } from './objects.ts';
import { signedLoader } from './instance-actor.ts';
import { fetchById } from './fetch-object.ts';
import { fetchNote, receiveNote, statusByUri } from './remote-statuses.ts';
import { isStatusObject } from './incoming-objects.ts';
import { accountForActorUri } from './remote-accounts.ts';

// Pins across servers, as Mastodon does them: a local account's pins are its actor's `featured` collection (Notes,
// newest pin first) and go to its followers' servers as Add and Remove; a remote account's featured collection is
// read when its actor is stored, and its Add and Remove activities naming that collection are taken.

/** How many items of a remote featured collection are read (each may cost a fetch), and how many pins one may hold. */
const REMOTE_FEATURED_ITEMS = 5;
const REMOTE_PINS_MAX = 20;

/** The featured collection of a local account: its pinned public and unlisted statuses as Notes. */
export async function featuredItems(fed: RequestContext<AppContext>, identifier: string): Promise<{ items: Note[] } | null> {
  const account = await publishedLocalAccount(fed.data, identifier);
  if (!account) return null;
  const items: Note[] = [];
  for (const id of await marks.pinnedIdsOf(fed.data.db, account.id, MAX_PINS)) {
    const status = await findStatusRecord(fed.data.db, id);
    if (status && !status.deleted_at && (await canSee(fed.data.db, null, status))) items.push((await noteOf(fed, account, status)).note);
  }
  return { items };
}

/** A pin or unpin of a local account as the Add or Remove its followers' servers are sent (Mastodon's AddSerializer). */
export function pinActivityOf(fed: Context<AppContext>, account: AccountRow, status: { id: string; uri: string | null }, kind: 'AddPin' | 'RemovePin'): Add | Remove {
  const actor = new URL(accountUri(fed.data.render, account));
  const values = {
    id: new URL(`${actor.href}#${kind === 'AddPin' ? 'pins' : 'unpins'}/${status.id}/${Date.now()}`),
    actor,
    object: new URL(statusUri(fed.data.render, status, account.username)),
    target: fed.getFeaturedUri(account.username),
  };
  return kind === 'AddPin' ? new Add(values) : new Remove(values);
}

/**
 * After a remote actor is stored: its featured collection's place is kept, and the collection is read in the
 * background (at most once a minute per account) so that its pins show as the account's pinned statuses.
 */
export async function afterRemoteActorStored(app: AppContext, account: AccountRow, actor: Actor): Promise<void> {
  const featured = (actor as { featuredId?: URL | null }).featuredId ?? null;
  const url = featured && account.uri && featured.origin === new URL(account.uri).origin ? featured.href : null;
  await marks.setFeaturedCollectionUrl(app.db, account.id, url);
  if (!url) return;
  void (async () => {
    try {
      if ((await app.redis.set(`${app.config.redisPrefix}featured-sync:${account.id}`, '1', 'PX', 60_000, 'NX')) !== 'OK') return;
      await syncFeatured(app, account, url);
    } catch {
      // a collection that cannot be read leaves the pins as they were
    }
  })();
}

/** Reads a remote account's featured collection (its first few Notes) and makes them the account's pins. */
export async function syncFeatured(app: AppContext, account: AccountRow, url: string): Promise<void> {
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  const loader = await signedLoader(fed);
  const collection = await fetchById(fed, url, loader);
  if (!(collection instanceof Collection)) return;
  const origin = new URL(url).origin;
  const ids: string[] = [];
  let seen = 0;
  // Items inlined from the collection's own server are taken as they are; others are fetched by id (Fedify).
  const page = collection.itemIds.length === 0 && collection.firstId ? await collection.getFirst({ documentLoader: loader, suppressError: true }) : collection;
  if (!page) return;
  for await (const item of page.getItems({ documentLoader: loader, suppressError: true })) {
    if (++seen > REMOTE_FEATURED_ITEMS) break;
    if (!isStatusObject(item) || !item.id || item.id.origin !== origin || item.attributionId?.href !== account.uri) continue;
    const status = await statusByUri(fed, item.id) ?? (await receiveNote(fed, item, account, 0, loader));
    if (status && status.account_id === account.id && !status.reblog_of_id && !ids.includes(status.id)) ids.push(status.id);
  }
  await transaction(app.db, (tx) => marks.replacePins(tx, account.id, ids));
}

type Fed = InboxContext<AppContext>;

/** The sender of an Add or Remove naming its own featured collection, and the status named, or null. */
async function featuredChange(fed: Fed, activity: Add | Remove, fetchUnknown: boolean) {
  if (!activity.actorId || !activity.targetId || !activity.objectId) return null;
  const account = await accountForActorUri(fed.data, fed, activity.actorId.href);
  if (!account || account.domain === null || account.suspended_at) return null;
  const featured = await marks.featuredCollectionUrl(fed.data.db, account.id);
  if (!featured || featured !== activity.targetId.href) return null; // featured tags and other collections: not ours to take
  const status = (await statusByUri(fed, activity.objectId)) ?? (fetchUnknown ? await fetchNote(fed, activity.objectId) : null);
  return status && status.account_id === account.id && !status.reblog_of_id ? { account, status } : null;
}

export async function onAdd(fed: Fed, add: Add): Promise<void> {
  const found = await featuredChange(fed, add, true);
  if (!found) return;
  await transaction(fed.data.db, async (tx) => {
    await marks.lockAccount(tx, found.account.id);
    if ((await marks.countPins(tx, found.account.id)) < REMOTE_PINS_MAX) await marks.insertPin(tx, found.account.id, found.status.id);
  });
}

export async function onRemove(fed: Fed, remove: Remove): Promise<void> {
  const found = await featuredChange(fed, remove, false);
  if (found) await marks.deletePin(fed.data.db, found.account.id, found.status.id);
}
