import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let client: RegisteredApp;
let ann: TestUser;
let ben: TestUser;
let cat: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  [ann, ben, cat] = await Promise.all([registerUser(s.app, client, 'ann'), registerUser(s.app, client, 'ben'), registerUser(s.app, client, 'cat')]);
});
afterAll(async () => s?.close());

const get = (url: string, token?: string) => s.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
const post = (url: string, token: string, payload?: object | string, contentType?: string) =>
  s.app.inject({ method: 'POST', url, headers: { ...bearer(token), ...(contentType ? { 'content-type': contentType } : {}) }, ...(payload !== undefined ? { payload } : {}) });

async function counts(id: string) {
  const res = await get(`/api/v1/accounts/${id}`);
  return { followers: res.json().followers_count, following: res.json().following_count };
}

async function dbState() {
  const { rows } = await s.ctx.db.query(`SELECT (SELECT count(*) FROM follows)::int AS f, (SELECT count(*) FROM follow_requests)::int AS r,
    (SELECT sum(followers_count + following_count) FROM accounts)::int AS c`);
  return rows[0];
}

describe('relationships', () => {
  it('answers one default Relationship per id, in the order asked', async () => {
    const res = await get(`/api/v1/accounts/relationships?id[]=${cat.id}&id[]=${ben.id}`, ann.token);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.map((r: { id: string }) => r.id)).toEqual([cat.id, ben.id]);
    for (const r of body) {
      expectEntity('Relationship', r);
      expect(r).toMatchObject({
        following: false, showing_reblogs: false, notifying: false, followed_by: false, blocking: false, blocked_by: false,
        muting: false, muting_notifications: false, requested: false, requested_by: false, domain_blocking: false, endorsed: false, note: '',
      });
    }
    const single = await get(`/api/v1/accounts/relationships?id=${ben.id}`, ann.token);
    expect(single.json().map((r: { id: string }) => r.id)).toEqual([ben.id]);
    const reversed = await get(`/api/v1/accounts/relationships?id[]=${ben.id}&id[]=${cat.id}`, ann.token);
    expect(reversed.json().map((r: { id: string }) => r.id)).toEqual([ben.id, cat.id]);
  });

  it('leaves out ids that name no account, as Mastodon does', async () => {
    const res = await get(`/api/v1/accounts/relationships?id[]=999999&id[]=${ben.id}&id[]=abc`, ann.token);
    expect(res.statusCode).toBe(200);
    expect(res.json().map((r: { id: string }) => r.id)).toEqual([ben.id]);
  });

  it('needs a user token with read:follows', async () => {
    expect((await get(`/api/v1/accounts/relationships?id=${ben.id}`)).statusCode).toBe(401);
    expect((await get(`/api/v1/accounts/relationships?id=${ben.id}`, await appToken(s.app, client))).statusCode).toBe(422);
  });
});

describe('follow and unfollow', () => {
  it('follows with options, from JSON and form bodies with string booleans', async () => {
    const res = await post(`/api/v1/accounts/${ben.id}/follow`, ann.token, { reblogs: false, notify: 'true' });
    expect(res.statusCode).toBe(200);
    expectEntity('Relationship', res.json());
    expect(res.json()).toMatchObject({ id: ben.id, following: true, showing_reblogs: false, notifying: true, requested: false });
    const theirs = await get(`/api/v1/accounts/relationships?id=${ann.id}`, ben.token);
    expect(theirs.json()[0]).toMatchObject({ followed_by: true, following: false });

    const again = await post(`/api/v1/accounts/${ben.id}/follow`, ann.token, 'reblogs=1&notify=0', 'application/x-www-form-urlencoded');
    expect(again.json()).toMatchObject({ following: true, showing_reblogs: true, notifying: false });
    expect(await counts(ben.id)).toEqual({ followers: 1, following: 0 });
    expect(await counts(ann.id)).toEqual({ followers: 0, following: 1 });
  });

  it('refuses bad booleans with 422 and changes nothing', async () => {
    const before = await dbState();
    const res = await post(`/api/v1/accounts/${ben.id}/follow`, ann.token, { reblogs: 'maybe' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatch(/reblogs/);
    const rel = await get(`/api/v1/accounts/relationships?id=${ben.id}`, ann.token);
    expect(rel.json()[0].showing_reblogs).toBe(true);
    expect(await dbState()).toEqual(before);
  });

  it('refuses following yourself, unknown accounts, app tokens and missing scopes', async () => {
    const before = await dbState();
    expect((await post(`/api/v1/accounts/${ann.id}/follow`, ann.token)).statusCode).toBe(403);
    const unknown = await post('/api/v1/accounts/123456789/follow', ann.token);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'Record not found' });
    expect((await post('/api/v1/accounts/not-an-id/follow', ann.token)).statusCode).toBe(404);
    expect((await post(`/api/v1/accounts/${cat.id}/follow`, await appToken(s.app, client))).statusCode).toBe(422);
    const readOnly = await registerUser(s.app, client, 'reader', 'read');
    expect((await post(`/api/v1/accounts/${cat.id}/follow`, readOnly.token)).statusCode).toBe(403);
    expect(await dbState()).toEqual({ ...before });
  });

  it('counts racing follows once', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => post(`/api/v1/accounts/${cat.id}/follow`, ben.token)));
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM follows WHERE account_id = $1 AND target_account_id = $2', [ben.id, cat.id]);
    expect(rows[0].n).toBe(1);
    expect((await counts(cat.id)).followers).toBe(1);
    expect((await counts(ben.id)).following).toBe(1);
  });

  it('unfollows, twice harmlessly', async () => {
    const res = await post(`/api/v1/accounts/${cat.id}/unfollow`, ben.token);
    expect(res.statusCode).toBe(200);
    expect(res.json().following).toBe(false);
    expect((await post(`/api/v1/accounts/${cat.id}/unfollow`, ben.token)).json().following).toBe(false);
    expect((await counts(cat.id)).followers).toBe(0);
    expect((await counts(ben.id)).following).toBe(0);
  });
});

