import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { expectEntity } from '../helpers/schema.ts';
import { healthOf } from '../../federation/health.ts';
import { listServerHealth } from '../../storage/federation-health.ts';

// A thread of another server with holes in it, served by a strict peer (signed GETs only): opening it through the API
// fetches its missing parent and its replies in the background, as Mastodon 4.4+ does, and says so in a
// Mastodon-Async-Refresh header whose refresh the client polls. Replies come from `replies` collections as Mastodon
// (a Collection whose inlined first page has the author's own replies, the others' on the next page) and GoToSocial
// (an OrderedCollection whose first page is named by id) serve them.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let hal: string;
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
const MAX_PAGES = 6;
const HOUR_AGO = new Date(Date.now() - 3600_000).toISOString();

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance({ FETCH_REPLIES_MAX_PAGES: String(MAX_PAGES), FETCH_REPLIES_MAX_SINGLE: '20' }), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  [gus, hal] = await Promise.all([peer.addActor('gus'), peer.addActor('hal')]);
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

const get = (url: string, token: string | null = alice.token) => ours.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
/** A public Note by `author` (gus or hal), served by the peer; `extra` adds or overrides fields. */
const note = (author: string, path: string, text: string, extra: Json = {}): Json => {
  const actor = author === 'gus' ? gus : hal;
  const object = { '@context': AS, id: `${actor}/statuses/${path}`, type: 'Note', attributedTo: actor, content: `<p>${text}</p>`, published: HOUR_AGO, to: [PUBLIC], cc: [`${actor}/followers`], ...extra };
  peer.publish(author, object);
  return object;
};
/** A remote status here, found (and fetched, signed as alice) by searching for its id. */
const resolve = async (uri: string): Promise<Json> => {
  const res = await get(`/api/v2/search?q=${encodeURIComponent(uri)}&resolve=true&type=statuses`);
  const found = res.json().statuses as Json[];
  expect(found.map((s) => s.uri)).toEqual([uri]);
  return found[0]!;
};
/** The context, and the refresh its header names (null when none). */
const context = async (id: string, token: string | null = alice.token) => {
  const res = await get(`/api/v1/statuses/${id}/context`, token);
  expect(res.statusCode).toBe(200);
  const header = res.headers['mastodon-async-refresh'];
  const m = typeof header === 'string' ? /^id="([^"]+)", retry=(\d+), result_count=(\d+)$/.exec(header) : null;
  if (header !== undefined) expect(m, String(header)).not.toBeNull();
  return { body: res.json() as { ancestors: Json[]; descendants: Json[] }, refresh: m ? { id: m[1]!, retry: Number(m[2]), resultCount: Number(m[3]) } : null };
};
const finished = (id: string) => until(async () => {
  const res = await get(`/api/v1_alpha/async_refreshes/${id}`);
  expect(res.statusCode).toBe(200);
  return res.json() as Json;
}, (r) => r.async_refresh.status === 'finished', `refresh ${id} finished`, 30_000);
const getsOf = (path: string) => peer.gets.filter((g) => g.path === new URL(path).pathname).length;

