import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, registerUsers, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let client: RegisteredApp;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let erin: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  [alice, bob, carol, dave, erin] = await registerUsers(s.app, 'alice', 'bob', 'carol', 'dave', 'erin');
});
afterAll(async () => s?.close());

type Json = Record<string, unknown>;

const get = (url: string, token?: string) => s.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
const post = (url: string, token: string | undefined, payload?: object | string, contentType?: string) =>
  s.app.inject({
    method: 'POST',
    url,
    headers: { ...(token ? bearer(token) : {}), ...(contentType ? { 'content-type': contentType } : {}) },
    ...(payload !== undefined ? { payload } : {}),
  });
const follow = (viewer: TestUser, target: TestUser, payload?: object | string, contentType?: string) =>
  post(`/api/v1/accounts/${target.id}/follow`, viewer.token, payload, contentType);
const unfollow = (viewer: TestUser, target: TestUser) => post(`/api/v1/accounts/${target.id}/unfollow`, viewer.token);

async function relationship(viewer: TestUser, target: TestUser): Promise<Json> {
  const res = await get(`/api/v1/accounts/relationships?id[]=${target.id}`, viewer.token);
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  expect(body).toHaveLength(1);
  expectEntity('Relationship', body[0]);
  return body[0];
}

async function counts(user: TestUser) {
  const res = await get(`/api/v1/accounts/${user.id}`);
  expect(res.statusCode).toBe(200);
  expectEntity('Account', res.json());
  return { followers: res.json().followers_count as number, following: res.json().following_count as number };
}

/** Everything a follow can change, straight from PostgreSQL. */
async function dbState() {
  const { rows } = await s.ctx.db.query(
    `SELECT (SELECT json_agg(json_build_object('a', account_id::text, 't', target_account_id::text, 'r', show_reblogs, 'n', notify) ORDER BY id) FROM follows) AS follows,
            (SELECT json_agg(json_build_object('a', account_id::text, 't', target_account_id::text, 'r', show_reblogs, 'n', notify) ORDER BY id) FROM follow_requests) AS requests,
            (SELECT json_agg(json_build_object('id', id::text, 'fr', followers_count, 'fg', following_count) ORDER BY id) FROM accounts) AS counts,
            (SELECT count(*)::int FROM notifications) AS notifications`,
  );
  return rows[0];
}

const NO_RELATION = {
  following: false, showing_reblogs: false, notifying: false, languages: null, followed_by: false, blocking: false, blocked_by: false,
  muting: false, muting_notifications: false, muting_expires_at: null, requested: false, requested_by: false, domain_blocking: false,
  endorsed: false, note: '',
};
// Every attribute of Mastodon's REST::RelationshipSerializer (4.3).
const RELATIONSHIP_KEYS = ['id', 'following', 'showing_reblogs', 'notifying', 'languages', 'followed_by', 'blocking', 'blocked_by',
  'muting', 'muting_notifications', 'requested', 'requested_by', 'domain_blocking', 'endorsed', 'note'];

