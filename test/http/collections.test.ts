import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';

/** Collections, Mastodon 4.6's featured lists of accounts: the local API. */
let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let erin: TestUser;

type Json = Record<string, any>;
const call = (user: TestUser | string | null, method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH', url: string, payload?: object) =>
  s.app.inject({ method, url, headers: user ? bearer(typeof user === 'string' ? user : user.token) : {}, ...(payload ? { payload } : {}) });
const ok = async (user: TestUser | null, method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH', url: string, payload?: object): Promise<Json> => {
  const res = await call(user, method, url, payload);
  expect(res.statusCode, res.body).toBe(200);
  return res.body === '' ? {} : res.json();
};
const count = async (table: string) => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
const notificationsOf = async (user: TestUser, type: string): Promise<Json[]> => (await call(user, 'GET', `/api/v1/notifications?types[]=${type}`)).json();

const COLLECTION_KEYS = ['account_id', 'created_at', 'description', 'discoverable', 'id', 'item_count', 'items', 'language', 'local', 'name', 'sensitive', 'tag', 'updated_at', 'uri'];
const ITEM_KEYS = ['account_id', 'created_at', 'id', 'state'];
function expectCollection(c: Json): void {
  expect(Object.keys(c).sort()).toEqual(COLLECTION_KEYS);
  expect(typeof c.id).toBe('string');
  for (const i of c.items) expect(Object.keys(i).sort()).toEqual(ITEM_KEYS);
  if (c.tag) expect(Object.keys(c.tag).sort()).toEqual(['name', 'url']);
}

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app);
  [alice, bob, carol, dave, erin] = (await Promise.all(['alice', 'bob', 'carol', 'dave', 'erin'].map((n) => registerUser(s.app, client, n)))) as [TestUser, TestUser, TestUser, TestUser, TestUser];
  // Only discoverable accounts may be featured; erin stays undiscoverable.
  for (const u of [alice, bob, carol, dave]) await ok(u, 'PATCH', '/api/v1/accounts/update_credentials', { discoverable: true });
});
afterAll(async () => s?.close());

