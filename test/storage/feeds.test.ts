import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../storage/redis.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import { HomeFeeds } from '../../storage/feeds.ts';
import { feedTag } from '../../storage/redis-keys.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `feeds_test_${randomBytes(4).toString('hex')}:`;
let redis: RedisClient;
let feeds: HomeFeeds;

beforeAll(async () => {
  redis = createRedis(url);
  await connectRedis(redis, url);
  feeds = new HomeFeeds(redis, prefix);
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

const newest = async (accountId: string) => (await feeds.page(accountId, { limit: 40 })).ids;

describe('home feed rebuild', () => {
  it('keeps a status fanned out while the rebuild was reading PostgreSQL', async () => {
    expect(await newest('1')).toBeNull();
    expect(await feeds.acceptingAmong(['1'])).toEqual([]);
    await feeds.rebuild('1', async () => {
      // The source was read; then a status is committed and fanned out before the rebuild writes the feed.
      expect(await feeds.acceptingAmong(['1'])).toEqual(['1']);
      expect(await feeds.isReady('1')).toBe(false);
      await feeds.add('1', ['300']);
      return ['200', '100'];
    });
    expect(await newest('1')).toEqual(['300', '200', '100']);
    expect(await feeds.isReady('1')).toBe(true);
  });

  it('knows which feeds take statuses from one set, and learns those it does not know from their markers', async () => {
    await feeds.rebuild('10', async () => []);
    // Built before the set existed (or the set was lost): only its marker says so.
    await redis.set(`${prefix}feed:${feedTag('11')}:home:11:ready`, '1');
    expect((await feeds.acceptingAmong(['10', '11', '12'])).sort()).toEqual(['10', '11']);
    // One accepting set per bucket, named with the bucket's tag.
    const scores = await Promise.all(['10', '11', '12'].map((id) => redis.zscore(`${prefix}feed:${feedTag(id)}:home:accepting`, id)));
    expect(scores).toEqual(['inf', 'inf', '0']);
    // One found taking none is built later: from then on it takes statuses.
    await feeds.rebuild('12', async () => []);
    expect((await feeds.acceptingAmong(['10', '11', '12'])).sort()).toEqual(['10', '11', '12']);
    // Lost with Redis: nothing takes statuses until rebuilt.
    await deleteKeysWithPrefix(redis, `${prefix}feed:`);
    expect(await feeds.acceptingAmong(['10', '11', '12'])).toEqual([]);
  });

  it('asks about a thousand feeds of every bucket in one script call, and enters the unknown ones in one more', async () => {
    const owners = Array.from({ length: 1000 }, (_, i) => String(500_000 + i));
    expect(new Set(owners.map(feedTag)).size).toBe(64);
    const built = owners.filter((_, i) => i % 3 === 0);
    const markedOnly = owners.filter((_, i) => i % 3 === 1);
    await Promise.all(built.map((id) => feeds.rebuild(id, async () => [])));
    await Promise.all(markedOnly.map((id) => redis.set(`${prefix}feed:${feedTag(id)}:home:${id}:ready`, '1')));
    const evalsha = vi.spyOn(redis, 'evalsha');
    try {
      expect((await feeds.acceptingAmong(owners)).sort()).toEqual([...built, ...markedOnly].sort());
      expect(evalsha).toHaveBeenCalledTimes(2);
      evalsha.mockClear();
      expect((await feeds.acceptingAmong(owners)).sort()).toEqual([...built, ...markedOnly].sort());
      expect(evalsha).toHaveBeenCalledTimes(1);
    } finally {
      evalsha.mockRestore();
    }
  });

  it('keeps a feed grown one status at a time at its cap, the newest kept', async () => {
    await feeds.rebuild('3', async () => []);
    for (let i = 0; i < 900; i += 100) await Promise.all(Array.from({ length: 100 }, (_, k) => feeds.add('3', [String(1000 + i + k)])));
    const ids = await redis.zrange(feeds.key('3'), 0, -1);
    expect(ids).toHaveLength(800);
    expect(ids.at(-1)).toBe('1899');
    expect(ids[0]).toBe('1100');
  });

  it('adds to many feeds asked for in one turn together, each getting its own statuses', async () => {
    const owners = Array.from({ length: 1500 }, (_, i) => String(5000 + i));
    await Promise.all(owners.map((id, i) => feeds.add(id, i % 2 === 0 ? ['7001'] : ['7001', '7002'])));
    expect(await redis.zrange(feeds.key('5000'), 0, -1)).toEqual(['7001']);
    expect(await redis.zrange(feeds.key('5001'), 0, -1)).toEqual(['7001', '7002']);
    expect(await redis.zrange(feeds.key('6499'), 0, -1)).toEqual(['7001', '7002']);
    expect(await redis.zscore(feeds.key('6498'), '7001')).toBe('7001');
    // A feed given more statuses at once than a slice of the script's ZADD.
    const many = Array.from({ length: 1200 }, (_, i) => String(9000 + i));
    await feeds.add('4', many);
    expect(await redis.zcard(feeds.key('4'))).toBe(800);
    expect((await redis.zrange(feeds.key('4'), -1, -1))[0]).toBe('10199');
  });

  it('costs a single Redis what it did before buckets: one script call per thousand feeds, one MGET per page', async () => {
    const owners = Array.from({ length: 1000 }, (_, i) => String(20_000 + i));
    const evalsha = vi.spyOn(redis, 'evalsha');
    const mget = vi.spyOn(redis, 'mget');
    try {
      await Promise.all(owners.map((id) => feeds.add(id, ['8001'])));
      expect(evalsha).toHaveBeenCalledTimes(1);
      await feeds.rebuild('20000', async () => ['8000']);
      const versionKeys = Array.from({ length: 16 }, (_, v) => `${prefix}ver:{v${v}}:s:${v}`);
      const read = await feeds.page('20000', { limit: 40 }, { keys: versionKeys, values: versionKeys.map(() => '0') });
      expect(read).toEqual({ ids: ['8000'], unchanged: true });
      expect(mget).toHaveBeenCalledTimes(1);
    } finally {
      evalsha.mockRestore();
      mget.mockRestore();
    }
  });

  it('replaces what a feed held before it was found missing, and caps it', async () => {
    await feeds.add('2', ['5']); // left from before, without the built marker
    const many = Array.from({ length: 900 }, (_, i) => String(1000 + i));
    await feeds.rebuild('2', async () => many);
    const ids = await redis.zrange(feeds.key('2'), 0, -1);
    expect(ids).toHaveLength(800);
    expect(ids).not.toContain('5');
    expect(ids.at(-1)).toBe('1899');
  });
});
