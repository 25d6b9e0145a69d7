import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { RedisCluster } from '../../cli/redis-cluster.ts';
import { connectRedis, createRedis, mastersOf, type RedisClient } from '../../storage/redis.ts';
import { FEED_BUCKETS, feedTag, hashTagOf } from '../../storage/redis-keys.ts';
import { HomeFeeds } from '../../storage/feeds.ts';

// Home and list feeds (storage/REDIS-CLUSTER.md §2.2) on a real cluster of 3 masters + 3 replicas: a feed's keys and
// its bucket's accepting set share a slot, and what spans feeds goes out per bucket, never as one cross-slot command.
let cluster: RedisCluster;
let redis: RedisClient;
const run = randomBytes(4).toString('hex');
let n = 0;
const newPrefix = () => `fedi_feeds_${run}_${n++}:`;

beforeAll(async () => {
  cluster = await RedisCluster.start();
  const target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
  redis = createRedis(target);
  await connectRedis(redis, target);
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => String(from + i));

/** Keys under a prefix on each master (by port), scanned there: SCAN through the cluster sees one node. */
async function keysOnMasters(prefix: string): Promise<Map<number, string[]>> {
  const found = new Map<number, string[]>();
  for (const node of mastersOf(redis)) {
    const keys: string[] = [];
    for await (const batch of node.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) keys.push(...batch);
    found.set(node.options.port!, keys);
  }
  return found;
}
const spreadOverMasters = async (prefix: string) => [...(await keysOnMasters(prefix)).values()].every((keys) => keys.length > 0);

describe('home feeds on a cluster', () => {
  it('adds to 1,000 feeds spread over every master, one script call per bucket', async () => {
    const prefix = newPrefix();
    const feeds = new HomeFeeds(redis, prefix);
    const owners = ids(100_000, 1000);
    const tags = new Set(owners.map(feedTag));
    expect(tags.size).toBe(FEED_BUCKETS);

    const evalsha = vi.spyOn(redis, 'evalsha');
    try {
      await Promise.all(owners.map((id, i) => feeds.add(id, i % 2 === 0 ? ['7001'] : ['7001', '7002'])));
      // One call per bucket, each holding that bucket's feeds only.
      expect(evalsha).toHaveBeenCalledTimes(tags.size);
      for (const call of evalsha.mock.calls) {
        const count = Number(call[1]);
        const keys = call.slice(2, 2 + count) as string[];
        expect(new Set(keys.map(hashTagOf)).size).toBe(1);
      }
    } finally {
      evalsha.mockRestore();
    }
    const held = await Promise.all(owners.map((id) => redis.zrange(feeds.key(id), 0, -1)));
    owners.forEach((_, i) => expect(held[i]).toEqual(i % 2 === 0 ? ['7001'] : ['7001', '7002']));
    // Every master holds some of the feeds, each the master its slot says.
    const perMaster = await keysOnMasters(`${prefix}feed:`);
    expect([...perMaster.keys()].sort()).toEqual((await cluster.masters()).sort());
    expect([...perMaster.values()].reduce((a, keys) => a + keys.length, 0)).toBe(1000);
    for (const [port, keys] of perMaster) {
      expect(keys.length).toBeGreaterThan(0);
      expect(await cluster.masterOf(keys[0]!)).toBe(port);
    }
  });

  it('knows which of 1,000 feeds take statuses with one script call per bucket, and learns the rest from their markers', async () => {
    const prefix = newPrefix();
    const feeds = new HomeFeeds(redis, prefix);
    const owners = ids(200_000, 1000);
    const built = owners.filter((_, i) => i % 3 === 0);
    const markedOnly = owners.filter((_, i) => i % 3 === 1);
    await Promise.all(built.map((id) => feeds.rebuild(id, async () => [])));
    // Built before the accepting sets existed (or the sets lost): only the marker says so.
    await Promise.all(markedOnly.map((id) => redis.set(`${feeds.key(id)}:ready`, '1')));

    // A script call per bucket for the scores, and one per bucket entering those its set did not know.
    const evalsha = vi.spyOn(redis, 'evalsha');
    let accepting: string[];
    try {
      accepting = await feeds.acceptingAmong(owners);
      expect(evalsha).toHaveBeenCalledTimes(2 * FEED_BUCKETS);
    } finally {
      evalsha.mockRestore();
    }
    expect(accepting.sort()).toEqual([...built, ...markedOnly].sort());
    // Each was entered in its bucket's set: the marked ones as built, the others as taking none.
    const scores = await Promise.all(owners.map((id) => redis.zscore(`${prefix}feed:${feedTag(id)}:home:accepting`, id)));
    owners.forEach((id, i) => expect(scores[i]).toBe(built.includes(id) || markedOnly.includes(id) ? 'inf' : '0'));
    // Asked again, the sets answer alone.
    const again = vi.spyOn(redis, 'evalsha');
    try {
      expect((await feeds.acceptingAmong(owners)).sort()).toEqual([...built, ...markedOnly].sort());
      expect(again).toHaveBeenCalledTimes(FEED_BUCKETS);
    } finally {
      again.mockRestore();
    }
    expect(await spreadOverMasters(`${prefix}feed:`)).toBe(true);
  });

  it('rebuilds keeping a status fanned out meanwhile, pages, removes and drops', async () => {
    const prefix = newPrefix();
    const feeds = new HomeFeeds(redis, prefix);
    const owner = '300001';
    expect((await feeds.page(owner, { limit: 40 })).ids).toBeNull();
    await feeds.rebuild(owner, async () => {
      expect(await feeds.acceptingAmong([owner])).toEqual([owner]);
      expect(await feeds.accepts(owner)).toBe(true);
      expect(await feeds.isReady(owner)).toBe(false);
      await feeds.add(owner, ['300']);
      return ['200', '100'];
    });
    expect(await feeds.isReady(owner)).toBe(true);
    expect((await feeds.page(owner, { limit: 40 })).ids).toEqual(['300', '200', '100']);
    expect((await feeds.page(owner, { limit: 1, minId: '100' })).ids).toEqual(['200']);
    expect((await feeds.page(owner, { limit: 1, maxId: '300' })).ids).toEqual(['200']);

    // Version keys of many tags, in the bucketed scheme and untagged: read per tag, compared in the order given.
    const versionKeys = [
      ...Array.from({ length: 16 }, (_, v) => `${prefix}ver:{v${v}}:s:${v}`),
      `${prefix}ver:s:untagged-1`, `${prefix}ver:s:untagged-2`,
    ];
    await Promise.all(versionKeys.map((k, i) => (i % 2 === 0 ? redis.set(k, String(i + 1)) : Promise.resolve())));
    expect(await spreadOverMasters(`${prefix}ver:`)).toBe(true);
    const values = versionKeys.map((_, i) => (i % 2 === 0 ? String(i + 1) : '0'));
    const same = await feeds.page(owner, { limit: 40 }, { keys: versionKeys, values });
    expect(same).toEqual({ ids: ['300', '200', '100'], unchanged: true });
    await redis.incr(versionKeys[5]!);
    expect((await feeds.page(owner, { limit: 40 }, { keys: versionKeys, values })).unchanged).toBe(false);
    // A feed not built says so whatever the versions.
    expect(await feeds.page('300002', { limit: 40 }, { keys: versionKeys, values })).toEqual({ ids: null, unchanged: false });

    // Removal from many feeds on every master.
    const owners = ids(310_000, 300);
    await Promise.all(owners.map((id) => feeds.rebuild(id, async () => ['10', '20'])));
    await feeds.remove([owner, ...owners], ['20', '300']);
    expect((await feeds.page(owner, { limit: 40 })).ids).toEqual(['200', '100']);
    const left = await Promise.all(owners.map((id) => redis.zrange(feeds.key(id), 0, -1)));
    expect(left.every((l) => l.length === 1 && l[0] === '10')).toBe(true);

    await feeds.drop(owner);
    expect(await feeds.isReady(owner)).toBe(false);
    expect(await redis.zscore(`${prefix}feed:${feedTag(owner)}:home:accepting`, owner)).toBeNull();
    expect((await feeds.page(owner, { limit: 40 })).ids).toBeNull();
    expect(await feeds.acceptingAmong([owner, owners[0]!])).toEqual([owners[0]]);
  });

  it('keeps list feeds apart from home feeds of the same id', async () => {
    const prefix = newPrefix();
    const home = new HomeFeeds(redis, prefix);
    const lists = new HomeFeeds(redis, prefix, redis, 'list');
    const listIds = ids(400_000, 200);
    await Promise.all(listIds.map((id) => lists.rebuild(id, async () => ['1'])));
    await Promise.all(listIds.map((id) => lists.add(id, ['2'])));
    expect((await lists.acceptingAmong(listIds)).sort()).toEqual(listIds);
    expect(await home.acceptingAmong(listIds)).toEqual([]);
    expect((await lists.page(listIds[7]!, { limit: 40 })).ids).toEqual(['2', '1']);
    expect((await home.page(listIds[7]!, { limit: 40 })).ids).toBeNull();
    await Promise.all(listIds.map((id) => lists.drop(id)));
    expect(await lists.acceptingAmong(listIds)).toEqual([]);
  });
});
