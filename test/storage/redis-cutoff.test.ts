import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { OwnRedis } from '../helpers/own-services.ts';
import { connectRedis, createRedis, cutOffNodes } from '../../storage/redis.ts';
import { until } from '../helpers/instances.ts';

// A Redis that keeps its connections but answers nothing (SIGSTOP): cutting off a single Redis's connection destroys
// its socket at once, so what waits on it fails now (ioredis's own disconnect() only ends the socket, which a hung
// Redis never closes, and destroys it 2 s later), and the client reconnects once Redis answers again.
describe('cutting off a hung single Redis', () => {
  let redis: OwnRedis;
  let client: Redis;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    client = createRedis(redis.url) as Redis;
    client.on('error', () => {});
    await connectRedis(client, redis.url);
  }, 30_000);

  afterAll(async () => {
    client?.disconnect();
    await redis?.remove();
  });

  it('fails the commands waiting on it at once, and reconnects when Redis answers again', async () => {
    expect(await client.set('k', '1')).toBe('OK');
    redis.pause();
    try {
      const waiting = client.get('k').then(() => 'answered', (err: Error) => err.message);
      // Sent (auto-pipelining writes at the end of the turn), and unanswered.
      await new Promise((r) => setTimeout(r, 100));
      const stream = (client as unknown as { stream: { destroyed: boolean } }).stream;
      cutOffNodes(client, undefined);
      // Destroyed now, not when ioredis's disconnect timeout would have done it.
      expect(stream.destroyed).toBe(true);
      expect(await waiting).not.toBe('answered');
    } finally {
      redis.resume();
    }
    // Back by itself (its retry strategy), with what was written before.
    await until(async () => client.status, (status) => status === 'ready', 'the client reconnected', 5000);
    expect(await client.get('k')).toBe('1');
  });
});
