import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisKvStore } from '../../federation/kv.ts';
import { CavageFirstKvStore } from '../../federation/signature-specs.ts';

let redis: Redis;
const prefix = `test-specs-${process.pid}-${Date.now()}:`;

beforeAll(() => {
  redis = new Redis('redis://127.0.0.1:6379');
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(keys);
  redis.disconnect();
});

describe('the store Fedify remembers signature specs in', () => {
  it('never keeps a spec, and removes one an earlier version stored', async () => {
    const inner = new RedisKvStore(redis, prefix);
    const kv = new CavageFirstKvStore(inner);
    const key = ['_fedify', 'httpMessageSignaturesSpec', 'https://snac.example'] as const;
    await inner.set(key, 'rfc9421'); // what Fedify stored while RFC 9421 was the first knock
    expect(await kv.get(key)).toBeUndefined();
    expect(await inner.get(key)).toBeUndefined();
    await kv.set(key, 'rfc9421');
    expect(await inner.get(key)).toBeUndefined();
    expect(await kv.cas(key, undefined, 'rfc9421')).toBe(false);
  });

  it('passes every other key through', async () => {
    const inner = new RedisKvStore(redis, prefix);
    const kv = new CavageFirstKvStore(inner);
    await kv.set(['_fedify', 'remoteDocument', 'x'], { a: 1 });
    expect(await kv.get(['_fedify', 'remoteDocument', 'x'])).toEqual({ a: 1 });
    expect(await kv.cas(['k'], undefined, 1)).toBe(true);
    expect(await kv.get(['k'])).toBe(1);
  });
});