describe('GET /api/v1/accounts/relationships', () => {
  it('answers one Relationship per id, in the order asked, with every field and no relation', async () => {
    const res = await get(`/api/v1/accounts/relationships?id[]=${bob.id}&id[]=${carol.id}`, alice.token);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.map((r: Json) => r.id)).toEqual([bob.id, carol.id]);
    for (const r of body) {
      expectEntity('Relationship', r);
      for (const key of RELATIONSHIP_KEYS) expect(r, key).toHaveProperty(key);
      expect(r).toEqual({ id: r.id, ...NO_RELATION });
    }

    const reversed = await get(`/api/v1/accounts/relationships?id[]=${carol.id}&id[]=${bob.id}`, alice.token);
    expect(reversed.json().map((r: Json) => r.id)).toEqual([carol.id, bob.id]);

    const single = await get(`/api/v1/accounts/relationships?id=${dave.id}`, alice.token);
    expect(single.statusCode).toBe(200);
    expect(single.json()).toEqual([{ id: dave.id, ...NO_RELATION }]);

    const three = await get(`/api/v1/accounts/relationships?id[]=${dave.id}&id[]=${bob.id}&id[]=${carol.id}`, alice.token);
    expect(three.json().map((r: Json) => r.id)).toEqual([dave.id, bob.id, carol.id]);
  });

  it('answers about yourself too, and an empty list for no ids', async () => {
    const self = await get(`/api/v1/accounts/relationships?id[]=${alice.id}`, alice.token);
    expect(self.json()).toEqual([{ id: alice.id, ...NO_RELATION }]);
    const none = await get('/api/v1/accounts/relationships', alice.token);
    expect(none.statusCode).toBe(200);
    expect(none.json()).toEqual([]);
  });

  it('leaves out ids that name no account, and answers a repeated id once', async () => {
    const res = await get(`/api/v1/accounts/relationships?id[]=999999&id[]=${bob.id}&id[]=abc&id[]=${bob.id}&id[]=99999999999999999999`, alice.token);
    expect(res.statusCode).toBe(200);
    expect(res.json().map((r: Json) => r.id)).toEqual([bob.id]);
  });

  it('needs a signed-in user with read:follows', async () => {
    const anonymous = await get(`/api/v1/accounts/relationships?id=${bob.id}`);
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({ error: 'The access token is invalid' });
    expect((await get(`/api/v1/accounts/relationships?id=${bob.id}`, 'not-a-real-token')).statusCode).toBe(401);
    const app = await get(`/api/v1/accounts/relationships?id=${bob.id}`, await appToken(s.app, client));
    expect(app.statusCode).toBe(422);
    expect(app.json().error).toBe('This method requires an authenticated user');
    const writer = await registerUser(s.app, client, 'writer_only', 'write');
    const denied = await get(`/api/v1/accounts/relationships?id=${bob.id}`, writer.token);
    expect(denied.statusCode).toBe(403);
    expect(denied.json().error).toBe('This action is outside the authorized scopes');
    const granular = await registerUser(s.app, client, 'granular_reader', 'read:follows');
    expect((await get(`/api/v1/accounts/relationships?id=${bob.id}`, granular.token)).statusCode).toBe(200);
  });
});

