import type { RedisClient } from './redis.ts';

/**
 * What an operator's file import waits on until it is confirmed (services/domain-block-csv.ts): the rows read from the
 * file, kept in Redis under a random token for an hour, for the operator who sent it. One key, so one slot on a
 * Redis Cluster.
 */
const TTL_SECONDS = 3600;
const key = (prefix: string, token: string) => `${prefix}pending-import:${token}`;

export async function savePendingImport(redis: RedisClient, prefix: string, token: string, value: unknown): Promise<void> {
  await redis.set(key(prefix, token), JSON.stringify(value), 'EX', TTL_SECONDS);
}

export async function loadPendingImport<T>(redis: RedisClient, prefix: string, token: string): Promise<T | null> {
  const text = await redis.get(key(prefix, token));
  return text === null ? null : (JSON.parse(text) as T);
}

export async function dropPendingImport(redis: RedisClient, prefix: string, token: string): Promise<void> {
  await redis.del(key(prefix, token));
}
