import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let amy: TestUser;
let ben: TestUser;
let cal: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [amy, ben, cal] = await registerUsers(s.app, 'amy', 'ben', 'cal');
});
afterAll(async () => s?.close());

const post = (user: TestUser, payload: object | string, headers: Record<string, string> = {}) =>
  s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: { ...bearer(user.token), ...headers }, payload });
const get = (url: string, user?: TestUser) => s.app.inject({ method: 'GET', url, headers: user ? bearer(user.token) : {} });
const follow = (a: TestUser, b: TestUser) => s.app.inject({ method: 'POST', url: `/api/v1/accounts/${b.id}/follow`, headers: bearer(a.token) });

async function statusCount() {
  const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses');
  return rows[0].n as number;
}

describe('posting', () => {
  it('posts a status rendered as Mastodon does', async () => {
    const res = await post(amy, { status: 'Hello @ben and #World, see https://example.com/a?b=1 <b>bold</b>', sensitive: 'true', spoiler_text: 'cw', language: 'en' });
    expect(res.statusCode, res.body).toBe(200);
    const st = res.json();
    expectEntity('Status', st);
    expect(st.account.id).toBe(amy.id);
    expect(st.sensitive).toBe(true);
    expect(st.spoiler_text).toBe('cw');
    expect(st.visibility).toBe('public');
    expect(st.content).toContain('&lt;b&gt;bold&lt;/b&gt;');
    expect(st.content).toContain('class="u-url mention"');
    expect(st.content).toContain('href="https://example.com/a?b=1"');
    expect(st.content).toContain('class="mention hashtag"');
    expect(st.mentions).toEqual([{ id: ben.id, username: 'ben', acct: 'ben', url: 'http://test.local/@ben' }]);
    expect(st.tags).toEqual([{ name: 'world', url: 'http://test.local/tags/world' }]);
    expect(st).not.toHaveProperty('deleted_at');
    expect(JSON.stringify(st)).not.toMatch(/deleted/);
  });

  it('accepts sensitive as a string in a form body', async () => {
    const res = await post(amy, 'status=form+post&sensitive=1&visibility=unlisted', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ sensitive: true, visibility: 'unlisted' });
  });

  it('refuses bad statuses with 422 and writes nothing', async () => {
    const before = await statusCount();
    for (const payload of [
      { status: '' },
      { status: '   ' },
      {},
      { status: 'x'.repeat(501) },
      { status: 'ok', sensitive: 'maybe' },
      { status: 'ok', visibility: 'secret' },
      { status: 'ok', media_ids: ['12345'] },
      { status: 'ok', media_ids: ['1', '2', '3', '4', '5'] },
    ]) {
      const res = await post(amy, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(typeof res.json().error).toBe('string');
    }
    expect((await post(amy, { status: 'reply', in_reply_to_id: '999999' })).statusCode).toBe(404);
    expect(await statusCount()).toBe(before);
  });

  it('refuses a quote of a status that does not exist with 404, writing nothing (quotes: test/http/quotes.test.ts)', async () => {
    const before = await statusCount();
    const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
    const cases: [string, () => Promise<{ statusCode: number; body: string; json(): any }>][] = [
      ['json', () => post(amy, { status: 'quote', quoted_status_id: '1' })],
      ['form', () => post(amy, 'status=quote&quoted_status_id=1', formHeaders)],
    ];
    for (const [kind, send] of cases) {
      const res = await send();
      expect(res.statusCode, `${kind}: ${res.body}`).toBe(404);
      expect(res.json().error).toBe('The post you are trying to quote does not appear to exist.');
    }
    expect(await statusCount()).toBe(before);
  });

  it('takes empty poll, scheduled_at and quoted_status_id values as absent, as some clients send them', async () => {
    for (const payload of [
      { status: 'plain', poll: null, scheduled_at: null, quoted_status_id: null },
      { status: 'plain', scheduled_at: '', quoted_status_id: '' },
      'status=plain&scheduled_at=&quoted_status_id=&poll[expires_in]=',
    ]) {
      const res = await post(amy, payload, typeof payload === 'string' ? { 'content-type': 'application/x-www-form-urlencoded' } : {});
      expect(res.statusCode, `${JSON.stringify(payload)}: ${res.body}`).toBe(200);
      expect(res.json().poll).toBeNull();
    }
  });

  it('counts a URL as 23 characters', async () => {
    const res = await post(amy, { status: `${'x'.repeat(470)} https://example.com/${'y'.repeat(200)}` });
    expect(res.statusCode).toBe(200);
  });

  it('creates one status per Idempotency-Key, also when requests race', async () => {
    const before = await statusCount();
    const results = await Promise.all([1, 2, 3].map(() => post(ben, { status: 'only once' }, { 'idempotency-key': 'key-1' })));
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(new Set(results.map((r) => r.json().id)).size).toBe(1);
    expect(await statusCount()).toBe(before + 1);
    const other = await post(cal, { status: 'same key, other account' }, { 'idempotency-key': 'key-1' });
    expect(other.json().id).not.toBe(results[0]!.json().id);
  });
});

