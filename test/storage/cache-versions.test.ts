import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../storage/redis.ts';
import { connectRedis, createKeyTracking, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import type { KeyTracking } from '../../storage/key-tracking.ts';
import { CacheVersions } from '../../storage/cache-versions.ts';
import { VERSION_BUCKETS, versionTag, versionTagOfBucket } from '../../storage/redis-keys.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// The viewers' filter and relation versions a streaming process asks for at every post, against the real Redis: a
// second CacheVersions on a connection of its own stands for another process making changes.
describe('viewer versions kept in memory under client tracking', () => {
  let tracking: KeyTracking;
  let writer: RedisClient;
  let prefix: string;
  let versions: CacheVersions;
  let other: CacheVersions;
  // Each bucket of version keys has its own epoch (storage/redis-keys.ts).
  const epochOf = (id: string) => `${prefix}ver:${versionTag(id)}:epoch`;
  const allEpochs = () => [...Array(VERSION_BUCKETS).keys()].map((b) => `${prefix}ver:${versionTagOfBucket(b)}:epoch`);

  beforeEach(async () => {
    prefix = `cache_versions_test_${randomBytes(4).toString('hex')}:`;
    tracking = createKeyTracking(url, prefix);
    expect(await tracking.start()).toBe(true);
    writer = createRedis(url);
    await connectRedis(writer, url);
    versions = new CacheVersions(writer, prefix, tracking.reader, tracking);
    other = new CacheVersions(writer, prefix);
    await writer.mset(...allEpochs().flatMap((k) => [k, 'e1']));
    await versions.ensureEpoch();
  });

  afterEach(async () => {
    await deleteKeysWithPrefix(writer, prefix);
    await tracking.close();
    writer.disconnect();
  });

  it('answers from memory until another process changes a version, then reads that one again', async () => {
    const mget = vi.spyOn(tracking.reader, 'mget');
    const viewers = ['11', '12', '13'];
    expect(await versions.viewerVersions(viewers)).toEqual({ f: new Map([['11', '0'], ['12', '0'], ['13', '0']]), r: new Map([['11', '0'], ['12', '0'], ['13', '0']]) });
    expect(mget).toHaveBeenCalledTimes(1);
    // Asked again: nothing is read.
    expect((await versions.viewerVersions(viewers)).r.get('12')).toBe('0');
    expect(mget).toHaveBeenCalledTimes(1);

    // 12 mutes someone, through another process.
    await other.bump({ relations: ['12'] });
    expect(await tracking.sync()).toBe(true);
    const after = await versions.viewerVersions(viewers);
    expect(after.r.get('12')).toBe('1');
    expect(after.f.get('12')).toBe('0');
    expect(mget).toHaveBeenCalledTimes(2);
    expect(mget.mock.calls[1]!.filter((k) => String(k).includes('ver:'))).toEqual([epochOf('12'), `${prefix}ver:${versionTag('12')}:r:12`]);
  });

  it('forgets everything when the counters are lost (the epoch changes or Redis is flushed of them)', async () => {
    await versions.viewerVersions(['21']);
    const mget = vi.spyOn(tracking.reader, 'mget');
    await writer.del(epochOf('21'));
    expect(await tracking.sync()).toBe(true);
    // Without the epoch, filter and relation versions are unknown (never "none"), and nothing is kept.
    expect((await versions.viewerVersions(['21'])).r.get('21')).toMatch(/^\?/);
    expect((await versions.viewerVersions(['21'])).r.get('21')).toMatch(/^\?/);
    expect(mget).toHaveBeenCalledTimes(2);
    // Set again (restored): read once more, then kept.
    await writer.set(epochOf('21'), 'e2');
    expect(await tracking.sync()).toBe(true);
    expect((await versions.viewerVersions(['21'])).r.get('21')).toBe('0');
    expect((await versions.viewerVersions(['21'])).r.get('21')).toBe('0');
    expect(mget).toHaveBeenCalledTimes(3);
  });

  it('reads ids of every bucket in one MGET with their epochs, and bumps them in one pipeline, on a single Redis', async () => {
    const ids = Array.from({ length: 64 }, (_, i) => String(5000 + i));
    expect(new Set(ids.map(versionTag)).size).toBe(VERSION_BUCKETS);
    const pipeline = vi.spyOn(writer, 'pipeline');
    await other.bump({ statuses: ids, relations: ids });
    expect(pipeline).toHaveBeenCalledTimes(1);
    const mget = vi.spyOn(tracking.reader, 'mget');
    const got = await versions.getMany({ s: ids, r: ids });
    expect([...got.s.values(), ...got.r.values()]).toEqual([...ids, ...ids].map(() => '1'));
    expect(mget).toHaveBeenCalledTimes(1);
    expect(new Set(mget.mock.calls[0]!.slice(0, VERSION_BUCKETS))).toEqual(new Set(allEpochs()));
    expect(mget.mock.calls[0]!.length).toBe(VERSION_BUCKETS + 2 * ids.length);
  });

  it('reads every time without tracking', async () => {
    const plain = new CacheVersions(writer, prefix);
    await plain.ensureEpoch();
    const mget = vi.spyOn(writer, 'mget');
    await plain.viewerVersions(['31']);
    await plain.viewerVersions(['31']);
    expect(mget).toHaveBeenCalledTimes(2);
  });
});
