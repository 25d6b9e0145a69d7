import { Redis } from 'ioredis';
import { ConfigError } from '../config.ts';

export function createRedis(redisUrl: string): Redis {
  // maxRetriesPerRequest: null is what BullMQ asks of the connections it shares.
  // Auto-pipelining sends the commands of concurrent requests issued in one tick as one write: each write to
  // Redis costs a system call and loopback TCP work in this process, the largest cost of a timeline read.
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null, lazyConnect: true, enableAutoPipelining: true });
  redis.on('error', () => {}); // reconnects on its own; readiness is reported by /health
  return redis;
}

export async function connectRedis(redis: Redis, redisUrl: string): Promise<void> {
  const host = new URL(redisUrl).host;
  // ioredis rejects connect() with a bare "Connection is closed."; the reason arrives as an 'error' event.
  let lastError: { code?: string; message?: string } | undefined;
  const remember = (err: { code?: string; message?: string }) => (lastError = err);
  redis.on('error', remember);
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 5 s')), 5000).unref()),
    ]);
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    const e = lastError?.code ? lastError : (err as { code?: string; message?: string });
    const why = e.code === 'ECONNREFUSED' ? 'connection refused' : (e.message ?? String(err));
    throw new ConfigError('REDIS_URL', `cannot connect to ${host}: ${why}`);
  } finally {
    redis.off('error', remember);
  }
}

/** Removes every key under a prefix (used when a test install is torn down), without blocking Redis with KEYS. */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  const stream = redis.scanStream({ match: `${prefix}*`, count: 500 });
  for await (const keys of stream as AsyncIterable<string[]>) {
    if (keys.length > 0) await redis.unlink(...keys);
  }
}
