import type { RedisClient } from './redis.ts';
import { randomUUID } from 'node:crypto';
import { unavailableDependency } from './dependencies.ts';
import type { KeyTracking } from './key-tracking.ts';
import { VERSION_BUCKETS, bucketOf, groupsForCommand, versionTagOfBucket } from './redis-keys.ts';

type Kind = 's' | 'a' | 'v' | 'f' | 'r' | 'e';
/** The versions a rendering was made under, by kind and id: while they are current, so is the rendering. */
export type VersionsUsed = Record<Kind, Map<string, string>>;
type Ids = (string | null | undefined)[] | undefined;
const unique = (ids: Ids) => [...new Set((ids ?? []).filter((id): id is string => !!id))];
/** A version key and the bucket (hash tag) it is in. */
interface VersionKey {
  key: string;
  bucket: number;
}
const BUCKETS = [...Array(VERSION_BUCKETS).keys()];
/** The id of the one custom emoji version (kind e). */
export const EMOJI_VERSION_ID = 'all';

/**
 * Version counters in Redis for what processes cache in memory (statuses and accounts as rendered in timelines).
 * A reader takes the versions first, then uses a cached copy only if it was stored under the same version.
 * Every change to a status or account (counts included) must be followed, after its commit, by a bump.
 *
 * Keys are spread over VERSION_BUCKETS hash tags (`ver:{v5}:s:<id>`, storage/redis-keys.ts) so that a Redis Cluster
 * can hold them; each bucket has its own epoch, read in the same MGET as that bucket's versions.
 */
