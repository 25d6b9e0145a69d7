import type { Context } from '@fedify/fedify';
import { signRequest, verifyRequest } from '@fedify/fedify';
import { validatePublicUrl } from '@fedify/vocab-runtime';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import type { Queryable } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import { findAccountById, findAccountByUsername, findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import { blockedEitherWay, blocksAccountOrDomain } from '../storage/blocks.ts';
import { remoteFollowersBatch } from '../storage/follows.ts';
import { removeNotification } from '../storage/notifications.ts';
import {
  COLLECTION_MAX_ITEMS, acceptRemoteItem, acceptedLocalMembers, answerItem, deleteRemoteCollection, deleteRemoteItem, federatedItems,
  findCollection, findCollectionByUri, findFederatedItem, findItemByActivityUri, findItemByApprovalUri, setItemState, publishedCollectionsOf, replaceRemoteItems, tagIdFor,
  upsertRemoteCollection, type CollectionItemState, type CollectionRow, type FederatedItemRow,
} from '../storage/collections.ts';
import { queueDelivery, type CollectionDelivery } from '../services/deliveries.ts';
import { collectionUri, collectionsListUri, featureAuthorizationUri } from '../services/collections.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import { notifyAccount } from '../services/notifications.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { accountUri } from '../services/uris.ts';
import { accountForActorUri } from './remote-accounts.ts';
import { signedLoader } from './instance-actor.ts';
import { FETCH_TIMEOUT_MS } from './fetch-object.ts';
import { signedRequester } from './signed-requests.ts';
import { makeStorable } from '../text/storable.ts';

// Collections across servers, as Mastodon 4.6 federates them. A collection is a `FeaturedCollection` (its accepted
// items inlined as `FeaturedItem`s naming the featured actor as `featuredObject`), listed by the owner's
// `featuredCollections` collection. The owner's server sends Add (a new collection, to that list; a new item, to the
// collection), Update (changed fields) and Remove (a collection from the list, an item from the collection) to its
// followers' servers and the featured accounts'. An account of another server is asked first: a `FeatureRequest`
// (object: the account, instrument: the collection) answered by Accept, whose `result` is a `FeatureAuthorization`
// the featured account's server serves (interactingObject: the collection, interactionTarget: the account), or
// Reject; items of other servers' collections are only taken with such an authorization (the pattern of FEP-044f's
// quote approvals). Fedify's vocabulary has none of these types (it refuses an activity carrying them), so these
// activities are read and written here as JSON: received ones before Fedify sees them (federation/mount.ts), with
// the HTTP signature checked here, and sent ones signed here, from the deliver job (federation/outbound.ts).

const AS = 'https://www.w3.org/ns/activitystreams';
const TOOT = 'http://joinmastodon.org/ns#';
const PUBLIC = `${AS}#Public`;
const AP_TYPE = 'application/activity+json';
/** The terms our documents use beyond ActivityStreams (Mastodon's `toot` namespace; GoToSocial's for the approval). */
export const COLLECTIONS_CONTEXT = [AS, {
  toot: TOOT,
  gts: 'https://gotosocial.org/ns#',
  sensitive: 'as:sensitive',
  Hashtag: 'as:Hashtag',
  discoverable: 'toot:discoverable',
  FeaturedCollection: 'toot:FeaturedCollection',
  FeaturedItem: 'toot:FeaturedItem',
  FeatureRequest: 'toot:FeatureRequest',
  FeatureAuthorization: 'toot:FeatureAuthorization',
  featuredCollections: { '@id': 'toot:featuredCollections', '@type': '@id' },
  featuredObject: { '@id': 'toot:featuredObject', '@type': '@id' },
  featuredObjectType: 'toot:featuredObjectType',
  featureAuthorization: { '@id': 'toot:featureAuthorization', '@type': '@id' },
  topic: 'toot:topic',
  interactingObject: { '@id': 'gts:interactingObject', '@type': '@id' },
  interactionTarget: { '@id': 'gts:interactionTarget', '@type': '@id' },
}];

/** Remote limits (Mastodon's hard limits for what other servers send; ours for local collections are lower). */
const REMOTE_NAME_MAX = 256;
const REMOTE_DESCRIPTION_MAX = 1024;
/** Items of a remote collection read (each may cost an actor fetch and an authorization fetch). */
const REMOTE_ITEMS_MAX = COLLECTION_MAX_ITEMS;
const FOLLOWER_BATCH = 1000;
const TAG = /^[\p{L}\p{N}_\u00b7\u200c]{1,100}$/u;

type Json = Record<string, unknown>;
type Fed = Context<AppContext>;

// ---------------------------------------------------------------------------------------------------------------
// Our collections as documents.

function itemUri(app: AppContext, owner: Pick<AccountRow, 'username'>, c: Pick<CollectionRow, 'id' | 'uri'>, item: { id: string; uri?: string | null }): string {
  return item.uri ?? `${collectionUri(app, owner, c)}/items/${item.id}`;
}

function featuredItemOf(app: AppContext, owner: AccountRow, c: CollectionRow, i: FederatedItemRow): Json {
  const featured = accountUri(app.config, { username: i.account_username, domain: i.account_domain, uri: i.account_uri });
  // Our own accounts' items are approved here (served at featureAuthorizationUri); others' carry their server's.
  const approval = i.account_domain === null ? featureAuthorizationUri(app, { username: i.account_username }, i.id) : i.approval_uri;
  return {
    id: itemUri(app, owner, c, i),
    type: 'FeaturedItem',
    featuredObject: featured,
    featuredObjectType: i.account_bot ? 'Service' : 'Person',
    ...(approval ? { featureAuthorization: approval } : {}),
  };
}

/** A local collection as a FeaturedCollection (Mastodon's ActivityPub::FeaturedCollectionSerializer). */
export async function collectionDocument(app: AppContext, owner: AccountRow, c: CollectionRow, withContext = true): Promise<Json> {
  const items = await federatedItems(app.db, c.id);
  const tag = c.tag_name?.toLowerCase();
  return {
    ...(withContext ? { '@context': COLLECTIONS_CONTEXT } : {}),
    id: collectionUri(app, owner, c),
    type: 'FeaturedCollection',
    name: c.name,
    attributedTo: accountUri(app.config, owner),
    ...(c.language ? { summaryMap: { [c.language]: c.description ?? '' } } : { summary: c.description }),
    sensitive: c.sensitive,
    discoverable: c.discoverable,
    published: c.created_at.toISOString(),
    updated: c.updated_at.toISOString(),
    ...(tag ? { topic: { type: 'Hashtag', href: `${app.config.publicUrl}/tags/${encodeURIComponent(tag)}`, name: `#${tag}` } } : {}),
    totalItems: items.length,
    orderedItems: items.map((i) => featuredItemOf(app, owner, c, i)),
  };
}

/** The document at one of our collection URLs, or null (404): the list, a collection, one of its items, an authorization. */
export async function collectionPathDocument(app: AppContext, path: string): Promise<Json | null> {
  const m = /^\/users\/([A-Za-z0-9_]+)\/(featured_collections|feature_authorizations)(?:\/(\d{1,20})(?:\/items\/(\d{1,20}))?)?$/.exec(path);
  if (!m) return null;
  const [, username, kind, id, itemId] = m;
  const account = await publishedLocalAccount(app, username!);
  if (!account) return null;
  if (kind === 'feature_authorizations') {
    if (!id || itemId) return null;
    const item = await findFederatedItem(app.db, id);
    const c = item ? await findCollection(app.db, item.collection_id) : null;
    if (!item || !c || item.account_id !== account.id || item.state !== 'accepted') return null;
    const owner = await findAccountById(app.db, c.account_id);
    if (!owner) return null;
    return {
      '@context': COLLECTIONS_CONTEXT, id: featureAuthorizationUri(app, account, item.id), type: 'FeatureAuthorization',
      interactingObject: collectionUri(app, owner, c), interactionTarget: accountUri(app.config, account),
    };
  }
  if (!id) {
    const rows = await publishedCollectionsOf(app.db, account.id);
    const items = [];
    for (const c of rows) items.push(await collectionDocument(app, account, c, false));
    return { '@context': COLLECTIONS_CONTEXT, id: collectionsListUri(app, account), type: 'OrderedCollection', totalItems: items.length, orderedItems: items };
  }
  const c = await findCollection(app.db, id);
  if (!c || !c.local || c.account_id !== account.id) return null;
  if (!itemId) return collectionDocument(app, account, c);
  const item = await findFederatedItem(app.db, itemId);
  if (!item || item.collection_id !== c.id || item.state !== 'accepted') return null;
  return { '@context': COLLECTIONS_CONTEXT, ...featuredItemOf(app, account, c, item) };
}

/**
 * Answers a GET of one of our collection documents (a web Request, as signed): 404 when there is none, 401 in
 * authorized-fetch mode without a valid signature, as our other documents.
 */
export async function serveCollectionDocument(app: AppContext, request: Request): Promise<{ status: number; body: Json | null }> {
  const path = new URL(request.url).pathname;
  if (app.config.authorizedFetch) {
    const signer = await signedRequester(app.federation.createContext(request, app));
    if (!signer) return { status: 401, body: { error: 'Request not signed' } };
  }
  const doc = await collectionPathDocument(app, path);
  return doc ? { status: 200, body: doc } : { status: 404, body: { error: 'Record not found' } };
}

/** Adds `featuredCollections` to a local actor's document (Fedify's Person has no such property). */
export function withFeaturedCollections(app: AppContext, doc: Json): Json {
  const id = typeof doc.id === 'string' ? doc.id : null;
  const m = id ? /^\/users\/([A-Za-z0-9_]+)$/.exec(id.startsWith(app.config.publicUrl) ? id.slice(app.config.publicUrl.length) : '') : null;
  if (!m || !['Person', 'Service', 'Group', 'Organization'].includes(String(doc.type)) || doc.suspended === true) return doc;
  const context = Array.isArray(doc['@context']) ? doc['@context'] : doc['@context'] ? [doc['@context']] : [AS];
  return {
    ...doc,
    '@context': [...context, { featuredCollections: { '@id': `${TOOT}featuredCollections`, '@type': '@id' } }],
    featuredCollections: collectionsListUri(app, { username: m[1]! }),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Sending.

/** Queues a collection activity in the transaction of the change (the outbox row), for the deliver job. */
function queueCollectionDelivery(db: Queryable, d: Omit<CollectionDelivery, 'activity'>): Promise<OutboxRow> {
  return queueDelivery(db, { activity: 'Collection', ...d });
}

/** Whether we may POST to this inbox (http(s), public unless allowed otherwise, its server not suspended). */
async function deliverableInbox(app: AppContext, url: string | null): Promise<boolean> {
  if (!url || !/^https?:\/\//i.test(url)) return false;
  if (await domainPolicy(app).refuses(new URL(url).host)) return false;
  return app.config.allowPrivateAddresses || validatePublicUrl(url).then(() => true, () => false);
}

/**
 * POSTs an activity signed (draft-cavage, RSA, `#main-key`) by a local account. A server that cannot be reached or
 * answers 5xx or 429 throws, so that the job is tried again; other refusals are final.
 */
async function postSigned(app: AppContext, fed: Fed, sender: AccountRow, inbox: string, activity: Json): Promise<void> {
  // The private keys in the order Fedify publishes them (its key ids are by position).
  const [published, pairs] = await Promise.all([fed.getActorKeyPairs(sender.username), app.keyRing.keyPairs(sender.id)]);
  const index = pairs.findIndex((p) => p.privateKey.algorithm.name === 'RSASSA-PKCS1-v1_5');
  const rsa = index >= 0 && published[index] ? { privateKey: pairs[index]!.privateKey, keyId: published[index]!.keyId } : null;
  if (!rsa) throw new Error(`no RSA key for ${sender.username}`);
  const request = new Request(inbox, {
    method: 'POST', body: JSON.stringify(activity), redirect: 'manual',
    headers: { 'content-type': AP_TYPE, accept: AP_TYPE, 'user-agent': `fedi-server/${app.config.softwareVersion} (+${app.config.publicUrl}/)` },
  });
  const signed = await signRequest(request, rsa.privateKey, rsa.keyId);
  const res = await fetch(signed, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  await res.arrayBuffer().catch(() => undefined);
  if (res.status >= 500 || res.status === 429) throw new Error(`${inbox} answered ${res.status}`);
}

/** The inboxes of these accounts (shared ones preferred, each once), those we may deliver to. */
async function inboxesOf(app: AppContext, accounts: AccountRow[], into: Set<string>): Promise<void> {
  for (const a of accounts) {
    if (a.domain === null || a.suspended_at) continue;
    const inbox = a.shared_inbox_url ?? a.inbox_url;
    if (inbox && !into.has(inbox) && (await deliverableInbox(app, inbox))) into.add(inbox);
  }
}

async function followersInboxes(app: AppContext, accountId: string, into: Set<string>): Promise<void> {
  let after = '0';
  for (;;) {
    const batch = await remoteFollowersBatch(app.db, accountId, after, FOLLOWER_BATCH);
    if (batch.length === 0) return;
    after = batch.at(-1)!.followId;
    await inboxesOf(app, batch.map((b) => b.account), into);
  }
}

/** The remote accounts with accepted items in a collection (their servers hear of it too). */
async function remoteMembers(app: AppContext, collectionId: string): Promise<AccountRow[]> {
  const items = await federatedItems(app.db, collectionId);
  return findAccountsByIds(app.db, items.filter((i) => i.account_domain !== null).map((i) => i.account_id));
}

/** Builds and sends what a collection Delivery reports, from the rows as they are now. */
export async function deliverCollectionActivity(app: AppContext, d: CollectionDelivery): Promise<void> {
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  const me = await findAccountById(app.db, d.accountId);
  if (!me || me.domain !== null || me.suspended_at) return;
  const actor = accountUri(app.config, me);
  const stamp = Date.now();
  const inboxes = new Set<string>();
  let activity: Json;
  switch (d.action) {
    case 'Add':
    case 'Update': {
      const c = await findCollection(app.db, d.collectionId);
      if (!c || !c.local || c.account_id !== me.id) return;
      const object = await collectionDocument(app, me, c, false);
      activity = d.action === 'Add'
        ? { id: `${object.id}#add/${stamp}`, type: 'Add', actor, target: collectionsListUri(app, me), object, to: [PUBLIC] }
        : { id: `${object.id}#updates/${stamp}`, type: 'Update', actor, object, to: [PUBLIC] };
      await followersInboxes(app, me.id, inboxes);
      await inboxesOf(app, await remoteMembers(app, c.id), inboxes);
      break;
    }
    case 'Remove': {
      // The collection is gone: only its uri remains (and the accounts it had, named by the caller).
      activity = { id: `${d.collectionUri}#remove/${stamp}`, type: 'Remove', actor, target: collectionsListUri(app, me), object: d.collectionUri, to: [PUBLIC] };
      await followersInboxes(app, me.id, inboxes);
      await inboxesOf(app, await findAccountsByIds(app.db, d.accountIds ?? []), inboxes);
      break;
    }
    case 'AddItem': {
      const c = await findCollection(app.db, d.collectionId);
      const item = d.itemId ? await findFederatedItem(app.db, d.itemId) : null;
      if (!c || !c.local || c.account_id !== me.id || !item || item.collection_id !== c.id || item.state !== 'accepted') return;
      const object = featuredItemOf(app, me, c, item);
      activity = { id: `${object.id}#add/${stamp}`, type: 'Add', actor, target: collectionUri(app, me, c), object, to: [PUBLIC] };
      await followersInboxes(app, me.id, inboxes);
      await inboxesOf(app, await remoteMembers(app, c.id), inboxes);
      break;
    }
    case 'RemoveItem': {
      activity = { id: `${d.itemUri}#remove/${stamp}`, type: 'Remove', actor, target: d.collectionUri, object: d.itemUri, to: [PUBLIC] };
      await followersInboxes(app, me.id, inboxes);
      await inboxesOf(app, await findAccountsByIds(app.db, d.accountIds ?? []), inboxes);
      break;
    }
    case 'FeatureRequest': {
      // To the account asked alone, while its item waits for an answer.
      const c = await findCollection(app.db, d.collectionId);
      const item = d.itemId ? await findFederatedItem(app.db, d.itemId) : null;
      const target = item ? await findAccountById(app.db, item.account_id) : null;
      if (!c || !item || !target || target.domain === null || item.state !== 'pending' || !item.activity_uri) return;
      activity = { id: item.activity_uri, type: 'FeatureRequest', actor, object: target.uri, instrument: collectionUri(app, me, c), to: [target.uri] };
      if (await deliverableInbox(app, target.inbox_url)) inboxes.add(target.inbox_url!);
      break;
    }
    case 'AcceptFeature':
    case 'RejectFeature': {
      // Our account's answer to a remote owner's FeatureRequest, named by its id (as Mastodon answers); an Accept
      // with our stamp as `result`.
      const owner = d.requesterId ? await findAccountById(app.db, d.requesterId) : null;
      if (!owner || owner.domain === null || !d.requestUri) return;
      const accept = d.action === 'AcceptFeature';
      if (accept && !d.itemId) return;
      activity = {
        id: `${actor}#${accept ? 'accepts' : 'rejects'}/feature_requests/${d.itemId ?? stamp}/${stamp}`, type: accept ? 'Accept' : 'Reject', actor, object: d.requestUri,
        ...(accept ? { result: featureAuthorizationUri(app, me, d.itemId!) } : {}), to: [owner.uri],
      };
      if (await deliverableInbox(app, owner.inbox_url)) inboxes.add(owner.inbox_url!);
      break;
    }
    case 'DeleteAuthorization': {
      // A local account takes itself out of a remote collection: its stamp is withdrawn, to the collection's owner.
      const owner = d.requesterId ? await findAccountById(app.db, d.requesterId) : null;
      if (!owner || owner.domain === null || !d.itemId) return;
      const stampUri = featureAuthorizationUri(app, me, d.itemId);
      const object = { id: stampUri, type: 'FeatureAuthorization', interactingObject: d.collectionUri, interactionTarget: actor };
      activity = { id: `${stampUri}#delete/${stamp}`, type: 'Delete', actor, object, to: [owner.uri] };
      if (await deliverableInbox(app, owner.inbox_url)) inboxes.add(owner.inbox_url!);
      break;
    }
  }
  const body = { '@context': COLLECTIONS_CONTEXT, ...activity };
  const failures: unknown[] = [];
  for (const inbox of inboxes) await postSigned(app, fed, me, inbox, body).catch((err: unknown) => failures.push(err));
  // One unreachable server makes the job try again (all of them: these activities are idempotent where received).
  if (failures.length > 0) throw failures[0];
}

// ---------------------------------------------------------------------------------------------------------------
// Receiving.

const idOf = (v: unknown): string | null => (typeof v === 'string' ? v : v && typeof v === 'object' && typeof (v as Json).id === 'string' ? (v as Json).id as string : null);
const typesOf = (v: unknown): string[] => {
  const t = v && typeof v === 'object' ? (v as Json).type : null;
  return (Array.isArray(t) ? t : [t]).filter((x): x is string => typeof x === 'string').map((x) => x.replace(/^.*[#/:]/, ''));
};
const COLLECTION_TYPES = new Set(['FeaturedCollection', 'FeaturedItem', 'FeatureRequest', 'FeatureAuthorization']);
const hasCollectionType = (v: unknown) => typesOf(v).some((t) => COLLECTION_TYPES.has(t));
const sameOrigin = (a: string | null | undefined, b: string | null | undefined) => {
  if (!a || !b || !URL.canParse(a) || !URL.canParse(b)) return false;
  return new URL(a).origin === new URL(b).origin;
};

/** Whether a received activity is about collections (and so is ours to take rather than Fedify's). */
async function concernsCollections(app: AppContext, json: Json): Promise<boolean> {
  const type = typesOf(json)[0];
  if (type === 'FeatureRequest' || hasCollectionType(json.object)) return true;
  const object = idOf(json.object);
  if ((type === 'Accept' || type === 'Reject') && object) return (await findItemByActivityUri(app.db, object)) !== null;
  if (type === 'Remove' || type === 'Delete') {
    const target = idOf(json.target);
    if (target && (await findCollectionByUri(app.db, target))) return true;
    if (!object) return false;
    return (await findCollectionByUri(app.db, object)) !== null || (type === 'Delete' && (await findItemByApprovalUri(app.db, object)) !== null);
  }
  return false;
}

/** A local account named by its actor id, or null. */
async function localAccountOf(app: AppContext, uri: string | null): Promise<AccountRow | null> {
  const prefix = `${app.config.publicUrl}/users/`;
  if (!uri?.startsWith(prefix)) return null;
  const username = uri.slice(prefix.length);
  return /^[A-Za-z0-9_]+$/.test(username) ? publishedLocalAccount(app, username) : null;
}

/** The account an actor id names: ours, or another server's (fetched and stored when new). */
async function accountOf(app: AppContext, fed: Fed, uri: string | null, loader: DocumentLoader): Promise<AccountRow | null> {
  if (!uri) return null;
  if (uri.startsWith(`${app.config.publicUrl}/`)) return localAccountOf(app, uri);
  if (await domainPolicy(app).refuses(uri)) return null;
  return accountForActorUri(app, fed, uri, loader).catch(() => null);
}

/** A JSON document fetched by its id (signed, SSRF-guarded by Fedify's loader); null unless it names itself so. */
async function fetchJson(app: AppContext, loader: DocumentLoader, url: string): Promise<Json | null> {
  if (await domainPolicy(app).refuses(url)) return null;
  try {
    const { document } = await loader(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    return document && typeof document === 'object' && idOf(document) === url ? document as Json : null;
  } catch {
    return null;
  }
}

/**
 * Takes an activity about collections POSTed to one of our inboxes, before Fedify (which cannot parse these types):
 * null when it is not one (Fedify handles it), else the answer. Its HTTP signature must verify with a key its actor
 * owns; the work (a collection, its first items, their actors and approvals: many fetches, some from other servers)
 * is done by the `receiveCollectionActivity` job, as Fedify queues what its inbox takes, never inside the request.
 */
export async function receiveCollectionActivity(app: AppContext, request: Request, json: Json): Promise<Response | null> {
  makeStorable(json); // as every received activity (federation/storable-documents.ts)
  if (!(await concernsCollections(app, json).catch(() => false))) return null;
  const fed = app.federation.createContext(request, app);
  const loader = await signedLoader(fed);
  const key = await verifyRequest(request.clone(), { documentLoader: loader, contextLoader: fed.contextLoader }).catch(() => null);
  const actorUri = idOf(json.actor);
  if (!key || !actorUri || key.ownerId?.href !== actorUri) return new Response(JSON.stringify({ error: 'Signature verification failed' }), { status: 401, headers: { 'content-type': 'application/json' } });
  const sender = await accountOf(app, fed, actorUri, loader);
  // Anything else (a suspended actor, one we cannot fetch, an id under another origin) is taken and changes nothing.
  if (sender && sender.domain !== null && !sender.suspended_at && !sender.deleted_at && sameOrigin(idOf(json.id) ?? actorUri, actorUri)) {
    const row = await addToOutbox(app.db, 'receiveCollectionActivity', { senderId: sender.id, activity: json });
    await app.jobs.enqueue(row).catch(() => {}); // swept again from the outbox
  }
  return new Response(null, { status: 202 });
}

/** The `receiveCollectionActivity` job: a verified activity about collections, from its (still unsuspended) sender. */
export async function receiveCollectionActivityJob(app: AppContext, senderId: string, json: Json): Promise<void> {
  const sender = await findAccountById(app.db, senderId);
  if (!sender || sender.domain === null || sender.suspended_at || sender.deleted_at) return;
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  await handle(app, fed, await signedLoader(fed), sender, json);
}

async function handle(app: AppContext, fed: Fed, loader: DocumentLoader, sender: AccountRow, json: Json): Promise<void> {
  const type = typesOf(json)[0];
  const objectTypes = typesOf(json.object);
  const object = idOf(json.object);
  switch (type) {
    case 'Add':
    case 'Create':
    case 'Update':
      if (objectTypes.includes('FeaturedCollection')) {
        await storeRemoteCollection(app, fed, loader, sender, json.object as Json);
      } else if (objectTypes.includes('FeaturedItem')) {
        // A new item: the collection is read again as its server has it now (its items are checked there).
        const target = idOf(json.target);
        const c = target ? await findCollectionByUri(app.db, target) : null;
        if (!target || (c && c.account_id !== sender.id) || !sameOrigin(target, sender.uri)) return;
        const doc = await fetchJson(app, loader, target);
        if (doc) await storeRemoteCollection(app, fed, loader, sender, doc);
      }
      return;
    case 'Remove':
    case 'Delete': {
      if (!object) return;
      const gone = await findCollectionByUri(app.db, object);
      if (gone && gone.account_id === sender.id) {
        await deleteRemoteCollection(app.db, sender.id, object);
        return;
      }
      // A featured account withdraws its approval of an item of ours: the item is revoked, and other servers hear so.
      const approved = type === 'Delete' ? await findItemByApprovalUri(app.db, object) : null;
      if (approved && approved.account_id === sender.id && approved.state === 'accepted') {
        const ours = await findCollection(app.db, approved.collection_id);
        const owner = ours?.local ? await findAccountById(app.db, ours.account_id) : null;
        if (!ours || !owner) return;
        const delivery = await transaction(app.db, async (tx) => {
          await setItemState(tx, approved.id, 'revoked');
          const uri = collectionUri(app, owner, ours);
          return queueCollectionDelivery(tx, { action: 'RemoveItem', accountId: owner.id, collectionId: ours.id, collectionUri: uri, itemUri: `${uri}/items/${approved.id}`, accountIds: [sender.id] });
        });
        await app.jobs.enqueue(delivery).catch(() => {});
        return;
      }
      const target = idOf(json.target);
      const c = target ? await findCollectionByUri(app.db, target) : null;
      if (c && c.account_id === sender.id && !c.local) {
        await transaction(app.db, async (tx) => {
          const item = await deleteRemoteItem(tx, c.id, object);
          if (item) await removeNotification(tx, item.account_id, sender.id, 'added_to_collection', null, c.id);
        });
      }
      return;
    }
    case 'FeatureRequest':
      await onFeatureRequest(app, fed, loader, sender, json);
      return;
    case 'Accept':
    case 'Reject':
      await onFeatureAnswer(app, sender, json, type === 'Accept');
      return;
  }
}

/**
 * Stores another server's collection as it describes itself (Mastodon's ProcessFeaturedCollectionService): its
 * fields and its items. An item is kept when its featured account approved it: one of ours that accepted a
 * FeatureRequest for this collection, an account of the collection's own server, or one whose server serves a
 * FeatureAuthorization naming this collection. Local members hear of a new name or description.
 */
async function storeRemoteCollection(app: AppContext, fed: Fed, loader: DocumentLoader, owner: AccountRow, doc: Json): Promise<CollectionRow | null> {
  const uri = idOf(doc);
  if (!uri || !sameOrigin(uri, owner.uri) || idOf(doc.attributedTo) !== owner.uri || !typesOf(doc).includes('FeaturedCollection')) return null;
  const existing = await findCollectionByUri(app.db, uri);
  if (existing && existing.account_id !== owner.id) return null;
  const summaryMap = doc.summaryMap && typeof doc.summaryMap === 'object' ? Object.entries(doc.summaryMap as Json) : [];
  const language = summaryMap[0] && /^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*$/.test(summaryMap[0][0]) ? summaryMap[0][0].slice(0, 20) : null;
  const summary = summaryMap[0]?.[1] ?? doc.summary;
  const tagName = typeof (doc.topic as Json | undefined)?.name === 'string' ? String((doc.topic as Json).name).replace(/^#/, '') : null;
  const rawItems = Array.isArray(doc.orderedItems) ? doc.orderedItems.slice(0, REMOTE_ITEMS_MAX) : [];

  // Items are resolved before the transaction: each may cost fetches.
  const items: { uri: string | null; accountId: string; position: number; state: CollectionItemState; approvalUri: string | null }[] = [];
  const preApproved = existing ? new Set((await federatedItems(app.db, existing.id)).filter((i) => i.account_domain === null).map((i) => i.account_id)) : new Set<string>();
  for (const raw of rawItems) {
    const item = typeof raw === 'string' ? (sameOrigin(raw, uri) ? await fetchJson(app, loader, raw) : null) : raw as Json;
    const itemId = idOf(item);
    if (!item || !itemId || !sameOrigin(itemId, uri) || !typesOf(item).includes('FeaturedItem')) continue;
    const featuredUri = idOf(item.featuredObject);
    const account = await accountOf(app, fed, featuredUri, loader);
    if (!account || account.suspended_at || items.some((i) => i.accountId === account.id)) continue;
    const approval = idOf(item.featureAuthorization);
    let approved = false;
    if (account.domain === null) approved = preApproved.has(account.id);
    else if (sameOrigin(account.uri, uri)) approved = true;
    else if (approval && sameOrigin(approval, account.uri)) {
      const auth = await fetchJson(app, loader, approval);
      approved = !!auth && typesOf(auth).includes('FeatureAuthorization') && idOf(auth.interactingObject) === uri && idOf(auth.interactionTarget) === account.uri;
    }
    if (approved) items.push({ uri: itemId, accountId: account.id, position: items.length + 1, state: 'accepted', approvalUri: approval });
  }

  return transaction(app.db, async (tx) => {
    const fields = {
      name: (typeof doc.name === 'string' ? doc.name : '').slice(0, REMOTE_NAME_MAX),
      description: typeof summary === 'string' ? summary.slice(0, REMOTE_DESCRIPTION_MAX) : null,
      language,
      sensitive: doc.sensitive === true,
      discoverable: doc.discoverable !== false,
      tagId: tagName && TAG.test(tagName) && !/^\d+$/.test(tagName) ? await tagIdFor(tx, tagName) : null,
    };
    const saved = await upsertRemoteCollection(tx, owner.id, uri, fields);
    await replaceRemoteItems(tx, saved.id, items);
    if (!saved.created && saved.changed) {
      for (const memberId of await acceptedLocalMembers(tx, saved.id)) {
        await removeNotification(tx, memberId, owner.id, 'collection_update', null, saved.id);
        await notifyAccount(app, tx, memberId, owner.id, 'collection_update', null, null, saved.id);
      }
    }
    return findCollection(tx, saved.id);
  });
}

/**
 * A remote account asks to feature one of ours in its collection (Mastodon's FeatureRequest handler): the collection
 * is read from its server; the request is accepted when ours may be featured by the asker (discoverable, neither
 * blocking the other), which then holds an accepted item and an `added_to_collection`; otherwise rejected.
 */
async function onFeatureRequest(app: AppContext, fed: Fed, loader: DocumentLoader, sender: AccountRow, json: Json): Promise<void> {
  const requestUri = idOf(json);
  const featured = await localAccountOf(app, idOf(json.object));
  const instrument = idOf(json.instrument);
  if (!requestUri || !featured || !instrument || !sameOrigin(instrument, sender.uri)) return;
  const known = await findCollectionByUri(app.db, instrument);
  let c: CollectionRow | null = known && known.account_id === sender.id ? known : null;
  if (!c && !known) {
    const doc = await fetchJson(app, loader, instrument);
    c = doc ? await storeRemoteCollection(app, fed, loader, sender, doc) : null;
  }
  if (!c) return;
  const collection = c;
  const accepted = featured.discoverable === true && !featured.suspended_at && !(await blockedEitherWay(app.db, sender.id, featured.id))
    && !(await blocksAccountOrDomain(app.db, featured.id, sender.id));
  const delivery = await transaction(app.db, async (tx) => {
    if (!accepted) {
      return queueCollectionDelivery(tx, { action: 'RejectFeature', accountId: featured.id, collectionId: collection.id, collectionUri: instrument, requesterId: sender.id, requestUri });
    }
    const { item, created } = await acceptRemoteItem(tx, collection.id, featured.id, requestUri);
    if (created) await notifyAccount(app, tx, featured.id, sender.id, 'added_to_collection', null, null, collection.id);
    return queueCollectionDelivery(tx, { action: 'AcceptFeature', accountId: featured.id, collectionId: collection.id, collectionUri: instrument, requesterId: sender.id, requestUri, itemId: item.id });
  });
  await app.jobs.enqueue(delivery).catch(() => {}); // the outbox sweeper sends it otherwise
}

/** The featured account's answer to our FeatureRequest: accepted, the item is added (and sent); rejected, it stays so. */
async function onFeatureAnswer(app: AppContext, sender: AccountRow, json: Json, accepted: boolean): Promise<void> {
  const requestUri = idOf(json.object);
  const item = requestUri ? await findItemByActivityUri(app.db, requestUri) : null;
  if (!item || item.account_id !== sender.id || item.state !== 'pending') return;
  const c = await findCollection(app.db, item.collection_id);
  if (!c || !c.local) return;
  const result = idOf(json.result);
  const delivery = await transaction(app.db, async (tx) => {
    await answerItem(tx, item.id, accepted ? 'accepted' : 'rejected', accepted && result && sameOrigin(result, sender.uri) ? result : null);
    return accepted ? queueCollectionDelivery(tx, { action: 'AddItem', accountId: c.account_id, collectionId: c.id, itemId: item.id }) : null;
  });
  if (delivery) await app.jobs.enqueue(delivery).catch(() => {});
}