describe('POST /api/v1/accounts/:id/follow and unfollow', () => {
  it('follows with reblogs=false and notify=true from a JSON body, seen from both sides', async () => {
    const res = await follow(alice, bob, { reblogs: false, notify: true });
    expect(res.statusCode, res.body).toBe(200);
    expectEntity('Relationship', res.json());
    expect(res.json()).toEqual({ ...NO_RELATION, id: bob.id, following: true, showing_reblogs: false, notifying: true });
    expect(await relationship(alice, bob)).toMatchObject({ following: true, followed_by: false, requested: false, requested_by: false, showing_reblogs: false, notifying: true });
    expect(await relationship(bob, alice)).toEqual({ ...NO_RELATION, id: alice.id, followed_by: true });
    expect(await counts(bob)).toEqual({ followers: 1, following: 0 });
    expect(await counts(alice)).toEqual({ followers: 0, following: 1 });
  });

  it('following again changes nothing but the options given (form body, string booleans)', async () => {
    const again = await follow(alice, bob, 'reblogs=true', 'application/x-www-form-urlencoded');
    expect(again.statusCode).toBe(200);
    // Only reblogs was sent: notify keeps its value.
    expect(again.json()).toMatchObject({ following: true, showing_reblogs: true, notifying: true });
    const strings = await follow(alice, bob, { reblogs: 'false', notify: 'false' });
    expect(strings.json()).toMatchObject({ following: true, showing_reblogs: false, notifying: false });
    const form = await follow(alice, bob, 'reblogs=1&notify=true', 'application/x-www-form-urlencoded');
    expect(form.json()).toMatchObject({ following: true, showing_reblogs: true, notifying: true });
    const bare = await follow(alice, bob);
    expect(bare.json()).toMatchObject({ following: true, showing_reblogs: true, notifying: true });
    expect(await counts(bob)).toEqual({ followers: 1, following: 0 });
    expect(await counts(alice)).toEqual({ followers: 0, following: 1 });
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM follows WHERE account_id = $1 AND target_account_id = $2', [alice.id, bob.id]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a boolean that is not one with 422, changing nothing', async () => {
    const before = await dbState();
    for (const payload of [{ reblogs: 'maybe' }, { notify: 'maybe' }, { reblogs: false, notify: 'perhaps' }]) {
      const res = await follow(alice, bob, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error).toMatch(/reblogs|notify/);
    }
    const form = await follow(alice, carol, 'reblogs=maybe', 'application/x-www-form-urlencoded');
    expect(form.statusCode).toBe(422);
    expect(form.json().error).toMatch(/reblogs/);
    const languages = await follow(alice, carol, { languages: ['english!'] });
    expect(languages.statusCode).toBe(422);
    expect(await dbState()).toEqual(before);
    expect(await relationship(alice, bob)).toMatchObject({ following: true, showing_reblogs: true, notifying: true });
    expect(await relationship(alice, carol)).toMatchObject({ following: false });
  });

  it('keeps the languages a follow asks for', async () => {
    const res = await follow(alice, bob, { languages: ['en', 'de'] });
    expect(res.json().languages).toEqual(['en', 'de']);
    const kept = await follow(alice, bob, { notify: false });
    expect(kept.json()).toMatchObject({ languages: ['en', 'de'], notifying: false });
  });

  it('unfollows: following false, counts back to 0, and again harmlessly', async () => {
    const res = await unfollow(alice, bob);
    expect(res.statusCode).toBe(200);
    expectEntity('Relationship', res.json());
    expect(res.json()).toEqual({ ...NO_RELATION, id: bob.id });
    expect(await counts(bob)).toEqual({ followers: 0, following: 0 });
    expect(await counts(alice)).toEqual({ followers: 0, following: 0 });
    expect(await relationship(bob, alice)).toMatchObject({ followed_by: false });
    const twice = await unfollow(alice, bob);
    expect(twice.statusCode).toBe(200);
    expect(twice.json().following).toBe(false);
    expect(await counts(bob)).toEqual({ followers: 0, following: 0 });
    expect(await counts(alice)).toEqual({ followers: 0, following: 0 });
  });

  it('takes the follow notification away on unfollow, and notifies afresh on a new follow', async () => {
    const followNotes = async () => (await get('/api/v1/notifications?types[]=follow', erin.token)).json()
      .filter((n: { account: Json }) => n.account.id === carol.id);
    await follow(carol, erin);
    const first = await followNotes();
    expect(first).toHaveLength(1);
    await unfollow(carol, erin);
    expect(await followNotes()).toEqual([]);
    await follow(carol, erin);
    const second = await followNotes();
    expect(second).toHaveLength(1);
    expect(BigInt(second[0].id)).toBeGreaterThan(BigInt(first[0].id));
    await unfollow(carol, erin);
  });

  it('counts mutual follows on both sides', async () => {
    await follow(alice, bob);
    await follow(bob, alice);
    expect(await relationship(alice, bob)).toMatchObject({ following: true, followed_by: true });
    expect(await relationship(bob, alice)).toMatchObject({ following: true, followed_by: true });
    expect(await counts(alice)).toEqual({ followers: 1, following: 1 });
    expect(await counts(bob)).toEqual({ followers: 1, following: 1 });
    await unfollow(alice, bob);
    await unfollow(bob, alice);
    expect(await counts(alice)).toEqual({ followers: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followers: 0, following: 0 });
  });

  it('leaves exactly one follow when five race', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => follow(dave, carol)));
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    for (const r of results) expect(r.json()).toMatchObject({ id: carol.id, following: true });
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM follows WHERE account_id = $1 AND target_account_id = $2', [dave.id, carol.id]);
    expect(rows[0].n).toBe(1);
    expect(await counts(carol)).toEqual({ followers: 1, following: 0 });
    expect(await counts(dave)).toEqual({ followers: 0, following: 1 });
    const notes = await s.ctx.db.query(`SELECT count(*)::int AS n FROM notifications WHERE account_id = $1 AND from_account_id = $2 AND type = 'follow'`, [carol.id, dave.id]);
    expect(notes.rows[0].n).toBe(1);

    // Racing unfollows take the count back down once.
    const gone = await Promise.all(Array.from({ length: 5 }, () => unfollow(dave, carol)));
    for (const r of gone) expect(r.json().following).toBe(false);
    expect(await counts(carol)).toEqual({ followers: 0, following: 0 });
    expect(await counts(dave)).toEqual({ followers: 0, following: 0 });
  });

  it('lets two accounts follow each other at the same moment', async () => {
    const [a, b] = await Promise.all([follow(dave, erin), follow(erin, dave)]);
    expect(a.json()).toMatchObject({ following: true });
    expect(b.json()).toMatchObject({ following: true });
    expect(await counts(dave)).toEqual({ followers: 1, following: 1 });
    expect(await counts(erin)).toEqual({ followers: 1, following: 1 });
    await Promise.all([unfollow(dave, erin), unfollow(erin, dave)]);
    expect(await counts(dave)).toEqual({ followers: 0, following: 0 });
  });

  it('refuses following yourself, unknown accounts, app tokens, missing tokens and missing scopes, changing nothing', async () => {
    const before = await dbState();
    const self = await follow(alice, alice);
    expect(self.statusCode).toBe(403);
    expect(typeof self.json().error).toBe('string');

    for (const id of ['123456789', 'not-an-id', '99999999999999999999', '-1']) {
      const res = await post(`/api/v1/accounts/${id}/follow`, alice.token);
      expect(res.statusCode, id).toBe(404);
      expect(res.json()).toEqual({ error: 'Record not found' });
      const un = await post(`/api/v1/accounts/${id}/unfollow`, alice.token);
      expect(un.statusCode, id).toBe(404);
      expect(un.json()).toEqual({ error: 'Record not found' });
    }

    const app = await post(`/api/v1/accounts/${carol.id}/follow`, await appToken(s.app, client));
    expect(app.statusCode).toBe(422);
    expect(app.json()).toEqual({ error: 'This method requires an authenticated user' });

    const anonymous = await post(`/api/v1/accounts/${carol.id}/follow`, undefined);
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({ error: 'The access token is invalid' });

    const reader = await registerUser(s.app, client, 'reader', 'read');
    const noScope = await post(`/api/v1/accounts/${carol.id}/follow`, reader.token);
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json()).toEqual({ error: 'This action is outside the authorized scopes' });
    expect((await post(`/api/v1/accounts/${carol.id}/unfollow`, reader.token)).statusCode).toBe(403);
    const statusesOnly = await registerUser(s.app, client, 'poster', 'write:statuses read');
    expect((await post(`/api/v1/accounts/${carol.id}/follow`, statusesOnly.token)).statusCode).toBe(403);

    const after = await dbState();
    // Registering the two users above added their accounts, nothing else.
    expect(after.follows).toEqual(before.follows);
    expect(after.requests).toEqual(before.requests);
    expect(after.notifications).toEqual(before.notifications);
    expect(after.counts.filter((c: { id: string }) => c.id !== reader.id && c.id !== statusesOnly.id)).toEqual(before.counts);
  });

  it('accepts the granular write:follows scope and the legacy follow scope', async () => {
    const granular = await registerUser(s.app, client, 'granular', 'write:follows read:follows');
    const res = await post(`/api/v1/accounts/${carol.id}/follow`, granular.token);
    expect(res.statusCode).toBe(200);
    expect(res.json().following).toBe(true);
    const legacy = await registerUser(s.app, client, 'legacy', 'follow');
    const res2 = await post(`/api/v1/accounts/${carol.id}/follow`, legacy.token);
    expect(res2.statusCode).toBe(200);
    expect((await post(`/api/v1/accounts/${carol.id}/unfollow`, legacy.token)).json().following).toBe(false);
    expect((await post(`/api/v1/accounts/${carol.id}/unfollow`, granular.token)).json().following).toBe(false);
  });
});

