import pg from 'pg';
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './redis.ts';
import { isCluster, nodeKeyOf } from './redis-keys.ts';

export type Dependency = 'postgres' | 'redis';
export const DEPENDENCIES: readonly Dependency[] = ['postgres', 'redis'];

/** Mastodon's answer when a backing service fails (Api::BaseController); clients show it and try again. */
export const UNAVAILABLE_MESSAGE = 'There was a temporary problem serving your request, please try again';
/** Seconds a client is asked to wait before trying again. */
export const RETRY_AFTER_S = 5;

/** Thrown where a request is refused because PostgreSQL or Redis is known to be away. */
export class DependencyUnavailable extends Error {
  readonly dependency: Dependency | null;
  constructor(dependency: Dependency | null, message = `${dependency ?? 'a dependency'} is unavailable`, options?: ErrorOptions) {
    super(message, options);
    this.dependency = dependency;
  }
}

const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
// node-pg's own messages for a connection that is gone, was never made in time, or stopped answering.
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client (has encountered a connection error|was closed) and is not queryable)/;
// SQLSTATE class 08 (connection exception), admin/crash shutdown, "starting up / shutting down", too many connections.
const PG_CODES = /^(08...|57P0[123]|53300)$/;
// ioredis: commands refused while disconnected (no offline queue), dropped with their connection, or unanswered.
/**
 * ioredis's own words for a Redis it cannot reach, and Redis's replies that mean "not now" rather than "wrong request":
 * LOADING (a restarted Redis reading its data), MASTERDOWN and READONLY (a replica during or after a failover), and a
 * cluster's CLUSTERDOWN, TRYAGAIN and ioredis's redirections given up during a failover (storage/REDIS-CLUSTER.md), and a
 * MOVED or ASK that reaches us: ioredis follows them, but not for a command of an auto-pipeline whose neighbours
 * went elsewhere, which is seen while a failover moves slots.
 */
const REDIS_MESSAGES = /^(Connection is closed\.?|Stream isn't writeable and enableOfflineQueue options is false|Command timed out|Reached the max retries per request limit|Too many Cluster redirections|Command aborted due to connection close|Cluster isn't ready|Failed to refresh slots cache|None of startup nodes is available|(LOADING|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|MOVED|ASK) )/;

/**
 * Which dependency an error says is unreachable, or null when the error is about the request itself. A bare
 * network error (a refused connection) is counted as unavailability even when it names neither: it is not the
 * client's fault either way.
 */
export function unavailableDependency(err: unknown): Dependency | 'network' | null {
  if (err instanceof DependencyUnavailable) return err.dependency ?? 'network';
  if (typeof err !== 'object' || err === null) return null;
  const e = err as { name?: unknown; code?: unknown; message?: unknown; severity?: unknown };
  const message = typeof e.message === 'string' ? e.message : '';
  if (e.name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(message)) return 'redis';
  if (PG_MESSAGES.test(message)) return 'postgres';
  if (typeof e.code === 'string') {
    if (e.severity !== undefined && PG_CODES.test(e.code)) return 'postgres';
    if (NET_CODES.has(e.code)) return 'network';
  }
  return null;
}

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DependencyOptions {
  databaseUrl: string;
  /** The connection requests use: Redis answers this process when it (and each of `alsoRedis`) is connected. */
  redis: RedisClient;
  /** Other connections requests use (the tracked reader): Redis is back only once every one is. */
  alsoRedis?: RedisClient[];
  log: Log;
  /** How long a probe may take before its dependency counts as gone. */
  timeoutMs?: number;
  /** Probing while all is well, and while something is down. */
  everyMs?: number;
  downEveryMs?: number;
  /**
   * Called when a dependency stops answering without closing its connections: in-flight work is cut off. For Redis,
   * `nodes` names the nodes (host:port) that left their PING unanswered: on a cluster only theirs are cut off.
   */
  onHang?: (name: Dependency, nodes?: string[]) => void;
}

