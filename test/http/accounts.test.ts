import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, registerUsers, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

let s: TestServer;
let client: RegisteredApp;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
});
afterAll(async () => s?.close());

type Json = Record<string, unknown>;
const get = (server: TestServer, url: string, token?: string) => server.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
const NOT_FOUND = { error: 'Record not found' };

describe('GET /api/v1/accounts/:id', () => {
  it('shows a local account to anyone, as Mastodon\'s Account entity', async () => {
    const res = await get(s, `/api/v1/accounts/${alice.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const a = res.json();
    expectEntity('Account', a);
    expect(a).toMatchObject({
      id: alice.id, username: 'alice', acct: 'alice', display_name: '', locked: false, bot: false, group: false,
      url: 'http://test.local/@alice', uri: 'http://test.local/users/alice',
      followers_count: 0, following_count: 0, statuses_count: 0, last_status_at: null, emojis: [], fields: [],
    });
    expect(a.created_at).toMatch(/^\d{4}-\d\d-\d\dT00:00:00\.000Z$/);
    expect(a.source).toBeUndefined();
    expect(a.role).toBeUndefined();

    // With a token the answer is the same entity.
    const signedIn = await get(s, `/api/v1/accounts/${alice.id}`, bob.token);
    expect(signedIn.statusCode).toBe(200);
    expect(signedIn.json()).toEqual(a);
    const app = await get(s, `/api/v1/accounts/${alice.id}`, await appToken(s.app, client));
    expect(app.statusCode).toBe(200);
    expect(app.json().id).toBe(alice.id);
  });

  it('answers 401 for a token that is not one', async () => {
    const res = await get(s, `/api/v1/accounts/${alice.id}`, 'no-such-token');
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'The access token is invalid' });
  });

  it('answers 404 "Record not found" for unknown and malformed ids', async () => {
    for (const id of ['1', '123456789012345', 'abc', 'alice', '-5', '1.5', '99999999999999999999', '9223372036854775808', `${alice.id}x`]) {
      const res = await get(s, `/api/v1/accounts/${encodeURIComponent(id)}`);
      expect(res.statusCode, id).toBe(404);
      expect(res.json(), id).toEqual(NOT_FOUND);
    }
    const long = await get(s, `/api/v1/accounts/${'9'.repeat(60)}`);
    expect(long.statusCode).toBeGreaterThanOrEqual(400);
    expect(long.statusCode).toBeLessThan(500);
    expect(typeof long.json().error).toBe('string');
  });

  it('shows the counts follows change', async () => {
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${alice.id}/follow`, headers: bearer(bob.token) });
    expect((await get(s, `/api/v1/accounts/${alice.id}`)).json()).toMatchObject({ followers_count: 1, following_count: 0 });
    expect((await get(s, `/api/v1/accounts/${bob.id}`)).json()).toMatchObject({ followers_count: 0, following_count: 1 });
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${alice.id}/unfollow`, headers: bearer(bob.token) });
    expect((await get(s, `/api/v1/accounts/${alice.id}`)).json()).toMatchObject({ followers_count: 0, following_count: 0 });
  });
});

describe('GET /api/v1/accounts/lookup', () => {
  it('finds a local account by username, in any case, with or without this server\'s domain', async () => {
    for (const acct of ['alice', 'ALICE', 'Alice', '@alice', 'alice@test.local', 'alice@TEST.LOCAL', '@alice@test.local']) {
      const res = await get(s, `/api/v1/accounts/lookup?acct=${encodeURIComponent(acct)}`);
      expect(res.statusCode, acct).toBe(200);
      expectEntity('Account', res.json());
      expect(res.json(), acct).toMatchObject({ id: alice.id, username: 'alice', acct: 'alice' });
    }
  });

  it('answers 404 for names nobody has, here or elsewhere', async () => {
    for (const acct of ['nobody', 'alicia', 'alice@elsewhere.example', 'nobody@test.local', 'bob@alice']) {
      const res = await get(s, `/api/v1/accounts/lookup?acct=${encodeURIComponent(acct)}`);
      expect(res.statusCode, acct).toBe(404);
      expect(res.json(), acct).toEqual(NOT_FOUND);
    }
  });

  it('refuses a missing or empty acct with an error entity', async () => {
    for (const url of ['/api/v1/accounts/lookup', '/api/v1/accounts/lookup?acct=', '/api/v1/accounts/lookup?other=alice']) {
      const res = await get(s, url);
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, url).toBeLessThan(500);
      expect(typeof res.json().error, url).toBe('string');
    }
    const missing = await get(s, '/api/v1/accounts/lookup');
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error).toMatch(/acct/);
  });
});

describe('GET /api/v1/accounts?id[]=', () => {
  it('answers the accounts asked for, in the order asked, leaving out unknown ids', async () => {
    const res = await get(s, `/api/v1/accounts?id[]=${bob.id}&id[]=${alice.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().map((a: Json) => a.id)).toEqual([bob.id, alice.id]);
    for (const a of res.json()) expectEntity('Account', a);

    const reversed = await get(s, `/api/v1/accounts?id[]=${alice.id}&id[]=${bob.id}`);
    expect(reversed.json().map((a: Json) => a.id)).toEqual([alice.id, bob.id]);
    const single = await get(s, `/api/v1/accounts?id=${bob.id}`);
    expect(single.json().map((a: Json) => a.id)).toEqual([bob.id]);
    const mixed = await get(s, `/api/v1/accounts?id[]=42&id[]=${alice.id}&id[]=abc&id[]=${alice.id}`);
    expect(mixed.statusCode).toBe(200);
    expect(mixed.json().map((a: Json) => a.id)).toEqual([alice.id]);
  });

  it('answers no accounts for no ids, as Mastodon, and refuses too many', async () => {
    const none = await get(s, '/api/v1/accounts');
    expect(none.statusCode).toBe(200);
    expect(none.json()).toEqual([]);
    const many = await get(s, `/api/v1/accounts?${Array.from({ length: 41 }, (_, i) => `id[]=${i + 1}`).join('&')}`);
    expect(many.statusCode).toBe(422);
  });
});

