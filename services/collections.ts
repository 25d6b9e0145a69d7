import type { AppContext } from '../context.ts';
import type { Queryable } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import { ApiError, ValidationFailed, forbidden, notFound, unprocessable } from '../errors.ts';
import { findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import { blockedEitherWay, blocksAccountOrDomain } from '../storage/blocks.ts';
import { removeNotification } from '../storage/notifications.ts';
import {
  COLLECTION_MAX_ITEMS, COLLECTIONS_PER_ACCOUNT, acceptedLocalMembers, deleteCollection, deleteItem, federatedItems, findCollection, findItem,
  insertCollection, insertItem, setItemActivityUri, setItemState, tagIdFor, updateCollection, type CollectionFields, type CollectionItemRow,
  type CollectionRow,
} from '../storage/collections.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { isLanguage } from './languages.ts';
import { notifyAccount } from './notifications.ts';
import { queueDelivery, type CollectionDelivery } from './deliveries.ts';

// Collections as Mastodon 4.6 has them (CreateCollectionService, UpdateCollectionService, AddAccountToCollectionService,
// DeleteCollectionItemService, RevokeCollectionItemService and the policies they ask). Each change of a local
// collection is sent to other servers (federation/collections.ts) through an outbox row of its transaction; an account
// of another server is asked first (a FeatureRequest: its item waits, `pending`, for the answer).

type Server = { config: { publicUrl: string } };

/** The list of a local account's collections its actor names (`featuredCollections`). */
export function collectionsListUri(s: Server, owner: Pick<AccountRow, 'username'>): string {
  return `${s.config.publicUrl}/users/${owner.username}/featured_collections`;
}

/** A collection's ActivityPub id: ours by our URL scheme, others' by their stored uri. */
export function collectionUri(s: Server, owner: Pick<AccountRow, 'username'>, c: Pick<CollectionRow, 'id' | 'uri'>): string {
  return c.uri ?? `${collectionsListUri(s, owner)}/${c.id}`;
}

/** Where the FeatureAuthorization a local account gave for an item is served. */
export function featureAuthorizationUri(s: Server, featured: Pick<AccountRow, 'username'>, itemId: string): string {
  return `${s.config.publicUrl}/users/${featured.username}/feature_authorizations/${itemId}`;
}

function queueCollectionDelivery(db: Queryable, d: Omit<CollectionDelivery, 'activity'>): Promise<OutboxRow> {
  return queueDelivery(db, { activity: 'Collection', ...d });
}

/** Queues the jobs of outbox rows written by a committed transaction (the outbox sweeper sends them otherwise). */
async function enqueueAll(ctx: AppContext, rows: OutboxRow[]): Promise<void> {
  for (const row of rows) await ctx.jobs.enqueue(row).catch(() => {});
}

/**
 * Puts an account in a locked collection: one of ours accepted at once and told (added_to_collection), with an Add
 * of the item for other servers; another server's pending, with a FeatureRequest to it. The outbox rows are pushed
 * to `out`.
 */
async function featureAccount(ctx: AppContext, tx: Queryable, owner: AccountRow, collection: Pick<CollectionRow, 'id' | 'uri'>, account: AccountRow, out: OutboxRow[], announceItem: boolean): Promise<CollectionItemRow | null | 'full'> {
  const local = account.domain === null;
  const item = await insertItem(tx, collection.id, account.id, local ? 'accepted' : 'pending');
  if (!item || item === 'full') return item;
  if (local) {
    await notifyAccount(ctx, tx, account.id, owner.id, 'added_to_collection', null, null, collection.id);
    if (announceItem) out.push(await queueCollectionDelivery(tx, { action: 'AddItem', accountId: owner.id, collectionId: collection.id, itemId: item.id }));
  } else {
    await setItemActivityUri(tx, item.id, `${collectionUri(ctx, owner, collection)}#feature_requests/${item.id}`);
    out.push(await queueCollectionDelivery(tx, { action: 'FeatureRequest', accountId: owner.id, collectionId: collection.id, itemId: item.id }));
  }
  return item;
}

/** Mastodon's limits for local collections. */
export const COLLECTION_NAME_MAX = 40;
export const COLLECTION_DESCRIPTION_MAX = 100;

/** What a client may send to make or change a collection (absent: unchanged on update). */
export interface CollectionInput {
  name?: string | undefined;
  description?: string | undefined;
  language?: string | undefined;
  sensitive?: boolean | undefined;
  discoverable?: boolean | undefined;
  tag_name?: string | undefined;
}

const TAG = /^[\p{L}\p{N}_\u00b7\u200c]{1,100}$/u;
const CANNOT_FEATURE = 'This account cannot be added to collections';

type Details = ConstructorParameters<typeof ValidationFailed>[0];

/** Checks the fields as Mastodon's Collection model does; every error at once, as a 422 with details. */
function validate(f: { name: string; description: string | null; language: string | null; sensitive: boolean | undefined; discoverable: boolean | undefined; tagName: string | null }, itemCount: number): void {
  const details: Details = {};
  const add = (field: string, error: string, description: string) => (details[field] ??= []).push({ error, description });
  if (f.name.trim() === '') add('name', 'ERR_BLANK', "can't be blank");
  else if ([...f.name].length > COLLECTION_NAME_MAX) add('name', 'ERR_TOO_LONG', `is too long (maximum is ${COLLECTION_NAME_MAX} characters)`);
  if (f.description !== null && [...f.description].length > COLLECTION_DESCRIPTION_MAX) add('description', 'ERR_TOO_LONG', `is too long (maximum is ${COLLECTION_DESCRIPTION_MAX} characters)`);
  if (f.language !== null && !isLanguage(f.language)) add('language', 'ERR_INVALID', 'is invalid');
  if (f.sensitive === undefined) add('sensitive', 'ERR_INCLUSION', 'is not included in the list');
  if (f.discoverable === undefined) add('discoverable', 'ERR_INCLUSION', 'is not included in the list');
  if (f.tagName !== null && (!TAG.test(f.tagName) || /^\d+$/.test(f.tagName))) add('tag_name', 'ERR_INVALID', 'is invalid');
  if (itemCount > COLLECTION_MAX_ITEMS) add('collection_items', 'ERR_TOO_MANY', `is too many (maximum is ${COLLECTION_MAX_ITEMS})`);
  if (Object.keys(details).length > 0) throw new ValidationFailed(details);
}

const blankToNull = (v: string | undefined | null): string | null => (v === undefined || v === null || v.trim() === '' ? null : v);
const tagName = (v: string | null): string | null => (v === null ? null : v.trim().replace(/^#/, '') || null);

/**
 * Whether owner may feature target (Mastodon's AccountPolicy#feature?): a discoverable, unsuspended account (of any
 * server: another server's is asked before it is shown) that neither blocks nor is blocked by the owner.
 */
async function featurable(db: Queryable, ownerId: string, target: AccountRow): Promise<boolean> {
  if (target.discoverable !== true || target.suspended_at) return false;
  return !(await blockedEitherWay(db, ownerId, target.id));
}

/** Accounts by id in the order given; a 404 when one is unknown (Mastodon's Account.find). */
async function accountsOrNotFound(db: Queryable, ids: string[]): Promise<AccountRow[]> {
  const unique = [...new Set(ids)];
  const found = new Map((await findAccountsByIds(db, unique)).map((a) => [a.id, a]));
  return unique.map((id) => {
    const a = found.get(id);
    if (!a) throw notFound();
    return a;
  });
}

/** Makes a collection, with its first accounts (each told through `added_to_collection`). Returns its id. */
export async function createCollection(ctx: AppContext, ownerId: string, input: CollectionInput, accountIds: string[]): Promise<string> {
  const fields = { name: input.name ?? '', description: blankToNull(input.description), language: blankToNull(input.language), sensitive: input.sensitive, discoverable: input.discoverable, tagName: tagName(blankToNull(input.tag_name)) };
  validate(fields, new Set(accountIds).size);
  const accounts = await accountsOrNotFound(ctx.db, accountIds);
  const [owner] = await accountsOrNotFound(ctx.db, [ownerId]);
  const out: OutboxRow[] = [];
  const created = await transaction(ctx.db, async (tx) => {
    for (const a of accounts) if (!(await featurable(tx, ownerId, a))) throw forbidden(CANNOT_FEATURE);
    const row: CollectionFields = {
      name: fields.name, description: fields.description, language: fields.language, sensitive: fields.sensitive!, discoverable: fields.discoverable!,
      tagId: fields.tagName ? await tagIdFor(tx, fields.tagName) : null,
    };
    const id = await insertCollection(tx, ownerId, row);
    if (!id) throw unprocessable(`Validation failed: You cannot have more than ${COLLECTIONS_PER_ACCOUNT} collections`);
    for (const a of accounts) await featureAccount(ctx, tx, owner!, { id, uri: null }, a, out, false);
    // The collection goes out with its accepted items; remote ones follow as their accounts accept.
    out.unshift(await queueCollectionDelivery(tx, { action: 'Add', accountId: ownerId, collectionId: id }));
    return id;
  });
  await enqueueAll(ctx, out);
  return created;
}

/** A collection its owner means to change: 404 when unknown, 403 for anyone else. Locked when in a transaction. */
async function ownCollection(db: Queryable, viewerId: string, id: string, lock = false): Promise<CollectionRow> {
  const c = await findCollection(db, id, lock);
  if (!c) throw notFound();
  if (c.account_id !== viewerId) throw forbidden();
  return c;
}

/** Changes a collection; its local members hear of a new name or description (`collection_update`, the latest only). */
export async function changeCollection(ctx: AppContext, viewerId: string, id: string, input: CollectionInput): Promise<void> {
  const current = await ownCollection(ctx.db, viewerId, id);
  const fields = {
    name: input.name ?? current.name,
    description: input.description === undefined ? current.description : blankToNull(input.description),
    language: input.language === undefined ? current.language : blankToNull(input.language),
    sensitive: input.sensitive ?? current.sensitive,
    discoverable: input.discoverable ?? current.discoverable,
    tagName: input.tag_name === undefined ? current.tag_name : tagName(blankToNull(input.tag_name)),
  };
  validate(fields, 0);
  const delivery = await transaction(ctx.db, async (tx) => {
    await ownCollection(tx, viewerId, id, true);
    const before = await updateCollection(tx, id, {
      name: fields.name, description: fields.description, language: fields.language, sensitive: fields.sensitive, discoverable: fields.discoverable,
      tagId: fields.tagName ? await tagIdFor(tx, fields.tagName) : null,
    });
    if (!before) return null;
    if (before.name !== fields.name || before.description !== fields.description) {
      for (const memberId of await acceptedLocalMembers(tx, id)) {
        await removeNotification(tx, memberId, viewerId, 'collection_update', null, id);
        await notifyAccount(ctx, tx, memberId, viewerId, 'collection_update', null, null, id);
      }
    }
    return queueCollectionDelivery(tx, { action: 'Update', accountId: viewerId, collectionId: id });
  });
  if (delivery) await enqueueAll(ctx, [delivery]);
}

export async function removeCollection(ctx: AppContext, viewerId: string, id: string): Promise<void> {
  const [owner] = await accountsOrNotFound(ctx.db, [viewerId]);
  const delivery = await transaction(ctx.db, async (tx) => {
    const c = await ownCollection(tx, viewerId, id, true);
    // Gone once deleted: its uri and its remote members' ids travel with the Remove.
    const remote = (await federatedItems(tx, id)).filter((i) => i.account_domain !== null).map((i) => i.account_id);
    await deleteCollection(tx, id);
    return queueCollectionDelivery(tx, { action: 'Remove', accountId: viewerId, collectionId: id, collectionUri: collectionUri(ctx, owner!, c), accountIds: remote });
  });
  await enqueueAll(ctx, [delivery]);
}

/**
 * Adds an account to one's collection: one of ours accepted at once and told; another server's pending until it
 * answers the FeatureRequest sent to it.
 */
export async function addToCollection(ctx: AppContext, viewerId: string, collectionId: string, accountId: string): Promise<CollectionItemRow> {
  await ownCollection(ctx.db, viewerId, collectionId);
  const [owner] = await accountsOrNotFound(ctx.db, [viewerId]);
  const [account] = await accountsOrNotFound(ctx.db, [accountId]);
  const out: OutboxRow[] = [];
  const added = await transaction(ctx.db, async (tx) => {
    const c = await ownCollection(tx, viewerId, collectionId, true);
    if (!(await featurable(tx, viewerId, account!))) throw forbidden(CANNOT_FEATURE);
    const item = await featureAccount(ctx, tx, owner!, c, account!, out, true);
    if (item === 'full') throw new ValidationFailed({ collection_items: [{ error: 'ERR_TOO_MANY', description: `is too many (maximum is ${COLLECTION_MAX_ITEMS})` }] });
    if (!item) throw new ValidationFailed({ account_id: [{ error: 'ERR_TAKEN', description: 'has already been taken' }] });
    return (await findItem(tx, collectionId, item.id))!;
  });
  await enqueueAll(ctx, out);
  return added;
}

/** Removes an item from one's collection; the account's `added_to_collection` goes with it. */
export async function removeFromCollection(ctx: AppContext, viewerId: string, collectionId: string, itemId: string): Promise<void> {
  const [owner] = await accountsOrNotFound(ctx.db, [viewerId]);
  const delivery = await transaction(ctx.db, async (tx) => {
    const c = await ownCollection(tx, viewerId, collectionId, true);
    const item = await deleteItem(tx, collectionId, itemId);
    if (!item) throw notFound();
    await removeNotification(tx, item.account_id, viewerId, 'added_to_collection', null, collectionId);
    if (item.state !== 'accepted') return null; // never shown to other servers
    const uri = collectionUri(ctx, owner!, c);
    return queueCollectionDelivery(tx, { action: 'RemoveItem', accountId: viewerId, collectionId, collectionUri: uri, itemUri: `${uri}/items/${item.id}`, accountIds: [item.account_id] });
  });
  if (delivery) await enqueueAll(ctx, [delivery]);
}

/**
 * The featured account takes itself out of a collection (Mastodon's revoke): the item stays, as `revoked`. Of one of
 * our collections, other servers hear a Remove of the item; of another server's, its owner hears that our
 * FeatureAuthorization is withdrawn (a Delete of it).
 */
export async function revokeItem(ctx: AppContext, viewerId: string, collectionId: string, itemId: string): Promise<void> {
  const delivery = await transaction(ctx.db, async (tx) => {
    const c = await findCollection(tx, collectionId, true);
    if (!c) throw notFound();
    const item = await findItem(tx, collectionId, itemId);
    if (!item) throw notFound();
    if (item.account_id !== viewerId) throw forbidden();
    const wasShown = item.state === 'accepted';
    await setItemState(tx, item.id, 'revoked');
    if (!wasShown) return null;
    const [owner] = await findAccountsByIds(tx, [c.account_id]);
    if (!owner) return null;
    if (c.local) {
      const uri = collectionUri(ctx, owner, c);
      return queueCollectionDelivery(tx, { action: 'RemoveItem', accountId: owner.id, collectionId, collectionUri: uri, itemUri: `${uri}/items/${item.id}` });
    }
    return queueCollectionDelivery(tx, { action: 'DeleteAuthorization', accountId: viewerId, collectionId, collectionUri: collectionUri(ctx, owner, c), requesterId: owner.id, itemId: item.id });
  });
  if (delivery) await enqueueAll(ctx, [delivery]);
}

/** A collection the viewer may see: 404 when unknown, 403 when its owner blocks the viewer or their server (Mastodon's CollectionPolicy#show?). */
export async function viewableCollection(ctx: AppContext, viewerId: string | null, id: string): Promise<CollectionRow> {
  const c = await findCollection(ctx.db, id);
  if (!c) throw notFound();
  if (viewerId && viewerId !== c.account_id && (await blocksAccountOrDomain(ctx.db, c.account_id, viewerId))) throw new ApiError(403, 'This action is not allowed');
  return c;
}

/** Whether the viewer may list an account's collections (Mastodon's AccountPolicy#index_collections?). */
export async function mayListCollections(ctx: AppContext, viewerId: string | null, ownerId: string): Promise<boolean> {
  return !viewerId || viewerId === ownerId || !(await blocksAccountOrDomain(ctx.db, ownerId, viewerId));
}
