import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisCluster } from '../../cli/redis-cluster.ts';
import type { RedisClient, RedisTarget } from '../../storage/redis.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import { CacheVersions } from '../../storage/cache-versions.ts';
import { VERSION_BUCKETS, bucketOf, hashTagOf, isCluster, versionTag, versionTagOfBucket } from '../../storage/redis-keys.ts';

// Cache versions on a real Redis Cluster (3 masters, 3 replicas): keys spread over VERSION_BUCKETS hash tags, each
// bucket with its own epoch read in the same MGET as its versions, and a master losing its keys (restarted empty, or
// a failover to a replica that missed writes) making every process drop what it cached under versions.
const BUCKETS = [...Array(VERSION_BUCKETS).keys()];
/** Two ids in every bucket. */
const ids: string[] = [];
for (let n = 1000; ids.length < 2 * VERSION_BUCKETS; n++) {
  const id = String(n);
  if (ids.filter((other) => bucketOf(other, VERSION_BUCKETS) === bucketOf(id, VERSION_BUCKETS)).length < 2) ids.push(id);
}

describe('cache versions on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let target: RedisTarget;
  let redis: RedisClient;
  let reader: RedisClient;
  let prefix: string;
  const epochKey = (bucket: number) => `${prefix}ver:${versionTagOfBucket(bucket)}:epoch`;
  const setEpochs = (buckets: number[], value: string) => Promise.all(buckets.map((b) => redis.set(epochKey(b), value)));
  /** Until a condition holds (a restore runs in the background). */
  const until = async (fn: () => Promise<boolean>) => {
    for (let i = 0; i < 200 && !(await fn()); i++) await new Promise((r) => setTimeout(r, 25));
    expect(await fn()).toBe(true);
  };

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
    redis = createRedis(target);
    await connectRedis(redis, target);
    reader = createRedis(target);
    await connectRedis(reader, target);
    expect(isCluster(redis) && isCluster(reader)).toBe(true);
  }, 60_000);

  afterAll(async () => {
    redis?.disconnect();
    reader?.disconnect();
    await cluster?.stop();
  });

  beforeEach(() => {
    prefix = `cache_versions_cluster_${randomBytes(4).toString('hex')}:`;
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await deleteKeysWithPrefix(redis, prefix);
  });

  it('bumps and reads versions of ids in every bucket, one MGET per bucket with its epoch', async () => {
    await setEpochs(BUCKETS, 'e1');
    const versions = new CacheVersions(redis, prefix, reader);
    await versions.ensureEpoch();
    await versions.bump({ statuses: ids, accounts: ids, viewers: ids, filters: ids, relations: ids });
    await versions.bump({ statuses: ids.slice(0, VERSION_BUCKETS) });

    // Key names carry the bucket's tag; counters of statuses, accounts and viewers expire, filters and relations not.
    const sKey = `${prefix}ver:${versionTag(ids[0]!)}:s:${ids[0]}`;
    expect(await redis.get(sKey)).toBe('2');
    expect(await redis.ttl(sKey)).toBeGreaterThan(0);
    expect(await redis.ttl(`${prefix}ver:${versionTag(ids[0]!)}:r:${ids[0]}`)).toBe(-1);

    const mget = vi.spyOn(reader, 'mget');
    const got = await versions.getMany({ s: ids, a: ids, v: ids, f: ids, r: ids });
    expect(ids.map((id) => got.s.get(id))).toEqual(ids.map((_, i) => (i < VERSION_BUCKETS ? '2' : '1')));
    for (const kind of ['a', 'v', 'f', 'r'] as const) expect(ids.map((id) => got[kind].get(id))).toEqual(ids.map(() => '1'));
    // One MGET per bucket, each starting with that bucket's epoch.
    expect(mget).toHaveBeenCalledTimes(VERSION_BUCKETS);
    const calls = mget.mock.calls.map((call) => call.map(String));
    for (const keys of calls) {
      expect(new Set(keys.map(hashTagOf)).size).toBe(1);
      expect(keys[0]).toBe(epochKey(Number(hashTagOf(keys[0]!).slice(1))));
      expect(keys.slice(1).every((k) => !k.endsWith(':epoch'))).toBe(true);
    }
    expect(new Set(calls.map((keys) => keys[0])).size).toBe(VERSION_BUCKETS);

    expect(await versions.get('s', ids.slice(VERSION_BUCKETS))).toEqual(ids.slice(VERSION_BUCKETS).map(() => '1'));
    expect(await versions.get('a', ['no-such-account'])).toEqual(['0']);

    // Viewer versions (no client tracking on a cluster): read every time, per bucket.
    mget.mockClear();
    const viewer = await versions.viewerVersions(ids);
    expect([...viewer.f.values(), ...viewer.r.values()]).toEqual([...ids, ...ids].map(() => '1'));
    await versions.viewerVersions(ids);
    expect(mget).toHaveBeenCalledTimes(2 * VERSION_BUCKETS);

    // keysOf lists the same keys the versions were read from.
    const { keys, values } = versions.keysOf(got);
    expect(keys).toContain(sKey);
    expect((await Promise.all(keys.map((k) => redis.get(k)))).map((v) => v ?? '0')).toEqual(values);
  });

  it('keeps one epoch per bucket: a missing one makes only its filter and relation versions unknown, and is restored alone', async () => {
    const lost = bucketOf(ids[0]!, VERSION_BUCKETS);
    const kept = BUCKETS.filter((b) => b !== lost);
    await setEpochs(kept, 'e1');
    const inLost = ids.filter((id) => bucketOf(id, VERSION_BUCKETS) === lost);
    const elsewhere = ids.find((id) => bucketOf(id, VERSION_BUCKETS) !== lost)!;

    // Nobody to restore: the bucket stays unknown, never "none".
    const plain = new CacheVersions(redis, prefix, reader);
    await plain.ensureEpoch();
    const [unknown, none] = await plain.get('r', [inLost[0]!, elsewhere]);
    expect(unknown).toMatch(/^\?/);
    expect(none).toBe('0');
    expect((await plain.viewerVersions([inLost[0]!])).f.get(inLost[0]!)).toMatch(/^\?/);
    expect(await plain.get('s', [inLost[0]!])).toEqual(['0']);

    // A process that restores: the relation versions come back from "PostgreSQL", then the missing epoch is set.
    const restoring = new CacheVersions(redis, prefix, reader);
    restoring.repairWith(() => restoring.bump({ relations: inLost }));
    await restoring.ensureEpoch();
    await until(async () => (await redis.get(epochKey(lost))) !== null);
    expect(await Promise.all(kept.map((b) => redis.get(epochKey(b))))).toEqual(kept.map(() => 'e1'));
    expect(await redis.get(`${prefix}ver:epoch-restoring`)).toBeNull();
    expect(await restoring.get('r', inLost)).toEqual(inLost.map(() => '1'));
    expect(await plain.get('r', [inLost[0]!, elsewhere])).toEqual(['1', '0']);
  });

  it('drops what it cached when one master loses its keys (a node back empty, a failover), and restores that master\'s epochs', async () => {
    await setEpochs(BUCKETS, 'e1');
    const versions = new CacheVersions(redis, prefix, reader);
    let resets = 0;
    versions.onReset(() => resets++);
    let repaired = 0;
    versions.repairWith(async () => void repaired++);
    await versions.ensureEpoch();
    expect(resets).toBe(0);
    await versions.bump({ statuses: ids, relations: ids });
    expect(await versions.get('s', ids)).toEqual(ids.map(() => '1'));
    expect(resets).toBe(0);

    // The buckets one master serves, and the others.
    const masterOf = await Promise.all(BUCKETS.map((b) => cluster.masterOf(epochKey(b))));
    const port = masterOf[0]!;
    const onIt = BUCKETS.filter((b) => masterOf[b] === port);
    expect(onIt.length).toBeLessThan(VERSION_BUCKETS);
    const node = new Redis(port, '127.0.0.1', { lazyConnect: true });
    await node.connect();
    await node.flushall();
    node.disconnect();

    // Versions only of the other buckets: nothing changes.
    const others = ids.filter((id) => !onIt.includes(bucketOf(id, VERSION_BUCKETS)));
    expect(await versions.get('s', others)).toEqual(others.map(() => '1'));
    expect(resets).toBe(0);
    // Versions of all: that master's buckets lost their epochs and counters. Memory goes (once), they are restored.
    const got = await versions.getMany({ s: ids, r: ids });
    expect(resets).toBe(1);
    for (const id of ids) {
      const lostHere = onIt.includes(bucketOf(id, VERSION_BUCKETS));
      expect(got.s.get(id)).toBe(lostHere ? '0' : '1');
      if (lostHere) expect(got.r.get(id)).toMatch(/^\?/);
      else expect(got.r.get(id)).toBe('1');
    }
    await until(async () => (await Promise.all(onIt.map((b) => redis.get(epochKey(b))))).every((v) => v !== null));
    expect(repaired).toBe(1);
    expect(await Promise.all(BUCKETS.filter((b) => !onIt.includes(b)).map((b) => redis.get(epochKey(b))))).toEqual(BUCKETS.filter((b) => !onIt.includes(b)).map(() => 'e1'));
    // The restored epochs are new to this process: one more reset when it reads them, then none.
    await versions.get('s', ids);
    expect(resets).toBe(2);
    await versions.get('s', ids);
    expect(resets).toBe(2);
  });

  it('forgets everything on demand (a node connection dropped: counters may have gone back without any epoch changing)', async () => {
    await setEpochs(BUCKETS, 'e1');
    const versions = new CacheVersions(redis, prefix, reader);
    let resets = 0;
    versions.onReset(() => resets++);
    await versions.ensureEpoch();
    versions.forgetAll();
    expect(resets).toBe(1);
    // The epochs are unchanged: reading them again is no reset.
    await versions.get('s', ids);
    expect(resets).toBe(1);
  });
});
