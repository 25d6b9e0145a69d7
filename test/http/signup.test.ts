import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, type RegisteredApp } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { eventually } from '../helpers/eventually.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

let s: TestServer;
let client: RegisteredApp;
let token: string;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  token = await appToken(s.app, client);
});
afterAll(async () => s?.close());

const register = (server: TestServer, t: string, payload: object | string, headers: Record<string, string> = {}) =>
  server.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: { ...bearer(t), ...headers }, payload });
const valid = (username: string) => ({ username, email: `${username}@example.com`, password: 'a fine password', agreement: true, locale: 'en' });

async function rowCounts(server: TestServer) {
  const { rows } = await server.ctx.db.query('SELECT (SELECT count(*) FROM accounts)::int AS a, (SELECT count(*) FROM users)::int AS u');
  return rows[0];
}

describe('registration', () => {
  it('returns a Token that works at once, with an RSA key pair made for the account', async () => {
    const res = await register(s, token, valid('gwen'));
    expect(res.statusCode, res.body).toBe(200);
    expectEntity('Token', res.json());
    expect(res.json().scope).toBe('read write follow push');
    const me = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(res.json().access_token) });
    expect(me.statusCode).toBe(200);
    expectEntity('CredentialAccount', me.json());
    expect(me.json()).toMatchObject({ username: 'gwen', acct: 'gwen', locked: false, role: { id: '-99' } });
    const { rows } = await s.ctx.db.query('SELECT public_key_pem, private_key_pem FROM accounts WHERE id = $1', [me.json().id]);
    expect(rows[0].public_key_pem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(rows[0].private_key_pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  it('accepts agreement as a form string', async () => {
    const res = await register(s, token, 'username=hal&email=hal@example.com&password=a+fine+password&agreement=1&locale=en', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('refuses bad registrations with 422 naming the field, writing nothing', async () => {
    const before = await rowCounts(s);
    const cases: [object, string][] = [
      [{ ...valid('x'), username: 'GWEN' }, 'username'],
      [{ ...valid('ivy'), email: 'GWEN@example.com' }, 'email'],
      [{ ...valid('bad name') }, 'username'],
      [{ ...valid('a'.repeat(31)) }, 'username'],
      [{ ...valid('.dot') }, 'username'],
      [{ ...valid('admin') }, 'username'],
      [{ ...valid('ivy'), password: 'short' }, 'password'],
      [{ ...valid('ivy'), email: 'not-an-email' }, 'email'],
      [{ ...valid('ivy'), agreement: false }, 'agreement'],
      [{ ...valid('ivy'), agreement: 'false' }, 'agreement'],
      [{ ...valid('ivy'), agreement: 'maybe' }, 'agreement'],
      [{ username: 'ivy', email: 'ivy@example.com', password: 'a fine password', agreement: true }, 'locale'],
    ];
    for (const [payload, field] of cases) {
      const res = await register(s, token, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error, JSON.stringify(payload)).toContain(field);
    }
    const taken = await register(s, token, { ...valid('Gwen'), email: 'other@example.com' });
    expect(taken.json().details.username[0].error).toBe('ERR_TAKEN');
    expect(await rowCounts(s)).toEqual(before);
  });

  it('lets exactly one of two racing registrations of a name win', async () => {
    const results = await Promise.all([
      register(s, token, { ...valid('jay'), email: 'jay1@example.com' }),
      register(s, token, { ...valid('JAY'), email: 'jay2@example.com' }),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 422]);
  });

  it('needs an app token with write:accounts', async () => {
    expect((await s.app.inject({ method: 'POST', url: '/api/v1/accounts', payload: valid('kim') })).statusCode).toBe(401);
    const readOnly = await appToken(s.app, client, 'read');
    expect((await register(s, readOnly, valid('kim'))).statusCode).toBe(403);
  });
});

describe('registration modes', () => {
  it('refuses everyone when closed', async () => {
    const closed = await startTestServer({ REGISTRATIONS_MODE: 'none' });
    try {
      const c = await createApp(closed.app);
      const res = await register(closed, await appToken(closed.app, c), valid('lee'));
      expect(res.statusCode).toBe(403);
      expect(await rowCounts(closed)).toEqual({ a: 0, u: 0 });
      const instance = await closed.app.inject({ method: 'GET', url: '/api/v2/instance' });
      expect(instance.json().registrations.enabled).toBe(false);
    } finally {
      await closed.close();
    }
  });

  it('holds new accounts for approval, then lets them in once an operator approves', async () => {
    const moderated = await startTestServer({ REGISTRATIONS_MODE: 'approved' });
    try {
      const c = await createApp(moderated.app);
      const t = await appToken(moderated.app, c);
      expect((await register(moderated, t, valid('max'))).statusCode).toBe(422);
      const res = await register(moderated, t, { ...valid('max'), reason: 'I would like to join' });
      expect(res.statusCode).toBe(200);
      const pending = await moderated.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(res.json().access_token) });
      expect(pending.statusCode).toBe(403);
      expect(pending.json().error).toMatch(/pending approval/);
      // What an operator does: `npm run cli -- accounts approve max`.
      await runCli(['accounts', 'approve', 'max'], moderated.ctx.db, () => {}, (what) => publishTokenInvalidation(moderated.ctx.redis, moderated.config.redisPrefix, what));
      // The approval reaches the server's token cache over Redis pub/sub: within moments, not necessarily at once.
      const status = () => moderated.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(res.json().access_token) }).then((r) => r.statusCode);
      expect(await eventually(status, 200)).toBe(200);
    } finally {
      await moderated.close();
    }
  });
});

describe('finding accounts', () => {
  it('looks accounts up by acct, case-insensitively, with or without this domain', async () => {
    const nia = await registerUser(s.app, client, 'nia');
    for (const acct of ['nia', 'NIA', '@nia', 'nia@test.local']) {
      const res = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/lookup?acct=${encodeURIComponent(acct)}` });
      expect(res.statusCode, acct).toBe(200);
      expect(res.json().id).toBe(nia.id);
      expectEntity('Account', res.json());
    }
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=nobody' })).statusCode).toBe(404);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=nia@elsewhere.example' })).statusCode).toBe(404);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup' })).statusCode).toBe(422);
  });

  it('shows accounts by id to anyone, 404 for unknown ids', async () => {
    const nia = (await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=nia' })).json();
    const res = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${nia.id}` });
    expect(res.statusCode).toBe(200);
    expectEntity('Account', res.json());
    expect(res.json()).toMatchObject({ url: 'http://test.local/@nia', uri: 'http://test.local/users/nia', avatar: 'http://test.local/avatars/original/missing.png' });
    const missing = await s.app.inject({ method: 'GET', url: res.json().avatar.replace('http://test.local', '') });
    expect(missing.statusCode).toBe(200);
    for (const id of ['1', '99999999999999999999999', '9999999999999999999', 'abc']) {
      const r = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${id}` });
      expect(r.statusCode, id).toBe(404);
      expect(r.json()).toEqual({ error: 'Record not found' });
    }
    const many = await s.app.inject({ method: 'GET', url: `/api/v1/accounts?id[]=${nia.id}&id[]=1&id[]=9999999999999999999` });
    expect(many.json().map((a: { id: string }) => a.id)).toEqual([nia.id]);
  });
});