describe('opening a remote thread', () => {
  it('fetches its missing parent and the replies on both pages of its collection, and its replies\' replies', async () => {
    const a = note('gus', 'a', 'the start');
    const b = note('gus', 'b', 'a reply to the start', { inReplyTo: a.id });
    const c = note('gus', 'c', 'the post opened', {
      inReplyTo: b.id,
      // Mastodon's shape: the author's own replies inlined on a first page without an id, others' on the next.
      replies: { id: `${gus}/statuses/c/replies`, type: 'Collection', first: {
        type: 'CollectionPage', partOf: `${gus}/statuses/c/replies`, next: `${gus}/statuses/c/replies/others`,
        items: [{ id: `${gus}/statuses/d`, type: 'Note' }] } },
    });
    note('gus', 'd', 'gus answers himself', { inReplyTo: c.id, replies: `${gus}/statuses/d/replies` });
    // GoToSocial's shape: an OrderedCollection whose first page is named by id.
    peer.publish('gus', { '@context': AS, id: `${gus}/statuses/d/replies`, type: 'OrderedCollection', totalItems: 1, first: `${gus}/statuses/d/replies/page` });
    peer.publish('gus', { '@context': AS, id: `${gus}/statuses/d/replies/page`, type: 'OrderedCollectionPage', partOf: `${gus}/statuses/d/replies`, orderedItems: [`${hal}/statuses/g`] });
    note('hal', 'e', 'hal answers', { inReplyTo: c.id });
    note('hal', 'g', 'hal answers gus\'s answer', { inReplyTo: `${gus}/statuses/d` });
    // Followers-only: fetched and kept, but alice does not follow hal, so her context does not show it.
    note('hal', 'h', 'for hal\'s followers only', { inReplyTo: c.id, to: [`${hal}/followers`], cc: [] });
    peer.publish('gus', { '@context': AS, id: `${gus}/statuses/c/replies/others`, type: 'CollectionPage', partOf: `${gus}/statuses/c/replies`, items: [`${hal}/statuses/e`, `${hal}/statuses/h`] });

    const opened = await resolve(String(c.id));
    // Fetching c brought its parent b, but not b's parent a: the hole.
    const before = await context(opened.id);
    expect(before.body.ancestors.map((s) => s.uri)).toEqual([b.id]);
    expect(before.body.descendants).toEqual([]);
    expect(before.refresh).toMatchObject({ retry: 3, resultCount: 0 });

    const done = await finished(before.refresh!.id);
    expectEntity('AsyncRefresh', done.async_refresh);
    expect(done).toEqual({ async_refresh: { id: before.refresh!.id, status: 'finished', result_count: 5 } }); // a, d, e, g, h

    const after = await context(opened.id);
    expect(after.body.ancestors.map((s) => s.uri)).toEqual([a.id, b.id]);
    const [aHere, bHere] = after.body.ancestors as [Json, Json];
    expect(bHere.in_reply_to_id).toBe(aHere.id);
    // Depth first, oldest first at each level; h is not alice's to see, though it is here.
    expect(after.body.descendants.map((s) => s.content)).toEqual(['<p>gus answers himself</p>', '<p>hal answers gus\'s answer</p>', '<p>hal answers</p>']);
    const { rows: [h] } = await ours.ctx.db.query(`SELECT visibility FROM statuses WHERE uri = $1`, [`${hal}/statuses/h`]);
    expect(h).toEqual({ visibility: 'private' });
    expect(after.refresh).toBeNull(); // fetched a moment ago: in its cooldown
    // Every fetch was signed (the peer answers nothing else), and each page was read once.
    expect(peer.gets.filter((g) => g.path.startsWith('/users/') && g.status === 401)).toEqual([]);
    expect(getsOf(`${gus}/statuses/c/replies/others`)).toBe(1);
    expect(getsOf(`${gus}/statuses/d/replies/page`)).toBe(1);
    // A reply is fetched once, to be stored and read for its own replies.
    for (const reply of [`${gus}/statuses/d`, `${hal}/statuses/e`, `${hal}/statuses/g`, `${hal}/statuses/h`]) expect(getsOf(reply), reply).toBe(1);
    // The parent's reply count moved with the join.
    expect((await get(`/api/v1/statuses/${bHere.id}`)).json().replies_count).toBe(1);
  });

  it('fetches again only after the cooldown, and only for someone signed in, and not a post just made', async () => {
    const root = note('gus', 'cool', 'cooling down', { replies: { id: `${gus}/statuses/cool/replies`, type: 'Collection', first: { type: 'CollectionPage', partOf: `${gus}/statuses/cool/replies`, items: [] } } });
    const opened = await resolve(String(root.id));
    // Signed out: the thread as it is, nothing fetched.
    expect((await context(opened.id, null)).refresh).toBeNull();
    const first = await context(opened.id);
    expect((await finished(first.refresh!.id)).async_refresh.result_count).toBe(0);
    const fetches = getsOf(String(root.id));
    expect((await context(opened.id)).refresh).toBeNull();
    expect(getsOf(String(root.id))).toBe(fetches);

    // A reply appears meanwhile; once FETCH_REPLIES_COOLDOWN_MINUTES (15) have passed, opening the thread finds it.
    note('hal', 'late', 'a late answer', { inReplyTo: root.id });
    note('gus', 'cool', 'cooling down', { replies: { id: `${gus}/statuses/cool/replies`, type: 'Collection', first: { type: 'CollectionPage', partOf: `${gus}/statuses/cool/replies`, items: [`${hal}/statuses/late`] } } });
    await ours.ctx.db.query(`UPDATE status_reply_fetches SET fetched_at = now() - interval '16 minutes' WHERE status_id = $1`, [opened.id]);
    const again = await context(opened.id);
    expect(again.refresh).not.toBeNull();
    expect(again.refresh!.id).not.toBe(first.refresh!.id);
    expect((await finished(again.refresh!.id)).async_refresh.result_count).toBe(1);
    expect((await context(opened.id)).body.descendants.map((s) => s.content)).toEqual(['<p>a late answer</p>']);

    // A post published a minute ago waits FETCH_REPLIES_INITIAL_WAIT_MINUTES (5) before its replies are fetched.
    const fresh = note('gus', 'fresh', 'just now', { published: new Date(Date.now() - 60_000).toISOString() });
    expect((await context((await resolve(String(fresh.id))).id)).refresh).toBeNull();
    // A local post: its thread is all here.
    const local = await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'mine' } });
    expect((await context(local.json().id)).refresh).toBeNull();
  });

  it('stops at a collection that loops back to a page it has read', async () => {
    const root = note('gus', 'loop', 'round and round', { replies: { id: `${gus}/statuses/loop/replies`, type: 'Collection', first: `${gus}/statuses/loop/replies/1` } });
    peer.publish('gus', { '@context': AS, id: `${gus}/statuses/loop/replies/1`, type: 'CollectionPage', next: `${gus}/statuses/loop/replies/2`, items: [`${hal}/statuses/loop-1`] });
    peer.publish('gus', { '@context': AS, id: `${gus}/statuses/loop/replies/2`, type: 'CollectionPage', next: `${gus}/statuses/loop/replies/1`, items: [`${hal}/statuses/loop-2`] });
    note('hal', 'loop-1', 'first time round', { inReplyTo: root.id });
    note('hal', 'loop-2', 'second time round', { inReplyTo: root.id });
    const opened = await resolve(String(root.id));
    const { refresh } = await context(opened.id);
    expect((await finished(refresh!.id)).async_refresh.result_count).toBe(2);
    expect(getsOf(`${gus}/statuses/loop/replies/1`)).toBe(1);
    expect(getsOf(`${gus}/statuses/loop/replies/2`)).toBe(1);
    expect((await context(opened.id)).body.descendants).toHaveLength(2);
  });

  it(`reads at most FETCH_REPLIES_MAX_PAGES (${MAX_PAGES}) pages of a collection that never ends`, async () => {
    const PAGES = 30;
    const root = note('gus', 'endless', 'and so on', { replies: { id: `${gus}/statuses/endless/replies`, type: 'Collection', first: `${gus}/statuses/endless/replies/1` } });
    for (let i = 1; i <= PAGES; i++) {
      peer.publish('gus', { '@context': AS, id: `${gus}/statuses/endless/replies/${i}`, type: 'CollectionPage', next: `${gus}/statuses/endless/replies/${i + 1}`, items: [`${hal}/statuses/endless-${i}`] });
      note('hal', `endless-${i}`, `answer ${i}`, { inReplyTo: root.id });
    }
    const opened = await resolve(String(root.id));
    const { refresh } = await context(opened.id);
    expect((await finished(refresh!.id)).async_refresh.result_count).toBe(MAX_PAGES);
    const pagesRead = peer.gets.filter((g) => g.path.startsWith('/users/gus/statuses/endless/replies/')).length;
    expect(pagesRead).toBe(MAX_PAGES);
    expect((await context(opened.id)).body.descendants).toHaveLength(MAX_PAGES);
  });

  it('answers 404 for a refresh it does not know, and only to a token with read', async () => {
    expect((await get('/api/v1_alpha/async_refreshes/AAAAAAAAAAAAAAAAAAAAAA')).statusCode).toBe(404);
    expect((await get('/api/v1_alpha/async_refreshes/not-an-id')).statusCode).toBe(404);
    expect((await get('/api/v1_alpha/async_refreshes/AAAAAAAAAAAAAAAAAAAAAA', null)).statusCode).toBe(401);
  });
});

