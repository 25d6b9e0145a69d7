import type { Redis } from 'ioredis';
import type { PageParams } from './paging.ts';

/** Mastodon keeps the newest 800 entries of a home feed; older pages come from PostgreSQL. */
export const FEED_SIZE = 800;

/**
 * Home feeds: one Redis sorted set per account (member and score are the status id), plus a marker key saying
 * the feed has been built. A missing marker (Redis flushed, account long inactive) means: rebuild from PostgreSQL.
 * Scores are doubles and lose the low bits of 64-bit ids, so exact order and bounds are settled on the members.
 */
export class HomeFeeds {
  private readonly redis: Redis;
  private readonly prefix: string;
  /** Where pages are read: a connection under client tracking (storage/key-tracking.ts) when there is one. */
  private readonly reader: Redis;

  constructor(redis: Redis, prefix: string, reader: Redis = redis) {
    this.redis = redis;
    this.prefix = prefix;
    this.reader = reader;
  }

  key(accountId: string): string {
    return `${this.prefix}feed:home:${accountId}`;
  }

  private readyKey(accountId: string): string {
    return `${this.prefix}feed:home:${accountId}:ready`;
  }

  /** The keys a page read depends on. */
  pageKeys(accountId: string): string[] {
    return [this.key(accountId), this.readyKey(accountId)];
  }

  async isReady(accountId: string): Promise<boolean> {
    return (await this.redis.exists(this.readyKey(accountId))) === 1;
  }

  /** Which of these accounts have a built feed (those without one are rebuilt when next read). */
  async readyAmong(accountIds: string[]): Promise<string[]> {
    if (accountIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of accountIds) pipeline.exists(this.readyKey(id));
    const results = (await pipeline.exec()) ?? [];
    return accountIds.filter((_, i) => results[i]?.[1] === 1);
  }

  /** Replaces a feed with these ids and marks it built. */
  async rebuild(accountId: string, statusIds: string[]): Promise<void> {
    const key = this.key(accountId);
    const tx = this.redis.multi().del(key);
    if (statusIds.length > 0) tx.zadd(key, ...statusIds.flatMap((id) => [id, id]));
    await tx.set(this.readyKey(accountId), '1').exec();
  }

  /** Adds one status to many feeds in one round trip, trimming each to FEED_SIZE. */
  async addToMany(accountIds: string[], statusId: string): Promise<void> {
    if (accountIds.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const id of accountIds) {
      pipeline.zadd(this.key(id), statusId, statusId);
      pipeline.zremrangebyrank(this.key(id), 0, -FEED_SIZE - 1);
    }
    await pipeline.exec();
  }

  /** Adds several statuses to one feed in one command (a newly followed account's recent statuses). */
  async addAllTo(accountId: string, statusIds: string[]): Promise<void> {
    if (statusIds.length === 0) return;
    await this.redis.pipeline()
      .zadd(this.key(accountId), ...statusIds.flatMap((id) => [id, id]))
      .zremrangebyrank(this.key(accountId), 0, -FEED_SIZE - 1)
      .exec();
  }

  async remove(accountIds: string[], statusIds: string[]): Promise<void> {
    if (accountIds.length === 0 || statusIds.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const id of accountIds) pipeline.zrem(this.key(id), ...statusIds);
    await pipeline.exec();
  }

  /**
   * A page of ids, newest first, with Mastodon's max_id/since_id/min_id semantics; null when the feed is not
   * built (the caller rebuilds it). The range read and one MGET (the built marker, and cache version keys that
   * must still hold the values given: `unchanged`) are sent together, so auto-pipelining writes them at once, and
   * a cached rendering of the page is checked in the same round trip. Plain commands: a Lua script doing the same
   * cost Redis five times the time.
   */
  async page(accountId: string, p: PageParams, versions?: { keys: string[]; values: string[] }): Promise<{ ids: string[] | null; unchanged: boolean }> {
    // Fetch a little more than asked around inclusive bounds, then settle exact bounds with BigInt.
    const slack = 16;
    const gt = (a: string, b: string) => BigInt(a) > BigInt(b);
    const lowId = p.minId ?? p.sinceId;
    const keep = (id: string) => (!p.maxId || gt(p.maxId, id)) && (!lowId || gt(id, lowId));
    const key = this.key(accountId);
    // The marker is read first (Redis runs one connection's commands in order, and a rebuild sets the marker and the
    // feed in one transaction), so a feed seen built is read whole.
    const [[ready, ...current], ids] = await Promise.all([
      this.reader.mget(this.readyKey(accountId), ...(versions?.keys ?? [])),
      p.minId
        ? this.reader.zrangebyscore(key, lowId ?? '-inf', p.maxId ?? '+inf', 'LIMIT', 0, p.limit + slack)
        : this.reader.zrevrangebyscore(key, p.maxId ?? '+inf', lowId ?? '-inf', 'LIMIT', 0, p.limit + slack),
    ]);
    if (ready === null) return { ids: null, unchanged: false };
    const page = ids.filter(keep).slice(0, p.limit);
    // A missing version key counts as '0', as in CacheVersions.
    const unchanged = versions !== undefined && versions.values.every((v, i) => (current[i] ?? '0') === v);
    return { ids: p.minId ? page.reverse() : page, unchanged };
  }
}
