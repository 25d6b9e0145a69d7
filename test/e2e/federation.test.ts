import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { signRequest } from '@fedify/fedify';
import { rsaKeyPair } from '../helpers/strict-peer.ts';
import { Temporal } from '@js-temporal/polyfill';
import { findStatusByUri } from '../../storage/statuses.ts';
import sharp from 'sharp';
import { multipart } from '../helpers/multipart.ts';
import { startTestServer } from '../helpers/server.ts';
import WebSocket from 'ws';

// Two instances of this server (one in authorized-fetch mode) with different domains, separate databases and Redis prefixes, federating over
// real https on loopback. Every step is observed through each side's Mastodon API.
let a: Instance;
let b: Instance;
let alice: TestUser; // on a
let bob: TestUser; // on b
let carol: TestUser; // on b, locked

beforeAll(async () => {
  // b runs in authorized-fetch mode (Mastodon's secure mode): a must sign every GET it makes of b.
  [a, b] = await Promise.all([startHttpsInstance(), startHttpsInstance({ AUTHORIZED_FETCH: 'true' })]);
  [[alice], [bob, carol]] = await Promise.all([registerUsers(a.app, 'alice'), registerUsers(b.app, 'bob', 'carol')]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (on: Instance, user: TestUser | null, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await on.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};

describe('two servers federating', () => {
  let bobOnA: Json; // bob as alice's server knows him
  let postOnB: Json; // bob's status, on b
  let postOnA: Json; // the same status, as a received it

  it('finds a remote account by its handle (WebFinger over https) and follows it', async () => {
    const found = await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=bob@${b.domain}`);
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expectEntity('Account', found.body);
    expect(found.body).toMatchObject({ username: 'bob', acct: `bob@${b.domain}`, url: `${b.url}/@bob` });
    bobOnA = found.body;

    const follow = await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/follow`);
    expect(follow.status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${bobOnA.id}`)).body[0], (r) => r.following === true, 'a: alice follows bob');
    const followers = await until(async () => (await api(b, bob, 'GET', `/api/v1/accounts/${bob.id}/followers`)).body as Json[], (l) => l.length === 1, 'b: bob has a follower');
    expect(followers[0]).toMatchObject({ acct: `alice@${a.domain}` });
  });

  it('in authorized-fetch mode, refuses unsigned GETs of actors, collections and posts but serves its instance actor', async () => {
    const get = (url: string) => fetch(url, { headers: { accept: 'application/activity+json' } });
    expect((await get(`${b.url}/users/bob`)).status).toBe(401);
    expect((await get(`${b.url}/users/bob/outbox`)).status).toBe(401);
    expect((await get(`${a.url}/users/alice`)).status).toBe(200);
    const instance = await get(`${b.url}/users/instance.actor`);
    expect(instance.status).toBe(200);
    expect(await instance.json()).toMatchObject({ type: 'Application', preferredUsername: 'localhost' });
    // WebFinger stays open, and the domain's own handle names the instance actor.
    const jrd = await (await fetch(`${b.url}/.well-known/webfinger?resource=${encodeURIComponent(`acct:${b.domain}@${b.domain}`)}`)).json() as Json;
    expect(jrd.links).toContainEqual(expect.objectContaining({ rel: 'self', href: `${b.url}/users/instance.actor` }));
  });

  it('delivers a post to the follower\'s home timeline', async () => {
    postOnB = (await api(b, bob, 'POST', '/api/v1/statuses', { status: `Hello from b, @alice@${a.domain} #federation`, visibility: 'public' })).body;
    const home = await until(async () => (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === postOnB.uri), 'a: bob\'s post in alice\'s home');
    postOnA = home.find((s) => s.uri === postOnB.uri)!;
    expectEntity('Status', postOnA);
    expect(postOnA).toMatchObject({ account: { acct: `bob@${b.domain}` }, visibility: 'public' });
    expect(postOnA.content).toContain('Hello from b');
    const mentions = await api(a, alice, 'GET', '/api/v1/notifications?types[]=mention');
    expect(mentions.body.some((n: Json) => n.status?.uri === postOnB.uri)).toBe(true);
  });

  it('threads a reply on both sides, and carries favourites and reblogs back', async () => {
    const reply = (await api(a, alice, 'POST', '/api/v1/statuses', { status: `@bob@${b.domain} hello back`, in_reply_to_id: postOnA.id })).body;
    expect(reply.in_reply_to_id).toBe(postOnA.id);
    const contextOnB = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${postOnB.id}/context`)).body, (c) => c.descendants?.length === 1, 'b: the reply in context');
    expect(contextOnB.descendants[0]).toMatchObject({ uri: reply.uri, in_reply_to_id: postOnB.id, account: { acct: `alice@${a.domain}` } });
    const contextOnA = (await api(a, alice, 'GET', `/api/v1/statuses/${postOnA.id}/context`)).body;
    expect(contextOnA.descendants.map((s: Json) => s.id)).toEqual([reply.id]);

    expect((await api(a, alice, 'POST', `/api/v1/statuses/${postOnA.id}/favourite`)).status).toBe(200);
    expect((await api(a, alice, 'POST', `/api/v1/statuses/${postOnA.id}/reblog`)).status).toBe(200);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${postOnB.id}`)).body, (s) => s.favourites_count === 1 && s.reblogs_count === 1 && s.replies_count === 1, 'b: counts');
    const kinds = (await api(b, bob, 'GET', '/api/v1/notifications')).body.map((n: Json) => n.type);
    expect(kinds).toEqual(expect.arrayContaining(['favourite', 'reblog', 'mention', 'follow']));
  });

  it('takes a deleted status away on the other side', async () => {
    expect((await api(b, bob, 'DELETE', `/api/v1/statuses/${postOnB.id}`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/statuses/${postOnA.id}`)).status, (s) => s === 404, 'a: the status is gone');
    const home = (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[];
    expect(home.some((s) => s.uri === postOnB.uri || s.reblog?.uri === postOnB.uri)).toBe(false);
  });

  it('streams a post received through the inbox to a local follower\'s socket, and its deletion', async () => {
    // alice (on a) follows bob (on b): her WebSocket on a hears of what bob's server delivers.
    const socket = new WebSocket(`${a.url.replace('https', 'wss')}/api/v1/streaming?stream=user`, [alice.token]);
    const messages: Json[] = [];
    socket.on('message', (d) => messages.push(JSON.parse(String(d)) as Json));
    await new Promise<void>((resolve, reject) => { socket.once('open', () => resolve()); socket.once('error', reject); });
    await new Promise((r) => setTimeout(r, 200));
    try {
      const posted = (await api(b, bob, 'POST', '/api/v1/statuses', { status: 'streamed across servers' })).body;
      const update = await until(async () => messages.find((m) => m.event === 'update' && JSON.parse(m.payload).uri === posted.uri), (m) => m !== undefined, 'a: the update on alice\'s socket');
      const status = JSON.parse(update!.payload) as Json;
      expectEntity('Status', status);
      expect(status.account.acct).toBe(`bob@${b.domain}`);
      await api(b, bob, 'DELETE', `/api/v1/statuses/${posted.id}`);
      await until(async () => messages.find((m) => m.event === 'delete' && m.payload === status.id), (m) => m !== undefined, 'a: the delete on alice\'s socket');
    } finally {
      socket.close();
    }
  });

  it('follows a locked account by request, accepted when its owner authorizes', async () => {
    expect((await api(b, carol, 'PATCH', '/api/v1/accounts/update_credentials', { locked: true })).status).toBe(200);
    const carolOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=carol@${b.domain}`)).body;
    expect(carolOnA.locked).toBe(true);
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${carolOnA.id}/follow`)).body).toMatchObject({ following: false, requested: true });
    const requests = await until(async () => (await api(b, carol, 'GET', '/api/v1/follow_requests')).body as Json[], (l) => l.length === 1, 'b: carol has a request');
    expect(requests[0]).toMatchObject({ acct: `alice@${a.domain}` });
    expect((await api(b, carol, 'POST', `/api/v1/follow_requests/${requests[0]!.id}/authorize`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${carolOnA.id}`)).body[0], (r) => r.following === true && r.requested === false, 'a: alice follows carol');
  });

  it('shows a profile update on the other side, new avatar included', async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#3a6' } }).png().toBuffer();
    const form = await multipart({ display_name: 'Bob of B', note: 'Now with a bio', avatar: { data: png, filename: 'me.png', type: 'image/png' } });
    const patched = await b.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { ...bearer(bob.token), ...form.headers }, payload: form.payload });
    expect(patched.statusCode, patched.body).toBe(200);
    const avatarOnB = patched.json().avatar as string;
    const updated = await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/${bobOnA.id}`)).body, (acc) => acc.display_name === 'Bob of B', 'a: bob\'s new name');
    expect(updated.note).toContain('Now with a bio');
    // Shown from a's copy of it (readers on a never load b's files), the same picture.
    const copied = await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/${bobOnA.id}`)).body, (acc) => acc.avatar.startsWith(`${a.url}/system/`), "a: bob's avatar copied");
    const [mine, theirs] = await Promise.all([copied.avatar, avatarOnB].map(async (url: string) => sharp(Buffer.from(await (await fetch(url)).arrayBuffer())).raw().toBuffer()));
    expect(mine!.equals(theirs!)).toBe(true);
  });

  it('resolves a mention of an account it has never seen, and the mentioned one is told', async () => {
    const [erin] = await registerUsers(b.app, 'erin');
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: `hello @erin@${b.domain}, nice to meet you` })).body;
    expect(post.mentions).toEqual([expect.objectContaining({ acct: `erin@${b.domain}`, username: 'erin' })]);
    expect(post.content).toContain(`${b.url}/@erin`);
    const note = await until(async () => (await api(b, erin!, 'GET', '/api/v1/notifications?types[]=mention')).body as Json[], (l) => l.length === 1, 'b: erin is mentioned');
    expect(note[0]!.status.uri).toBe(post.uri);
  });

  it('takes back favourites and reblogs, and a rejected follow leaves nothing', async () => {
    // bob's posts reach a while someone there follows him: alice (who unfollowed) follows again.
    await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/follow`);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${bobOnA.id}`)).body[0], (r) => r.following === true, 'a: alice follows bob again');
    const post2 = (await api(b, bob, 'POST', '/api/v1/statuses', { status: 'take it back, really' })).body;
    const home = await until(async () => (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((x) => x.uri === post2.uri), 'a: bob\'s post');
    const mine = home.find((x) => x.uri === post2.uri)!;
    await api(a, alice, 'POST', `/api/v1/statuses/${mine.id}/favourite`);
    await api(a, alice, 'POST', `/api/v1/statuses/${mine.id}/reblog`);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${post2.id}`)).body, (x) => x.favourites_count === 1 && x.reblogs_count === 1, 'b: counted');
    await api(a, alice, 'POST', `/api/v1/statuses/${mine.id}/unfavourite`);
    await api(a, alice, 'POST', `/api/v1/statuses/${mine.id}/unreblog`);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${post2.id}`)).body, (x) => x.favourites_count === 0 && x.reblogs_count === 0, 'b: taken back');

    // A locked account's owner rejects: a's request is gone, and b has no follower.
    const [gil] = await registerUsers(b.app, 'gil');
    await api(b, gil!, 'PATCH', '/api/v1/accounts/update_credentials', { locked: true });
    const gilOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=gil@${b.domain}`)).body;
    await api(a, alice, 'POST', `/api/v1/accounts/${gilOnA.id}/follow`);
    const requests = await until(async () => (await api(b, gil!, 'GET', '/api/v1/follow_requests')).body as Json[], (l) => l.length === 1, 'b: gil has a request');
    expect((await api(b, gil!, 'POST', `/api/v1/follow_requests/${requests[0]!.id}/reject`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${gilOnA.id}`)).body[0], (r) => r.requested === false && r.following === false, 'a: the request is gone');
  });

  it('unfollows across servers', async () => {
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/unfollow`)).status).toBe(200);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/accounts/${bob.id}/followers`)).body as Json[], (l) => l.length === 0, 'b: bob has no followers');
  });
});

