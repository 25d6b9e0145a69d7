import { redisScript, runScript } from './redis.ts';
import type { RedisClient } from './redis.ts';
import { feedTag, groupsForCommand } from './redis-keys.ts';
import type { PageParams } from './paging.ts';

/** Mastodon keeps the newest 800 entries of a home feed; older pages come from PostgreSQL. */
export const FEED_SIZE = 800;
/** Feeds per script call of `add` (the call holds Redis for about a millisecond per thousand). */
const ADD_KEYS_PER_CALL = 1000;
/**
 * KEYS: feeds. ARGV: the feed size, then for each feed the number of its statuses and their ids (member and score
 * are the id). Returns nothing.
 */
const ADD_TO_FEEDS = redisScript(`
local size = tonumber(ARGV[1])
local a = 2
for _, key in ipairs(KEYS) do
  local n = tonumber(ARGV[a])
  -- ZADD takes the members in slices: unpack has a limit on how many values it spreads.
  for first = 1, n, 500 do
    local members = {}
    for j = first, math.min(n, first + 499) do
      members[#members + 1] = ARGV[a + j]
      members[#members + 1] = ARGV[a + j]
    end
    redis.call('ZADD', key, unpack(members))
  end
  a = a + n + 1
  if redis.call('ZCARD', key) > size then redis.call('ZREMRANGEBYRANK', key, 0, -size - 1) end
end
`);
/**
 * KEYS: accepting sets (one per bucket). ARGV: for each key, the number of its ids and the ids. Returns each id's
 * score in its set, in the order given (false, a nil, for one the set does not hold): ZMSCORE over several sets in
 * one call, so that a single Redis answers a fan-out batch's thousand followers spread over 64 buckets with one
 * request rather than 64.
 */
const SCORES_IN_SETS = redisScript(`
local out = {}
local a = 1
for _, key in ipairs(KEYS) do
  local n = tonumber(ARGV[a])
  for first = a + 1, a + n, 500 do
    local scores = redis.call('ZMSCORE', key, unpack(ARGV, first, math.min(a + n, first + 499)))
    for i = 1, #scores do out[#out + 1] = scores[i] end
  end
  a = a + n + 1
end
return out
`);
/**
 * KEYS: for each bucket its accepting set, then each feed's built and rebuilding markers. ARGV: for each bucket the
 * number of its feeds and their ids. Enters each feed in its set (NX: a rebuild that entered it meanwhile is not
 * overwritten) as taking statuses (+inf) when a marker exists, else as taking none (0); returns 1 or 0 per feed.
 */
const ENTER_BY_MARKERS = redisScript(`
local out = {}
local k = 1
local a = 1
while a <= #ARGV do
  local set = KEYS[k]
  k = k + 1
  local n = tonumber(ARGV[a])
  for j = 1, n do
    local takes = redis.call('EXISTS', KEYS[k], KEYS[k + 1]) > 0
    k = k + 2
    redis.call('ZADD', set, 'NX', takes and '+inf' or '0', ARGV[a + j])
    out[#out + 1] = takes and 1 or 0
  end
  a = a + n + 1
end
return out
`);
/** How long a rebuild's claim lasts: a rebuild that dies leaves a feed that is rebuilt again when next read. */
const BUILDING_MS = 60_000;

/**
 * Home feeds: one Redis sorted set per account (member and score are the status id), plus a marker key saying
 * the feed has been built. A missing marker (Redis flushed, account long inactive) means: rebuild from PostgreSQL.
 * Scores are doubles and lose the low bits of 64-bit ids, so exact order and bounds are settled on the members.
 */
export class HomeFeeds {
  private readonly redis: RedisClient;
  private readonly prefix: string;
  /** Where pages are read: a connection under client tracking (storage/key-tracking.ts) when there is one. */
  private readonly reader: RedisClient;
  private readonly kind: string;

