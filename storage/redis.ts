import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { ConfigError } from '../config.ts';
import { KeyTracking } from './key-tracking.ts';

/** Reconnecting every half second at most: a Redis that is back is used again within that. */
export const reconnectSoon = (attempt: number): number => Math.min(attempt * 50, 500);

/**
 * The connection requests use. While Redis is away its commands fail at once (no offline queue) and commands in
 * flight when it went are failed, not sent again after it is back (maxRetriesPerRequest 0): a request answered
 * 503 must not have its writes run later. A Redis that keeps the connection but does not answer has it cut off by
 * storage/dependencies.ts (a commandTimeout would be a timer per command: about a third of the client's throughput).
 */
export function createRedis(redisUrl: string, connectionName?: string): Redis {
  // Auto-pipelining sends the commands of concurrent requests issued in one tick as one write: each write to
  // Redis costs a system call and loopback TCP work in this process, the largest cost of a timeline read.
  const redis = new Redis(redisUrl, {
    lazyConnect: true, enableAutoPipelining: true, connectionName,
    enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, retryStrategy: reconnectSoon,
  });
  redis.on('error', () => {}); // reconnects on its own; storage/dependencies.ts logs and /health reports
  return redis;
}

/**
 * A subscriber connection: its SUBSCRIBEs wait for a connection and are made again after every reconnection
 * (ioredis's autoResubscribe); subscribed, it sends nothing else.
 */
export function createSubscriber(redisUrl: string, connectionName?: string): Redis {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: null, connectionName, retryStrategy: reconnectSoon });
  redis.on('error', () => {});
  return redis;
}

/** Two connections of its own for client tracking: one whose reads are tracked, one that hears of changes. */
export function createKeyTracking(redisUrl: string, name = 'fedi'): KeyTracking {
  const reader = createRedis(redisUrl, `${name}:tracking-reader`);
  // The listener fails its commands at once while it is down (its PINGs decide whether memory can be trusted),
  // and subscribes itself again after learning its new client id.
  const listener = new Redis(redisUrl, {
    connectionName: `${name}:tracking-listener`, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, autoResubscribe: false, autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectSoon,
  });
  listener.on('error', () => {});
  return new KeyTracking(reader, listener);
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

/** A Lua script run by its digest (`runScript`). */
export interface RedisScript {
  source: string;
  sha1: string;
}

export function redisScript(source: string): RedisScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * Runs a script by its digest, sending it whole once Redis does not know it (a restart, SCRIPT FLUSH). Not an
 * ioredis defineCommand: a command defined while an auto-pipeline is being filled is missing from it, and ioredis
 * then throws outside any promise, ending the process.
 */
export async function runScript(redis: Redis, script: RedisScript, keys: string[], args: (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha1, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(script.source, keys.length, ...keys, ...args);
  }
}