describe('boosts', () => {
  it('brings in a boosted post it had never seen, with its author, and shows the boost in home', async () => {
    // alice follows bob (again: the tests above end with an unfollow); hal, whom nobody on a follows, posts; bob boosts.
    const bobOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=bob@${b.domain}`)).body;
    await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/follow`);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${bobOnA.id}`)).body[0], (r) => r.following === true, 'a: alice follows bob');
    const [hal] = await registerUsers(b.app, 'hal');
    const post = (await api(b, hal!, 'POST', '/api/v1/statuses', { status: 'nobody on a follows me' })).body;
    expect((await api(b, bob, 'POST', `/api/v1/statuses/${post.id}/reblog`)).status).toBe(200);
    const home = await until(async () => (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((x) => x.reblog?.uri === post.uri), 'a: the boost in alice\'s home');
    const boost = home.find((x) => x.reblog?.uri === post.uri)!;
    expectEntity('Status', boost);
    expect(boost).toMatchObject({ account: { acct: `bob@${b.domain}` }, reblog: { account: { acct: `hal@${b.domain}` }, content: expect.stringContaining('nobody on a follows me') } });
  });
});

describe('inbox security', () => {
  let n = 0;
  // A Create of a Note by bob (on b), addressed publicly in one of the three ways servers write it.
  const createByBob = (publicForm = 'https://www.w3.org/ns/activitystreams#Public', actor = `${b.url}/users/bob`) => {
    n += 1;
    const note = `${b.url}/users/bob/statuses/${9_000_000_000 + n}`;
    return {
      note,
      body: JSON.stringify({
        '@context': 'https://www.w3.org/ns/activitystreams',
        id: `${note}/activity`, type: 'Create', actor, to: [publicForm],
        object: { id: note, type: 'Note', attributedTo: actor, content: `<p>signed test ${n}</p>`, to: [publicForm], published: new Date().toISOString() },
      }),
    };
  };
  const bobsKey = async () => (await b.ctx.keyRing.keyPairs(bob.id))[0]!.privateKey;
  const keyId = () => new URL(`${b.url}/users/bob#main-key`);
  const inboxRequest = (body: string) => new Request(`${a.url}/inbox`, { method: 'POST', body, headers: { 'content-type': 'application/activity+json', accept: 'application/activity+json' } });
  const stored = async (note: string) => (await findStatusByUri(a.ctx.db, note)) !== null;

  it('refuses unsigned, forged, wrong-key, stale and impersonating POSTs with 401, storing nothing', async () => {
    const refused: string[] = [];
    const expect401 = async (what: string, request: Request, note: string) => {
      const res = await fetch(request);
      expect(res.status, `${what}: ${await res.text()}`).toBe(401);
      refused.push(note);
    };

    const unsigned = createByBob();
    await expect401('unsigned', inboxRequest(unsigned.body), unsigned.note);

    const forged = createByBob();
    const signed = await signRequest(inboxRequest(forged.body), await bobsKey(), keyId(), { spec: 'draft-cavage-http-signatures-12' });
    const tampered = forged.body.replace('signed test', 'tampered test');
    await expect401('forged body', new Request(signed.url, { method: 'POST', headers: signed.headers, body: tampered }), forged.note);

    const wrongKey = createByBob();
    const otherKey = (await rsaKeyPair()).privateKey;
    await expect401('wrong key', await signRequest(inboxRequest(wrongKey.body), otherKey, keyId(), { spec: 'draft-cavage-http-signatures-12' }), wrongKey.note);

    const stale = createByBob();
    const twoHoursAgo = Temporal.Now.instant().subtract({ hours: 2 });
    await expect401('stale', await signRequest(inboxRequest(stale.body), await bobsKey(), keyId(), { spec: 'draft-cavage-http-signatures-12', currentTime: twoHoursAgo }), stale.note);

    const impersonating = createByBob(undefined, `${b.url}/users/carol`);
    await expect401('signed by bob as carol', await signRequest(inboxRequest(impersonating.body), await bobsKey(), keyId(), { spec: 'draft-cavage-http-signatures-12' }), impersonating.note);

    // Signed by bob, but naming its Note with a's ids (to take them before a's own post): ignored.
    const squatted = `${a.url}/users/alice/statuses/9999000`;
    const squat = JSON.stringify({
      '@context': 'https://www.w3.org/ns/activitystreams', id: `${squatted}/activity`, type: 'Create', actor: `${b.url}/users/bob`, to: ['as:Public'],
      object: { id: squatted, type: 'Note', attributedTo: `${b.url}/users/bob`, content: '<p>mine now</p>', to: ['as:Public'] },
    });
    expect((await fetch(await signRequest(inboxRequest(squat), await bobsKey(), keyId(), { spec: 'draft-cavage-http-signatures-12' }))).status).toBe(202);
    refused.push(squatted);

    // The control: the same kind of request, properly signed (draft-cavage as Mastodon sends, and RFC 9421), is stored.
    const cavage = createByBob('as:Public');
    const rfc9421 = createByBob('Public');
    for (const [ok, spec] of [[cavage, 'draft-cavage-http-signatures-12'], [rfc9421, 'rfc9421']] as const) {
      const res = await fetch(await signRequest(inboxRequest(ok.body), await bobsKey(), keyId(), { spec }));
      expect(res.status, `${spec}: ${await res.text()}`).toBe(202);
    }
    await until(async () => (await stored(cavage.note)) && (await stored(rfc9421.note)), (v) => v, 'a: the signed notes stored');
    for (const note of refused) expect(await stored(note), note).toBe(false);

    // `as:Public` and `Public` both mean public: the notes are on a's public timeline.
    const publicIds = ((await api(a, null, 'GET', '/api/v1/timelines/public?remote=true')).body as Json[]).map((s) => s.uri);
    expect(publicIds).toEqual(expect.arrayContaining([cavage.note, rfc9421.note]));

    // The same activity again has no second effect.
    const again = await fetch(await signRequest(inboxRequest(cavage.body), await bobsKey(), keyId(), { spec: 'draft-cavage-http-signatures-12' }));
    expect([202, 200]).toContain(again.status);
    await new Promise((r) => setTimeout(r, 300));
    const { rows } = await a.ctx.db.query('SELECT count(*)::int AS n FROM statuses WHERE uri = $1', [cavage.note]);
    expect(rows[0].n).toBe(1);
  });
});

describe('edits and deletions of actors', () => {
  const sign = async (username: string, activity: object) => {
    const instance = username === 'bob' ? bob : carol;
    const key = (await b.ctx.keyRing.keyPairs(instance.id))[0]!.privateKey;
    const request = new Request(`${a.url}/inbox`, { method: 'POST', body: JSON.stringify(activity), headers: { 'content-type': 'application/activity+json' } });
    return signRequest(request, key, new URL(`${b.url}/users/${username}#main-key`), { spec: 'draft-cavage-http-signatures-12' });
  };

  it('applies an Update of a Note as an edit, only from its author', async () => {
    const bobNote = (await a.ctx.db.query(`SELECT s.id, s.uri FROM statuses s JOIN accounts a ON a.id = s.account_id WHERE a.username = 'bob' AND s.uri LIKE '%/statuses/9%' AND s.deleted_at IS NULL LIMIT 1`)).rows[0];
    expect(bobNote).toBeDefined();
    const update = (actor: string, content: string) => ({
      '@context': 'https://www.w3.org/ns/activitystreams', id: `${b.url}/users/${actor}#updates/${Date.now()}`, type: 'Update', actor: `${b.url}/users/${actor}`,
      object: { id: bobNote.uri, type: 'Note', attributedTo: `${b.url}/users/bob`, content, updated: new Date().toISOString(), to: ['https://www.w3.org/ns/activitystreams#Public'] },
    });
    // carol signs an Update of bob's note: accepted by the inbox (her signature is hers) but changes nothing.
    expect((await fetch(await sign('carol', update('carol', '<p>not yours</p>')))).status).toBe(202);
    expect((await fetch(await sign('bob', update('bob', '<p>edited <script>alert(1)</script>text</p>')))).status).toBe(202);
    const edited = await until(async () => (await api(a, alice, 'GET', `/api/v1/statuses/${bobNote.id}`)).body, (x) => typeof x.content === 'string' && x.content.includes('edited'), 'a: the edit');
    expect(edited.content).not.toContain('<script>');
    expect(edited.content).not.toContain('not yours');
    expect(edited.edited_at).toEqual(expect.any(String));
  });

  it('takes pushed posts only from actors followed here, or when they mention or answer someone here', async () => {
    const carolOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=carol@${b.domain}`)).body;
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${carolOnA.id}/unfollow`)).body).toMatchObject({ following: false });
    const alicePost = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'anyone there?' })).body;
    let n = 0;
    const create = (extra: Record<string, unknown>) => {
      const id = `${b.url}/users/carol/statuses/77${Date.now()}${n++}`;
      return {
        uri: id,
        activity: {
          '@context': 'https://www.w3.org/ns/activitystreams', id: `${id}/activity`, type: 'Create', actor: `${b.url}/users/carol`, to: ['https://www.w3.org/ns/activitystreams#Public'],
          object: { id, type: 'Note', attributedTo: `${b.url}/users/carol`, content: '<p>pushed</p>', to: ['https://www.w3.org/ns/activitystreams#Public'], ...extra },
        },
      };
    };
    const unsolicited = create({});
    const mentioning = create({ tag: [{ type: 'Mention', href: `${a.url}/users/alice`, name: `@alice@${a.domain}` }] });
    const answering = create({ inReplyTo: `${a.url}/users/alice/statuses/${alicePost.id}` });
    const addressed = create({ cc: [`${a.url}/users/alice`] });
    for (const c of [unsolicited, mentioning, answering, addressed]) expect((await fetch(await sign('carol', c.activity))).status).toBe(202);
    const stored = (uri: string) => findStatusByUri(a.ctx.db, uri).then((x) => x !== null);
    for (const c of [mentioning, answering, addressed]) await until(() => stored(c.uri), (yes) => yes, `a: ${c.uri} stored`);
    // Once a's queue of received activities has nothing ready or running, the unsolicited one was handled too.
    await until(async () => { const d = await a.ctx.federationQueue.getDepth(); return d.queued - (d.delayed ?? 0); }, (x) => x === 0, 'a: inbox queue drained');
    expect(await stored(unsolicited.uri)).toBe(false);
    const local = ((await api(a, null, 'GET', '/api/v1/timelines/public?remote=true&limit=40')).body as Json[]).map((x) => x.uri);
    expect(local).not.toContain(unsolicited.uri);
  });

  it('takes an Accept that names the Follow by its id alone', async () => {
    const carolOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=carol@${b.domain}`)).body;
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${carolOnA.id}/unfollow`)).body).toMatchObject({ following: false });
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${carolOnA.id}/follow`)).body).toMatchObject({ following: false, requested: true });
    const { uri } = (await a.ctx.db.query('SELECT uri FROM follow_requests WHERE account_id = $1 AND target_account_id = $2', [alice.id, carolOnA.id])).rows[0];
    expect(uri).toMatch(/^https:\/\//);
    const accept = (actor: string) => ({ '@context': 'https://www.w3.org/ns/activitystreams', id: `${b.url}/users/${actor}#accepts/${Date.now()}`, type: 'Accept', actor: `${b.url}/users/${actor}`, object: uri });
    // bob may not accept what was asked of carol.
    expect((await fetch(await sign('bob', accept('bob')))).status).toBe(202);
    await new Promise((r) => setTimeout(r, 300));
    expect((await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${carolOnA.id}`)).body[0]).toMatchObject({ following: false, requested: true });
    expect((await fetch(await sign('carol', accept('carol')))).status).toBe(202);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${carolOnA.id}`)).body[0], (r) => r.following === true && r.requested === false, 'a: alice follows carol');
    // carol's own server agrees (the Accept above was made by hand): she authorizes the request there too.
    const requests = await until(async () => (await api(b, carol, 'GET', '/api/v1/follow_requests')).body as Json[], (l) => l.length === 1, 'b: carol has the request');
    expect((await api(b, carol, 'POST', `/api/v1/follow_requests/${requests[0]!.id}/authorize`)).status).toBe(200);
  });

  it('shows an actor deleted by its server as suspended', async () => {
    const carolOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=carol@${b.domain}`)).body;
    const gone = { '@context': 'https://www.w3.org/ns/activitystreams', id: `${b.url}/users/carol#delete`, type: 'Delete', actor: `${b.url}/users/carol`, object: `${b.url}/users/carol`, to: ['https://www.w3.org/ns/activitystreams#Public'] };
    const followingBefore = (await api(a, alice, 'GET', '/api/v1/accounts/verify_credentials')).body.following_count as number;
    expect((await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${carolOnA.id}`)).body[0].following).toBe(true);
    // carol's last post reaches alice's home before carol is deleted.
    const last = (await api(b, carol, 'POST', '/api/v1/statuses', { status: 'my last words' })).body;
    const homeOfAlice = async () => ((await api(a, alice, 'GET', '/api/v1/timelines/home?limit=40')).body as Json[]).map((x) => x.content as string);
    await until(homeOfAlice, (contents) => contents.some((c) => c.includes('my last words')), 'a: carol\'s last post in alice\'s home');
    const lastOnA = (await findStatusByUri(a.ctx.db, last.uri))!;
    expect((await fetch(await sign('carol', gone))).status).toBe(202);
    await until(async () => (await a.ctx.db.query('SELECT suspended_at FROM accounts WHERE id = $1', [carolOnA.id])).rows[0].suspended_at, (x) => x !== null, 'a: carol gone');
    // Her posts are shown nowhere any more.
    expect((await homeOfAlice()).some((c) => c.includes('my last words'))).toBe(false);
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${lastOnA.id}`)).status).toBe(404);
    expect((await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=carol@${b.domain}`)).status).toBe(404);
    // alice followed carol: that follow is gone, and so is the count it made.
    const following = (await api(a, alice, 'GET', `/api/v1/accounts/${alice.id}/following`)).body as Json[];
    expect(following.map((x) => x.id)).not.toContain(carolOnA.id);
    expect((await api(a, alice, 'GET', '/api/v1/accounts/verify_credentials')).body.following_count).toBe(followingBefore - 1);
  });
});

describe('what is sent', () => {
  it('sends a Tombstone for a deleted status, with no trace of the internal deleted flag', async () => {
    const received: Json[] = [];
    const original = b.ctx.federation.fetch.bind(b.ctx.federation);
    b.ctx.federation.fetch = async (request, options) => {
      if (request.method === 'POST') received.push((await request.clone().json()) as Json);
      return original(request, options);
    };
    try {
      const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: `for you, @bob@${b.domain}`, visibility: 'direct' })).body;
      await until(async () => received.some((x) => x.type === 'Create' && x.object?.id === post.uri), (v) => v, 'b: the Create arrives');
      expect((await api(a, alice, 'DELETE', `/api/v1/statuses/${post.id}`)).status).toBe(200);
      const del = await until(async () => received.find((x) => x.type === 'Delete'), (v) => v !== undefined, 'b: the Delete arrives');
      expect(del).toMatchObject({ actor: `${a.url}/users/alice`, object: { id: post.uri, type: 'Tombstone' } });
      const text = JSON.stringify(received);
      expect(text).not.toMatch(/deleted_at|"deleted"|deletedAt/i);

      // A public post is addressed with the full IRI of the public collection, not a compact form.
      const open = (await api(a, alice, 'POST', '/api/v1/statuses', { status: `in public, @bob@${b.domain}`, visibility: 'public' })).body;
      const create = await until(async () => received.find((x) => x.type === 'Create' && x.object?.id === open.uri), (v) => v !== undefined, 'b: the public Create');
      expect([create!.to].flat()).toContain('https://www.w3.org/ns/activitystreams#Public');
      expect([create!.object.to].flat()).toContain('https://www.w3.org/ns/activitystreams#Public');
    } finally {
      b.ctx.federation.fetch = original;
    }
  });
});

describe('search', () => {
  it('resolves user@domain of another server for a signed-in user, and finds local accounts, tags and links', async () => {
    await registerUsers(b.app, 'dave');
    const unresolved = await api(a, alice, 'GET', `/api/v2/search?q=@dave@${b.domain}&type=accounts`);
    expect(unresolved.body.accounts).toEqual([]);
    const resolved = await api(a, alice, 'GET', `/api/v2/search?q=@dave@${b.domain}&resolve=true`);
    expect(resolved.status).toBe(200);
    expectEntity('Search', resolved.body);
    expect(resolved.body.accounts.map((x: Json) => x.acct)).toEqual([`dave@${b.domain}`]);
    // Anonymous callers do not make the server fetch anything.
    const anonymous = await api(a, null, 'GET', `/api/v2/search?q=@nobody@${b.domain}&resolve=true`);
    expect(anonymous.body.accounts).toEqual([]);

    const local = await api(a, alice, 'GET', '/api/v2/search?q=ali&type=accounts');
    expect(local.body.accounts.map((x: Json) => x.acct)).toContain('alice');
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'about #SearchableThings' })).body;
    const tags = await api(a, alice, 'GET', '/api/v2/search?q=%23searchable&type=hashtags');
    expect(tags.body.hashtags.map((t: Json) => t.name)).toEqual(['searchablethings']);
    const byLink = await api(a, alice, 'GET', `/api/v2/search?q=${encodeURIComponent(post.url)}&type=statuses`);
    expect(byLink.body.statuses.map((x: Json) => x.id)).toEqual([post.id]);
    const missing = await api(a, alice, 'GET', '/api/v2/search');
    expect([400, 422]).toContain(missing.status);
    expect(missing.body.error).toEqual(expect.any(String));
  });
});

describe('remote fetches', () => {
  it('refuse loopback and private addresses unless the setting allows them', async () => {
    const strict = await startTestServer({ LOCAL_DOMAIN: 'strict.example' });
    try {
      const [someone] = await registerUsers(strict.app, 'someone');
      const res = await strict.app.inject({ method: 'GET', url: `/api/v1/accounts/lookup?acct=bob@${b.domain}`, headers: bearer(someone!.token) });
      expect(res.statusCode).toBe(404);
      const { rows } = await strict.ctx.db.query('SELECT count(*)::int AS n FROM accounts WHERE domain IS NOT NULL');
      expect(rows[0].n).toBe(0);
    } finally {
      await strict.close();
    }
  });
});

describe('media across servers', () => {
  it('sends attachments with their descriptions; the other side shows its own copy of them', async () => {
    const png = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#258' } }).png().toBuffer();
    const form = await multipart({ file: { data: png, filename: 'p.png', type: 'image/png' }, description: 'a blue rectangle' });
    let media = (await a.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(alice.token), ...form.headers }, payload: form.payload })).json();
    media = await until(async () => (await api(a, alice, 'GET', `/api/v1/media/${media.id}`)).body, (m) => m.url !== null, 'a: processed');
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: `a picture for @bob@${b.domain}`, media_ids: [media.id] })).body;
    const note = await until(async () => ((await api(b, bob, 'GET', '/api/v1/notifications?types[]=mention')).body as Json[]).find((n) => n.status?.uri === post.uri), (n) => n !== undefined, 'b: the mention');
    expectEntity('MediaAttachment', note!.status.media_attachments[0]);
    const status = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${note!.status.id}`)).body, (st) => st.media_attachments[0].url.startsWith(`${b.url}/system/`), "b: a's picture copied");
    const attachment = status.media_attachments[0];
    expectEntity('MediaAttachment', attachment);
    expect(attachment).toMatchObject({ type: 'image', remote_url: media.url, description: 'a blue rectangle', meta: { original: { width: 320, height: 240 } } });
    const served = await sharp(Buffer.from(await (await fetch(attachment.url)).arrayBuffer())).metadata();
    expect([served.width, served.height]).toEqual([320, 240]);
  });
});
