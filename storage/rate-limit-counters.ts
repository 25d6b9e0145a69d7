import { redisScript, runScript, type RedisClient } from './redis.ts';
import { groupsForCommand, rateLimitTag } from './redis-keys.ts';

/**
 * Fixed-window request counters shared by every process through Redis, without a Redis round trip per request.
 *
 * Each process counts hits locally and adds them to the Redis counter in batches (every FLUSH_MS, one script call for
 * all keys on a single Redis, one per key bucket on a cluster), reading back the shared count and the window's end.
 * A hit is answered from memory only when that is safe: the count is known from Redis recently (STALE_MS), and far
 * enough below the limit (MARGIN) that the hits other processes have not reported yet cannot cross it; or the limit
 * is already exceeded in this window, which cannot change before it ends. Any other hit (a new key, a new window, a
 * count near the limit, a key quiet for a while) goes to Redis at once and is decided on Redis's count, as a plain
 * Redis counter would. So limits are exact near the limit, and a busy client's requests cost one Redis command per
 * batch instead of one each.
 */

/** How often counted hits are added to Redis. */
const FLUSH_MS = 100;
/** A count older than this is asked of Redis again before deciding on it. */
const STALE_MS = 1000;
/** Keys kept in memory at most; idle ones are dropped first (Redis still has their counts). */
const MAX_KEYS = 50_000;
/** How often keys whose window ended are forgotten. */
const SWEEP_MS = 10_000;
/** A key unused this long is forgotten even if its window goes on. */
const IDLE_MS = 60_000;

/** Hits within this many of the limit are decided by Redis: a tenth of the limit, at least 10 (so small limits always are). */
function margin(max: number): number {
  return Math.max(10, Math.ceil(max / 10));
}

/**
 * Between two answers from Redis a process counts at most this share of the room left under the limit: the others
 * may be doing the same, so with up to SHARE_OF_ROOM⁻¹ processes busy on one key they cannot together overrun it
 * by more than what arrives in one flush interval. Beyond it, hits go to Redis one by one until the next answer.
 */
const SHARE_OF_ROOM = 1 / 8;

// For each key: add the hits, start the window if the key is new (or lost its expiry), and answer [count, ms left].
const ADD = redisScript(`
local out = {}
for i = 1, #KEYS do
  local current = redis.call('INCRBY', KEYS[i], tonumber(ARGV[i * 2 - 1]))
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl < 0 then
    ttl = tonumber(ARGV[i * 2])
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
  out[i] = { current, ttl }
end
return out`);

/**
 * The Redis key of a counter: the store's key followed by its bucket's tag (storage/redis-keys.ts), so that a
 * flush's keys go in one script call per bucket on a cluster. The tag ends the key so that the key still starts
 * with the plugin's prefix and namespace (`fedi:rate-limit:token:…`); it is derived from the whole store key.
 */
export const rateLimitRedisKey = (key: string): string => `${key}:${rateLimitTag(key)}`;

interface Counter {
  /** Its key in Redis (`rateLimitRedisKey`). */
  redisKey: string;
  /** The count in Redis when it last answered (this process's flushed hits included). */
  shared: number;
  /** Hits counted here and not yet sent to Redis. */
  pending: number;
  /** Hits on their way to Redis in a batch. */
  sending: number;
  /** When the window ends, as Redis last said. */
  resetAt: number;
  /** When Redis last said. */
  syncedAt: number;
  lastHit: number;
  windowMs: number;
}

export interface Count {
  /** Hits in this window, this one included. */
  current: number;
  /** Milliseconds until the window ends. */
  ttl: number;
}

export class RateLimitCounters {
  private readonly counters = new Map<string, Counter>();
  private readonly redis: RedisClient;
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | null = null;
  private lastSweep = Date.now();
  private readonly maxKeys: number;
  private readonly sweepMs: number;

  constructor(redis: RedisClient, options: { flushMs?: number; maxKeys?: number; sweepMs?: number } = {}) {
    this.redis = redis;
    this.maxKeys = options.maxKeys ?? MAX_KEYS;
    this.sweepMs = options.sweepMs ?? SWEEP_MS;
    this.timer = setInterval(() => void this.flush(), options.flushMs ?? FLUSH_MS);
    this.timer.unref();
  }

  /** Adds each key's hits and answers its [count, ms left], in order; the keys share a slot on a cluster. */
  private add(keys: string[], args: (string | number)[]): Promise<[number, number][]> {
    return runScript(this.redis, ADD, keys, args) as Promise<[number, number][]>;
  }

