import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { connectRedis, createRedis, deleteKeysWithPrefix, type RedisClient } from '../../storage/redis.ts';
import { removeLegacyKeys } from '../../storage/legacy-keys.ts';

// Keys of the names used before hash tags are removed once; today's keys are left alone.
describe('removeLegacyKeys', () => {
  const prefix = `fedi_test_legacy_${randomBytes(4).toString('hex')}:`;
  let redis: RedisClient;
  beforeAll(async () => {
    redis = createRedis('redis://127.0.0.1:6379');
    await connectRedis(redis, 'redis://127.0.0.1:6379');
  });
  afterAll(async () => {
    await deleteKeysWithPrefix(redis, prefix);
    redis.disconnect();
  });

  it('removes old feeds, markers and versions, keeps the tagged ones, and runs once', async () => {
    const old = ['feed:home:1', 'feed:home:1:ready', 'feed:list:2', 'feed:home:accepting', 'ver:s:3', 'ver:r:4', 'ver:epoch'];
    const current = ['feed:{fh3}:home:1', 'feed:{fh3}:home:1:ready', 'ver:{v2}:s:3', 'ver:{v2}:epoch', 'rate-limit:token:x:{r1}'];
    for (let i = 0; i < 1200; i++) old.push(`feed:home:${1000 + i}`);
    for (const key of [...old, ...current]) await redis.set(`${prefix}${key}`, '1');
    expect(await removeLegacyKeys(redis, prefix)).toBe(old.length);
    for (const key of old) expect(await redis.exists(`${prefix}${key}`), key).toBe(0);
    for (const key of current) expect(await redis.exists(`${prefix}${key}`), key).toBe(1);
    await redis.set(`${prefix}feed:home:9`, '1');
    expect(await removeLegacyKeys(redis, prefix)).toBe(0);
    expect(await redis.exists(`${prefix}feed:home:9`)).toBe(1);
  });
});
