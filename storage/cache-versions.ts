import type { Redis } from 'ioredis';

type Kind = 's' | 'a' | 'v' | 'f' | 'r';
/** The versions a rendering was made under, by kind and id: while they are current, so is the rendering. */
export type VersionsUsed = Record<Kind, Map<string, string>>;
type Ids = (string | null | undefined)[] | undefined;
const unique = (ids: Ids) => [...new Set((ids ?? []).filter((id): id is string => !!id))];

/**
 * Version counters in Redis for what processes cache in memory (statuses and accounts as rendered in timelines).
 * A reader takes the versions first, then uses a cached copy only if it was stored under the same version.
 * Every change to a status or account (counts included) must be followed, after its commit, by a bump.
 */
export class CacheVersions {
  private readonly redis: Redis;
  private readonly prefix: string;
  /** Where versions are read: a connection under client tracking (storage/key-tracking.ts) when there is one. */
  private readonly reader: Redis;

  constructor(redis: Redis, prefix: string, reader: Redis = redis) {
    this.redis = redis;
    this.prefix = prefix;
    this.reader = reader;
  }

  /** s: a status, a: an account, v: a viewer's own favourites and reblogs, f: a viewer's filters, r: their blocks and mutes. */
  private key(kind: Kind, id: string): string {
    return `${this.prefix}ver:${kind}:${id}`;
  }

  async get(kind: Kind, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const values = await this.reader.mget(ids.map((id) => this.key(kind, id)));
    return values.map((v) => v ?? '0');
  }

  /** Versions of several kinds in one round trip, as maps from id to version. */
  async getMany(wanted: Partial<Record<Kind, string[]>>): Promise<VersionsUsed> {
    const kinds: Kind[] = ['s', 'a', 'v', 'f', 'r'];
    const keys = kinds.flatMap((kind) => (wanted[kind] ?? []).map((id) => this.key(kind, id)));
    const values = keys.length > 0 ? await this.reader.mget(keys) : [];
    let i = 0;
    const out: VersionsUsed = { s: new Map(), a: new Map(), v: new Map(), f: new Map(), r: new Map() };
    for (const kind of kinds) for (const id of wanted[kind] ?? []) out[kind].set(id, values[i++] ?? '0');
    return out;
  }

  /** A set of versions as Redis keys and the values they had, for checking them all again in one read. */
  keysOf(used: VersionsUsed): { keys: string[]; values: string[] } {
    const keys: string[] = [];
    const values: string[] = [];
    for (const kind of ['s', 'a', 'v', 'f', 'r'] as const) {
      for (const [id, version] of used[kind]) {
        keys.push(this.key(kind, id));
        values.push(version);
      }
    }
    return { keys, values };
  }

  async bump(changed: { statuses?: Ids; accounts?: Ids; viewers?: Ids; filters?: Ids; relations?: Ids }): Promise<void> {
    const keys = [
      ...unique(changed.statuses).map((id) => this.key('s', id)),
      ...unique(changed.accounts).map((id) => this.key('a', id)),
      ...unique(changed.viewers).map((id) => this.key('v', id)),
      ...unique(changed.filters).map((id) => this.key('f', id)),
      ...unique(changed.relations).map((id) => this.key('r', id)),
    ];
    if (keys.length === 0) return;
    const pipeline = this.redis.pipeline();
    // Entries cached in processes live far shorter than a week, so a counter that expires unused is never mistaken.
    // Filter and relation versions are kept: version 0 then means "never had any", which readers take without asking.
    for (const key of keys) {
      pipeline.incr(key);
      if (!key.startsWith(`${this.prefix}ver:f:`) && !key.startsWith(`${this.prefix}ver:r:`)) pipeline.expire(key, 7 * 24 * 3600);
    }
    await pipeline.exec();
  }
}
