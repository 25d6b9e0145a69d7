import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { expectEntity } from '../helpers/schema.ts';

// Collections across servers (Mastodon 4.6), against a peer that verifies every signature (test/helpers/strict-peer.ts):
// ours go out as Add/Update/Remove of FeaturedCollection and its FeaturedItems and are served at their ids; an account
// of another server is asked by FeatureRequest; other servers' collections and FeatureRequests are taken.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let bob: TestUser;
let erin: TestUser;
const AS = 'https://www.w3.org/ns/activitystreams';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses and documents

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice, bob, erin] = await registerUsers(ours.app, 'alice', 'bob', 'erin');
  for (const u of [alice, bob]) await api(u, 'PATCH', '/api/v1/accounts/update_credentials', { discoverable: true });
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

async function api(user: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object): Promise<any> {
  const res = await ours.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.body === '' ? {} : res.json();
}
const actorOf = (user: TestUser) => `${ours.url}/users/${user.username}`;
const typeOf = (o: unknown) => (o as Json | undefined)?.type;
const remoteAccount = async (acct: string): Promise<Json> => api(alice, 'GET', `/api/v1/accounts/lookup?acct=${acct}`);


/** Activities about collections are handled by a job (federation/collections.ts): waits until ours has handled all it took. */
const drained = () => until(
  async () => Number((await ours.ctx.db.query(`SELECT count(*) AS n FROM outbox WHERE kind = 'receiveCollectionActivity'`)).rows[0].n),
  (n) => n === 0, 'collection activities handled',
);