  /** Counts a hit on `key` (a window of `windowMs`, at most `max` hits) and calls back with the count. */
  hit(key: string, windowMs: number, max: number, done: (err: Error | null, count?: Count) => void): void {
    const now = Date.now();
    const c = this.counters.get(key);
    if (c && now < c.resetAt) {
      c.lastHit = now;
      const current = c.shared + c.sending + c.pending + 1;
      // Exceeded stays exceeded until the window ends; well below the limit, unreported hits cannot cross it.
      const local = c.pending + c.sending;
      if (c.shared > max || (now - c.syncedAt <= STALE_MS && current <= max - margin(max) && local < (max - c.shared) * SHARE_OF_ROOM)) {
        c.pending++;
        return done(null, { current, ttl: c.resetAt - now });
      }
    }
    this.sendNow(key, windowMs, now, done);
  }

  /** The count without adding a hit (the plugin's `read`): from memory when known, else from Redis. */
  read(key: string, done: (err: Error | null, count?: Count) => void): void {
    const now = Date.now();
    const c = this.counters.get(key);
    if (c && now < c.resetAt) return done(null, { current: c.shared + c.sending + c.pending, ttl: c.resetAt - now });
    const redisKey = rateLimitRedisKey(key);
    this.redis.multi().get(redisKey).pttl(redisKey).exec().then((r) => {
      const current = Number(r?.[0]?.[1] ?? 0);
      const ttl = Number(r?.[1]?.[1] ?? 0);
      done(null, { current, ttl: Math.max(0, ttl) });
    }, (err: Error) => done(err));
  }

  /** This hit and the key's pending ones go to Redis now; the answer decides. */
  private sendNow(key: string, windowMs: number, now: number, done: (err: Error | null, count?: Count) => void): void {
    let c = this.counters.get(key);
    if (!c) {
      c = { redisKey: rateLimitRedisKey(key), shared: 0, pending: 0, sending: 0, resetAt: 0, syncedAt: 0, lastHit: now, windowMs };
      this.counters.set(key, c);
      if (this.counters.size > this.maxKeys) this.evict(now);
    } else if (now >= c.resetAt) {
      // Hits counted in a window that has ended belong to it, not to the next one.
      c.pending = 0;
    }
    c.lastHit = now;
    const n = c.pending + 1;
    c.pending = 0;
    // On their way, these hits count as sent: local decisions meanwhile must not forget them.
    c.sending += n;
    const counter = c;
    // Replies come in the order sent: this count includes every batch sent before, none sent after (still `sending`).
    this.add([c.redisKey], [n, windowMs]).then((results) => {
      const [current, ttl] = results[0]!;
      const at = Date.now();
      counter.sending -= n;
      counter.shared = current;
      counter.resetAt = at + ttl;
      counter.syncedAt = at;
      done(null, { current, ttl });
    }, (err: Error) => {
      counter.sending -= n;
      counter.pending += n - 1;
      done(err);
    });
  }

  /**
   * Adds every key's pending hits to Redis and takes back the shared counts: one script call for all keys on a
   * single Redis, one per bucket on a cluster (sent together). A call that fails leaves its keys' hits for later.
   */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    const now = Date.now();
    if (now - this.lastSweep > this.sweepMs) this.sweep(now);
    const batch: [Counter, number][] = [];
    for (const c of this.counters.values()) {
      if (c.pending === 0) continue;
      if (now >= c.resetAt) {
        c.pending = 0;
        continue;
      }
      batch.push([c, c.pending]);
      c.sending += c.pending;
      c.pending = 0;
      if (batch.length === 1000) break;
    }
    if (batch.length === 0) return Promise.resolve();
    const calls = groupsForCommand(this.redis, batch, ([c]) => c.redisKey).map((group) => {
      const args: (string | number)[] = [];
      for (const [c, n] of group) args.push(n, c.windowMs);
      return this.add(group.map(([c]) => c.redisKey), args).then((results) => {
        const at = Date.now();
        for (const [i, [c, n]] of group.entries()) {
          const [current, ttl] = results[i]!;
          c.sending -= n;
          c.shared = current;
          c.resetAt = at + ttl;
          c.syncedAt = at;
        }
      }, () => {
        // Redis (or this bucket's node) is away: the hits stay counted here and go with a later batch.
        for (const [c, n] of group) {
          c.sending -= n;
          c.pending += n;
        }
      });
    });
    this.flushing = Promise.all(calls).then(() => {}).finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Forgets keys whose window has ended or that nobody used for a while (nothing of theirs left to send). */
  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, c] of this.counters) {
      if (c.pending === 0 && c.sending === 0 && (now >= c.resetAt || now - c.lastHit > IDLE_MS)) this.counters.delete(key);
    }
  }

  /** Over maxKeys: drops a tenth of the keys, oldest first, keeping those with hits not yet sent. */
  private evict(now: number): void {
    this.sweep(now);
    let drop = this.counters.size - Math.floor(this.maxKeys * 0.9);
    for (const [key, c] of this.counters) {
      if (drop <= 0) break;
      if (c.pending === 0 && c.sending === 0) {
        this.counters.delete(key);
        drop--;
      }
    }
  }

  get size(): number {
    return this.counters.size;
  }

  /** Stops the batches after sending what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush().catch(() => {});
  }
}