describe('accounts waiting for approval', () => {
  let moderated: TestServer;
  let pendingId: string;
  let member: TestUser;

  beforeAll(async () => {
    moderated = await startTestServer({ REGISTRATIONS_MODE: 'approved' });
    const modClient = await createApp(moderated.app);
    const lines: string[] = [];
    await runCli(['accounts', 'create', 'member', '--email', 'member@example.com', '--password', 'member-password'], moderated.ctx.db, (l) => lines.push(l), async () => {});
    member = { id: lines[0]!, username: 'member', email: 'member@example.com', password: 'member-password', token: await authorizationCodeToken(moderated.app, modClient, 'member@example.com', 'member-password') };
    const reg = await moderated.app.inject({
      method: 'POST', url: '/api/v1/accounts', headers: bearer(await appToken(moderated.app, modClient)),
      payload: { username: 'waiting', email: 'waiting@example.com', password: 'waiting-password', agreement: true, locale: 'en', reason: 'Let me in' },
    });
    expect(reg.statusCode, reg.body).toBe(200);
    const { rows } = await moderated.ctx.db.query(`SELECT id::text FROM accounts WHERE username = 'waiting'`);
    pendingId = rows[0].id;
  });
  afterAll(async () => moderated?.close());

  it('hides them, as Mastodon does, until an operator approves them', async () => {
    expect((await get(moderated, `/api/v1/accounts/${member.id}`)).statusCode).toBe(200);
    const shown = await get(moderated, `/api/v1/accounts/${pendingId}`);
    expect(shown.statusCode).toBe(404);
    expect(shown.json()).toEqual(NOT_FOUND);
    expect((await get(moderated, '/api/v1/accounts/lookup?acct=waiting')).statusCode).toBe(404);
    expect((await get(moderated, `/api/v1/accounts?id[]=${pendingId}&id[]=${member.id}`)).json().map((a: Json) => a.id)).toEqual([member.id]);
    const followed = await moderated.app.inject({ method: 'POST', url: `/api/v1/accounts/${pendingId}/follow`, headers: bearer(member.token) });
    expect(followed.statusCode).toBe(404);
    const { rows } = await moderated.ctx.db.query('SELECT count(*)::int AS n FROM follows');
    expect(rows[0].n).toBe(0);

    await runCli(['accounts', 'approve', 'waiting'], moderated.ctx.db, () => {}, (what) => publishTokenInvalidation(moderated.ctx.redis, moderated.config.redisPrefix, what));
    const after = await get(moderated, `/api/v1/accounts/${pendingId}`);
    expect(after.statusCode).toBe(200);
    expectEntity('Account', after.json());
    expect((await get(moderated, '/api/v1/accounts/lookup?acct=waiting')).json().id).toBe(pendingId);
    const follow = await moderated.app.inject({ method: 'POST', url: `/api/v1/accounts/${pendingId}/follow`, headers: bearer(member.token) });
    expect(follow.json()).toMatchObject({ id: pendingId, following: true });
  });
});

describe('registered users through the helper', () => {
  it('are found by lookup right after registration', async () => {
    const carol = await registerUser(s.app, client, 'carol');
    const res = await get(s, '/api/v1/accounts/lookup?acct=carol');
    expect(res.json().id).toBe(carol.id);
    const me = await get(s, '/api/v1/accounts/verify_credentials', carol.token);
    expect(me.json().id).toBe(carol.id);
  });
});
