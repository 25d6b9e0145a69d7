import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../storage/redis.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import { RateLimitCounters, rateLimitRedisKey, type Count } from '../../storage/rate-limit-counters.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `fedi_test_rl_${randomBytes(4).toString('hex')}:`;
let redis: RedisClient;
let other: RedisClient;

beforeAll(async () => {
  redis = createRedis(url);
  other = createRedis(url);
  await connectRedis(redis, url);
  await connectRedis(other, url);
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
  other.disconnect();
});

function hit(counters: RateLimitCounters, key: string, windowMs: number, max: number): Promise<Count> {
  return new Promise((resolve, reject) => counters.hit(key, windowMs, max, (err, count) => (err ? reject(err) : resolve(count!))));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('rate-limit counters', () => {
  it('counts a busy key in memory and sends its hits to Redis in batches, not one command per hit', async () => {
    const counters = new RateLimitCounters(redis);
    const sent = vi.spyOn(redis, 'sendCommand');
    const key = `${prefix}busy`;
    const counts: number[] = [];
    for (let i = 0; i < 1000; i++) {
      counts.push((await hit(counters, key, 60_000, 1_000_000)).current);
      if (i % 100 === 99) await sleep(20);
    }
    await counters.close();
    expect(counts).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(Number(await redis.get(rateLimitRedisKey(key)))).toBe(1000);
    // The first hit, then a batch per flush interval (100 ms) of the ~200 ms the loop took, and the last flush.
    expect(sent.mock.calls.length).toBeLessThan(20);
    expect(await redis.pttl(rateLimitRedisKey(key))).toBeGreaterThan(50_000);
    sent.mockRestore();
  });

  it('decides hits near the limit on Redis\'s count, exactly', async () => {
    const counters = new RateLimitCounters(redis);
    const key = `${prefix}near`;
    const allowed = [];
    for (let i = 0; i < 80; i++) allowed.push((await hit(counters, key, 60_000, 50)).current <= 50);
    expect(allowed.filter(Boolean).length).toBe(50);
    expect(allowed.slice(0, 50).every(Boolean)).toBe(true);
    await counters.close();
    expect(Number(await redis.get(rateLimitRedisKey(key)))).toBe(80);
  });

  it('shares a limit between processes (two sets of counters, two connections) within a small tolerance', async () => {
    const a = new RateLimitCounters(redis);
    const b = new RateLimitCounters(other);
    const key = `${prefix}shared`;
    const max = 500;
    let allowed = 0;
    // Both hammer the key at once, 25 hits each per round, until well past the limit.
    for (let round = 0; round < 30; round++) {
      const counts = await Promise.all([
        ...Array.from({ length: 25 }, () => hit(a, key, 60_000, max)),
        ...Array.from({ length: 25 }, () => hit(b, key, 60_000, max)),
      ]);
      allowed += counts.filter((c) => c.current <= max).length;
      await sleep(5);
    }
    await a.close();
    await b.close();
    expect(allowed).toBeGreaterThanOrEqual(max);
    expect(allowed).toBeLessThanOrEqual(max * 1.05);
    expect(Number(await redis.get(rateLimitRedisKey(key)))).toBe(30 * 50);
  });

  it('starts a new window when Redis\'s ends', async () => {
    const counters = new RateLimitCounters(redis);
    const key = `${prefix}window`;
    for (let i = 0; i < 3; i++) await hit(counters, key, 300, 3);
    expect((await hit(counters, key, 300, 3)).current).toBe(4);
    await sleep(350);
    const next = await hit(counters, key, 300, 3);
    expect(next.current).toBe(1);
    expect(next.ttl).toBeLessThanOrEqual(300);
    await counters.close();
  });

  it('sends every key\'s pending hits in one script call on a single Redis, whatever their buckets', async () => {
    const counters = new RateLimitCounters(redis, { flushMs: 3_600_000 });
    const keys = Array.from({ length: 40 }, (_, i) => `${prefix}flush:${i}`);
    for (const key of keys) await hit(counters, key, 60_000, 1_000_000);
    for (const [i, key] of keys.entries()) for (let n = 0; n < i % 4 + 1; n++) await hit(counters, key, 60_000, 1_000_000);
    const calls = vi.spyOn(redis, 'evalsha');
    await counters.flush();
    expect(calls.mock.calls.length).toBe(1);
    calls.mockRestore();
    for (const [i, key] of keys.entries()) expect(Number(await redis.get(rateLimitRedisKey(key)))).toBe(i % 4 + 2);
    await counters.close();
  });

  it('keeps a bounded number of keys in memory', async () => {
    const counters = new RateLimitCounters(redis, { maxKeys: 100, sweepMs: 0 });
    for (let i = 0; i < 300; i++) await hit(counters, `${prefix}many:${i}`, 200, 10);
    expect(counters.size).toBeLessThanOrEqual(100);
    await sleep(250);
    await counters.flush();
    expect(counters.size).toBe(0);
    await counters.close();
  });
});