  /** `kind`: `home` (by account id), or `list` (list feeds, by list id: the same sets under other keys). */
  constructor(redis: RedisClient, prefix: string, reader: RedisClient = redis, kind: 'home' | 'list' = 'home') {
    this.redis = redis;
    this.prefix = prefix;
    this.reader = reader;
    this.kind = kind;
  }

  /**
   * A feed's keys carry its bucket's tag (storage/redis-keys.ts), as does that bucket's accepting set: on a cluster they
   * share a slot, so `drop` and `rebuild` stay transactions, and a fan-out costs a script call and a ZMSCORE per bucket.
   */
  key(accountId: string): string {
    return `${this.prefix}feed:${feedTag(accountId)}:${this.kind}:${accountId}`;
  }

  private readyKey(accountId: string): string {
    return `${this.key(accountId)}:ready`;
  }

  /** The keys a page read depends on. */
  pageKeys(accountId: string): string[] {
    return [this.key(accountId), this.readyKey(accountId)];
  }

  private buildingKey(accountId: string): string {
    return `${this.key(accountId)}:building`;
  }

  /**
   * Which feeds of a bucket take new statuses, in one sorted set per bucket (the feed's tag), so that fan-out asks
   * about a thousand followers in one command per bucket (ZMSCORE) rather than a thousand EXISTS: score +inf for a
   * built feed, the time a rebuild's claim runs out for one being rebuilt, 0 for one found to take none. The markers
   * stay what page reads go by; a feed missing from its set (built before it existed, or the set lost) is looked up
   * by its markers once and entered.
   */
  private acceptingKey(accountId: string): string {
    return `${this.prefix}feed:${feedTag(accountId)}:${this.kind}:accepting`;
  }

  /** Ids grouped by bucket (one accepting set each), in the order first seen. */
  private byBucket(ids: readonly string[]): string[][] {
    const groups = new Map<string, string[]>();
    for (const id of ids) {
      const tag = feedTag(id);
      const group = groups.get(tag);
      if (group) group.push(id);
      else groups.set(tag, [id]);
    }
    return [...groups.values()];
  }

  /** Forgets a feed altogether (a deleted list's). */
  async drop(id: string): Promise<void> {
    await this.redis.multi().del(this.key(id), this.readyKey(id), this.buildingKey(id)).zrem(this.acceptingKey(id), id).exec();
  }

  /** True when the feed is built. */
  async isReady(accountId: string): Promise<boolean> {
    return (await this.redis.exists(this.readyKey(accountId))) === 1;
  }

  /** True when the feed takes new statuses: it is built, or being rebuilt (see `rebuild`). */
  async accepts(accountId: string): Promise<boolean> {
    return (await this.redis.exists(this.readyKey(accountId), this.buildingKey(accountId))) > 0;
  }

  /** Which of these accounts' feeds take new statuses (those that do not are rebuilt when next read). */
  async acceptingAmong(accountIds: string[]): Promise<string[]> {
    if (accountIds.length === 0) return [];
    // The buckets' ZMSCOREs in one script call on a single Redis; on a cluster one call per bucket (a script's keys
    // share a slot), sent together (auto-pipelining writes them at once, per node).
    const buckets = this.byBucket(accountIds);
    const calls = groupsForCommand(this.redis, buckets, (ids) => this.acceptingKey(ids[0]!)).map(async (group) => {
      const args: (string | number)[] = [];
      for (const ids of group) args.push(ids.length, ...ids);
      const scores = (await runScript(this.redis, SCORES_IN_SETS, group.map((ids) => this.acceptingKey(ids[0]!)), args)) as (string | null)[];
      let i = 0;
      return group.flatMap((ids) => ids.map((id) => [id, scores[i++] ?? null] as const));
    });
    const now = Date.now();
    const out: string[] = [];
    const unknown: string[] = [];
    for (const [id, score] of (await Promise.all(calls)).flat()) {
      if (score === null) unknown.push(id);
      else if (score === 'inf' || Number(score) > now) out.push(id);
    }
    if (unknown.length > 0) out.push(...(await this.enterByMarkers(unknown)));
    return out;
  }

