import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../storage/redis.ts';
import { connectRedis, createKeyTracking, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import type { KeyTracking } from '../../storage/key-tracking.ts';
import { until } from '../helpers/instances.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// Client tracking against the real Redis: the writer is a connection of its own, as another process would be.
describe('Redis client tracking', () => {
  let tracking: KeyTracking;
  let writer: RedisClient;
  let prefix: string;
  let heard: (string | null)[];

  beforeEach(async () => {
    prefix = `key_tracking_test_${randomBytes(4).toString('hex')}:`;
    tracking = createKeyTracking(url, prefix);
    expect(await tracking.start()).toBe(true);
    heard = [];
    tracking.onInvalidate((keys) => heard.push(...(keys ?? [null])));
    writer = createRedis(url);
    await connectRedis(writer, url);
  });

  afterEach(async () => {
    await deleteKeysWithPrefix(writer, prefix);
    await tracking.close();
    writer.disconnect();
  });

  it('has applied every change completed before sync() by the time it resolves', async () => {
    for (let i = 0; i < 50; i++) {
      const key = `${prefix}k${i}`;
      await writer.set(key, 'old');
      expect(await tracking.reader.get(key)).toBe('old');
      await writer.set(key, 'new');
      expect(await tracking.sync()).toBe(true);
      expect(heard, `round ${i}`).toContain(key);
    }
  });

  it('holds for many callers at once, sharing PINGs', async () => {
    const keys = Array.from({ length: 200 }, (_, i) => `${prefix}many${i}`);
    await writer.mset(...keys.flatMap((k) => [k, '0']));
    await tracking.reader.mget(...keys);
    // Each caller writes its key, then syncs: its own change must have been heard when its sync resolves.
    const results = await Promise.all(keys.map(async (key) => {
      await writer.set(key, '1');
      const ok = await tracking.sync();
      return ok && heard.includes(key);
    }));
    expect(results.every(Boolean)).toBe(true);
  });

  it('tells a ticket holder when a key it read changed before it stored what it made', async () => {
    const [a, b] = [`${prefix}a`, `${prefix}b`];
    await writer.mset(a, '1', b, '1');
    const ticket = tracking.begin();
    try {
      await tracking.reader.mget(a, b);
      await writer.set(b, '2');
      await tracking.sync();
      expect(tracking.unchanged(ticket, [a])).toBe(true);
      expect(tracking.unchanged(ticket, [a, b])).toBe(false);
    } finally {
      tracking.end(ticket);
    }
    // A change heard before a ticket began does not count against it.
    const later = tracking.begin();
    try {
      await tracking.reader.mget(a, b);
      expect(tracking.unchanged(later, [a, b])).toBe(true);
    } finally {
      tracking.end(later);
    }
  });

  it('hears of deletion and expiry', async () => {
    const [gone, expiring] = [`${prefix}gone`, `${prefix}expiring`];
    await writer.set(gone, 'x');
    await writer.set(expiring, 'x', 'PX', 50);
    await tracking.reader.mget(gone, expiring);
    await writer.del(gone);
    await tracking.sync();
    expect(heard).toContain(gone);
    // Redis deletes an expired key when it next looks at it (or in its expiry cycle), and says so.
    await until(async () => (await writer.exists(expiring), heard.includes(expiring)), (yes) => yes, 'the expiry heard', 3000);
  });

  it('trusts nothing while a connection is down, invalidates everything, and tracks again after reconnecting', async () => {
    const key = `${prefix}k`;
    await writer.set(key, '1');
    const ticket = tracking.begin();
    await tracking.reader.get(key);
    // Redis drops the listener (as on a network fault or an output buffer overrun).
    await writer.client('KILL', 'ID', await clientId(writer, `${prefix}:tracking-listener`));
    await until(async () => heard.includes(null), (yes) => yes, 'everything invalidated', 3000);
    expect(tracking.unchanged(ticket, [key])).toBe(false);
    tracking.end(ticket);
    await until(async () => tracking.active, (yes) => yes, 'tracking on again', 5000);

    // Tracking works again with the new listener.
    heard = [];
    await tracking.reader.get(key);
    await writer.set(key, '2');
    expect(await tracking.sync()).toBe(true);
    expect(heard).toContain(key);

    // And the same when the reader is dropped.
    await writer.client('KILL', 'ID', await clientId(writer, `${prefix}:tracking-reader`));
    await until(async () => heard.includes(null), (yes) => yes, 'everything invalidated', 3000);
    await until(async () => tracking.active, (yes) => yes, 'tracking on again', 5000);
    heard = [];
    await tracking.reader.get(key);
    await writer.set(key, '3');
    expect(await tracking.sync()).toBe(true);
    expect(heard).toContain(key);
  });

  it('is not on again after the listener reconnects until the reader\'s tracking points at the new listener', async () => {
    // Until then, the reader's reads are reported to the old listener's id, that is to nobody.
    const client = tracking.reader.client.bind(tracking.reader) as (...args: unknown[]) => Promise<unknown>;
    let pointing = 0;
    vi.spyOn(tracking.reader, 'client').mockImplementation((async (...args: unknown[]) => {
      if (args[0] === 'TRACKING') {
        pointing++;
        await new Promise((r) => setTimeout(r, 400));
      }
      return client(...args);
    }) as never);
    await writer.client('KILL', 'ID', await clientId(writer, `${prefix}:tracking-listener`));
    await until(async () => pointing, (n) => n > 0, 'the reader being pointed at the new listener', 5000);
    expect(tracking.active).toBe(false);
    expect(await tracking.sync()).toBe(false);
    await until(async () => tracking.active, (yes) => yes, 'tracking on again', 5000);
  });

  it('answers sync() with false while tracking is off', async () => {
    await tracking.close();
    expect(tracking.active).toBe(false);
    expect(await tracking.sync()).toBe(false);
  });
});

/** The id of the connection with this name. */
async function clientId(admin: RedisClient, name: string): Promise<string> {
  const lines = String(await admin.client('LIST')).trim().split('\n');
  const line = lines.find((l) => l.includes(` name=${name} `));
  if (!line) throw new Error(`no client named ${name}`);
  return /\bid=(\d+)/.exec(line)![1]!;
}
