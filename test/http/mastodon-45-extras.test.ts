import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

/** Calls of Mastodon 4.3–4.5 that apps make, and the smaller differences from Mastodon. */
let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app);
  [alice, bob, carol] = await Promise.all([registerUser(s.app, client, 'alice'), registerUser(s.app, client, 'bob'), registerUser(s.app, client, 'carol')]);
});
afterAll(async () => s?.close());

const call = (user: TestUser | null, method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH', url: string, payload?: object) =>
  s.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });

describe('allowed_mentions', () => {
  it('refuses a post that would mention anyone outside the list, naming them, and writes nothing', async () => {
    const before = (await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n;
    const res = await call(alice, 'POST', '/api/v1/statuses', { status: '@bob and @carol, hello', allowed_mentions: [bob.id] });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('Post would be sent to unexpected accounts');
    expect(res.json().unexpected_accounts.map((a: { id: string }) => a.id)).toEqual([carol.id]);
    for (const a of res.json().unexpected_accounts) expectEntity('Account', a);
    expect((await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n).toBe(before);
    const ok = await call(alice, 'POST', '/api/v1/statuses', { status: '@bob hello', allowed_mentions: [bob.id] });
    expect(ok.statusCode).toBe(200);
    const none = await call(alice, 'POST', '/api/v1/statuses', { status: 'no one at all', allowed_mentions: [] });
    expect(none.statusCode).toBe(200);
  });
});

describe('notification requests in bulk', () => {
  it('accepts and dismisses with id as a JSON array (as masto sends it) and as form id[]', async () => {
    await call(bob, 'POST', '/api/v1/statuses', { status: '@alice psst', visibility: 'direct' });
    await call(carol, 'POST', '/api/v1/statuses', { status: '@alice psst too', visibility: 'direct' });
    const list = async () => (await call(alice, 'GET', '/api/v1/notifications/requests')).json() as { id: string; account: { id: string } }[];
    let requests = await list();
    expect(requests.map((r) => r.account.id).sort()).toEqual([bob.id, carol.id].sort());
    const fromBob = requests.find((r) => r.account.id === bob.id)!;
    const accepted = await call(alice, 'POST', '/api/v1/notifications/requests/accept', { id: [fromBob.id] });
    expect(accepted.statusCode, accepted.body).toBe(200);
    requests = await list();
    expect(requests.map((r) => r.account.id)).toEqual([carol.id]);
    const dismissed = await s.app.inject({
      method: 'POST', url: '/api/v1/notifications/requests/dismiss',
      headers: { ...bearer(alice.token), 'content-type': 'application/x-www-form-urlencoded' }, payload: `id[]=${requests[0]!.id}`,
    });
    expect(dismissed.statusCode, dismissed.body).toBe(200);
    expect(await list()).toEqual([]);
  });
});

describe('hashtags featured from the tag (Mastodon 4.4)', () => {
  it('features and unfeatures, shown as featuring on the tag and in featured_tags', async () => {
    const featured = await call(alice, 'POST', '/api/v1/tags/Gardening/feature');
    expect(featured.statusCode, featured.body).toBe(200);
    expectEntity('Tag', featured.json());
    expect(featured.json()).toMatchObject({ name: expect.stringMatching(/^gardening$/i), featuring: true, following: false });
    expect((await call(alice, 'GET', '/api/v1/featured_tags')).json().map((t: { name: string }) => t.name)).toEqual(['Gardening']);
    expect((await call(alice, 'GET', '/api/v1/tags/gardening')).json().featuring).toBe(true);
    expect((await call(bob, 'GET', '/api/v1/tags/gardening')).json().featuring).toBe(false);
    expect((await call(null, 'GET', '/api/v1/tags/gardening')).json().featuring).toBeUndefined();
    const un = await call(alice, 'POST', '/api/v1/tags/Gardening/unfeature');
    expect(un.json().featuring).toBe(false);
    expect((await call(alice, 'GET', '/api/v1/featured_tags')).json()).toEqual([]);
    expect((await call(alice, 'POST', '/api/v1/tags/1234/feature')).statusCode).toBe(422);
    expect((await call(null, 'POST', '/api/v1/tags/x/feature')).statusCode).toBe(401);
  });
});

describe('conversations marked unread again (Mastodon 4.5)', () => {
  it('reads and unreads a conversation', async () => {
    await call(carol, 'POST', '/api/v1/statuses', { status: '@bob a secret', visibility: 'direct' });
    const [conversation] = (await call(bob, 'GET', '/api/v1/conversations')).json();
    const read = await call(bob, 'POST', `/api/v1/conversations/${conversation.id}/read`);
    expect(read.json().unread).toBe(false);
    const unread = await call(bob, 'POST', `/api/v1/conversations/${conversation.id}/unread`);
    expect(unread.statusCode).toBe(200);
    expectEntity('Conversation', unread.json());
    expect(unread.json().unread).toBe(true);
    expect((await call(alice, 'POST', `/api/v1/conversations/${conversation.id}/unread`)).statusCode).toBe(404);
  });
});

describe('the profile directory', () => {
  it('lists discoverable accounts, by activity or newest, local or all, with offset paging', async () => {
    for (const u of [alice, bob]) await call(u, 'PATCH', '/api/v1/accounts/update_credentials', { discoverable: true });
    await call(carol, 'PATCH', '/api/v1/accounts/update_credentials', { discoverable: false });
    await call(bob, 'POST', '/api/v1/statuses', { status: 'recently active' });
    const active = await call(null, 'GET', '/api/v1/directory?order=active');
    expect(active.statusCode).toBe(200);
    const ids = active.json().map((a: { id: string }) => a.id);
    expect(ids[0]).toBe(bob.id);
    expect(ids).toContain(alice.id);
    expect(ids).not.toContain(carol.id);
    for (const a of active.json()) expectEntity('Account', a);
    const newest = (await call(null, 'GET', '/api/v1/directory?order=new&local=true')).json().map((a: { id: string }) => a.id);
    expect(newest).toEqual([...newest].sort((x: string, y: string) => (BigInt(y) > BigInt(x) ? 1 : -1)));
    expect((await call(null, 'GET', '/api/v1/directory?order=new&limit=1&offset=1')).json()).toHaveLength(1);
    expect((await call(null, 'GET', '/api/v1/directory?limit=500')).statusCode).toBe(200);
    expect((await call(null, 'GET', '/api/v1/directory?order=popular')).statusCode).toBe(422);
    expect((await call(null, 'GET', '/api/v1/directory?offset=-1')).statusCode).toBe(422);
  });

  it('answers identity proofs with an empty list, and 404 for an unknown account', async () => {
    expect((await call(null, 'GET', `/api/v1/accounts/${alice.id}/identity_proofs`)).json()).toEqual([]);
    expect((await call(null, 'GET', '/api/v1/accounts/999999/identity_proofs')).statusCode).toBe(404);
  });
});

describe('streaming needs a read scope', () => {
  it('refuses a token that may only write, on public server-sent event streams too', async () => {
    const writer = await createApp(s.app, 'write');
    const token = await authorizationCodeToken(s.app, writer, 'alice@example.com', alice.password, 'write');
    for (const path of ['/api/v1/streaming/public', '/api/v1/streaming/public/local', '/api/v1/streaming/public/remote', '/api/v1/streaming/hashtag?tag=x', '/api/v1/streaming/user']) {
      const res = await s.app.inject({ method: 'GET', url: path, headers: bearer(token) });
      expect(res.statusCode, path).toBe(401);
      expect(res.json().error, path).toBe('Access token does not have the required scopes');
    }
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/streaming/list?list=1', headers: bearer(token) })).statusCode).toBe(401);
  });
});