  /**
   * Feeds the accepting set does not know: their markers say; each is entered (NX: a rebuild that entered it
   * meanwhile is not overwritten) as built, or as taking none until it is rebuilt.
   */
  private async enterByMarkers(accountIds: string[]): Promise<string[]> {
    // One script call on a single Redis, one per bucket on a cluster (a bucket's markers share its set's slot).
    const calls = groupsForCommand(this.redis, this.byBucket(accountIds), (ids) => this.acceptingKey(ids[0]!)).map(async (group) => {
      const keys: string[] = [];
      const args: (string | number)[] = [];
      for (const ids of group) {
        keys.push(this.acceptingKey(ids[0]!), ...ids.flatMap((id) => [this.readyKey(id), this.buildingKey(id)]));
        args.push(ids.length, ...ids);
      }
      const takes = (await runScript(this.redis, ENTER_BY_MARKERS, keys, args)) as number[];
      return group.flat().filter((_, i) => takes[i] === 1);
    });
    return (await Promise.all(calls)).flat();
  }

  /**
   * Fills a feed from `source` (PostgreSQL) and marks it built. The feed is marked as being built before the
   * source is read, so that a status committed after that read still gets in: fan-out adds to it meanwhile, and
   * the rebuild adds to what is there rather than replacing it.
   */
  async rebuild(accountId: string, source: () => Promise<string[]>): Promise<void> {
    const key = this.key(accountId);
    await this.redis.multi().del(key).set(this.buildingKey(accountId), '1', 'PX', BUILDING_MS).zadd(this.acceptingKey(accountId), Date.now() + BUILDING_MS, accountId).exec();
    const statusIds = await source();
    const tx = this.redis.multi();
    if (statusIds.length > 0) tx.zadd(key, ...statusIds.flatMap((id) => [id, id])).zremrangebyrank(key, 0, -FEED_SIZE - 1);
    await tx.set(this.readyKey(accountId), '1').del(this.buildingKey(accountId)).zadd(this.acceptingKey(accountId), '+inf', accountId).exec();
  }

