import pg from 'pg';
import type { RedisClient } from './redis.ts';
import type { Db } from './db.ts';
import { unavailableDependency } from './dependencies.ts';
import { redisScript, runScript } from './redis.ts';

/**
 * Keeps the larger of the stored WAL position and ARGV[1] (two requests of one viewer finishing together must not
 * leave the earlier one's), for ARGV[2] ms. Positions are compared as their two 32-bit halves.
 */
const REMEMBER_LSN = redisScript(`
local function parse(lsn)
  local hi, lo = string.match(lsn, '^(%x+)/(%x+)$')
  return tonumber(hi, 16), tonumber(lo, 16)
end
local cur = redis.call('GET', KEYS[1])
if cur then
  local ch, cl = parse(cur)
  local nh, nl = parse(ARGV[1])
  if ch > nh or (ch == nh and cl > nl) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`);

/** A WAL position ('16/B374D848') as a number that orders as PostgreSQL orders them. */
export function parseLsn(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

/** pg.Pool's own query, bypassing ReplicaPool's fallback. */
const poolQuery = pg.Pool.prototype.query as unknown as (this: pg.Pool, config: pg.QueryConfig) => Promise<pg.QueryResult>;

/**
 * A replica's pool: a read that finds the replica gone (stopped, restarting, a statement cancelled by a recovery
 * conflict) is run again on the primary, so a replica failing between two polls costs a retry, not an error.
 * Only reads are ever sent here (ReadReplicas.readDb), so running one twice is harmless.
 */
class ReplicaPool extends pg.Pool {
  fallback: Db | null = null;
  onFailure: () => void = () => {};
  override query(...args: any[]): any {
    const run = (pool: pg.Pool) => (poolQuery as (...a: any[]) => any).apply(pool, args);
    if (typeof args.at(-1) === 'function' || !this.fallback) return run(this);
    return (run(this) as Promise<unknown>).catch((err: unknown) => {
      const code = (err as { code?: string }).code;
      if (!unavailableDependency(err) && code !== '40001') throw err;
      this.onFailure();
      return run(this.fallback!);
    });
  }
}

interface Replica {
  url: string;
  pool: ReplicaPool;
  /** How far it has replayed, as last polled; null while it does not answer. */
  replayed: bigint | null;
  /** Whether it is within the lag bound and answering (reads may go to it). */
  usable: boolean;
}

export interface ReadReplicaOptions {
  /** Connections per replica pool. */
  poolSize: number;
  redis: RedisClient;
  redisPrefix: string;
  /** A replica further behind than this is not read from (ms). */
  maxLagMs?: number;
  /** How often each replica's replay position is asked (ms). */
  pollMs?: number;
}

/**
 * Reads that may be slightly behind go to a streaming replica (DATABASE_REPLICA_URL). A viewer who has just written
 * reads their own writes: after each of their writing requests, the primary's WAL position is kept in Redis under
 * their account for a short while, and their reads go to the primary until a replica has replayed past it. Replay
 * positions are polled in the background (one query per replica per `pollMs`), never per request.
 */
export class ReadReplicas {
  readonly replicas: Replica[];
  private readonly primary: Db;
  private readonly redis: RedisClient;
  private readonly prefix: string;
  private readonly maxLagMs: number;
  private readonly pollMs: number;
  /** The primary's WAL position over the last `maxLagMs`, oldest first: a replica behind the oldest is too far behind. */
  private primaryLsns: { at: number; lsn: bigint }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private next = 0;
  /** Until then every read goes to the primary: the viewers' write positions kept in Redis may have been lost. */
  private primaryOnlyUntil = 0;

  constructor(primary: Db, urls: string[], options: ReadReplicaOptions) {
    this.primary = primary;
    this.redis = options.redis;
    this.prefix = options.redisPrefix;
    this.maxLagMs = options.maxLagMs ?? 10_000;
    this.pollMs = options.pollMs ?? 100;
    this.replicas = urls.map((url) => {
      // A replica that does not answer quickly is skipped rather than waited for: the primary can answer instead.
      const pool = new ReplicaPool({ connectionString: url, max: options.poolSize, connectionTimeoutMillis: 1000, query_timeout: 2000 } as pg.PoolConfig);
      pool.on('error', () => {});
      const replica: Replica = { url, pool, replayed: null, usable: false };
      pool.fallback = primary;
      pool.onFailure = () => (replica.usable = false);
      return replica;
    });
  }

  /** Polls until `close`; resolves after the first poll, so reads use a replica from the first request on. */
  async start(): Promise<void> {
    await this.poll();
    const tick = () => {
      this.polling = this.poll().finally(() => {
        this.polling = null;
        if (this.timer) this.timer = setTimeout(tick, this.pollMs).unref();
      });
    };
    this.timer = setTimeout(tick, this.pollMs).unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.polling;
    await Promise.all(this.replicas.map((r) => r.pool.end()));
  }

  private async poll(): Promise<void> {
    const now = Date.now();
    try {
      const { rows } = await this.primary.query<{ lsn: string }>({ text: 'SELECT pg_current_wal_lsn()::text AS lsn', query_timeout: 1000 } as pg.QueryConfig);
      this.primaryLsns.push({ at: now, lsn: parseLsn(rows[0]!.lsn) });
    } catch {
      // The primary away: the replicas' state is kept as it was; reads to the primary fail on their own.
    }
    while (this.primaryLsns.length > 1 && this.primaryLsns[1]!.at <= now - this.maxLagMs) this.primaryLsns.shift();
    const oldest = this.primaryLsns[0];
    await Promise.all(this.replicas.map(async (replica) => {
      try {
        // Asked of the replica itself, never falling back to the primary.
        const { rows } = (await poolQuery.call(replica.pool, { text: 'SELECT pg_last_wal_replay_lsn()::text AS lsn', query_timeout: 1000 } as pg.QueryConfig)) as pg.QueryResult<{ lsn: string | null }>;
        // null: not a standby (or not replaying): nothing says how current it is.
        replica.replayed = rows[0]?.lsn ? parseLsn(rows[0].lsn) : null;
      } catch {
        replica.replayed = null;
      }
      // Behind what the primary had `maxLagMs` ago (when that long has been watched): too far behind.
      const tooFar = oldest !== undefined && oldest.at <= now - this.maxLagMs && replica.replayed !== null && replica.replayed < oldest.lsn;
      replica.usable = replica.replayed !== null && !tooFar;
    }));
  }

  private key(viewerId: string): string {
    return `${this.prefix}replica:written:${viewerId}`;
  }

  /**
   * The pool a viewer's reads that may be slightly behind should use: a replica that has replayed the viewer's last
   * write, else the primary. `viewerId` null: an anonymous reader, who has written nothing.
   */
  async readDb(viewerId: string | null | undefined): Promise<Db> {
    const candidates = this.replicas.filter((r) => r.usable);
    if (candidates.length === 0 || Date.now() < this.primaryOnlyUntil) return this.primary;
    let written: bigint | null = null;
    if (viewerId) {
      try {
        const lsn = await this.redis.get(this.key(viewerId));
        if (lsn) written = parseLsn(lsn);
      } catch {
        return this.primary;
      }
    }
    const ready = written === null ? candidates : candidates.filter((r) => r.replayed !== null && r.replayed >= written);
    if (ready.length === 0) return this.primary;
    this.next = (this.next + 1) % ready.length;
    return ready[this.next]!.pool;
  }

  /**
   * A Redis master changed (a failover): positions it acknowledged last may be missing on its replica, so a viewer
   * could be sent to a replica behind their own write. Every read goes to the primary for as long as a remembered
   * position lives; past that, every usable replica has replayed anything written before.
   */
  forgetWritePositions(): void {
    this.primaryOnlyUntil = Date.now() + this.maxLagMs + 5000;
  }

  /**
   * Called once a viewer's writing request has committed its changes: their reads go to the primary until a
   * replica has replayed this far. Kept a little longer than the lag bound: past it, every usable replica has.
   */
  async rememberWrite(viewerId: string): Promise<void> {
    const { rows } = await this.primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    await runScript(this.redis, REMEMBER_LSN, [this.key(viewerId)], [rows[0]!.lsn, this.maxLagMs + 5000]);
  }
}