describe('locked accounts and follow requests', () => {
  let locked: TestUser;
  let asker: TestUser;
  let other: TestUser;

  beforeAll(async () => {
    [locked, asker, other] = await registerUsers(s.app, 'locky', 'asker', 'other');
    const res = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(locked.token), payload: { locked: true } });
    expect(res.statusCode).toBe(200);
    expect(res.json().locked).toBe(true);
  });

  it('turns a follow into a request, with the options it asked for', async () => {
    const res = await follow(asker, locked, { reblogs: false, notify: true });
    expect(res.statusCode).toBe(200);
    expectEntity('Relationship', res.json());
    // Mastodon shows a pending request's options as the relationship's showing_reblogs and notifying.
    expect(res.json()).toEqual({ ...NO_RELATION, id: locked.id, requested: true, showing_reblogs: false, notifying: true });
    const plain = await follow(other, locked);
    expect(plain.json()).toMatchObject({ following: false, requested: true, showing_reblogs: true, notifying: false });
    expect(await relationship(locked, asker)).toMatchObject({ requested_by: true, followed_by: false, following: false });
    expect(await counts(locked)).toEqual({ followers: 0, following: 0 });
    expect(await counts(asker)).toEqual({ followers: 0, following: 0 });

    // Asking again updates the request rather than adding one.
    const again = await follow(asker, locked, { reblogs: true, languages: ['fr'] });
    expect(again.json()).toMatchObject({ requested: true, showing_reblogs: true, notifying: true, languages: ['fr'] });
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM follow_requests WHERE target_account_id = $1', [locked.id]);
    expect(rows[0].n).toBe(2);
  });

  it('lists requesters, newest first, only to the locked account', async () => {
    const list = await get('/api/v1/follow_requests', locked.token);
    expect(list.statusCode).toBe(200);
    expect(list.json().map((a: Json) => a.id)).toEqual([other.id, asker.id]);
    for (const a of list.json()) expectEntity('Account', a);
    const me = await get('/api/v1/accounts/verify_credentials', locked.token);
    expect(me.json().source.follow_requests_count).toBe(2);

    const paged = await get('/api/v1/follow_requests?limit=1', locked.token);
    expect(paged.json().map((a: Json) => a.id)).toEqual([other.id]);
    const next = /<([^>]+)>; rel="next"/.exec(String(paged.headers.link))?.[1];
    expect(next).toBeTruthy();
    const second = await get(new URL(next!).pathname + new URL(next!).search, locked.token);
    expect(second.json().map((a: Json) => a.id)).toEqual([asker.id]);

    expect((await get('/api/v1/follow_requests', asker.token)).json()).toEqual([]);
    expect((await get('/api/v1/follow_requests')).statusCode).toBe(401);
    expect((await get('/api/v1/follow_requests', await appToken(s.app, client))).statusCode).toBe(422);
  });

  it('authorizes a request: the requester now follows, with its options, and counts move', async () => {
    const res = await post(`/api/v1/follow_requests/${asker.id}/authorize`, locked.token);
    expect(res.statusCode, res.body).toBe(200);
    expectEntity('Relationship', res.json());
    expect(res.json()).toMatchObject({ id: asker.id, followed_by: true, requested_by: false, following: false });
    expect(await relationship(asker, locked)).toMatchObject({ following: true, requested: false, showing_reblogs: true, notifying: true, languages: ['fr'] });
    expect(await counts(locked)).toEqual({ followers: 1, following: 0 });
    expect(await counts(asker)).toEqual({ followers: 0, following: 1 });
    const followers = await get(`/api/v1/accounts/${locked.id}/followers`);
    expect(followers.json().map((a: Json) => a.id)).toEqual([asker.id]);

    // A follow of an account one already follows stays a follow, even though the account is locked.
    const again = await follow(asker, locked);
    expect(again.json()).toMatchObject({ following: true, requested: false });
    expect(await counts(locked)).toEqual({ followers: 1, following: 0 });
  });

  it('rejects a request: it is gone, and nobody follows', async () => {
    const res = await post(`/api/v1/follow_requests/${other.id}/reject`, locked.token);
    expect(res.statusCode).toBe(200);
    expectEntity('Relationship', res.json());
    expect(res.json()).toMatchObject({ id: other.id, followed_by: false, requested_by: false });
    expect(await relationship(other, locked)).toEqual({ ...NO_RELATION, id: locked.id });
    expect((await get('/api/v1/follow_requests', locked.token)).json().map((a: Json) => a.id)).toEqual([]);
    expect(await counts(locked)).toEqual({ followers: 1, following: 0 });
    expect(await counts(other)).toEqual({ followers: 0, following: 0 });
    const me = await get('/api/v1/accounts/verify_credentials', locked.token);
    expect(me.json().source.follow_requests_count).toBe(0);
  });

  it('answers 404 for a request that does not exist, changing nothing', async () => {
    const before = await dbState();
    for (const action of ['authorize', 'reject']) {
      for (const id of [other.id, asker.id, '4242', 'abc', alice.id]) {
        const res = await post(`/api/v1/follow_requests/${id}/${action}`, locked.token);
        expect(res.statusCode, `${action} ${id}`).toBe(404);
        expect(res.json()).toEqual({ error: 'Record not found' });
      }
    }
    // Someone else cannot authorize a request made to the locked account.
    await follow(other, locked);
    const stranger = await post(`/api/v1/follow_requests/${other.id}/authorize`, alice.token);
    expect(stranger.statusCode).toBe(404);
    expect(await relationship(other, locked)).toMatchObject({ following: false, requested: true });
    expect((await post(`/api/v1/follow_requests/${other.id}/authorize`, undefined)).statusCode).toBe(401);
    await unfollow(other, locked);
    expect(await dbState()).toEqual(before);
  });

  it('withdraws a pending request on unfollow, and its notification with it', async () => {
    const requestNotes = async () => (await get('/api/v1/notifications?types[]=follow_request', locked.token)).json()
      .filter((n: { account: Json }) => n.account.id === other.id);
    expect((await follow(other, locked)).json().requested).toBe(true);
    expect(await requestNotes()).toHaveLength(1);
    const res = await unfollow(other, locked);
    expect(res.json()).toEqual({ ...NO_RELATION, id: locked.id });
    expect((await get('/api/v1/follow_requests', locked.token)).json()).toEqual([]);
    expect(await relationship(locked, other)).toMatchObject({ requested_by: false });
    // Mastodon destroys a follow request's notification with it: nothing is left to accept.
    expect(await requestNotes()).toEqual([]);
  });

  it('accepts every pending request when the account unlocks, as Mastodon does', async () => {
    const patch = (payload: object) => s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(locked.token), payload });
    expect((await follow(other, locked)).json().requested).toBe(true);
    expect((await follow(alice, locked, { reblogs: false })).json().requested).toBe(true);
    const aliceFollowing = (await counts(alice)).following;

    // Other profile edits, or locking again, leave the requests pending.
    expect((await patch({ display_name: 'Locky' })).statusCode).toBe(200);
    expect((await patch({ locked: true })).json().locked).toBe(true);
    expect((await get('/api/v1/follow_requests', locked.token)).json().map((a: Json) => a.id)).toEqual([alice.id, other.id]);

    const unlocked = await patch({ locked: 'false' });
    expect(unlocked.statusCode).toBe(200);
    expect(unlocked.json()).toMatchObject({ locked: false, followers_count: 3 });
    expect(unlocked.json().source.follow_requests_count).toBe(0);
    expect(await relationship(other, locked)).toMatchObject({ following: true, requested: false, showing_reblogs: true });
    expect(await relationship(alice, locked)).toMatchObject({ following: true, requested: false, showing_reblogs: false });
    expect((await get('/api/v1/follow_requests', locked.token)).json()).toEqual([]);
    const notes = (await get('/api/v1/notifications?types[]=follow_request', locked.token)).json();
    expect(notes).toEqual([]);
    expect(await counts(locked)).toEqual({ followers: 3, following: 0 });
    expect(await counts(other)).toEqual({ followers: 0, following: 1 });
    expect(await counts(alice)).toEqual({ followers: 0, following: aliceFollowing + 1 });

    // Unlocked, a new follow is a follow straight away.
    expect((await follow(erin, locked)).json()).toMatchObject({ following: true, requested: false });
    for (const u of [other, alice, erin]) await unfollow(u, locked);
    expect(await counts(locked)).toEqual({ followers: 1, following: 0 });
  });
});

