import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, type RegisteredApp } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { eventually } from '../helpers/eventually.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

let s: TestServer;
let client: RegisteredApp;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
});
afterAll(async () => s?.close());

const register = (server: TestServer, t: string, payload: object | string, headers: Record<string, string> = {}) =>
  server.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: { ...bearer(t), ...headers }, payload });
const valid = (username: string) => ({ username, email: `${username}@example.com`, password: 'a fine password', agreement: true, locale: 'en' });

describe('registration modes', () => {
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