describe('without ALLOW_PRIVATE_ADDRESSES', () => {
  it('fetches nothing of a thread whose posts are on a private address', async () => {
    const strict = await startHttpsInstance({ ALLOW_PRIVATE_ADDRESSES: 'false' });
    try {
      const [bea] = await registerUsers(strict.app, 'bea');
      // The peer listens on loopback; its post is here already (as if it had come in before), with a reply listed.
      const root = note('gus', 'private', 'on loopback', { replies: { id: `${gus}/statuses/private/replies`, type: 'Collection', first: { type: 'CollectionPage', items: [`${hal}/statuses/private-reply`] } } });
      note('hal', 'private-reply', 'never fetched', { inReplyTo: root.id });
      const { rows: [account] } = await strict.ctx.db.query<{ id: string }>(
        `INSERT INTO accounts (username, domain, uri, inbox_url) VALUES ('gus', $1, $2, $3) RETURNING id`, [peer.domain, gus, `${gus}/inbox`]);
      const { rows: [status] } = await strict.ctx.db.query<{ id: string }>(
        `INSERT INTO statuses (account_id, uri, content, visibility, created_at) VALUES ($1, $2, '<p>on loopback</p>', 'public', now() - interval '1 hour') RETURNING id`,
        [account!.id, root.id]);
      const before = peer.gets.length;
      const res = await strict.app.inject({ method: 'GET', url: `/api/v1/statuses/${status!.id}/context`, headers: bearer(bea.token) });
      const id = /id="([^"]+)"/.exec(String(res.headers['mastodon-async-refresh']))![1]!;
      const done = await until(async () => (await strict.app.inject({ method: 'GET', url: `/api/v1_alpha/async_refreshes/${id}`, headers: bearer(bea.token) })).json() as Json,
        (r) => r.async_refresh.status === 'finished', 'refresh finished', 30_000);
      expect(done.async_refresh.result_count).toBe(0);
      expect(peer.gets.slice(before)).toEqual([]);
      // Refused for its address, as the servers table says.
      await healthOf(strict.ctx).flush();
      const server = (await listServerHealth(strict.ctx.db)).find((s) => s.host === peer.domain);
      expect(server).toMatchObject({ last_failure_url: root.id });
      expect(server!.last_failure_detail).toMatch(/not allowed/i); // Fedify's SSRF guard: "Localhost is not allowed"
    } finally {
      await strict.close();
    }
  });
});
