import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Two web processes of one site: their own databases here, but one Redis prefix, as two processes of one install.
let a: TestServer;
let b: TestServer;
const LIMIT = 200;

beforeAll(async () => {
  const shared = { RATE_LIMITS: 'true', RATE_LIMIT_API_PER_5MIN: String(LIMIT), REDIS_PREFIX: `fedi_test_rl_${randomBytes(4).toString('hex')}:`, ROLE: 'web' };
  [a, b] = await Promise.all([startTestServer(shared), startTestServer(shared)]);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

describe('rate limits across processes', () => {
  it('share one limit per token between two servers on the same Redis, within a few requests', async () => {
    const headers = { authorization: 'Bearer the-same-token-on-both' };
    const statuses: number[] = [];
    let last: { limit?: string; remaining?: string; reset?: string } = {};
    // Both servers take requests at once, 20 each per round, until well past the limit.
    for (let round = 0; round < 15; round++) {
      const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).app.inject({ method: 'GET', url: '/api/v1/instance', headers })));
      for (const res of responses) statuses.push(res.statusCode);
      const r = responses.at(-1)!;
      last = { limit: r.headers['x-ratelimit-limit'] as string, remaining: r.headers['x-ratelimit-remaining'] as string, reset: r.headers['x-ratelimit-reset'] as string };
    }
    const limited = responses429(statuses);
    const allowed = statuses.length - limited;
    expect(allowed).toBeGreaterThanOrEqual(LIMIT);
    expect(allowed).toBeLessThanOrEqual(LIMIT * 1.05);
    // The last requests of both servers are refused, with Mastodon's headers and body.
    expect(statuses.slice(-40).every((s) => s === 429)).toBe(true);
    expect(last).toMatchObject({ limit: String(LIMIT), remaining: '0' });
    expect(Number(last.reset)).toBeGreaterThan(0);
    const refused = await a.app.inject({ method: 'GET', url: '/api/v1/instance', headers });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatch(/^Too many requests/);
  });

  it('counts each server\'s requests in Redis', async () => {
    const headers = { authorization: 'Bearer another-token' };
    for (let i = 0; i < 30; i++) await (i % 2 ? a : b).app.inject({ method: 'GET', url: '/api/v1/instance', headers });
    // Counted hits reach Redis within a flush interval (100 ms).
    await new Promise((r) => setTimeout(r, 300));
    const keys = await a.ctx.redis.keys(`${a.config.redisPrefix}rate-limit:token:*`);
    const counts = await Promise.all(keys.map((k) => a.ctx.redis.get(k)));
    expect(counts.map(Number)).toContain(30);
  });
});

function responses429(statuses: number[]): number {
  return statuses.filter((s) => s === 429).length;
}