describe('making and reading collections', () => {
  let id: string;

  it('creates a collection with accounts, rendered as Mastodon does, and tells each account', async () => {
    const body = await ok(alice, 'POST', '/api/v1/collections', {
      name: 'Great people', description: 'Follow them', language: 'en', sensitive: false, discoverable: true, tag_name: '#Cats', account_ids: [bob.id, carol.id],
    });
    expect(Object.keys(body)).toEqual(['collection']);
    const c = body.collection;
    expectCollection(c);
    id = c.id;
    expect(c.uri).toBe(`${s.ctx.config.publicUrl}/users/alice/featured_collections/${c.id}`);
    expect(c).toMatchObject({ name: 'Great people', description: 'Follow them', language: 'en', account_id: alice.id, local: true, sensitive: false, discoverable: true, item_count: 2 });
    expect(c.tag).toEqual({ name: 'cats', url: `${s.ctx.config.publicUrl}/tags/cats` });
    expect(c.items.map((i: Json) => [i.account_id, i.state])).toEqual([[bob.id, 'accepted'], [carol.id, 'accepted']]);

    const [n] = await notificationsOf(bob, 'added_to_collection');
    expect(n).toBeDefined();
    expect(Object.keys(n!).sort()).toEqual(['account', 'collection', 'created_at', 'group_key', 'id', 'type']);
    expect(n!.account.id).toBe(alice.id);
    expectCollection(n!.collection);
    expect(n!.collection.id).toBe(id);
    expect(await notificationsOf(carol, 'added_to_collection')).toHaveLength(1);
  });

  it('shows a collection with its owner and accounts, to anyone', async () => {
    const body = await ok(null, 'GET', `/api/v1/collections/${id}`);
    expect(Object.keys(body).sort()).toEqual(['accounts', 'collection']);
    expectCollection(body.collection);
    expect(body.accounts.map((a: Json) => a.id)).toEqual([alice.id, bob.id, carol.id]);
  });

  it('adds and removes items; removing takes the notification back', async () => {
    const added = await ok(alice, 'POST', `/api/v1/collections/${id}/items`, { account_id: dave.id });
    expect(Object.keys(added)).toEqual(['collection_item']);
    expect(Object.keys(added.collection_item).sort()).toEqual(ITEM_KEYS);
    expect(added.collection_item).toMatchObject({ account_id: dave.id, state: 'accepted' });
    expect(await notificationsOf(dave, 'added_to_collection')).toHaveLength(1);
    expect((await ok(alice, 'GET', `/api/v1/collections/${id}`)).collection.item_count).toBe(3);

    // Twice: 422, nothing written.
    const before = await count('collection_items');
    const again = await call(alice, 'POST', `/api/v1/collections/${id}/items`, { account_id: dave.id });
    expect(again.statusCode).toBe(422);
    expect(await count('collection_items')).toBe(before);

    const removed = await call(alice, 'DELETE', `/api/v1/collections/${id}/items/${added.collection_item.id}`);
    expect(removed.statusCode).toBe(200);
    expect(removed.body).toBe('');
    expect(await notificationsOf(dave, 'added_to_collection')).toHaveLength(0);
    const c = (await ok(alice, 'GET', `/api/v1/collections/${id}`)).collection;
    expect(c.item_count).toBe(2);
    expect(c.items.map((i: Json) => i.account_id)).toEqual([bob.id, carol.id]);
    expect((await call(alice, 'DELETE', `/api/v1/collections/${id}/items/${added.collection_item.id}`)).statusCode).toBe(404);
  });

  it('updates a collection; members hear of a new name (the latest change only), not of other changes', async () => {
    const body = await ok(alice, 'PATCH', `/api/v1/collections/${id}`, { name: 'Greatest people', sensitive: true });
    expect(Object.keys(body)).toEqual(['collection']);
    expectCollection(body.collection);
    expect(body.collection).toMatchObject({ name: 'Greatest people', sensitive: true, description: 'Follow them', language: 'en' });
    expect(body.collection.tag.name).toBe('cats');
    let [n] = await notificationsOf(bob, 'collection_update');
    expect(n?.collection.name).toBe('Greatest people');
    expect(n?.account.id).toBe(alice.id);

    await ok(alice, 'PUT', `/api/v1/collections/${id}`, { description: 'Really', tag_name: '' });
    const updates = await notificationsOf(bob, 'collection_update');
    expect(updates).toHaveLength(1);
    [n] = updates;
    expect(n!.collection).toMatchObject({ description: 'Really', tag: null });
    expect(await notificationsOf(carol, 'collection_update')).toHaveLength(1);

    const quiet = await ok(alice, 'PATCH', `/api/v1/collections/${id}`, { discoverable: false });
    expect(quiet.collection.discoverable).toBe(false);
    expect((await notificationsOf(bob, 'collection_update'))[0]!.id).toBe(n!.id);
    await ok(alice, 'PATCH', `/api/v1/collections/${id}`, { discoverable: true });
  });

  it('the v2 grouped notifications list the new types', async () => {
    const res = await ok(bob, 'GET', '/api/v2/notifications?types[]=added_to_collection&types[]=collection_update');
    expect(res.notification_groups.map((g: Json) => g.type).sort()).toEqual(['added_to_collection', 'collection_update']);
  });

  it('deletes a collection with its items and notifications; others may not', async () => {
    const other = (await ok(alice, 'POST', '/api/v1/collections', { name: 'Soon gone', sensitive: false, discoverable: true, account_ids: [dave.id] })).collection;
    expect(await notificationsOf(dave, 'added_to_collection')).toHaveLength(1);
    expect((await call(bob, 'DELETE', `/api/v1/collections/${other.id}`)).statusCode).toBe(403);
    const res = await call(alice, 'DELETE', `/api/v1/collections/${other.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
    // Rails' `head 200` for a request without Accept: typed as HTML, as apps get it from Mastodon.
    expect(res.headers['content-type']).toBe('text/html');
    expect((await call(alice, 'GET', `/api/v1/collections/${other.id}`)).statusCode).toBe(404);
    expect(await notificationsOf(dave, 'added_to_collection')).toHaveLength(0);
    expect((await s.ctx.db.query('SELECT count(*)::int AS n FROM collection_items WHERE collection_id = $1', [other.id])).rows[0].n).toBe(0);
  });
});

describe('lists by account', () => {
  it("lists an account's collections newest first, discoverable ones only for others, paged by offset", async () => {
    const hidden = (await ok(dave, 'POST', '/api/v1/collections', { name: 'Mine only', sensitive: false, discoverable: false })).collection;
    const first = (await ok(dave, 'POST', '/api/v1/collections', { name: 'One', sensitive: false, discoverable: true })).collection;
    const second = (await ok(dave, 'POST', '/api/v1/collections', { name: 'Two', sensitive: false, discoverable: true, account_ids: [carol.id] })).collection;

    const own = await ok(dave, 'GET', `/api/v1/accounts/${dave.id}/collections`);
    expect(Object.keys(own)).toEqual(['collections']);
    expect(own.collections.map((c: Json) => c.id)).toEqual([second.id, first.id, hidden.id]);
    own.collections.forEach(expectCollection);
    const others = await ok(null, 'GET', `/api/v1/accounts/${dave.id}/collections`);
    expect(others.collections.map((c: Json) => c.id)).toEqual([second.id, first.id]);

    const page = await call(dave, 'GET', `/api/v1/accounts/${dave.id}/collections?limit=2`);
    expect(page.json().collections.map((c: Json) => c.id)).toEqual([second.id, first.id]);
    expect(page.headers.link).toBe(`<${s.ctx.config.publicUrl}/api/v1/accounts/${dave.id}/collections?limit=2&offset=2>; rel="next"`);
    const next = await call(dave, 'GET', `/api/v1/accounts/${dave.id}/collections?limit=2&offset=2`);
    expect(next.json().collections.map((c: Json) => c.id)).toEqual([hidden.id]);
    expect(next.headers.link).toBe(`<${s.ctx.config.publicUrl}/api/v1/accounts/${dave.id}/collections?limit=2&offset=0>; rel="prev"`);

    // A hidden collection is still shown by its id, as on Mastodon (discoverable only decides listing).
    expect((await ok(bob, 'GET', `/api/v1/collections/${hidden.id}`)).collection.id).toBe(hidden.id);
    expect((await call(null, 'GET', '/api/v1/accounts/99999999/collections')).statusCode).toBe(404);
  });

  it('lists the collections one is in (in_collections), only one\'s own', async () => {
    const mine = await ok(carol, 'GET', `/api/v1/accounts/${carol.id}/in_collections`);
    expect(Object.keys(mine)).toEqual(['collections']);
    const names = mine.collections.map((c: Json) => c.name);
    expect(names).toEqual(['Two', 'Greatest people']);
    mine.collections.forEach(expectCollection);
    expect((await call(bob, 'GET', `/api/v1/accounts/${carol.id}/in_collections`)).statusCode).toBe(403);
    expect((await call(null, 'GET', `/api/v1/accounts/${carol.id}/in_collections`)).statusCode).toBe(401);
  });

  it('revoking takes one out of a collection (only the featured account may)', async () => {
    const two = (await ok(carol, 'GET', `/api/v1/accounts/${carol.id}/in_collections`)).collections[0];
    const item = two.items.find((i: Json) => i.account_id === carol.id);
    expect((await call(dave, 'POST', `/api/v1/collections/${two.id}/items/${item.id}/revoke`)).statusCode).toBe(403);
    expect((await call(carol, 'POST', `/api/v1/collections/${two.id}/items/${item.id}/revoke`)).statusCode).toBe(200);
    const after = (await ok(null, 'GET', `/api/v1/collections/${two.id}`)).collection;
    expect(after.items).toEqual([]);
    expect((await ok(carol, 'GET', `/api/v1/accounts/${carol.id}/in_collections`)).collections.map((x: Json) => x.name)).toEqual(['Greatest people']);
  });

  it('blocks: a blocked viewer gets no list and a 403 for a collection; a blocked account cannot be added', async () => {
    const c = (await ok(bob, 'POST', '/api/v1/collections', { name: 'Bob picks', sensitive: false, discoverable: true })).collection;
    await ok(bob, 'POST', `/api/v1/accounts/${dave.id}/block`);
    expect((await ok(dave, 'GET', `/api/v1/accounts/${bob.id}/collections`)).collections).toEqual([]);
    expect((await call(dave, 'GET', `/api/v1/collections/${c.id}`)).statusCode).toBe(403);
    const res = await call(bob, 'POST', `/api/v1/collections/${c.id}/items`, { account_id: dave.id });
    expect(res.statusCode).toBe(403);
    expect(await notificationsOf(dave, 'added_to_collection')).toHaveLength(0);
    await ok(bob, 'POST', `/api/v1/accounts/${dave.id}/unblock`);
  });
});

describe('errors', () => {
  it('422 on invalid fields, with details, and nothing written', async () => {
    const before = [await count('collections'), await count('collection_items'), await count('notifications')];
    const cases: [object, string[]][] = [
      [{ sensitive: false, discoverable: true }, ['name']],
      [{ name: 'x'.repeat(41), sensitive: false, discoverable: true }, ['name']],
      [{ name: 'ok', description: 'd'.repeat(101), sensitive: false, discoverable: true }, ['description']],
      [{ name: 'ok', language: 'zz-nope', sensitive: false, discoverable: true }, ['language']],
      [{ name: 'ok' }, ['discoverable', 'sensitive']],
      [{ name: 'ok', sensitive: false, discoverable: true, tag_name: 'not a tag!' }, ['tag_name']],
      [{ name: 'ok', sensitive: false, discoverable: true, account_ids: Array.from({ length: 26 }, (_, i) => String(1000 + i)) }, ['collection_items']],
    ];
    for (const [payload, fields] of cases) {
      const res = await call(alice, 'POST', '/api/v1/collections', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error).toMatch(/^Validation failed: /);
      expect(Object.keys(res.json().details).sort()).toEqual(fields);
    }
    // An account that may not be featured: 403; unknown: 404. Neither writes anything.
    expect((await call(alice, 'POST', '/api/v1/collections', { name: 'ok', sensitive: false, discoverable: true, account_ids: [bob.id, erin.id] })).statusCode).toBe(403);
    expect((await call(alice, 'POST', '/api/v1/collections', { name: 'ok', sensitive: false, discoverable: true, account_ids: [bob.id, '424242'] })).statusCode).toBe(404);
    expect([await count('collections'), await count('collection_items'), await count('notifications')]).toEqual(before);

    const mine = (await ok(alice, 'GET', `/api/v1/accounts/${alice.id}/collections`)).collections[0];
    const bad = await call(alice, 'PATCH', `/api/v1/collections/${mine.id}`, { name: '' });
    expect(bad.statusCode).toBe(422);
    expect((await ok(alice, 'GET', `/api/v1/collections/${mine.id}`)).collection.name).toBe(mine.name);
    expect((await call(alice, 'POST', `/api/v1/collections/${mine.id}/items`, {})).json()).toEqual({ error: '`account_id` parameter is missing' });
    expect((await call(alice, 'POST', `/api/v1/collections/${mine.id}/items`, { account_id: erin.id })).statusCode).toBe(403);
  });

  it('at most 25 accounts in a collection, and a limit of collections per account', async () => {
    const c = (await ok(erin, 'POST', '/api/v1/collections', { name: 'Full', sensitive: false, discoverable: true })).collection;
    // 25 remote accounts already in it (made here directly: remote accounts cannot be added through the API yet).
    await s.ctx.db.query(
      `WITH a AS (INSERT INTO accounts (username, domain) SELECT 'filler' || g, 'remote.example' FROM generate_series(1, 25) g RETURNING id)
       INSERT INTO collection_items (collection_id, account_id, state, position) SELECT $1, id, 'accepted', row_number() OVER (ORDER BY id) FROM a`,
      [c.id],
    );
    const before = await count('collection_items');
    const full = await call(erin, 'POST', `/api/v1/collections/${c.id}/items`, { account_id: alice.id });
    expect(full.statusCode).toBe(422);
    expect(Object.keys(full.json().details)).toEqual(['collection_items']);
    expect(await count('collection_items')).toBe(before);
    expect(await notificationsOf(alice, 'added_to_collection')).toHaveLength(0);

    for (let i = 1; i < 10; i++) await ok(erin, 'POST', '/api/v1/collections', { name: `n${i}`, sensitive: false, discoverable: false });
    const over = await call(erin, 'POST', '/api/v1/collections', { name: 'eleventh', sensitive: false, discoverable: false });
    expect(over.statusCode).toBe(422);
    expect((await ok(erin, 'GET', `/api/v1/accounts/${erin.id}/collections`)).collections).toHaveLength(10);
  });

  it('404 for unknown collections and items; 403 for changing others\' collections', async () => {
    expect((await call(alice, 'GET', '/api/v1/collections/123456789')).statusCode).toBe(404);
    expect((await call(alice, 'GET', '/api/v1/collections/nope')).statusCode).toBe(404);
    expect((await call(alice, 'PATCH', '/api/v1/collections/123456789', { name: 'x' })).statusCode).toBe(404);
    expect((await call(alice, 'DELETE', '/api/v1/collections/123456789')).statusCode).toBe(404);
    const mine = (await ok(alice, 'GET', `/api/v1/accounts/${alice.id}/collections`)).collections[0];
    expect((await call(bob, 'PATCH', `/api/v1/collections/${mine.id}`, { name: 'mine now' })).statusCode).toBe(403);
    expect((await call(bob, 'POST', `/api/v1/collections/${mine.id}/items`, { account_id: dave.id })).statusCode).toBe(403);
    expect((await call(bob, 'DELETE', `/api/v1/collections/${mine.id}/items/${mine.items[0].id}`)).statusCode).toBe(403);
    expect((await call(alice, 'DELETE', `/api/v1/collections/${mine.id}/items/123456789`)).statusCode).toBe(404);
    expect((await call(alice, 'POST', `/api/v1/collections/${mine.id}/items`, { account_id: '123456789' })).statusCode).toBe(404);
  });

  it('401 without a token for writes, 403 without the collections scopes', async () => {
    expect((await call(null, 'POST', '/api/v1/collections', { name: 'x', sensitive: false, discoverable: true })).statusCode).toBe(401);
    const client = await createApp(s.app);
    const narrow = await registerUser(s.app, client, 'frank', 'read:accounts write:accounts');
    expect((await call(narrow, 'POST', '/api/v1/collections', { name: 'x', sensitive: false, discoverable: true })).statusCode).toBe(403);
    expect((await call(narrow, 'GET', `/api/v1/accounts/${alice.id}/collections`)).statusCode).toBe(403);
    const granular = await registerUser(s.app, client, 'grace', 'read:collections write:collections');
    expect((await call(granular, 'POST', '/api/v1/collections', { name: 'x', sensitive: false, discoverable: true })).statusCode).toBe(200);
    expect((await call(granular, 'GET', `/api/v1/accounts/${granular.id}/in_collections`)).statusCode).toBe(200);
  });
});
