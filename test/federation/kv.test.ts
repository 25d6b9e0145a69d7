import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Temporal } from '@js-temporal/polyfill';
import { randomBytes } from 'node:crypto';
import { RedisKvStore } from '../../federation/kv.ts';
import { deleteKeysWithPrefix } from '../../storage/redis.ts';

// Fedify's key–value store on our Redis: its caches, idempotence records and circuit breaker state live here.
let redis: Redis;
let kv: RedisKvStore;
const prefix = `fedi_kvtest_${randomBytes(4).toString('hex')}:`;

beforeAll(() => {
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  kv = new RedisKvStore(redis, prefix);
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

describe('RedisKvStore', () => {
  it('gets, sets, expires and deletes JSON values by key parts', async () => {
    expect(await kv.get(['a', 'b'])).toBeUndefined();
    await kv.set(['a', 'b'], { n: 1, list: ['x'] });
    expect(await kv.get(['a', 'b'])).toEqual({ n: 1, list: ['x'] });
    await kv.set(['short'], 'lived', { ttl: Temporal.Duration.from({ milliseconds: 50 }) });
    expect(await kv.get(['short'])).toBe('lived');
    await new Promise((r) => setTimeout(r, 120));
    expect(await kv.get(['short'])).toBeUndefined();
    await kv.delete(['a', 'b']);
    expect(await kv.get(['a', 'b'])).toBeUndefined();
  });

  it('swaps only from the expected value, compared as data, and deletes on undefined', async () => {
    expect(await kv.cas!(['c'], undefined, { state: 'closed', at: [1, 2] })).toBe(true);
    expect(await kv.cas!(['c'], undefined, { state: 'open' })).toBe(false); // not absent any more
    expect(await kv.cas!(['c'], { state: 'half' }, { state: 'open' })).toBe(false);
    // Same data, keys in another order: still the expected value.
    expect(await kv.cas!(['c'], { at: [1, 2], state: 'closed' }, { state: 'open' })).toBe(true);
    expect(await kv.get(['c'])).toEqual({ state: 'open' });
    expect(await kv.cas!(['c'], { state: 'open' }, undefined)).toBe(true);
    expect(await kv.get(['c'])).toBeUndefined();
    // Two racing swaps from the same value: exactly one wins.
    await kv.set(['race'], 0);
    const results = await Promise.all([kv.cas!(['race'], 0, 1), kv.cas!(['race'], 0, 2)]);
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('lists by whole key parts', async () => {
    await kv.set(['list', 'one'], 1);
    await kv.set(['list', 'two'], 2);
    await kv.set(['listing'], 3);
    const found = [];
    for await (const e of kv.list(['list'])) found.push(e);
    expect(found.map((e) => e.key.join('/')).sort()).toEqual(['list/one', 'list/two']);
  });
});
