import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';

let s: TestServer;
let alice: TestUser;
const ORIGIN = 'https://elk.example';

beforeAll(async () => {
  s = await startTestServer();
  alice = await registerUser(s.app, await createApp(s.app), 'alice');
});
afterAll(async () => s?.close());

const preflight = (url: string, method = 'GET', headers = 'authorization') => s.app.inject({
  method: 'OPTIONS',
  url,
  headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': headers },
});

describe('CORS for web clients on other origins', () => {
  it('answers preflights on the API, the token endpoints and discovery documents', async () => {
    for (const [url, method] of [
      ['/api/v1/timelines/public', 'GET'],
      ['/api/v1/statuses', 'POST'],
      ['/api/v1/accounts/update_credentials', 'PATCH'],
      ['/api/v2/search?q=x', 'GET'],
      ['/oauth/token', 'POST'],
      ['/oauth/revoke', 'POST'],
      ['/.well-known/webfinger?resource=acct:alice@test.local', 'GET'],
      ['/.well-known/nodeinfo', 'GET'],
      ['/nodeinfo/2.0', 'GET'],
      ['/api/v1/streaming', 'GET'],
    ] as const) {
      const res = await preflight(url, method, 'authorization, content-type, idempotency-key');
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['access-control-allow-origin'], url).toBe('*');
      expect(String(res.headers['access-control-allow-methods']), url).toContain(method);
      expect(String(res.headers['access-control-allow-headers']).toLowerCase(), url).toContain('authorization');
      expect(String(res.headers['access-control-allow-headers']).toLowerCase(), url).toContain('idempotency-key');
      expect(res.headers['access-control-allow-credentials'], url).toBeUndefined();
    }
  });

  it('lets a cross-origin reader see Link and the rate-limit headers, on success and on errors', async () => {
    for (let i = 0; i < 3; i++) {
      await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: `post ${i}` } });
    }
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/timelines/home?limit=2', headers: { ...bearer(alice.token), origin: ORIGIN } });
    expect(res.statusCode).toBe(200);
    expect(res.headers.link).toBeTruthy();
    expect(res.headers['access-control-allow-origin']).toBe('*');
    const exposed = String(res.headers['access-control-expose-headers']).toLowerCase().split(/\s*,\s*/);
    for (const h of ['link', 'x-ratelimit-reset', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-request-id', 'mastodon-async-refresh']) expect(exposed).toContain(h);

    // A 401 must be readable too, or a web client cannot tell that its token was revoked.
    const denied = await s.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: { ...bearer('nope'), origin: ORIGIN } });
    expect(denied.statusCode).toBe(401);
    expect(denied.headers['access-control-allow-origin']).toBe('*');
    expect(denied.json()).toEqual({ error: expect.any(String) });

    const webfinger = await s.app.inject({ method: 'GET', url: '/.well-known/webfinger?resource=acct:alice@test.local', headers: { origin: ORIGIN } });
    expect(webfinger.statusCode).toBe(200);
    expect(webfinger.headers['access-control-allow-origin']).toBe('*');
  });

  it('sends nothing on sign-in, settings and other pages, whose preflights fail', async () => {
    for (const url of ['/oauth/authorize', '/auth/sign_in', '/settings/profile', '/']) {
      const res = await preflight(url, 'POST');
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['access-control-allow-origin'], url).toBeUndefined();
    }
    const page = await s.app.inject({ method: 'GET', url: '/oauth/authorize?client_id=x', headers: { origin: ORIGIN } });
    expect(page.headers['access-control-allow-origin']).toBeUndefined();
  });
});