describe('locked accounts and follow requests', () => {
  it('turns a follow into a request that the locked account authorizes or rejects', async () => {
    const lock = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(cat.token), payload: { locked: 'true' } });
    expect(lock.json().locked).toBe(true);

    const req = await post(`/api/v1/accounts/${cat.id}/follow`, ann.token);
    expect(req.json()).toMatchObject({ following: false, requested: true });
    const req2 = await post(`/api/v1/accounts/${cat.id}/follow`, ben.token);
    expect(req2.json().requested).toBe(true);
    expect((await counts(cat.id)).followers).toBe(0);

    const list = await get('/api/v1/follow_requests', cat.token);
    expect(list.statusCode).toBe(200);
    expect(list.json().map((a: { id: string }) => a.id)).toEqual([ben.id, ann.id]);
    for (const a of list.json()) expectEntity('Account', a);
    const me = await get('/api/v1/accounts/verify_credentials', cat.token);
    expect(me.json().source.follow_requests_count).toBe(2);
    expect((await get(`/api/v1/accounts/relationships?id=${ann.id}`, cat.token)).json()[0].requested_by).toBe(true);

    const authorized = await post(`/api/v1/follow_requests/${ann.id}/authorize`, cat.token);
    expect(authorized.statusCode).toBe(200);
    expectEntity('Relationship', authorized.json());
    expect(authorized.json()).toMatchObject({ id: ann.id, followed_by: true, requested_by: false });
    expect((await get(`/api/v1/accounts/relationships?id=${cat.id}`, ann.token)).json()[0]).toMatchObject({ following: true, requested: false });
    expect((await counts(cat.id)).followers).toBe(1);

    const rejected = await post(`/api/v1/follow_requests/${ben.id}/reject`, cat.token);
    expect(rejected.json()).toMatchObject({ followed_by: false, requested_by: false });
    expect((await get(`/api/v1/accounts/relationships?id=${cat.id}`, ben.token)).json()[0]).toMatchObject({ following: false, requested: false });
    expect((await get('/api/v1/follow_requests', cat.token)).json()).toEqual([]);

    expect((await post(`/api/v1/follow_requests/${ben.id}/authorize`, cat.token)).statusCode).toBe(404);
    expect((await post('/api/v1/follow_requests/42/reject', cat.token)).statusCode).toBe(404);
  });

  it('withdraws a pending request on unfollow', async () => {
    await post(`/api/v1/accounts/${cat.id}/follow`, ben.token);
    const res = await post(`/api/v1/accounts/${cat.id}/unfollow`, ben.token);
    expect(res.json()).toMatchObject({ following: false, requested: false });
    expect((await get('/api/v1/follow_requests', cat.token)).json()).toEqual([]);
  });
});

describe('followers and following lists', () => {
  it('walks every follower once, newest first, forward by next and back by prev', async () => {
    const client2 = await createApp(s.app);
    const fans = [];
    for (let i = 0; i < 7; i++) fans.push(await registerUser(s.app, client2, `fan${i}`));
    for (const fan of fans) expect((await post(`/api/v1/accounts/${ben.id}/follow`, fan.token)).statusCode).toBe(200);
    const expected = [...fans].reverse().map((f) => f.id).concat([ann.id]);

    const linkOf = (header: unknown, rel: string) => new RegExp(`<([^>]+)>; rel="${rel}"`).exec(String(header ?? ''))?.[1];
    const seen: string[] = [];
    let url: string | undefined = `/api/v1/accounts/${ben.id}/followers?limit=3`;
    const pages: string[] = [];
    while (url) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      const ids = res.json().map((a: { id: string }) => a.id);
      if (ids.length === 0) break;
      seen.push(...ids);
      pages.push(url);
      const next = linkOf(res.headers.link, 'next');
      url = next ? new URL(next).pathname + new URL(next).search : undefined;
    }
    expect(seen).toEqual(expected);

    // Back from the last page by `prev` links: the same entries, page by page, in reverse page order.
    const back: string[][] = [];
    let prevUrl: string | undefined = pages.at(-1);
    while (prevUrl) {
      const res = await get(prevUrl);
      const ids = res.json().map((a: { id: string }) => a.id);
      if (ids.length === 0) break;
      back.unshift(ids);
      const prev = linkOf(res.headers.link, 'prev');
      prevUrl = prev ? new URL(prev).pathname + new URL(prev).search : undefined;
    }
    expect(back.flat()).toEqual(expected);

    const following = await get(`/api/v1/accounts/${fans[0]!.id}/following`);
    expect(following.json().map((a: { id: string }) => a.id)).toEqual([ben.id]);
  });

  it('refuses bad limits and unknown accounts', async () => {
    for (const limit of ['0', '-1', 'abc']) {
      const res = await get(`/api/v1/accounts/${ben.id}/followers?limit=${limit}`);
      expect(res.statusCode, limit).toBe(422);
      expect(typeof res.json().error).toBe('string');
    }
    expect((await get(`/api/v1/accounts/${ben.id}/followers?limit=500`)).statusCode).toBe(200);
    expect((await get('/api/v1/accounts/1/followers')).statusCode).toBe(404);
  });
});
