import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { StreamBus } from '../../http/streaming/bus.ts';
import { HOME_SHARDS, homeShardOf, streamChannels, StreamEvents, type StreamMessage } from '../../services/stream-events.ts';

// The streaming process's Redis subscriber against a real Redis, under a prefix of its own: home events fanned out
// as one message per shard reach exactly the homes they name, and shards are listened to only while needed.
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `fedi_test_bus_${randomBytes(4).toString('hex')}:`;
let publisher: Redis;
let events: StreamEvents;
let bus: StreamBus;

beforeAll(async () => {
  publisher = new Redis(redisUrl);
  events = new StreamEvents(publisher, prefix);
  bus = new StreamBus(redisUrl, events);
  await bus.start();
});
afterAll(() => {
  bus.close();
  publisher.disconnect();
});

/** Account ids (as text) that fall in the given shard. */
function idsInShard(shard: number, count: number, from = 1): string[] {
  const out: string[] = [];
  for (let n = from; out.length < count; n++) if (homeShardOf(String(n)) === shard) out.push(String(n));
  return out;
}

const subscribers = async (channel: string) => Number(((await publisher.pubsub('NUMSUB', events.channelName(channel))) as [string, number])[1]);

describe('the streaming bus and home shards', () => {
  it('spreads ids over every shard', () => {
    const used = new Set(Array.from({ length: 1000 }, (_, i) => homeShardOf(String(1_000_000 + i))));
    expect(used.size).toBe(HOME_SHARDS);
  });

  it('hands a fanned-out event to the listeners of the homes it names, and to no other home', async () => {
    const [held, alsoHeld, notHeld] = idsInShard(3, 3);
    const got = new Map<string, StreamMessage[]>();
    const listener = (id: string) => (m: StreamMessage) => got.set(id, [...(got.get(id) ?? []), m]);
    const listeners = [held!, alsoHeld!, notHeld!].map((id) => [id, listener(id)] as const);
    await bus.listen(streamChannels.home(held!), listeners[0]![1]);
    await bus.listen(streamChannels.home(alsoHeld!), listeners[1]![1]);
    // A home in another shard, listened to: a shard's message is not for it.
    const [elsewhere] = idsInShard(4, 1);
    await bus.listen(streamChannels.home(elsewhere!), listener(elsewhere!));
    expect(await subscribers(streamChannels.homeShard(3))).toBe(1);

    await events.publishToHomes([held!, notHeld!, elsewhere!], { event: 'update', statusId: '42' });
    await vi.waitFor(() => expect(got.get(held!)?.length).toBe(1));
    await vi.waitFor(() => expect(got.get(elsewhere!)?.length).toBe(1));
    expect(got.get(held!)![0]).toMatchObject({ event: 'update', statusId: '42' });
    expect(got.get(alsoHeld!)).toBeUndefined();
    expect(got.get(notHeld!)).toBeUndefined();

    // A home's own channel still carries what is published to it alone (its author's own post, a deletion).
    await events.publish(streamChannels.home(alsoHeld!), { event: 'delete', statusId: '42' });
    await vi.waitFor(() => expect(got.get(alsoHeld!)).toEqual([{ event: 'delete', statusId: '42' }]));

    // The shard stays while one of its homes is listened to, and goes with the last.
    bus.unlisten(streamChannels.home(held!), listeners[0]![1]);
    await new Promise((r) => setTimeout(r, 100));
    expect(await subscribers(streamChannels.homeShard(3))).toBe(1);
    bus.unlisten(streamChannels.home(alsoHeld!), listeners[1]![1]);
    await vi.waitFor(async () => expect(await subscribers(streamChannels.homeShard(3))).toBe(0));
    expect(await subscribers(streamChannels.home(held!))).toBe(0);
    await events.publishToHomes([held!, alsoHeld!], { event: 'update', statusId: '43' });
    await new Promise((r) => setTimeout(r, 100));
    expect(got.get(held!)).toHaveLength(1);
  });

  it('listens again after a home was let go', async () => {
    const [id] = idsInShard(7, 1);
    const got: StreamMessage[] = [];
    const first = (m: StreamMessage) => got.push(m);
    await bus.listen(streamChannels.home(id!), first);
    bus.unlisten(streamChannels.home(id!), first);
    await bus.listen(streamChannels.home(id!), first);
    await events.publishToHomes([id!], { event: 'update', statusId: '7' });
    await vi.waitFor(() => expect(got).toEqual([expect.objectContaining({ event: 'update', statusId: '7' })]));
    bus.unlisten(streamChannels.home(id!), first);
  });
});
