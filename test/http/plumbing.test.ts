import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers } from '../helpers/oauth.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.close());

describe('plumbing', () => {
  it('carries a request id in every response', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/instance', headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers['x-request-id']).toBe('abc-123');
    const fresh = await s.app.inject({ method: 'GET', url: '/api/v1/instance' });
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers unknown API paths with Mastodon\'s 404 entity', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'Record not found' });
  });
});

describe('tokens on public routes', () => {
  it('answers 403 to a token without the scope, as Mastodon does for a token it is given', async () => {
    const [writer] = await registerUsers(s.app, 'writeronly');
    const { rows } = await s.ctx.db.query('SELECT id FROM accounts WHERE username = $1', ['writeronly']);
    const reader = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${rows[0].id}`, headers: bearer(writer.token) });
    expect(reader.statusCode).toBe(200);
    const c = await s.app.inject({ method: 'POST', url: '/api/v1/apps', payload: { client_name: 'w', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'write' } });
    const t = await s.app.inject({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'client_credentials', client_id: c.json().client_id, client_secret: c.json().client_secret, scope: 'write' } });
    const writeOnly = bearer(t.json().access_token);
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${rows[0].id}`, headers: writeOnly })).statusCode).toBe(403);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/timelines/public', headers: writeOnly })).statusCode).toBe(403);
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${rows[0].id}` })).statusCode).toBe(200);
  });

  it('ignores tokens on the instance endpoints, even stale ones', async () => {
    for (const url of ['/api/v1/instance', '/api/v2/instance']) {
      expect((await s.app.inject({ method: 'GET', url, headers: { authorization: 'Bearer revoked-long-ago' } })).statusCode).toBe(200);
    }
  });
});