/**
 * Whether PostgreSQL and Redis answer, as this process sees them. Redis's connection events and errors seen by
 * requests change the state at once; a probe (SELECT 1 on a connection of its own, PING) confirms it, every second
 * while all is well and twice a second while something is down. Each change is logged once.
 */
export class Dependencies {
  private readonly up: Record<Dependency, boolean> = { postgres: true, redis: true };
  private readonly downSince: Record<Dependency, number> = { postgres: 0, redis: 0 };
  private readonly probing: Partial<Record<Dependency, Promise<boolean>>> = {};
  private readonly listeners: ((name: Dependency, up: boolean) => void)[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly options: Required<Omit<DependencyOptions, 'onHang'>> & Pick<DependencyOptions, 'onHang'>;
  private readonly connections: RedisClient[];
  private probeClient: pg.Client | null = null;
  private readonly timeouts: Record<Dependency, number> = { postgres: 0, redis: 0 };
  private timer: NodeJS.Timeout | null = null;
  private lastFullProbe = 0;
  private stopped = false;
  /** On a cluster, the host:port of each node serving slots, per connection (learnt at each slots refresh). */
  private readonly owners = new WeakMap<Cluster, string[]>();

  constructor(options: DependencyOptions) {
    this.options = { timeoutMs: 1500, everyMs: 1000, downEveryMs: 500, alsoRedis: [], ...options };
    this.connections = [options.redis, ...this.options.alsoRedis];
    options.redis.on('end', () => this.idle());
    options.redis.on('ready', () => this.start());
    for (const connection of this.connections) {
      // A connection ready says nothing of the others: Redis is back once all are (at start-up the first one ready
      // would otherwise log Redis lost until the rest connect).
      connection.on('ready', () => {
        if (this.redisConnected()) this.set('redis', true);
      });
      // A connection lost (not one closed on purpose, which ends): ioredis reconnects by itself; meanwhile nothing
      // can be asked of it.
      connection.on('reconnecting', () => this.set('redis', false));
      // A cluster stays 'ready' while one of its nodes is gone: a node's connection lost counts as Redis lost (a
      // request may need that node's slots) until a probe finds every master answering again (after a failover).
      if (isCluster(connection)) {
        const learn = () => this.owners.set(connection, slotOwners(connection));
        connection.on('ready', learn);
        connection.on('-node', (node: Redis) => {
          // A replica's connection lost changes nothing requests need.
          if (!this.owners.get(connection)?.includes(nodeKeyOf(node))) return;
          this.set('redis', false);
          void this.probe('redis');
        });
        connection.on('refresh', () => {
          learn();
          void this.probe('redis');
        });
        if (connection.status === 'ready') learn();
      }
    }
  }

  /** Probing stops when the request connection is closed on purpose (the process is stopping) and resumes with it. */
  private idle(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // Closed once a probe using it is done (a /health asked right now still gets its answer).
    const client = this.probeClient;
    this.probeClient = null;
    void Promise.resolve(this.probing.postgres).finally(() => client?.end().catch(() => {}));
  }

  private redisConnected(): boolean {
    return this.connections.every((c) => c.status === 'ready' && (!isCluster(c) || this.ownersOf(c).every((node) => node?.status === 'ready')));
  }

  /**
   * The connections to the nodes that serve the cluster's slots (its masters, as of the last slots refresh), with
   * undefined for one the client has none to: ioredis drops a dead node's connection from its pool at once, so the
   * pool's own list of masters would leave a dead master out rather than show it down.
   */
  private ownersOf(c: Cluster): (Redis | undefined)[] {
    const nodes = c.nodes('all');
    return (this.owners.get(c) ?? []).map((key) => nodes.find((node) => nodeKeyOf(node) === key));
  }

  /** Starts probing. */
  start(): void {
    if (this.timer || this.stopped) return;
    const tick = () => {
      const now = Date.now();
      const full = now - this.lastFullProbe >= this.options.everyMs;
      if (full) this.lastFullProbe = now;
      for (const name of DEPENDENCIES) if (full || !this.up[name]) void this.probe(name);
    };
    this.timer = setInterval(tick, this.options.downEveryMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.idle();
    for (const wake of this.waiters) wake();
  }

  isUp(name: Dependency): boolean {
    return this.up[name] && (name !== 'redis' || this.redisConnected());
  }

  get allUp(): boolean {
    return DEPENDENCIES.every((d) => this.isUp(d));
  }

  /** The first dependency that is down, or null. */
  firstDown(names: readonly Dependency[] = DEPENDENCIES): Dependency | null {
    return names.find((d) => !this.isUp(d)) ?? null;
  }

  onChange(fn: (name: Dependency, up: boolean) => void): () => void {
    this.listeners.push(fn);
    return () => {
      const i = this.listeners.indexOf(fn);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** Resolves once the named dependencies are all up (true), or after `ms` (false). */
  async waitFor(names: readonly Dependency[], ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.firstDown(names) !== null) {
      const left = deadline - Date.now();
      if (left <= 0 || this.stopped) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 100));
        this.waiters.add(wake);
      });
    }
    return true;
  }

  /** Whether the error says a dependency is gone (and so was logged here, once, rather than by whoever met it). */
  explains(err: unknown): boolean {
    const which = unavailableDependency(err);
    // A bare network error is ours only while one of ours is known to be away (else it is another server's).
    return which === 'postgres' || which === 'redis' || (which === 'network' && !this.allUp);
  }

  /** A request met this error: if it says a dependency is gone, look now rather than at the next probe. */
  report(err: unknown): void {
    const which = unavailableDependency(err);
    if (which === 'redis' || which === 'postgres') void this.probe(which);
    else if (which === 'network') for (const name of DEPENDENCIES) void this.probe(name);
  }

  /** Probes both now (for /health); returns whether each answered. */
  async check(): Promise<Record<Dependency, boolean>> {
    // Probes of their own, begun now: one begun before the question may have been answered before a dependency went.
    const [postgres, redis] = await Promise.all([this.probe('postgres', true), this.probe('redis', true)]);
    return { postgres: postgres!, redis: redis! };
  }

  /** One probe per dependency at a time (unless `fresh`); callers that come meanwhile share its answer. */
  probe(name: Dependency, fresh = false): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    const running = this.probing[name];
    if (running && !fresh) return running;
    const attempt = (name === 'postgres' ? this.probePostgres() : this.probeRedis()).then(
      () => {
        this.timeouts[name] = 0;
        return true;
      },
      (err: unknown) => {
        // A dependency that keeps its connections open but does not answer would hold every request on them: they
        // are cut off once Redis leaves a PING 1.5 s unanswered, or PostgreSQL two SELECT 1 in a row (one slow query
        // on a busy database is not a hang, and cutting off PostgreSQL rolls back every transaction under way).
        this.timeouts[name] = err instanceof ProbeTimeout ? this.timeouts[name] + 1 : 0;
        if (this.timeouts[name] === (name === 'redis' ? 1 : 2)) this.options.onHang?.(name, err instanceof ProbeTimeout ? err.nodes : undefined);
        return false;
      },
    );
    const done = attempt.then((ok) => {
      if (this.probing[name] === done) delete this.probing[name];
      if (!this.stopped) this.set(name, ok && (name !== 'redis' || this.redisConnected()));
      return ok;
    });
    this.probing[name] = done;
    return done;
  }

  private async probePostgres(): Promise<void> {
    const timeoutMs = this.options.timeoutMs;
    let client = this.probeClient;
    try {
      if (!client) {
        // node-pg's own connect timeout comes later than ours, so that a connection a hung PostgreSQL accepts (its
        // kernel does) and never answers counts as a hang (ProbeTimeout), as an unanswered SELECT 1 does.
        client = new pg.Client({ connectionString: this.options.databaseUrl, connectionTimeoutMillis: timeoutMs + 1000, application_name: 'health probe' });
        client.on('error', () => {});
        this.probeClient = client;
        await withTimeout(client.connect(), timeoutMs);
      }
      await withTimeout(client.query('SELECT 1'), timeoutMs);
      // Two probes that both found no connection each made one: one is kept.
      if (this.probeClient !== client) void client.end().catch(() => {});
    } catch (err) {
      // A fresh connection next time: this one may be dead or stuck.
      if (this.probeClient === client) this.probeClient = null;
      void client?.end().catch(() => {});
      throw err;
    }
  }

  private async probeRedis(): Promise<void> {
    const { redis, timeoutMs } = this.options;
    if (!this.redisConnected()) throw new Error('a redis connection is not ready');
    if (!isCluster(redis)) return void (await withTimeout(redis.ping(), timeoutMs));
    // Every master of a cluster: one that is dead or hung holds up the requests that need its slots.
    const masters = this.ownersOf(redis);
    if (masters.some((node) => node === undefined || node.status !== 'ready')) {
      // ioredis learns of a promoted replica only when a command is redirected or its slots are refreshed: a process
      // refusing writes meanwhile sends none, so it asks (the 'refresh' that follows updates the owners).
      redis.refreshSlotsCache();
      throw new Error('a redis master is not connected');
    }
    const answers = await Promise.allSettled(masters.map((node) => withTimeout(node!.ping(), timeoutMs)));
    const hung = (masters as Redis[]).filter((_, i) => {
      const answer = answers[i]!;
      return answer.status === 'rejected' && answer.reason instanceof ProbeTimeout;
    });
    if (hung.length > 0) throw new ProbeTimeout(`no answer in ${timeoutMs} ms`, hung.map(nodeKeyOf));
    const failed = answers.find((a) => a.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  private set(name: Dependency, up: boolean): void {
    if (this.stopped || this.up[name] === up) return;
    this.up[name] = up;
    const { log } = this.options;
    if (up) {
      log.info({ dependency: name, downForMs: Date.now() - this.downSince[name] }, `${name} is back`);
    } else {
      this.downSince[name] = Date.now();
      log.error({ dependency: name }, `${name} is unavailable: requests that need it are answered 503 until it is back`);
    }
    for (const wake of [...this.waiters]) wake();
    for (const fn of this.listeners) {
      try {
        fn(name, up);
      } catch {
        // One listener's failure must not keep the others from hearing.
      }
    }
  }
}

class ProbeTimeout extends Error {
  /** On a cluster, the nodes (host:port) that did not answer. */
  readonly nodes: string[] | undefined;
  constructor(message: string, nodes?: string[]) {
    super(message);
    this.nodes = nodes;
  }
}

/**
 * `p`, or a ProbeTimeout after `ms`. When the timer fires, the answer may be waiting unread: this process's event loop
 * was busy past the deadline (a page validated, a large JSON parsed on a loaded machine) and timers run before the
 * loop reads its sockets. Cutting off a Redis that answered in time fails every command in flight, so the timeout
 * is told only after the loop has read what arrived (setImmediate runs after the poll phase).
 */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  let late: NodeJS.Immediate | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => (late = setImmediate(() => reject(new ProbeTimeout(`no answer in ${ms} ms`)))), ms);
      timer.unref();
    }),
  ]).finally(() => {
    clearTimeout(timer);
    if (late) clearImmediate(late);
  });
}

/** The distinct nodes (host:port) a cluster client routes slots to: its masters. */
function slotOwners(c: Cluster): string[] {
  const owners = new Set<string>();
  for (const slot of c.slots) if (slot?.[0]) owners.add(slot[0]);
  return [...owners];
}