describe('followers and following lists', () => {
  const linkOf = (header: unknown, rel: string) => {
    const url = new RegExp(`<([^>]+)>; rel="${rel}"`).exec(String(header ?? ''))?.[1];
    return url ? new URL(url).pathname + new URL(url).search : undefined;
  };

  let star: TestUser;
  let fans: TestUser[];

  beforeAll(async () => {
    const names = Array.from({ length: 12 }, (_, i) => `fan${i}`);
    [star, ...fans] = await registerUsers(s.app, 'star', ...names);
    // One after another, so the follow order is known.
    for (const fan of fans) expect((await follow(fan, star)).statusCode).toBe(200);
  });

  it('walks every follower exactly once, newest follow first, forward by next and back by prev', async () => {
    const expected = [...fans].reverse().map((f) => f.id);
    const pages: { url: string; ids: string[] }[] = [];
    let url: string | undefined = `/api/v1/accounts/${star.id}/followers?limit=5`;
    for (let guard = 0; url && guard < 10; guard++) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      const ids = res.json().map((a: Json) => a.id);
      for (const a of res.json()) expectEntity('Account', a);
      if (ids.length === 0) {
        // Past the end: an empty page and no Link header.
        expect(res.headers.link).toBeUndefined();
        break;
      }
      expect(ids.length).toBeLessThanOrEqual(5);
      pages.push({ url, ids });
      const next = linkOf(res.headers.link, 'next');
      expect(next).toContain('limit=5');
      url = next;
    }
    expect(pages.map((p) => p.ids.length)).toEqual([5, 5, 2]);
    expect(pages.flatMap((p) => p.ids)).toEqual(expected);

    // From the last page back by prev: the same pages in reverse.
    const back: string[][] = [];
    let prev: string | undefined = pages.at(-1)!.url;
    for (let guard = 0; prev && guard < 10; guard++) {
      const res = await get(prev);
      const ids = res.json().map((a: Json) => a.id);
      if (ids.length === 0) break;
      back.unshift(ids);
      prev = linkOf(res.headers.link, 'prev');
    }
    expect(back).toEqual(pages.map((p) => p.ids));
  });

  it('pages with max_id, min_id and since_id as Mastodon does', async () => {
    const first = await get(`/api/v1/accounts/${star.id}/followers?limit=3`);
    const nextUrl = linkOf(first.headers.link, 'next')!;
    const maxId = new URL(nextUrl, 'http://x').searchParams.get('max_id');
    expect(maxId).toMatch(/^\d+$/);
    const byMax = await get(`/api/v1/accounts/${star.id}/followers?limit=3&max_id=${maxId}`);
    expect(byMax.json().map((a: Json) => a.id)).toEqual(fans.slice(6, 9).reverse().map((f) => f.id));
    // since_id: the newest after it; min_id: the oldest after it (both newest first).
    const { rows } = await s.ctx.db.query('SELECT id::text FROM follows WHERE target_account_id = $1 ORDER BY id', [star.id]);
    const oldest = rows[0].id;
    const since = await get(`/api/v1/accounts/${star.id}/followers?limit=2&since_id=${oldest}`);
    expect(since.json().map((a: Json) => a.id)).toEqual([fans[11]!.id, fans[10]!.id]);
    const min = await get(`/api/v1/accounts/${star.id}/followers?limit=2&min_id=${oldest}`);
    expect(min.json().map((a: Json) => a.id)).toEqual([fans[2]!.id, fans[1]!.id]);
  });

  it('lists what an account follows, newest first', async () => {
    await follow(fans[0]!, alice);
    await follow(fans[0]!, bob);
    const res = await get(`/api/v1/accounts/${fans[0]!.id}/following`);
    expect(res.statusCode).toBe(200);
    expect(res.json().map((a: Json) => a.id)).toEqual([bob.id, alice.id, star.id]);
    for (const a of res.json()) expectEntity('Account', a);
    const page = await get(`/api/v1/accounts/${fans[0]!.id}/following?limit=2`);
    expect(page.json().map((a: Json) => a.id)).toEqual([bob.id, alice.id]);
    const rest = await get(linkOf(page.headers.link, 'next')!);
    expect(rest.json().map((a: Json) => a.id)).toEqual([star.id]);
    expect((await get(`/api/v1/accounts/${star.id}/following`)).json()).toEqual([]);
    await unfollow(fans[0]!, alice);
    await unfollow(fans[0]!, bob);
  });

  it('refuses bad limits with 422, and unknown accounts with 404', async () => {
    for (const list of ['followers', 'following']) {
      for (const limit of ['0', '-1', 'abc', '1.5']) {
        const res = await get(`/api/v1/accounts/${star.id}/${list}?limit=${limit}`);
        expect(res.statusCode, `${list} limit=${limit}`).toBe(422);
        expect(res.json().error).toMatch(/limit/);
      }
      for (const id of ['1', 'nobody', '99999999999999999999']) {
        const res = await get(`/api/v1/accounts/${id}/${list}`);
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'Record not found' });
      }
    }
  });

  it('clamps limit to 80, as Mastodon does', async () => {
    // 85 more followers, made in SQL: registering them one by one would take minutes of password hashing.
    await s.ctx.db.query(
      `WITH made AS (INSERT INTO accounts (username) SELECT 'bulk' || g FROM generate_series(1, 85) g RETURNING id)
       INSERT INTO follows (account_id, target_account_id) SELECT id, $1 FROM made`,
      [star.id],
    );
    await s.ctx.db.query(`UPDATE accounts SET followers_count = followers_count + 85 WHERE id = $1`, [star.id]);
    const over = await get(`/api/v1/accounts/${star.id}/followers?limit=500`);
    expect(over.statusCode).toBe(200);
    expect(over.json()).toHaveLength(80);
    expect((await get(`/api/v1/accounts/${star.id}/followers?limit=81`)).json()).toHaveLength(80);
    expect((await get(`/api/v1/accounts/${star.id}/followers?limit=79`)).json()).toHaveLength(79);
    // The default page is 40.
    expect((await get(`/api/v1/accounts/${star.id}/followers`)).json()).toHaveLength(40);
  });
});
