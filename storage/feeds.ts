import { redisScript, runScript } from './redis.ts';
import type { RedisClient } from './redis.ts';
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

  key(accountId: string): string {
    return `${this.prefix}feed:${this.kind}:${accountId}`;
  }

  private readyKey(accountId: string): string {
    return `${this.prefix}feed:${this.kind}:${accountId}:ready`;
  }

  /** The keys a page read depends on. */
  pageKeys(accountId: string): string[] {
    return [this.key(accountId), this.readyKey(accountId)];
  }

  private buildingKey(accountId: string): string {
    return `${this.prefix}feed:${this.kind}:${accountId}:building`;
  }

  /**
   * Which feeds take new statuses, all in one sorted set, so that fan-out asks about a thousand followers in one
   * command (ZMSCORE) rather than a thousand EXISTS: score +inf for a built feed, the time a rebuild's claim runs out
   * for one being rebuilt, 0 for one found to take none. The markers stay what page reads go by; a feed missing from
   * this set (built before it existed, or the set lost) is looked up by its markers once and entered.
   */
  private acceptingKey(): string {
    return `${this.prefix}feed:${this.kind}:accepting`;
  }

  /** Forgets a feed altogether (a deleted list's). */
  async drop(id: string): Promise<void> {
    await this.redis.multi().del(this.key(id), this.readyKey(id), this.buildingKey(id)).zrem(this.acceptingKey(), id).exec();
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
    const scores = await this.redis.zmscore(this.acceptingKey(), ...accountIds);
    const now = Date.now();
    const out: string[] = [];
    const unknown: string[] = [];
    accountIds.forEach((id, i) => {
      const score = scores[i];
      if (score === null || score === undefined) unknown.push(id);
      else if (score === 'inf' || Number(score) > now) out.push(id);
    });
    if (unknown.length > 0) out.push(...(await this.enterByMarkers(unknown)));
    return out;
  }

  /**
   * Feeds the accepting set does not know: their markers say; each is entered (NX: a rebuild that entered it
   * meanwhile is not overwritten) as built, or as taking none until it is rebuilt.
   */
  private async enterByMarkers(accountIds: string[]): Promise<string[]> {
    const pipeline = this.redis.pipeline();
    for (const id of accountIds) pipeline.exists(this.readyKey(id), this.buildingKey(id));
    const results = (await pipeline.exec()) ?? [];
    const accepting = accountIds.filter((_, i) => Number(results[i]?.[1]) > 0);
    const entries = accountIds.flatMap((id, i) => [Number(results[i]?.[1]) > 0 ? '+inf' : '0', id]);
    await this.redis.zadd(this.acceptingKey(), 'NX', ...entries);
    return accepting;
  }

  /**
   * Fills a feed from `source` (PostgreSQL) and marks it built. The feed is marked as being built before the
   * source is read, so that a status committed after that read still gets in: fan-out adds to it meanwhile, and
   * the rebuild adds to what is there rather than replacing it.
   */
  async rebuild(accountId: string, source: () => Promise<string[]>): Promise<void> {
    const key = this.key(accountId);
    await this.redis.multi().del(key).set(this.buildingKey(accountId), '1', 'PX', BUILDING_MS).zadd(this.acceptingKey(), Date.now() + BUILDING_MS, accountId).exec();
    const statusIds = await source();
    const tx = this.redis.multi();
    if (statusIds.length > 0) tx.zadd(key, ...statusIds.flatMap((id) => [id, id])).zremrangebyrank(key, 0, -FEED_SIZE - 1);
    await tx.set(this.readyKey(accountId), '1').del(this.buildingKey(accountId)).zadd(this.acceptingKey(), '+inf', accountId).exec();
  }

  /**
   * Adds statuses to one feed. The adds asked for in one turn of the event loop (a fan-out's thousand followers'
   * actors, each adding to its own feed) go to Redis together as one script call per thousand feeds, rather than
   * as a command each: a thousand commands cost the process a thousand command objects and Redis a thousand
   * requests to parse. Each feed is trimmed back to FEED_SIZE when it holds more.
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
    let keys: string[] = [];
    let args: (string | number)[] = [FEED_SIZE];
    for (const [accountId, statusIds] of batch.feeds) {
      keys.push(this.key(accountId));
      args.push(statusIds.length, ...statusIds);
      if (keys.length === ADD_KEYS_PER_CALL) {
        calls.push(runScript(this.redis, ADD_TO_FEEDS, keys, args));
        keys = [];
        args = [FEED_SIZE];
      }
    }
    if (keys.length > 0) calls.push(runScript(this.redis, ADD_TO_FEEDS, keys, args));
    Promise.all(calls).then(
      () => { for (const w of batch.waiting) w.resolve(); },
      (err: unknown) => { for (const w of batch.waiting) w.reject(err); },
    );
  }

  /** Adds one status to an account's feed if the feed takes statuses (built or being rebuilt; see `accepts`). */
  async addIfAccepting(accountId: string, statusId: string): Promise<void> {
    if (await this.accepts(accountId)) await this.add(accountId, [statusId]);
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
