import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { connectRedis, createRedis, type RedisClient } from '../../storage/redis.ts';
import { HOME_SHARDS, homeShardOf, StreamEvents, streamChannels } from '../../services/stream-events.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `fedi_test_events_${randomBytes(4).toString('hex')}:`;
let redis: RedisClient;
let listener: RedisClient;

beforeAll(async () => {
  redis = createRedis(url);
  await connectRedis(redis, url);
  listener = createRedis(url);
  await connectRedis(listener, url);
});
afterAll(() => {
  redis.disconnect();
  listener.disconnect();
});

describe('home shard messages', () => {
  it('go only to the shards a process listens to, each naming its homes, the message serialised once', async () => {
    const events = new StreamEvents(redis, prefix);
    // Homes spread over many shards; one shard is listened to.
    const homes = Array.from({ length: 200 }, (_, i) => String(900_000 + i));
    const listened = homeShardOf(homes[0]!);
    const channel = events.channelName(streamChannels.homeShard(listened));
    const heard: string[] = [];
    listener.on('message', (c: string, text: string) => { if (c === channel) heard.push(text); });
    await listener.subscribe(channel);
    expect(new Set(homes.map(homeShardOf)).size).toBe(HOME_SHARDS);

    const publish = vi.spyOn(redis, 'publish');
    try {
      await events.publishToHomes(homes, { event: 'update', statusId: '1', accountId: '2', view: '{"id":"1"}' });
      expect(publish).toHaveBeenCalledTimes(1);
      expect(publish.mock.calls[0]![0]).toBe(channel);
    } finally {
      publish.mockRestore();
    }
    await expect.poll(() => heard.length).toBe(1);
    expect(JSON.parse(heard[0]!)).toEqual({
      homes: homes.filter((h) => homeShardOf(h) === listened), event: 'update', statusId: '1', accountId: '2', view: '{"id":"1"}',
    });

    // Nobody listening: nothing sent at all.
    await listener.unsubscribe(channel);
    const none = vi.spyOn(redis, 'publish');
    try {
      await events.publishToHomes(homes, { event: 'update', statusId: '3', accountId: '2' });
      expect(none).not.toHaveBeenCalled();
    } finally {
      none.mockRestore();
    }
  });
});
