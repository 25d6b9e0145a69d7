import { randomBytes } from 'node:crypto';
import { redisScript, runScript, type RedisClient } from './redis.ts';

/**
 * Work a request started in the background and a client may poll (Mastodon 4.4's AsyncRefresh,
 * `GET /api/v1_alpha/async_refreshes/:id`): a Redis hash of its status (`running`, `finished`) and how many results it
 * has found, kept a day while running and an hour once finished, as Mastodon keeps them. Its id is random, so only
 * those who were given it (in a `Mastodon-Async-Refresh` header) can read it; a pointer from what it refreshes (a
 * status's thread) finds the one running.
 */
export interface AsyncRefresh {
  id: string;
  status: 'running' | 'finished';
  resultCount: number | null;
}

const RUNNING_TTL_S = 24 * 3600;
const FINISHED_TTL_S = 3600;

const refreshKey = (prefix: string, id: string) => `${prefix}async-refresh:${id}`;
const contextPointer = (prefix: string, statusId: string) => `${prefix}async-refresh:context:${statusId}`;

/** Ids are 22 characters of base64url: nothing a client sends is a Redis key until it looks like one. */
export const isAsyncRefreshId = (id: string): boolean => /^[A-Za-z0-9_-]{22}$/.test(id);

export async function findAsyncRefresh(redis: RedisClient, prefix: string, id: string): Promise<AsyncRefresh | null> {
  if (!isAsyncRefreshId(id)) return null;
  const [status, count] = await redis.hmget(refreshKey(prefix, id), 'status', 'result_count');
  if (status !== 'running' && status !== 'finished') return null;
  return { id, status, resultCount: count == null ? null : Number(count) };
}

/** The refresh of a status's thread that is still running, if any. */
export async function runningContextRefresh(redis: RedisClient, prefix: string, statusId: string): Promise<AsyncRefresh | null> {
  const id = await redis.get(contextPointer(prefix, statusId));
  const refresh = id ? await findAsyncRefresh(redis, prefix, id) : null;
  return refresh?.status === 'running' ? refresh : null;
}

/** A new id, for the job's payload before the refresh itself is made (`startContextRefresh`). */
export const newAsyncRefreshId = (): string => randomBytes(16).toString('base64url');

/** Makes the refresh of a status's thread, running, counting results from 0. */
export async function startContextRefresh(redis: RedisClient, prefix: string, statusId: string, id: string): Promise<AsyncRefresh> {
  await redis.hset(refreshKey(prefix, id), { status: 'running', result_count: 0 });
  await redis.expire(refreshKey(prefix, id), RUNNING_TTL_S);
  await redis.set(contextPointer(prefix, statusId), id, 'EX', RUNNING_TTL_S);
  return { id, status: 'running', resultCount: 0 };
}

// Only a refresh that exists is changed: one that expired (or was never made, Redis having failed) is not made anew
// without an expiry.
const INCREMENT = redisScript(`if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HINCRBY', KEYS[1], 'result_count', ARGV[1]) end return nil`);
const FINISH = redisScript(`if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'status', 'finished') redis.call('EXPIRE', KEYS[1], ARGV[1]) end return nil`);

export async function countAsyncRefreshResults(redis: RedisClient, prefix: string, id: string, by: number): Promise<void> {
  await runScript(redis, INCREMENT, [refreshKey(prefix, id)], [by]);
}

export async function finishAsyncRefresh(redis: RedisClient, prefix: string, id: string): Promise<void> {
  await runScript(redis, FINISH, [refreshKey(prefix, id)], [FINISHED_TTL_S]);
}
