import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, type RegisteredApp } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { LIMITS } from '../../http/plugins/rate-limit.ts';

let s: TestServer;
let client: RegisteredApp;

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMITS: 'true' });
  client = await createApp(s.app);
});
afterAll(async () => s?.close());

describe('rate limits', () => {
  it('allows Mastodon\'s 5 registrations per address per 30 minutes, then answers 429', async () => {
    const token = await appToken(s.app, client);
    const statuses: number[] = [];
    for (let i = 0; i < LIMITS.registration.max + 1; i++) {
      const res = await s.app.inject({
        method: 'POST', url: '/api/v1/accounts', headers: bearer(token),
        payload: { username: `user${i}`, email: `user${i}@example.com`, password: 'long-enough-pw', agreement: true, locale: 'en' },
      });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) expect(res.json().error).toMatch(/Too many requests/);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM accounts');
    expect(rows[0].n).toBe(LIMITS.registration.max);
  });

  it('limits password attempts on the sign-in page per address', async () => {
    const browser = new WebClient(s.app);
    const page = (await browser.get('/auth/sign_in')).body;
    const statuses: number[] = [];
    for (let i = 0; i < LIMITS.signIn.max + 1; i++) {
      const res = await browser.post('/auth/sign_in', { email: `nobody${i}@example.com`, password: 'guess' }, page);
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, LIMITS.signIn.max).every((c) => c === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });

  it('counts API requests in Redis under this server\'s prefix', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/instance' });
    expect(res.statusCode).toBe(200);
    expect(Number(res.headers['x-ratelimit-limit'])).toBe(LIMITS.api.max);
    const keys = await s.ctx.redis.keys(`${s.config.redisPrefix}rate-limit:*`);
    expect(keys.length).toBeGreaterThan(0);
  });
});