describe('our collections on other servers', () => {
  it('sends a new collection to followers\' servers, serves it, its list on our actor and our accounts\' approvals', async () => {
    const gus = await peer.addActor('gus');
    expect(await peer.send('gus', `${actorOf(alice)}/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: actorOf(alice) })).toBe(202);
    await drained();
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);

    const { collection } = await api(alice, 'POST', '/api/v1/collections', { name: 'Friends', description: 'good people', language: 'en', sensitive: false, discoverable: true, account_ids: [bob.id] });
    expectEntity('Collection', collection);
    const uri = `${actorOf(alice)}/featured_collections/${collection.id}`;
    const add = await peer.waitFor((d) => d.activity.type === 'Add' && typeOf(d.activity.object) === 'FeaturedCollection');
    expect(add.verified, add.reason).toBe(true);
    expect(add.activity).toMatchObject({ actor: actorOf(alice), target: `${actorOf(alice)}/featured_collections` });
    const item = collection.items[0];
    expect(add.activity.object).toMatchObject({
      id: uri, name: 'Friends', summaryMap: { en: 'good people' }, attributedTo: actorOf(alice), totalItems: 1,
      orderedItems: [{ id: `${uri}/items/${item.id}`, type: 'FeaturedItem', featuredObject: actorOf(bob), featureAuthorization: `${actorOf(bob)}/feature_authorizations/${item.id}` }],
    });

    // Served at its id, listed by the actor's featuredCollections; bob's approval is served by us.
    const actor = await peer.signedGet('gus', actorOf(alice));
    expect(actor.json?.featuredCollections).toBe(`${actorOf(alice)}/featured_collections`);
    const list = await peer.signedGet('gus', `${actorOf(alice)}/featured_collections`);
    expect((list.json!.orderedItems as Json[]).map((c) => c.id)).toEqual([uri]);
    const doc = await peer.signedGet('gus', uri);
    expect(doc.status).toBe(200);
    expect(doc.json).toMatchObject({ id: uri, type: 'FeaturedCollection', discoverable: true, sensitive: false });
    const auth = await peer.signedGet('gus', `${actorOf(bob)}/feature_authorizations/${item.id}`);
    expect(auth.json).toMatchObject({ type: 'FeatureAuthorization', interactingObject: uri, interactionTarget: actorOf(bob) });
    expect((await peer.signedGet('gus', `${uri}0`)).status).toBe(404);
    expect((await peer.signedGet('gus', `${actorOf(erin)}/feature_authorizations/${item.id}`)).status).toBe(404);

    await api(alice, 'PATCH', `/api/v1/collections/${collection.id}`, { name: 'Best friends' });
    const update = await peer.waitFor((d) => d.activity.type === 'Update' && typeOf(d.activity.object) === 'FeaturedCollection');
    expect(update.verified).toBe(true);
    expect(update.activity.object).toMatchObject({ id: uri, name: 'Best friends' });
  });

  it('asks an account of another server by FeatureRequest; its Accept adds the item, sent as Add', async () => {
    const hal = await peer.addActor('hal');
    const halHere = await remoteAccount(`hal@${peer.domain}`);
    const { collection } = await api(alice, 'POST', '/api/v1/collections', { name: 'Peers', description: 'elsewhere', sensitive: false, discoverable: true });
    const uri = `${actorOf(alice)}/featured_collections/${collection.id}`;

    // Only discoverable accounts may be featured (the peer's actors do not say so; this one is made so here).
    const refused = await ours.app.inject({ method: 'POST', url: `/api/v1/collections/${collection.id}/items`, headers: bearer(alice.token), payload: { account_id: halHere.id } });
    expect(refused.statusCode).toBe(403);
    await ours.ctx.db.query(`UPDATE accounts SET discoverable = true WHERE id = $1`, [halHere.id]);

    const { collection_item: item } = await api(alice, 'POST', `/api/v1/collections/${collection.id}/items`, { account_id: halHere.id });
    expectEntity('CollectionItem', item);
    expect(item.state).toBe('pending');
    const request = await peer.waitFor((d) => d.activity.type === 'FeatureRequest');
    expect(request.verified, request.reason).toBe(true);
    expect(request.inbox).toBe('/users/hal/inbox');
    expect(request.activity).toMatchObject({ actor: actorOf(alice), object: hal, instrument: uri });
    // Not shown to others while it waits.
    expect((await peer.signedGet('hal', uri)).json!.orderedItems).toEqual([]);

    // An answer signed by someone else is refused; the featured account's is taken.
    const accept = { '@context': AS, id: `${hal}/accepts/1`, type: 'Accept', actor: hal, object: request.activity, result: `${hal}/feature_authorizations/1` };
    expect(await peer.send('gus', `${actorOf(alice)}/inbox`, accept)).toBe(401);
    expect(await peer.send('hal', `${actorOf(alice)}/inbox`, accept)).toBe(202);
    await drained();
    const shown = await api(alice, 'GET', `/api/v1/collections/${collection.id}`);
    expect(shown.collection.items.map((i: Json) => [i.account_id, i.state])).toEqual([[halHere.id, 'accepted']]);
    expectEntity('CollectionWithAccounts', shown);
    const added = await peer.waitFor((d) => d.activity.type === 'Add' && typeOf(d.activity.object) === 'FeaturedItem');
    expect(added.verified).toBe(true);
    expect(added.activity).toMatchObject({ target: uri, object: { featuredObject: hal, featureAuthorization: `${hal}/feature_authorizations/1` } });

    // hal withdraws his approval (Mastodon's Delete of the FeatureAuthorization): revoked, and a Remove goes out.
    const authorization = { id: `${hal}/feature_authorizations/1`, type: 'FeatureAuthorization', interactingObject: uri, interactionTarget: hal };
    expect(await peer.send('hal', `${ours.url}/inbox`, { '@context': AS, id: `${hal}/feature_authorizations/1#delete`, type: 'Delete', actor: hal, object: authorization })).toBe(202);
    await drained();
    const removedItem = await peer.waitFor((d) => d.activity.type === 'Remove' && d.activity.target === uri);
    expect(removedItem.verified).toBe(true);
    expect(removedItem.activity.object).toBe(`${uri}/items/${item.id}`);
    expect((await api(alice, 'GET', `/api/v1/collections/${collection.id}`)).collection.items).toEqual([]);
    expect((await ours.ctx.db.query(`SELECT state FROM collection_items WHERE id = $1`, [item.id])).rows[0].state).toBe('revoked');

    // Taking the item out and then the collection: the collection goes out as Remove.
    await api(alice, 'DELETE', `/api/v1/collections/${collection.id}/items/${item.id}`);
    await api(alice, 'DELETE', `/api/v1/collections/${collection.id}`);
    const removed = await peer.waitFor((d) => d.activity.type === 'Remove' && d.activity.object === uri);
    expect(removed.verified).toBe(true);
    expect(removed.activity.target).toBe(`${actorOf(alice)}/featured_collections`);
    expect((await peer.signedGet('hal', uri)).status).toBe(404);
  });
});

describe('other servers\' collections here', () => {
  const collectionDoc = (ivy: string, jon: string, extra: Json = {}) => ({
    '@context': [AS, { toot: 'http://joinmastodon.org/ns#', FeaturedCollection: 'toot:FeaturedCollection', FeaturedItem: 'toot:FeaturedItem', featuredObject: { '@id': 'toot:featuredObject', '@type': '@id' } }],
    id: `${ivy}/featured_collections/1`, type: 'FeaturedCollection', attributedTo: ivy, name: 'Ivy picks', summary: 'the best',
    sensitive: false, discoverable: true, published: new Date().toISOString(), totalItems: 1,
    orderedItems: [{ id: `${ivy}/featured_collections/1/items/1`, type: 'FeaturedItem', featuredObject: jon }],
    ...extra,
  });

  it('stores a remote collection, lists it for its owner, and takes a FeatureRequest for one of ours', async () => {
    const [ivy, jon] = [await peer.addActor('ivy'), await peer.addActor('jon')];
    const doc = collectionDoc(ivy, jon);
    peer.publish('ivy', doc);
    expect(await peer.send('ivy', `${ours.url}/inbox`, { '@context': doc['@context'], id: `${ivy}#adds/1`, type: 'Add', actor: ivy, target: `${ivy}/featured_collections`, object: doc })).toBe(202);
    await drained();
    const ivyHere = await remoteAccount(`ivy@${peer.domain}`);
    const jonHere = await remoteAccount(`jon@${peer.domain}`);
    const { collections } = await api(bob, 'GET', `/api/v1/accounts/${ivyHere.id}/collections`);
    expect(collections).toHaveLength(1);
    const [c] = collections;
    expectEntity('Collection', c);
    expect(c).toMatchObject({ uri: doc.id, local: false, name: 'Ivy picks', description: 'the best', account_id: ivyHere.id, item_count: 1 });
    expect(c.items.map((i: Json) => i.account_id)).toEqual([jonHere.id]);

    // A FeatureRequest for alice: accepted (she is discoverable), she is told, the owner gets our approval.
    const request = { '@context': AS, id: `${ivy}/feature_requests/1`, type: 'FeatureRequest', actor: ivy, object: actorOf(alice), instrument: doc.id };
    expect(await peer.send('ivy', `${actorOf(alice)}/inbox`, request)).toBe(202);
    await drained();
    const accept = await peer.waitFor((d) => d.activity.type === 'Accept' && d.activity.object === request.id);
    expect(accept.verified, accept.reason).toBe(true);
    const auth = await peer.signedGet('ivy', String(accept.activity.result));
    expect(auth.json).toMatchObject({ type: 'FeatureAuthorization', interactingObject: doc.id, interactionTarget: actorOf(alice) });

    const [n] = await api(alice, 'GET', '/api/v1/notifications?types[]=added_to_collection');
    expectEntity('Notification', n);
    expect(n).toMatchObject({ type: 'added_to_collection', account: { id: ivyHere.id }, collection: { id: c.id, uri: doc.id } });
    const grouped = await api(alice, 'GET', '/api/v2/notifications?types[]=added_to_collection');
    // The reference schema's NotificationGroupTypeEnum predates 4.6's collection types: the parts are checked instead.
    expect(grouped.notification_groups).toHaveLength(1);
    expectEntity('Collection', grouped.notification_groups[0].collection);
    for (const a of grouped.accounts) expectEntity('Account', a);
    expect(grouped.notification_groups[0]).toMatchObject({ type: 'added_to_collection', collection: { id: c.id } });

    // An undiscoverable account is not featured: Reject, nothing stored, nobody told.
    const refused = { ...request, id: `${ivy}/feature_requests/2`, object: actorOf(erin) };
    expect(await peer.send('ivy', `${actorOf(erin)}/inbox`, refused)).toBe(202);
    await drained();
    await peer.waitFor((d) => d.activity.type === 'Reject' && d.activity.object === refused.id);
    expect(await api(erin, 'GET', '/api/v1/notifications')).toEqual([]);
    // Someone else's key cannot ask in ivy's name.
    expect(await peer.send('jon', `${actorOf(alice)}/inbox`, { ...request, id: `${ivy}/feature_requests/3` })).toBe(401);

    // Its owner renames it, listing alice with our approval: she is in it and hears of the change.
    const renamed = collectionDoc(ivy, jon, {
      name: 'Ivy\'s finest', updated: new Date().toISOString(),
      orderedItems: [
        { id: `${ivy}/featured_collections/1/items/1`, type: 'FeaturedItem', featuredObject: jon },
        { id: `${ivy}/featured_collections/1/items/2`, type: 'FeaturedItem', featuredObject: actorOf(alice), featureAuthorization: accept.activity.result },
        // Nobody approved erin: left out.
        { id: `${ivy}/featured_collections/1/items/3`, type: 'FeaturedItem', featuredObject: actorOf(erin) },
      ],
    });
    expect(await peer.send('ivy', `${ours.url}/inbox`, { '@context': doc['@context'], id: `${ivy}#updates/1`, type: 'Update', actor: ivy, object: renamed })).toBe(202);
    await drained();
    const updates = await api(alice, 'GET', '/api/v1/notifications?types[]=collection_update');
    expect(updates).toHaveLength(1);
    expectEntity('Notification', updates[0]);
    expect(updates[0].collection).toMatchObject({ id: c.id, name: 'Ivy\'s finest' });
    expect(updates[0].collection.items.map((i: Json) => i.account_id)).toEqual([jonHere.id, alice.id]);
    const rest = (await api(alice, 'GET', '/api/v1/notifications?exclude_types[]=collection_update')).map((x: Json) => x.type);
    expect(rest).toContain('added_to_collection');
    expect(rest).not.toContain('collection_update');
    const groupedUpdate = await api(alice, 'GET', '/api/v2/notifications?types[]=collection_update');
    expect(groupedUpdate.notification_groups.map((g: Json) => g.type)).toEqual(['collection_update']);
    expectEntity('Collection', groupedUpdate.notification_groups[0].collection);
    expect(groupedUpdate.notification_groups[0].collection.name).toBe('Ivy\'s finest');
    const inCollections = await api(alice, 'GET', `/api/v1/accounts/${alice.id}/in_collections`);
    expect(inCollections.collections.map((x: Json) => x.uri)).toEqual([doc.id]);

    // A collection claimed by another actor, or named under another origin, is not taken.
    const forged = collectionDoc(ivy, jon, { id: `${jon}/featured_collections/9`, attributedTo: jon });
    expect(await peer.send('ivy', `${ours.url}/inbox`, { '@context': doc['@context'], id: `${ivy}#adds/2`, type: 'Add', actor: ivy, target: `${ivy}/featured_collections`, object: forged })).toBe(202);
    await drained();
    expect((await api(bob, 'GET', `/api/v1/accounts/${jonHere.id}/collections`)).collections).toEqual([]);

    // Alice takes herself out: her approval is withdrawn (a Delete to the owner) and no longer served.
    const mine = updates[0].collection.items.find((i: Json) => i.account_id === alice.id);
    await api(alice, 'POST', `/api/v1/collections/${c.id}/items/${mine.id}/revoke`);
    const withdrawn = await peer.waitFor((d) => d.activity.type === 'Delete' && (d.activity.object as Json)?.id === accept.activity.result);
    expect(withdrawn.verified).toBe(true);
    expect(withdrawn.inbox).toBe('/users/ivy/inbox');
    expect((await peer.signedGet('ivy', String(accept.activity.result))).status).toBe(404);
    expect((await api(bob, 'GET', `/api/v1/collections/${c.id}`)).collection.items.map((i: Json) => i.account_id)).toEqual([jonHere.id]);

    // Its owner removes it: gone here, with its notifications.
    expect(await peer.send('ivy', `${ours.url}/inbox`, { '@context': AS, id: `${ivy}#removes/1`, type: 'Remove', actor: ivy, target: `${ivy}/featured_collections`, object: doc.id })).toBe(202);
    await drained();
    expect((await api(bob, 'GET', `/api/v1/accounts/${ivyHere.id}/collections`)).collections).toEqual([]);
    expect(await api(alice, 'GET', '/api/v1/notifications?types[]=added_to_collection&types[]=collection_update')).toEqual([]);
  });
});

describe('between two of our servers', () => {
  let other: Instance;
  let zed: TestUser;
  const on = async (server: Instance, user: TestUser, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object): Promise<any> => {
    const res = await server.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
    return res.json();
  };
  beforeAll(async () => {
    other = await startHttpsInstance();
    [zed] = await registerUsers(other.app, 'zed');
    await on(other, zed, 'PATCH', '/api/v1/accounts/update_credentials', { discoverable: true });
  }, 60_000);
  afterAll(async () => other?.close());

  it('a follower\'s server holds our collection; a member there is asked, told, and hears of changes', async () => {
    const aliceThere = await on(other, zed, 'GET', `/api/v1/accounts/lookup?acct=alice@${ours.domain}`);
    await on(other, zed, 'POST', `/api/v1/accounts/${aliceThere.id}/follow`);
    await until(() => api(alice, 'GET', `/api/v1/accounts/${alice.id}`), (a) => a.followers_count >= 2, 'zed follows alice');

    const { collection } = await api(alice, 'POST', '/api/v1/collections', { name: 'Across', description: 'two servers', sensitive: false, discoverable: true, account_ids: [bob.id] });
    const listThere = () => on(other, zed, 'GET', `/api/v1/accounts/${aliceThere.id}/collections`);
    const [held] = (await until(listThere, (r) => r.collections.length === 1, 'the other server holds the collection')).collections;
    const bobThere = await on(other, zed, 'GET', `/api/v1/accounts/lookup?acct=bob@${ours.domain}`);
    expect(held).toMatchObject({ uri: collection.uri, local: false, name: 'Across' });
    expect(held.items.map((i: Json) => i.account_id)).toEqual([bobThere.id]);

    // zed is asked (FeatureRequest), accepts (he is discoverable), is told; our server sends the item to his.
    const zedHere = await remoteAccount(`zed@${other.domain}`);
    expect(zedHere.discoverable).toBe(true);
    await api(alice, 'POST', `/api/v1/collections/${collection.id}/items`, { account_id: zedHere.id });
    await until(() => api(alice, 'GET', `/api/v1/collections/${collection.id}`), (r) => r.collection.items.some((i: Json) => i.account_id === zedHere.id && i.state === 'accepted'), 'zed accepted');
    const [told] = await until(() => on(other, zed, 'GET', '/api/v1/notifications?types[]=added_to_collection'), (l) => l.length === 1, 'zed is told');
    expect(told.collection).toMatchObject({ id: held.id, uri: collection.uri });
    await until(() => on(other, zed, 'GET', `/api/v1/collections/${held.id}`), (r) => r.collection.items.length === 2, 'the other server lists zed too');

    await api(alice, 'PATCH', `/api/v1/collections/${collection.id}`, { name: 'Across the wire' });
    const [update] = await until(() => on(other, zed, 'GET', '/api/v1/notifications?types[]=collection_update'), (l) => l.length === 1, 'zed hears of the change');
    expect(update.collection.name).toBe('Across the wire');
  });
});