export class CacheVersions {
  private readonly redis: RedisClient;
  private readonly prefix: string;
  /** Where versions are read: a connection under client tracking (storage/key-tracking.ts) when there is one. */
  private readonly reader: RedisClient;
  /**
   * Each bucket's epoch: a key set once every filter and relation version that should be above 0 is, and read with
   * every version of its bucket. Redis back without it (restarted empty, flushed, a cluster node restarted empty)
   * lost those counters: whatever was cached under any version is forgotten (a counter starting again would reach
   * old numbers), filter and relation versions of the bucket are not taken as "none" until they are restored from
   * PostgreSQL (`repairWith`), and the epoch is set again. Undefined: not read yet.
   */
  private readonly epochs: (string | null | undefined)[] = BUCKETS.map(() => undefined);
  private readonly epochKeys: string[];
  private readonly epochKeySet: Set<string>;
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
    this.epochKeys = BUCKETS.map((b) => `${prefix}ver:${versionTagOfBucket(b)}:epoch`);
    this.epochKeySet = new Set(this.epochKeys);
    tracking?.onInvalidate((keys) => {
      if (keys === null || keys.some((k) => this.epochKeySet.has(k))) this.remembered.clear();
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

  /**
   * Drops everything cached under versions (here and in every `onReset` listener). For when counters may have gone
   * back without any epoch changing: a cluster node's connection dropped, and a replica that missed the last
   * acknowledged bumps may have taken over (storage/REDIS-CLUSTER.md §2.3).
   */
  forgetAll(): void {
    this.remembered.clear();
    for (const fn of this.resetListeners) fn();
  }

  /** Reads every bucket's epoch now (at start), restoring the counters first if some were lost. */
  async ensureEpoch(): Promise<void> {
    const epochs = await this.readEpochs(this.reader);
    this.observe(BUCKETS, epochs);
    if (this.epochs.includes(null)) await this.restore();
  }

  /** Every bucket's epoch: one MGET on a single Redis, one per bucket on a cluster. */
  private async readEpochs(client: RedisClient): Promise<(string | null)[]> {
    const groups = groupsForCommand(client, BUCKETS, (b) => this.epochKeys[b]!);
    const out: (string | null)[] = BUCKETS.map(() => null);
    await Promise.all(groups.map(async (group) => {
      const values = await client.mget(...group.map((b) => this.epochKeys[b]!));
      group.forEach((b, i) => (out[b] = values[i] ?? null));
    }));
    return out;
  }

  /** Epochs read with versions: any bucket's changed or missing means counters were lost, and memory goes. */
  private observe(buckets: readonly number[], values: readonly (string | null)[]): void {
    let reset = false;
    let lost = false;
    buckets.forEach((b, i) => {
      const epoch = values[i]!;
      const known = this.epochs[b];
      if (epoch === known) return;
      this.epochs[b] = epoch;
      // A bucket seen for the first time changes nothing held (what is held was read with its bucket's epoch).
      if (known !== undefined || epoch === null) reset = true;
      if (epoch === null) lost = true;
    });
    if (reset) this.forgetAll();
    if (lost) void this.restore();
  }

  /**
   * One process restores (the others read PostgreSQL meanwhile); a lock that expires lets another try after a crash.
   * The epochs still there are kept (their counters are whole: changing them would reset every process for nothing).
   */
  private async restore(): Promise<void> {
    if (!this.repair || this.repairing) return;
    this.repairing = true;
    const lock = `${this.prefix}ver:epoch-restoring`;
    try {
      if ((await this.redis.set(lock, '1', 'EX', 300, 'NX')) !== 'OK') return;
      await this.repair();
      const epoch = randomUUID();
      await Promise.all(this.epochKeys.map((key) => this.redis.set(key, epoch, 'NX')));
      await this.redis.del(lock);
    } catch {
      // Redis or PostgreSQL away again: the next read that finds no epoch tries again once the lock is gone.
    } finally {
      this.repairing = false;
    }
  }

  /** A version read: while its bucket's epoch is missing, filter and relation versions are unknown, never "none" (0). */
  private version(kind: Kind, bucket: number, value: string | null | undefined): string {
    if (value === undefined || ((kind === 'f' || kind === 'r') && this.epochs[bucket] === null)) return `?${++this.unknown}`;
    return value ?? '0';
  }

  /**
   * The values of these keys, each bucket's epoch read in the same MGET as its keys (one MGET on a single Redis, one
   * per bucket on a cluster). A bucket that could not be read (Redis or its node away) gives undefined values (every
   * version unknown: nothing cached is used and PostgreSQL is read), so that what PostgreSQL alone can answer (a
   * post just made) still is. `complete`: every bucket was read.
   */
  private async read(keys: readonly VersionKey[]): Promise<{ values: (string | null | undefined)[]; complete: boolean }> {
    const values: (string | null | undefined)[] = keys.map(() => undefined);
    let complete = true;
    const indexed = keys.map((k, i) => ({ ...k, i }));
    const buckets: number[] = [];
    const epochs: (string | null)[] = [];
    await Promise.all(groupsForCommand(this.reader, indexed, (k) => k.key).map(async (group) => {
      const inGroup = [...new Set(group.map((k) => k.bucket))];
      try {
        const read = await this.reader.mget(...inGroup.map((b) => this.epochKeys[b]!), ...group.map((k) => k.key));
        inGroup.forEach((b, j) => (buckets.push(b), epochs.push(read[j] ?? null)));
        group.forEach((k, j) => (values[k.i] = read[inGroup.length + j] ?? null));
      } catch (err) {
        if (!unavailableDependency(err)) throw err;
        complete = false;
      }
    }));
    // Once for the whole read: several buckets lost together are one reset.
    this.observe(buckets, epochs);
    return { values, complete };
  }

  /**
   * s: a status, a: an account, v: a viewer's own favourites and reblogs, f: a viewer's filters, r: their blocks and
   * mutes, e: custom emoji (one counter, EMOJI_VERSION_ID: what statuses and accounts were rendered with changed).
   */
  private key(kind: Kind, id: string): VersionKey {
    const bucket = bucketOf(id, VERSION_BUCKETS);
    return { key: `${this.prefix}ver:${versionTagOfBucket(bucket)}:${kind}:${id}`, bucket };
  }

  async get(kind: Kind, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const keys = ids.map((id) => this.key(kind, id));
    const { values } = await this.read(keys);
    return keys.map((k, i) => this.version(kind, k.bucket, values[i]));
  }

  /** Versions of several kinds in one round trip, as maps from id to version. */
  async getMany(wanted: Partial<Record<Kind, string[]>>): Promise<VersionsUsed> {
    const kinds: Kind[] = ['s', 'a', 'v', 'f', 'r', 'e'];
    const keys = kinds.flatMap((kind) => (wanted[kind] ?? []).map((id) => this.key(kind, id)));
    const { values } = keys.length > 0 ? await this.read(keys) : { values: [] };
    let i = 0;
    const out: VersionsUsed = { s: new Map(), a: new Map(), v: new Map(), f: new Map(), r: new Map(), e: new Map() };
    for (const kind of kinds) for (const id of wanted[kind] ?? []) out[kind].set(id, this.version(kind, keys[i]!.bucket, values[i++]));
    return out;
  }

  /**
   * The filter (f) and relation (r) versions of many viewers, for live streams, which ask for those of every receiver
   * of every post (a thousand at a time): answered from memory for keys read before under client tracking that Redis
   * has not said changed since, the rest in one read (one per bucket on a cluster). A change made a moment ago, whose
   * invalidation is still on its way, may go unseen for that moment, as if the event had been rendered a moment
   * earlier; reads that must see every change completed before them (REST) use getMany. Without tracking, the same
   * as getMany.
   */
  async viewerVersions(viewerIds: string[]): Promise<{ f: Map<string, string>; r: Map<string, string> }> {
    const out = { f: new Map<string, string>(), r: new Map<string, string>() };
    const missing: (VersionKey & { kind: 'f' | 'r'; id: string })[] = [];
    for (const kind of ['f', 'r'] as const) {
      for (const id of viewerIds) {
        const key = this.key(kind, id);
        const known = this.remembered.get(key.key);
        if (known !== undefined) out[kind].set(id, known);
        else missing.push({ ...key, kind, id });
      }
    }
    if (missing.length === 0) return out;
    const ticket = this.tracking?.begin();
    try {
      const { values, complete } = await this.read(missing);
      // Kept only when every key (and its bucket's epoch, read with it) was read under tracking and is unchanged since.
      const buckets = [...new Set(missing.map((m) => m.bucket))];
      const keep = complete && ticket !== undefined && buckets.every((b) => typeof this.epochs[b] === 'string') &&
        this.tracking!.unchanged(ticket, [...buckets.map((b) => this.epochKeys[b]!), ...missing.map((m) => m.key)]);
      missing.forEach(({ kind, id, key, bucket }, i) => {
        const version = this.version(kind, bucket, values[i]);
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
    for (const kind of ['s', 'a', 'v', 'f', 'r', 'e'] as const) {
      for (const [id, version] of used[kind]) {
        keys.push(this.key(kind, id).key);
        values.push(version);
      }
    }
    return { keys, values };
  }

  /** `emojis`: a custom emoji was added, changed or removed (everything rendered with emoji is rendered again). */
  async bump(changed: { statuses?: Ids; accounts?: Ids; viewers?: Ids; filters?: Ids; relations?: Ids; emojis?: boolean }): Promise<void> {
    const keys = [
      ...unique(changed.statuses).map((id) => ({ kind: 's', ...this.key('s', id) })),
      ...unique(changed.accounts).map((id) => ({ kind: 'a', ...this.key('a', id) })),
      ...unique(changed.viewers).map((id) => ({ kind: 'v', ...this.key('v', id) })),
      ...unique(changed.filters).map((id) => ({ kind: 'f', ...this.key('f', id) })),
      ...unique(changed.relations).map((id) => ({ kind: 'r', ...this.key('r', id) })),
      ...(changed.emojis ? [{ kind: 'e', ...this.key('e', EMOJI_VERSION_ID) }] : []),
    ];
    // One pipeline on a single Redis (as before clustering), one per bucket on a cluster (a pipeline stays on one node).
    await Promise.all(groupsForCommand(this.redis, keys, (k) => k.key).map((group) => {
      const pipeline = this.redis.pipeline();
      // Entries cached in processes live far shorter than a week, so a counter that expires unused is never mistaken.
      // Filter and relation versions are kept: version 0 then means "never had any", which readers take without asking.
      for (const { kind, key } of group) {
        pipeline.incr(key);
        if (kind !== 'f' && kind !== 'r' && kind !== 'e') pipeline.expire(key, 7 * 24 * 3600);
      }
      return pipeline.exec();
    }));
  }
}
