import type { Redis } from 'ioredis';

/**
 * Version counters in Redis for what processes cache in memory (statuses and accounts as rendered in timelines).
 * A reader takes the versions first, then uses a cached copy only if it was stored under the same version.
 * Every change to a status or account (counts included) must be followed, after its commit, by a bump.
 */
export class CacheVersions {
  private readonly redis: Redis;
  private readonly prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
  }

  private key(kind: 's' | 'a', id: string): string {
    return `${this.prefix}ver:${kind}:${id}`;
  }

  async get(kind: 's' | 'a', ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const values = await this.redis.mget(ids.map((id) => this.key(kind, id)));
    return values.map((v) => v ?? '0');
  }

  async bump(changed: { statuses?: (string | null | undefined)[]; accounts?: (string | null | undefined)[] }): Promise<void> {
    const statuses = [...new Set((changed.statuses ?? []).filter((id): id is string => !!id))];
    const accounts = [...new Set((changed.accounts ?? []).filter((id): id is string => !!id))];
    if (statuses.length + accounts.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const id of statuses) pipeline.incr(this.key('s', id)).expire(this.key('s', id), 7 * 24 * 3600);
    for (const id of accounts) pipeline.incr(this.key('a', id)).expire(this.key('a', id), 7 * 24 * 3600);
    await pipeline.exec();
  }
}
