import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, type RegisteredApp } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

type Json = Record<string, any>;

const v1 = async (server: TestServer, headers: Record<string, string> = {}): Promise<Json> => {
  const res = await server.app.inject({ method: 'GET', url: '/api/v1/instance', headers });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expectEntity('V1Instance', res.json());
  return res.json();
};
const v2 = async (server: TestServer): Promise<Json> => {
  const res = await server.app.inject({ method: 'GET', url: '/api/v2/instance' });
  expect(res.statusCode, res.body).toBe(200);
  expectEntity('Instance', res.json());
  return res.json();
};
const cli = (server: TestServer, ...args: string[]) =>
  runCli(args, server.ctx.db, () => {}, (what) => publishTokenInvalidation(server.ctx.redis, server.config.redisPrefix, what));

describe('an instance that needs approval, with its own title, contact and limits', () => {
  let s: TestServer;
  let client: RegisteredApp;

  beforeAll(async () => {
    s = await startTestServer({
      INSTANCE_TITLE: 'Moderated Social',
      INSTANCE_DESCRIPTION: 'A small, careful place.',
      INSTANCE_CONTACT_EMAIL: 'staff@test.local',
      INSTANCE_CONTACT_USERNAME: 'boss',
      REGISTRATIONS_MODE: 'approved',
      MAX_STATUS_CHARS: '640',
      SOURCE_URL: 'https://code.example/fedi',
    });
    client = await createApp(s.app);
  });
  afterAll(async () => s?.close());

  it('describes itself with those settings in v1 and v2', async () => {
    const one = await v1(s);
    expect(one).toMatchObject({
      uri: 'test.local', title: 'Moderated Social', short_description: 'A small, careful place.', description: 'A small, careful place.',
      email: 'staff@test.local', registrations: true, approval_required: true, invites_enabled: false,
      urls: { streaming_api: 'ws://test.local' },
      stats: { user_count: 0, status_count: 0, domain_count: 0 },
      configuration: { statuses: { max_characters: 640 } },
      contact_account: null,
    });
    expect(one.version).toMatch(/^4\.\d+\.\d+ \(compatible; fedi-server /);

    const two = await v2(s);
    expect(two).toMatchObject({
      domain: 'test.local', title: 'Moderated Social', description: 'A small, careful place.', source_url: 'https://code.example/fedi',
      registrations: { enabled: true, approval_required: true, reason_required: true },
      contact: { email: 'staff@test.local', account: null },
      configuration: { urls: { streaming: 'ws://test.local' }, statuses: { max_characters: 640 }, accounts: { max_profile_fields: 4 } },
      api_versions: { mastodon: 2 },
    });
    expect(two.version).toBe(one.version);
    expect(two.oauth_scopes).toEqual(expect.arrayContaining(['read', 'write', 'follow', 'push', 'profile', 'write:follows']));
  });

  it('counts users once approved, and shows the contact account once it exists', async () => {
    const reg = await s.app.inject({
      method: 'POST', url: '/api/v1/accounts', headers: bearer(await appToken(s.app, client)),
      payload: { username: 'boss', email: 'boss@example.com', password: 'boss-password', agreement: true, locale: 'en', reason: 'I run this place' },
    });
    expect(reg.statusCode, reg.body).toBe(200);
    // Waiting for approval: not a user yet, nor an active one.
    expect((await v1(s)).stats.user_count).toBe(0);
    expect((await v2(s)).usage.users.active_month).toBe(0);

    await cli(s, 'accounts', 'approve', 'boss');
    const one = await v1(s);
    expect(one.stats.user_count).toBe(1);
    expect(one.contact_account).toMatchObject({ username: 'boss', acct: 'boss' });
    expectEntity('Account', one.contact_account);
    const { rows } = await s.ctx.db.query(`SELECT id::text FROM accounts WHERE username = 'boss'`);
    expect(one.contact_account.id).toBe(rows[0].id);
    const two = await v2(s);
    expect(two.contact.account.id).toBe(rows[0].id);

    await cli(s, 'accounts', 'create', 'helper', '--email', 'helper@example.com', '--password', 'helper-password');
    expect((await v1(s)).stats.user_count).toBe(2);
  });

  it('counts local statuses and this month\'s active users', async () => {
    // boss holds the token registration gave him; helper, made on the command line, holds none.
    expect((await v2(s)).usage.users.active_month).toBe(1);
    // Users are counted, not their tokens.
    const token = await authorizationCodeToken(s.app, client, 'boss@example.com', 'boss-password');
    expect((await v2(s)).usage.users.active_month).toBe(1);
    await authorizationCodeToken(s.app, client, 'helper@example.com', 'helper-password');
    expect((await v2(s)).usage.users.active_month).toBe(2);

    const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(token), payload: { status: 'Hello from the staff' } });
    expect(posted.statusCode, posted.body).toBe(200);
    const second = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(token), payload: { status: 'And again' } });
    expect(second.statusCode).toBe(200);
    expect((await v1(s)).stats.status_count).toBe(2);
    const gone = await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${second.json().id}`, headers: bearer(token) });
    expect(gone.statusCode).toBe(200);
    expect((await v1(s)).stats.status_count).toBe(1);

    // The limit the instance announces is the one posting enforces.
    const atLimit = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(token), payload: { status: 'x'.repeat(640) } });
    expect(atLimit.statusCode).toBe(200);
    const over = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(token), payload: { status: 'x'.repeat(641) } });
    expect(over.statusCode).toBe(422);
  });

  it('answers without a token, and the same with a user token', async () => {
    const token = await authorizationCodeToken(s.app, client, 'helper@example.com', 'helper-password');
    const anonymous = await v1(s);
    const signedIn = await v1(s, bearer(token));
    expect(signedIn).toEqual(anonymous);
  });
});

describe('an open instance with default settings', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Truly default: no INSTANCE_CONTACT_EMAIL, no SOURCE_URL. Both documents must still match Mastodon's schema.
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('uses its domain as title, 500 characters, and open registrations', async () => {
    const one = await v1(s);
    expect(one).toMatchObject({ title: 'test.local', registrations: true, approval_required: false, contact_account: null, configuration: { statuses: { max_characters: 500 } } });
    const two = await v2(s);
    expect(two).toMatchObject({
      title: 'test.local', registrations: { enabled: true, approval_required: false, reason_required: false },
      configuration: { statuses: { max_characters: 500 } },
    });
  });

  it('shows valid placeholders that name nothing for the unset contact email and source URL', async () => {
    expect((await v1(s)).email).toBe('contact-not-set@example.invalid');
    const two = await v2(s);
    expect(two.contact).toEqual({ email: 'contact-not-set@example.invalid', account: null });
    expect(two.source_url).toBe('about:blank');
  });

  it('counts each user who registers', async () => {
    const client = await createApp(s.app);
    const before = (await v1(s)).stats.user_count;
    expect(before).toBe(0);
    await registerUser(s.app, client, 'first');
    expect((await v1(s)).stats.user_count).toBe(1);
    await registerUser(s.app, client, 'second');
    expect((await v1(s)).stats.user_count).toBe(2);
  });

  it('answers GET /health with 200 while PostgreSQL and Redis answer', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', postgres: 'ok', redis: 'ok' });
  });
});

describe('an instance with registrations closed', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ REGISTRATIONS_MODE: 'none' });
  });
  afterAll(async () => {
    // The disconnection below ends a moment later; connecting before then would be refused.
    if (s && s.ctx.redis.status !== 'end') await new Promise((r) => s.ctx.redis.once('end', r));
    await s?.ctx.redis.connect().catch(() => {});
    await s?.close();
  });

  it('says so in v1 and v2', async () => {
    expect(await v1(s)).toMatchObject({ registrations: false, approval_required: false });
    expect((await v2(s)).registrations).toMatchObject({ enabled: false, approval_required: false });
  });

  it('answers GET /health with 503 once Redis is gone', async () => {
    expect((await s.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    s.ctx.redis.disconnect();
    const res = await s.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable', postgres: 'ok', redis: 'unavailable' });
  });
});