  /**
   * Adds statuses to one feed. The adds asked for in one turn of the event loop (a fan-out's thousand followers'
   * actors, each adding to its own feed) go to Redis together as one script call per thousand feeds, rather than
   * as a command each: a thousand commands cost the process a thousand command objects and Redis a thousand
   * requests to parse. On a cluster a script's keys must share a slot: one call per bucket present. Each feed is
   * trimmed back to FEED_SIZE when it holds more.
   */
  add(accountId: string, statusIds: string[]): Promise<void> {
    if (statusIds.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      let batch = this.adding;
      if (!batch) {
        batch = this.adding = { feeds: new Map(), waiting: [] };
        setImmediate(() => this.flushAdds());
      }
      const ids = batch.feeds.get(accountId);
      if (ids) ids.push(...statusIds);
      else batch.feeds.set(accountId, [...statusIds]);
      batch.waiting.push({ resolve, reject });
    });
  }

  private adding: { feeds: Map<string, string[]>; waiting: { resolve: () => void; reject: (err: unknown) => void }[] } | null = null;

  private flushAdds(): void {
    const batch = this.adding!;
    this.adding = null;
    const calls: Promise<unknown>[] = [];
    // A single Redis takes the whole batch as one group (calls as before clustering); a cluster one group per bucket.
    for (const group of groupsForCommand(this.redis, [...batch.feeds.keys()], (id) => this.key(id))) {
      let keys: string[] = [];
      let args: (string | number)[] = [FEED_SIZE];
      for (const accountId of group) {
        const statusIds = batch.feeds.get(accountId)!;
        keys.push(this.key(accountId));
        args.push(statusIds.length, ...statusIds);
        if (keys.length === ADD_KEYS_PER_CALL) {
          calls.push(runScript(this.redis, ADD_TO_FEEDS, keys, args));
          keys = [];
          args = [FEED_SIZE];
        }
      }
      if (keys.length > 0) calls.push(runScript(this.redis, ADD_TO_FEEDS, keys, args));
    }
    Promise.all(calls).then(
      () => { for (const w of batch.waiting) w.resolve(); },
      (err: unknown) => { for (const w of batch.waiting) w.reject(err); },
    );
  }

  /** Adds statuses to an account's feed if the feed takes statuses (built or being rebuilt; see `accepts`). */
  async addIfAccepting(accountId: string, statusIds: string[]): Promise<void> {
    if (await this.accepts(accountId)) await this.add(accountId, statusIds);
  }

  async remove(accountIds: string[], statusIds: string[]): Promise<void> {
    if (accountIds.length === 0 || statusIds.length === 0) return;
    // Plain commands (auto-pipelining sends them together): a pipeline would have to stay on one cluster node.
    await Promise.all(accountIds.map((id) => this.redis.zrem(this.key(id), ...statusIds)));
  }

  /**
   * A page of ids, newest first, with Mastodon's max_id/since_id/min_id semantics; null when the feed is not
   * built (the caller rebuilds it). The range read and one MGET (the built marker, and cache version keys that
   * must still hold the values given: `unchanged`) are sent together, so auto-pipelining writes them at once, and
   * a cached rendering of the page is checked in the same round trip. Plain commands: a Lua script doing the same
   * cost Redis five times the time. On a cluster the MGET is one per hash tag among those keys (the marker's, then
   * the versions' own).
   */
  async page(accountId: string, p: PageParams, versions?: { keys: string[]; values: string[] }): Promise<{ ids: string[] | null; unchanged: boolean }> {
    // Fetch a little more than asked around inclusive bounds, then settle exact bounds with BigInt.
    const slack = 16;
    const gt = (a: string, b: string) => BigInt(a) > BigInt(b);
    const lowId = p.minId ?? p.sinceId;
    const keep = (id: string) => (!p.maxId || gt(p.maxId, id)) && (!lowId || gt(id, lowId));
    const key = this.key(accountId);
    const keys = [this.readyKey(accountId), ...(versions?.keys ?? [])];
    // Indices into `keys`; the first group holds the marker (index 0), first.
    const [markerGroup, ...versionGroups] = groupsForCommand(this.reader, keys.map((_, i) => i), (i) => keys[i]!);
    const mget = (group: number[]) => this.reader.mget(...group.map((i) => keys[i]!));
    // The marker is read first (Redis runs one connection's commands in order, and a rebuild sets the marker and the
    // feed in one transaction), so a feed seen built is read whole. On a cluster the marker and the feed share a slot,
    // so they go to the same node's connection, still in that order.
    const [markerValues, ids, ...versionValues] = await Promise.all([
      mget(markerGroup!),
      p.minId
        ? this.reader.zrangebyscore(key, lowId ?? '-inf', p.maxId ?? '+inf', 'LIMIT', 0, p.limit + slack)
        : this.reader.zrevrangebyscore(key, p.maxId ?? '+inf', lowId ?? '-inf', 'LIMIT', 0, p.limit + slack),
      ...versionGroups.map(mget),
    ]);
    const values: (string | null)[] = new Array(keys.length);
    markerGroup!.forEach((k, j) => (values[k] = markerValues[j] ?? null));
    versionGroups.forEach((group, g) => group.forEach((k, j) => (values[k] = versionValues[g]![j] ?? null)));
    if (values[0] === null) return { ids: null, unchanged: false };
    const page = ids.filter(keep).slice(0, p.limit);
    // A missing version key counts as '0', as in CacheVersions.
    const unchanged = versions !== undefined && versions.values.every((v, i) => (values[i + 1] ?? '0') === v);
    return { ids: p.minId ? page.reverse() : page, unchanged };
  }
}
