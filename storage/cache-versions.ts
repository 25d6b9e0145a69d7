import type { RedisClient } from './redis.ts';
import { randomUUID } from 'node:crypto';
import { unavailableDependency } from './dependencies.ts';
import type { KeyTracking } from './key-tracking.ts';

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
  private readonly redis: RedisClient;
  private readonly prefix: string;
  /** Where versions are read: a connection under client tracking (storage/key-tracking.ts) when there is one. */
  private readonly reader: RedisClient;
  /**
   * The counters' epoch: a key set once every filter and relation version that should be above 0 is, and read with
   * every version. Redis back without it (restarted empty, flushed) lost the counters: whatever was cached under
   * them is forgotten (a counter starting again would reach old numbers), filter and relation versions are not
   * taken as "none" until they are restored from PostgreSQL (`repairWith`), and the epoch is set again.
   */
  private epoch: string | null | undefined = undefined;
  private readonly resetListeners: (() => void)[] = [];
  private repair: (() => Promise<void>) | null = null;
  private repairing = false;
  private unknown = 0;
  private readonly tracking: KeyTracking | undefined;
  /** Filter and relation versions read under client tracking and not changed since, by key (viewerVersions). */
  private readonly remembered = new Map<string, string>();

  /** `tracking`: the client tracking `reader` belongs to, if any (it lets viewerVersions answer from memory). */
  constructor(redis: RedisClient, prefix: string, reader: RedisClient = redis, tracking?: KeyTracking) {
    this.redis = redis;
    this.prefix = prefix;
    this.reader = reader;
    this.tracking = tracking;
    tracking?.onInvalidate((keys) => {
      if (keys === null || keys.includes(this.epochKey)) this.remembered.clear();
      else for (const k of keys) this.remembered.delete(k);
    });
  }

  /** Called when the counters were lost: caches kept under them are dropped. */
  onReset(fn: () => void): void {
    this.resetListeners.push(fn);
  }

  /** How to restore the filter and relation versions of accounts that have some (from PostgreSQL), with `bump`. */
  repairWith(fn: () => Promise<void>): void {
    this.repair = fn;
  }

  /** Reads the epoch now (at start), restoring the counters first if they were lost. */
  async ensureEpoch(): Promise<void> {
    this.observe(await this.reader.get(this.epochKey));
    if (this.epoch === null) await this.restore();
  }

  private get epochKey(): string {
    return `${this.prefix}ver:epoch`;
  }

  private observe(epoch: string | null): void {
    if (epoch === this.epoch) return;
    this.epoch = epoch;
    this.remembered.clear();
    for (const fn of this.resetListeners) fn();
    if (epoch === null) void this.restore();
  }

  /** One process restores (the others read PostgreSQL meanwhile); a lock that expires lets another try after a crash. */
  private async restore(): Promise<void> {
    if (!this.repair || this.repairing) return;
    this.repairing = true;
    const lock = `${this.prefix}ver:epoch-restoring`;
    try {
      if ((await this.redis.set(lock, '1', 'EX', 300, 'NX')) !== 'OK') return;
      await this.repair();
      await this.redis.set(this.epochKey, randomUUID());
      await this.redis.del(lock);
    } catch {
      // Redis or PostgreSQL away again: the next read that finds no epoch tries again once the lock is gone.
    } finally {
      this.repairing = false;
    }
  }

  /** A version read: while the epoch is missing, filter and relation versions are unknown, never "none" (0). */
  private version(kind: Kind, value: string | null | undefined): string {
    if (value === undefined || (this.epoch === null && (kind === 'f' || kind === 'r'))) return `?${++this.unknown}`;
    return value ?? '0';
  }

  /**
   * The values of these keys, the epoch read with them; while Redis is away, none (every version unknown: nothing
   * cached is used and PostgreSQL is read), so that what PostgreSQL alone can answer (a post just made) still is.
   */
  private async read(keys: string[]): Promise<(string | null)[] | null> {
    try {
      const [epoch, ...values] = await this.reader.mget(this.epochKey, ...keys);
      this.observe(epoch ?? null);
      return values;
    } catch (err) {
      if (!unavailableDependency(err)) throw err;
      return null;
    }
  }

  /** s: a status, a: an account, v: a viewer's own favourites and reblogs, f: a viewer's filters, r: their blocks and mutes. */
  private key(kind: Kind, id: string): string {
    return `${this.prefix}ver:${kind}:${id}`;
  }

  async get(kind: Kind, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const values = await this.read(ids.map((id) => this.key(kind, id)));
    return ids.map((_, i) => this.version(kind, values ? values[i] : undefined));
  }

  /** Versions of several kinds in one round trip, as maps from id to version. */
  async getMany(wanted: Partial<Record<Kind, string[]>>): Promise<VersionsUsed> {
    const kinds: Kind[] = ['s', 'a', 'v', 'f', 'r'];
    const keys = kinds.flatMap((kind) => (wanted[kind] ?? []).map((id) => this.key(kind, id)));
    const values = keys.length > 0 ? await this.read(keys) : [];
    let i = 0;
    const out: VersionsUsed = { s: new Map(), a: new Map(), v: new Map(), f: new Map(), r: new Map() };
    for (const kind of kinds) for (const id of wanted[kind] ?? []) out[kind].set(id, this.version(kind, values ? (values[i++] ?? null) : undefined));
    return out;
  }

  /**
   * The filter (f) and relation (r) versions of many viewers, for live streams, which ask for those of every receiver
   * of every post (a thousand at a time): answered from memory for keys read before under client tracking that Redis
   * has not said changed since, the rest in one read. A change made a moment ago, whose invalidation is still on its
   * way, may go unseen for that moment, as if the event had been rendered a moment earlier; reads that must see every
   * change completed before them (REST) use getMany. Without tracking, the same as getMany.
   */
  async viewerVersions(viewerIds: string[]): Promise<{ f: Map<string, string>; r: Map<string, string> }> {
    const out = { f: new Map<string, string>(), r: new Map<string, string>() };
    const missing: { kind: 'f' | 'r'; id: string; key: string }[] = [];
    for (const kind of ['f', 'r'] as const) {
      for (const id of viewerIds) {
        const key = this.key(kind, id);
        const known = this.remembered.get(key);
        if (known !== undefined) out[kind].set(id, known);
        else missing.push({ kind, id, key });
      }
    }
    if (missing.length === 0) return out;
    const ticket = this.tracking?.begin();
    try {
      const keys = missing.map((m) => m.key);
      const values = await this.read(keys);
      // Kept only when every key (and the epoch, read with them) was read under tracking and is unchanged since.
      const keep = values !== null && this.epoch !== null && ticket !== undefined && this.tracking!.unchanged(ticket, [this.epochKey, ...keys]);
      missing.forEach(({ kind, id, key }, i) => {
        const version = this.version(kind, values ? (values[i] ?? null) : undefined);
        out[kind].set(id, version);
        if (keep) this.remember(key, version);
      });
    } finally {
      if (ticket) this.tracking!.end(ticket);
    }
    return out;
  }

  /** At most this many remembered versions (a few per open stream's account); the oldest go first. */
  private static readonly REMEMBERED_MAX = 200_000;

  private remember(key: string, version: string): void {
    if (this.remembered.size >= CacheVersions.REMEMBERED_MAX) this.remembered.delete(this.remembered.keys().next().value!);
    this.remembered.set(key, version);
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
