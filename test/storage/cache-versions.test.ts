import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../storage/redis.ts';
import { connectRedis, createKeyTracking, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import type { KeyTracking } from '../../storage/key-tracking.ts';
import { CacheVersions } from '../../storage/cache-versions.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// The viewers' filter and relation versions a streaming process asks for at every post, against the real Redis: a
// second CacheVersions on a connection of its own stands for another process making changes.
describe('viewer versions kept in memory under client tracking', () => {
  let tracking: KeyTracking;
  let writer: RedisClient;
  let prefix: string;
  let versions: CacheVersions;
  let other: CacheVersions;

  beforeEach(async () => {
    prefix = `cache_versions_test_${randomBytes(4).toString('hex')}:`;
    tracking = createKeyTracking(url, prefix);
    expect(await tracking.start()).toBe(true);
    writer = createRedis(url);
    await connectRedis(writer, url);
    versions = new CacheVersions(writer, prefix, tracking.reader, tracking);
    other = new CacheVersions(writer, prefix);
    await writer.set(`${prefix}ver:epoch`, 'e1');
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
    expect(mget.mock.calls[1]!.filter((k) => String(k).includes('ver:'))).toEqual([`${prefix}ver:epoch`, `${prefix}ver:r:12`]);
  });

  it('forgets everything when the counters are lost (the epoch changes or Redis is flushed of them)', async () => {
    await versions.viewerVersions(['21']);
    const mget = vi.spyOn(tracking.reader, 'mget');
    await writer.del(`${prefix}ver:epoch`);
    expect(await tracking.sync()).toBe(true);
    // Without the epoch, filter and relation versions are unknown (never "none"), and nothing is kept.
    expect((await versions.viewerVersions(['21'])).r.get('21')).toMatch(/^\?/);
    expect((await versions.viewerVersions(['21'])).r.get('21')).toMatch(/^\?/);
    expect(mget).toHaveBeenCalledTimes(2);
    // Set again (restored): read once more, then kept.
    await writer.set(`${prefix}ver:epoch`, 'e2');
    expect(await tracking.sync()).toBe(true);
    expect((await versions.viewerVersions(['21'])).r.get('21')).toBe('0');
    expect((await versions.viewerVersions(['21'])).r.get('21')).toBe('0');
    expect(mget).toHaveBeenCalledTimes(3);
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