describe('reading and deleting', () => {
  it('shows statuses by visibility, and 404 to those who may not see them', async () => {
    const pub = (await post(cal, { status: 'public one' })).json();
    const priv = (await post(cal, { status: 'followers only', visibility: 'private' })).json();
    const dm = (await post(cal, { status: 'hi @amy', visibility: 'direct' })).json();
    expect((await get(`/api/v1/statuses/${pub.id}`)).statusCode).toBe(200);
    expect((await get(`/api/v1/statuses/${priv.id}`)).statusCode).toBe(404);
    expect((await get(`/api/v1/statuses/${priv.id}`, ben)).statusCode).toBe(404);
    await follow(ben, cal);
    expect((await get(`/api/v1/statuses/${priv.id}`, ben)).statusCode).toBe(200);
    expect((await get(`/api/v1/statuses/${dm.id}`, ben)).statusCode).toBe(404);
    expect((await get(`/api/v1/statuses/${dm.id}`, amy)).statusCode).toBe(200);
    expect((await get(`/api/v1/statuses/${dm.id}`, cal)).statusCode).toBe(200);
    expect((await get('/api/v1/statuses/abc')).statusCode).toBe(404);
  });

  it('deletes own statuses only, returning the source text, and never shows them again', async () => {
    const st = (await post(ben, { status: 'to be deleted' })).json();
    const foreign = await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${st.id}`, headers: bearer(amy.token) });
    expect(foreign.statusCode).toBe(404);
    const res = await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${st.id}`, headers: bearer(ben.token) });
    expect(res.statusCode).toBe(200);
    expect(res.json().text).toBe('to be deleted');
    expect(res.json()).not.toHaveProperty('deleted_at');
    expect((await get(`/api/v1/statuses/${st.id}`, ben)).statusCode).toBe(404);
    const again = await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${st.id}`, headers: bearer(ben.token) });
    expect(again.statusCode).toBe(404);
    const home = await get('/api/v1/timelines/home', ben);
    expect(home.json().map((x: { id: string }) => x.id)).not.toContain(st.id);
  });
});

describe('favourites and reblogs', () => {
  it('counts favourites and reblogs once each, also under concurrent requests', async () => {
    const st = (await post(amy, { status: 'like me' })).json();
    const favs = await Promise.all([ben, ben, cal].map((u) => s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(u.token) })));
    expect(favs.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(favs[2]!.json().favourited).toBe(true);
    const reblogs = await Promise.all([ben, ben].map((u) => s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/reblog`, headers: bearer(u.token) })));
    expect(new Set(reblogs.map((r) => r.json().id)).size).toBe(1);
    expect(reblogs[0]!.json().reblog.id).toBe(st.id);
    expectEntity('Status', reblogs[0]!.json());
    const after = (await get(`/api/v1/statuses/${st.id}`, ben)).json();
    expect(after).toMatchObject({ favourites_count: 2, reblogs_count: 1, favourited: true, reblogged: true });

    const by = await get(`/api/v1/statuses/${st.id}/favourited_by`);
    expect(by.json().map((a: { id: string }) => a.id).sort()).toEqual([ben.id, cal.id].sort());
    expect((await get(`/api/v1/statuses/${st.id}/reblogged_by`)).json().map((a: { id: string }) => a.id)).toEqual([ben.id]);

    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/unfavourite`, headers: bearer(ben.token) });
    const unre = await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/unreblog`, headers: bearer(ben.token) });
    expect(unre.json()).toMatchObject({ reblogged: false, reblogs_count: 0, favourites_count: 1, favourited: false });
  });
  it('reports the viewer\'s flags of the original on a reblog and its wrapper, also in the home timeline', async () => {
    const st = (await post(amy, { status: 'boost and like me' })).json();
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(ben.token) });
    const res = await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/reblog`, headers: bearer(ben.token) });
    expect(res.statusCode, res.body).toBe(200);
    const flags = { reblogged: true, favourited: true, bookmarked: false };
    const wrapper = res.json();
    expectEntity('Status', wrapper);
    expect(wrapper).toMatchObject(flags);
    expect(wrapper.reblog).toMatchObject({ id: st.id, ...flags });
    const home = (await get('/api/v1/timelines/home', ben)).json();
    const inHome = home.find((x: { id: string }) => x.id === wrapper.id);
    expect(inHome).toMatchObject(flags);
    expect(inHome.reblog).toMatchObject({ id: st.id, ...flags });
    // Someone else sees the reblog without ben's flags.
    const forCal = (await get(`/api/v1/statuses/${wrapper.id}`, cal)).json();
    expect(forCal).toMatchObject({ reblogged: false, favourited: false });
    expect(forCal.reblog).toMatchObject({ reblogged: false, favourited: false });
  });
});

describe('threads', () => {
  it('gives each viewer the context Mastodon would, with a private reply hidden from non-followers', async () => {
    const dan = await registerUser(s.app, await createApp(s.app), 'dan');
    const root = (await post(amy, { status: 'root' })).json();
    const r1 = (await post(ben, { status: '@amy first', in_reply_to_id: root.id })).json();
    const r2res = await post(cal, { status: 'private second', in_reply_to_id: r1.id, visibility: 'private' });
    expect(r2res.statusCode, r2res.body).toBe(200);
    const r2 = r2res.json();
    const r3 = (await post(ben, { status: 'third', in_reply_to_id: r2.id })).json();
    // amy follows nobody and is not mentioned in the private reply: she cannot answer it.
    expect((await post(amy, { status: 'x', in_reply_to_id: r2.id })).statusCode).toBe(404);
    const side = (await post(ben, { status: 'side reply', in_reply_to_id: root.id })).json();
    expect(r1.in_reply_to_account_id).toBe(amy.id);

    const ids = (list: { id: string }[]) => list.map((x) => x.id);
    // ben follows cal (earlier test), so ben sees the private reply and everything under it.
    const forBen = (await get(`/api/v1/statuses/${root.id}/context`, ben)).json();
    expectEntity('Context', forBen);
    expect(ids(forBen.ancestors)).toEqual([]);
    expect(ids(forBen.descendants), JSON.stringify({ got: ids(forBen.descendants), r1: r1.id, r2: r2.id, r3: r3.id, side: side.id })).toEqual([r1.id, r2.id, r3.id, side.id]);
    // dan follows nobody: the private reply and its subtree are hidden.
    const forDan = (await get(`/api/v1/statuses/${root.id}/context`, dan)).json();
    expect(ids(forDan.descendants)).toEqual([r1.id, side.id]);
    const anon = (await get(`/api/v1/statuses/${r3.id}/context`)).json();
    expect(ids(anon.ancestors)).toEqual([root.id, r1.id]);
    const forCal = (await get(`/api/v1/statuses/${r3.id}/context`, cal)).json();
    expect(ids(forCal.ancestors)).toEqual([root.id, r1.id, r2.id]);
    expect((await get(`/api/v1/statuses/${root.id}`)).json().replies_count).toBe(2);
  });
});
