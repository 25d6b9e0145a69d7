import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { RedisCluster, redisCli } from '../../cli/redis-cluster.ts';
import { StreamBus } from '../../http/streaming/bus.ts';
import { homeShardOf, streamChannels, StreamEvents, type StreamMessage } from '../../services/stream-events.ts';
import { connectRedis, createRedis, type RedisClient, type RedisTarget } from '../../storage/redis.ts';
import { unavailableDependency } from '../../storage/dependencies.ts';

// Live events on a Redis Cluster of real redis-server processes: one publisher and two streaming buses (two
// processes' subscribers), with sharded pub/sub (SPUBLISH/SSUBSCRIBE, one subscriber connection per master) and with
// plain pub/sub. A home shard channel, a list channel and the public channel, on more than one master, reach both
// buses; after the master of a subscribed channel is killed and its replica takes over, events arrive again on the
// same buses.
let cluster: RedisCluster;
let target: RedisTarget;

beforeAll(async () => {
  cluster = await RedisCluster.start();
  target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
}, 90_000);
afterAll(async () => {
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each([
  { mode: 'sharded', sharded: true },
  { mode: 'plain', sharded: false },
])('streaming buses on a cluster, $mode pub/sub', ({ sharded }) => {
  const prefix = `fedi_test_busc_${randomBytes(4).toString('hex')}:`;
  let publisher: RedisClient;
  let events: StreamEvents;
  const buses: StreamBus[] = [];
  /** What each bus's listeners got, by channel. */
  const got = [new Map<string, StreamMessage[]>(), new Map<string, StreamMessage[]>()];
  const listenerOf = (bus: number, channel: string) => (m: StreamMessage) => {
    const list = got[bus]!.get(channel) ?? [];
    list.push(m);
    got[bus]!.set(channel, list);
  };
  const received = (bus: number, channel: string, statusId: string) =>
    (got[bus]!.get(channel) ?? []).some((m) => 'statusId' in m && m.statusId === statusId);

  // An account whose home shard channel, and a list whose channel, are on masters other than the public channel's.
  let home = '';
  let list = '';
  const channels = () => [streamChannels.home(home), streamChannels.list(list), streamChannels.public('', false)];
  const masterOfChannel = (channel: string) => cluster.masterOf(events.channelName(channel));

  beforeAll(async () => {
    publisher = createRedis(target);
    await connectRedis(publisher, target);
    events = new StreamEvents(publisher, prefix, sharded);
    for (let i = 0; i < 2; i++) {
      const bus = new StreamBus(target, events);
      await bus.start();
      buses.push(bus);
    }
    const publicMaster = await masterOfChannel(streamChannels.public('', false));
    for (let n = 1; !home; n++) {
      if ((await masterOfChannel(streamChannels.homeShard(homeShardOf(String(n))))) !== publicMaster) home = String(n);
    }
    for (let n = 1; !list; n++) if ((await masterOfChannel(streamChannels.list(String(n)))) !== publicMaster) list = String(n);
  }, 30_000);
  afterAll(async () => {
    for (const bus of buses) bus.close();
    publisher?.disconnect();
  });

  it('publishes with the pub/sub asked for', () => {
    expect(events.sharded).toBe(sharded);
  });

  it('carries an event on a home shard, a list and the public channel to both buses', async () => {
    for (const [i, bus] of buses.entries()) {
      for (const channel of channels()) await bus.listen(channel, listenerOf(i, channel));
    }
    // Every subscriber connection (one per master when sharded) is up.
    await vi.waitFor(() => expect(buses.every((bus) => bus.connected)).toBe(true), { timeout: 10_000, interval: 50 });
    const masters = new Set(await Promise.all([streamChannels.homeShard(homeShardOf(home)), ...channels().slice(1)].map(masterOfChannel)));
    expect(masters.size).toBeGreaterThan(1);
    if (sharded) {
      // Each shard channel is subscribed on the master that owns its slot, by each bus.
      const shardChannel = events.channelName(streamChannels.homeShard(homeShardOf(home)));
      const counts = await redisCli(await cluster.masterOf(shardChannel), 'pubsub', 'shardnumsub', shardChannel);
      expect(counts.trim().split('\n')).toEqual([shardChannel, '2']);
    }

    await events.publishToHomes([home], { event: 'update', statusId: '1' });
    await events.publish(streamChannels.list(list), { event: 'update', statusId: '2' });
    await events.publish(streamChannels.public('', false), { event: 'update', statusId: '3' });
    for (const bus of [0, 1]) {
      await vi.waitFor(() => {
        expect(received(bus, streamChannels.home(home), '1')).toBe(true);
        expect(received(bus, streamChannels.list(list), '2')).toBe(true);
        expect(received(bus, streamChannels.public('', false), '3')).toBe(true);
      }, { timeout: 10_000, interval: 50 });
    }
    // Each came once: not twice through both of a cluster's ways (a node relaying, a shard's own subscriber).
    expect(got[0]!.get(streamChannels.list(list))).toHaveLength(1);
  });

  it('hears a shard again after its master is killed and a replica takes over, without a new bus', async () => {
    const shardChannel = events.channelName(streamChannels.homeShard(homeShardOf(home)));
    const slot = Number((await redisCli(await cluster.masterOf(shardChannel), 'cluster', 'keyslot', shardChannel)).trim());
    const dead = await cluster.masterOf(shardChannel);
    // Some other home whose shard is on the same master, asked for while it is down.
    let other = '';
    for (let n = 1000; !other; n++) {
      const id = String(n);
      if (homeShardOf(id) !== homeShardOf(home) && (await masterOfChannel(streamChannels.homeShard(homeShardOf(id)))) === dead) other = id;
    }
    cluster.kill(dead);

    // A stream asking for a channel of that master meanwhile is answered (503, Redis away) or served (the replica
    // already took over), not left waiting.
    const meanwhile = await buses[0]!.listen(streamChannels.home(other), listenerOf(0, streamChannels.home(other))).then(() => null, (err: unknown) => err);
    if (meanwhile !== null) expect(unavailableDependency(meanwhile)).toBe('redis');

    await cluster.waitForFailover(dead, slot);
    // Events published while the shard moves may be lost: a fresh one every 200 ms until both buses hear one.
    const untilBothHear = async (channel: string, publish: (statusId: string) => Promise<void>, from: number) => {
      const deadline = Date.now() + 30_000;
      for (let n = from; Date.now() < deadline; n++) {
        await publish(String(n));
        await sleep(200);
        if ([0, 1].every((bus) => (got[bus]!.get(channel) ?? []).some((m) => 'statusId' in m && Number(m.statusId) >= from))) return true;
      }
      return false;
    };
    expect(await untilBothHear(streamChannels.home(home), (id) => events.publishToHomes([home], { event: 'update', statusId: id }), 100)).toBe(true);
    // So is the list channel (on another master, or moved with this one), and the buses say they are connected.
    expect(await untilBothHear(streamChannels.list(list), (id) => events.publish(streamChannels.list(list), { event: 'update', statusId: id }), 1000)).toBe(true);
    await vi.waitFor(() => expect(buses.every((bus) => bus.connected)).toBe(true), { timeout: 10_000, interval: 100 });
    // The killed node comes back as a replica, so the next failover has one to promote.
    await cluster.restart(dead);
    await cluster.waitUntilHealthy();
  }, 90_000);
});
