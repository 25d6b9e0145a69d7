import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { RedisCluster } from '../../cli/redis-cluster.ts';
import type { RedisTarget } from '../../storage/redis.ts';
import { connectRedis, createKeyTracking, createRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import { isCluster } from '../../storage/redis-keys.ts';
import type { KeyTracking } from '../../storage/key-tracking.ts';
import { until } from '../helpers/instances.ts';

// Client tracking on a real Redis Cluster (3 masters, 3 replicas): a listener per node, tracking on every node
// connection of the reader. The writer is a cluster client of its own, as another process would be.
describe('Redis client tracking on a cluster', () => {
  let cluster: RedisCluster;
  let target: RedisTarget;
  let tracking: KeyTracking;
  let writer: Cluster;
  let prefix: string;
  let heard: (string | null)[];
  /** One hash tag, and this test's key with it, on each master, by the master's port. */
  let tagOn: Map<number, string>;
  let keyOn: Map<number, string>;

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
    // One hash tag on each master: the tag alone decides the slot, whatever each test's prefix.
    const masters = await cluster.masters();
    tagOn = new Map();
    for (let i = 0; tagOn.size < masters.length; i++) {
      const port = await cluster.masterOf(`{kt${i}}`);
      if (!tagOn.has(port)) tagOn.set(port, `{kt${i}}`);
    }
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  beforeEach(async () => {
    prefix = `key_tracking_cluster_${randomBytes(4).toString('hex')}:`;
    keyOn = new Map([...tagOn].map(([port, tag]) => [port, `${prefix}${tag}`]));
    tracking = createKeyTracking(target, prefix);
    expect(isCluster(tracking.reader)).toBe(true);
    // start() waits 2 s at most (then serves without memory): on a loaded machine, six listeners may take longer.
    await tracking.start();
    await until(async () => tracking.active, (yes) => yes, 'tracking on on every master', 20_000);
    heard = [];
    tracking.onInvalidate((keys) => heard.push(...(keys ?? [null])));
    writer = createRedis(target) as Cluster;
    await connectRedis(writer, target);
  }, 60_000);

  afterEach(async () => {
    await deleteKeysWithPrefix(writer, prefix).catch(() => {});
    await tracking.close();
    writer.disconnect();
  }, 60_000);

  it('hears of a write to a key on each master by the time sync() resolves, and tells a ticket holder', async () => {
    for (const [port, key] of keyOn) {
      await writer.set(key, 'old');
      const ticket = tracking.begin();
      try {
        expect(await tracking.reader.get(key)).toBe('old');
        expect(tracking.unchanged(ticket, [key]), `master ${port}`).toBe(true);
        await writer.set(key, 'new');
        expect(await tracking.sync()).toBe(true);
        expect(heard, `master ${port}`).toContain(key);
        expect(tracking.unchanged(ticket, [key]), `master ${port}`).toBe(false);
      } finally {
        tracking.end(ticket);
      }
    }
  }, 60_000);

  it('holds for many callers at once over every master, sharing PINGs', async () => {
    const keys = Array.from({ length: 90 }, (_, i) => `${prefix}many${i}`);
    await Promise.all(keys.map((k) => writer.set(k, '0')));
    await Promise.all(keys.map((k) => tracking.reader.get(k)));
    const results = await Promise.all(keys.map(async (key) => {
      await writer.set(key, '1');
      const ok = await tracking.sync();
      return ok && heard.includes(key);
    }));
    expect(results.every(Boolean)).toBe(true);
  }, 60_000);

  it('invalidates everything when one node\'s listener is dropped, and tracks again on that node', async () => {
    const [port, key] = [...keyOn][0]!;
    await writer.set(key, '1');
    const ticket = tracking.begin();
    await tracking.reader.get(key);
    const node = writer.nodes('master').find((n) => n.options.port === port)!;
    await node.client('KILL', 'ID', await clientId(node, `${prefix}:tracking-listener`));
    await until(async () => heard.includes(null), (yes) => yes, 'everything invalidated', 20_000);
    expect(tracking.unchanged(ticket, [key])).toBe(false);
    tracking.end(ticket);
    await until(async () => tracking.active, (yes) => yes, 'tracking on again', 20_000);
    heard = [];
    await tracking.reader.get(key);
    await writer.set(key, '2');
    expect(await tracking.sync()).toBe(true);
    expect(heard).toContain(key);
  }, 60_000);

  // Last: it leaves the cluster with one master fewer (its replica promoted).
  it('drops everything when a master dies, and tracks again once its replica has taken over', async () => {
    for (const key of keyOn.values()) {
      await writer.set(key, '1');
      await tracking.reader.get(key);
    }
    const [victim, key] = [...keyOn][0]!;
    const slot = Number(await writer.cluster('KEYSLOT', key));
    const ticket = tracking.begin();
    await tracking.reader.get(key);
    heard = [];
    cluster.kill(victim);
    await until(async () => heard.includes(null), (yes) => yes, 'everything invalidated', 30_000);
    expect(tracking.unchanged(ticket, [key])).toBe(false);
    tracking.end(ticket);
    await cluster.waitForFailover(victim, slot, 60_000);

    // Every key (one on each of the old masters, the promoted replica among them) is tracked again: a write to it
    // is heard by the time sync() resolves. Polled as a cache reads, with a ticket, while the clients settle on the
    // new masters: a read the ticket says could be kept (nothing changed, tracking on throughout), followed by a
    // write and a sync() that answers true without the key heard, is a failure at once. A read the ticket refuses
    // (the reader's connection to the promoted node was made, or had its tracking turned on, during the read: ioredis
    // sends the read before the TRACKING) is tried again.
    for (const key of keyOn.values()) {
      await until(async () => {
        const ticket = tracking.begin();
        try {
          heard = [];
          await tracking.reader.get(key);
          if (!tracking.unchanged(ticket, [key])) return false;
          await writer.set(key, String(Date.now()));
          const ok = await tracking.sync();
          if (ok && !heard.includes(key)) return 'missed';
          return ok;
        } catch {
          return false; // the slot is still moving
        } finally {
          tracking.end(ticket);
        }
      }, (r) => r !== false, `a write to ${key} heard after the failover`, 60_000).then((r) => expect(r, key).toBe(true));
    }
    expect(tracking.active).toBe(true);
    // One listener per live node, none left over from the connections ioredis made and dropped while the master was
    // away (they close as their nodes leave the reader's pool).
    await until(async () => Promise.all(writer.nodes('all').map(async (node) =>
      String(await node.client('LIST')).split('\n').filter((l) => l.includes(` name=${prefix}:tracking-listener `)).length)),
    (counts) => counts.length > 0 && counts.every((n) => n === 1), 'one listener per node', 20_000);
  }, 240_000);
});

/** The id of the connection with this name on one node. */
async function clientId(node: Redis, name: string): Promise<string> {
  const lines = String(await node.client('LIST')).trim().split('\n');
  const line = lines.find((l) => l.includes(` name=${name} `));
  if (!line) throw new Error(`no client named ${name}`);
  return /\bid=(\d+)/.exec(line)![1]!;
}
