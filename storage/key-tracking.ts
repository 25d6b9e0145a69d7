import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './redis.ts';
import { isCluster } from './redis-keys.ts';

/** What a caller holds while it reads keys it may cache: see KeyTracking.begin. */
export interface TrackingTicket {
  readonly epoch: number;
  readonly seq: number;
  readonly active: boolean;
}

const INVALIDATION_CHANNEL = '__redis__:invalidate';

/** One node's side of tracking: the reader's connection to it and the listener its invalidations go to. */
interface TrackedNode {
  readonly connection: Redis;
  readonly listener: Redis;
  listenerId: string | null;
  /** The connection's tracking points at `listenerId`. */
  tracking: boolean;
  /** Gone from the reader's pool (cluster): its events no longer count. */
  removed: boolean;
}

/**
 * Redis server-assisted client-side caching (CLIENT TRACKING, redirect mode, as RESP2 clients use it). Redis
 * remembers every key read through `reader` and, when one of them changes (a write from any process, an expiry,
 * an eviction, a flush), sends its name to `listener`. Callers keep what they rendered from such reads in memory
 * and drop it when told.
 *
 * - `sync()` makes serving from memory strict: it resolves once a PING sent after the call is answered on the
 *   listener. Redis queues a key's invalidation to the listener while it executes the write, before the writer
 *   gets its reply, so every write that had completed when `sync()` was called has been applied to the caller's
 *   memory by then. One PING serves every caller that came while the previous one was out.
 * - `begin()`/`unchanged()`: a value read from `reader` may be invalidated before the caller has stored what it
 *   made of it; the ticket tells the caller whether any of the keys it read was invalidated meanwhile.
 * - Whenever either connection drops, invalidations may have been missed: everything is invalidated, and nothing
 *   is trusted until tracking is on again.
 *
 * On a Redis Cluster, `reader` is a Cluster and REDIRECT must name a client on the same node: each node connection
 * of the reader gets a listener of its own to that node (made when ioredis adds the node, `+node`, dropped with it).
 * Tracking is also turned on on replicas, so a promoted replica is ready. `active` asks every master, `sync()` PINGs
 * every master's listener, and any node's connection or listener dropping, a node coming or going, or the masters
 * changing invalidates everything. ioredis sends the commands queued for a new node connection before its 'ready'
 * event, so before our TRACKING: the epoch, bumped when a node comes and when its tracking is on, keeps a ticket
 * begun before that from being trusted.
 */
export class KeyTracking {
  /** Reads through this connection (a Cluster on a cluster) are tracked. */
  readonly reader: RedisClient;
  private readonly nodes = new Map<Redis, TrackedNode>();
  private readonly listenerFor: ((node: Redis) => Redis) | null;
  /** The one node of a single Redis (looked at on every `begin`, kept at hand). */
  private readonly single: TrackedNode | null = null;
  /** The reader's masters when last looked at (cluster): a change means reads may now go elsewhere. */
  private masterSet = new Set<Redis>();
  private epoch = 0;
  private seq = 0;
  /** Recently invalidated keys and the seq of their invalidation, kept while a ticket may ask about them. */
  private readonly invalidatedAt = new Map<string, number>();
  /** Open tickets by their seq (first key is the oldest: seqs only grow). */
  private readonly open = new Map<number, number>();
  private readonly listeners: ((keys: string[] | null) => void)[] = [];
  /** The PING out, as the function that settles it; callers waiting for the next one. */
  private pinging: ((ok: boolean) => void) | null = null;
  /** A PING is to go out at the end of this turn of the event loop (pingSoon). */
  private pingScheduled = false;
  private waiting: ((ok: boolean) => void)[] = [];
  private readonly syncTimeoutMs: number;
  private closed = false;

  /**
   * `reader` and `listener` are two connections of their own, not yet connected (lazyConnect). On a cluster, `reader`
   * is a Cluster of its own (lazyConnect) and `listener` makes a listener (lazyConnect) to the node of a connection.
   */
  constructor(reader: Redis, listener: Redis, options?: { syncTimeoutMs?: number });
  constructor(reader: Cluster, listener: (node: Redis) => Redis, options?: { syncTimeoutMs?: number });
  constructor(reader: RedisClient, listener: Redis | ((node: Redis) => Redis), options: { syncTimeoutMs?: number } = {}) {
    this.reader = reader;
    this.syncTimeoutMs = options.syncTimeoutMs ?? 2000;
    if (isCluster(reader)) {
      if (typeof listener !== 'function') throw new TypeError('a cluster reader needs a listener per node');
      this.listenerFor = listener;
      // ioredis replaces a node's connection rather than reconnecting it: +node/-node are the node's life.
      reader.on('+node', (connection: Redis) => this.addNode(connection));
      reader.on('-node', (connection: Redis) => this.removeNode(connection));
      reader.on('refresh', () => this.checkMasters());
    } else {
      if (typeof listener === 'function') throw new TypeError('a single Redis reader needs one listener');
      this.listenerFor = null;
      this.single = { connection: reader, listener, listenerId: null, tracking: false, removed: false };
      this.watch(this.single);
    }
  }

  /**
   * Connects both connections and waits (up to 2 s) for tracking to be on. Without it (a Redis older than 6, a
   * proxy that refuses CLIENT) nothing is trusted from memory and every read asks Redis: slower, still correct.
   */
  async start(): Promise<boolean> {
    // On a cluster the listeners connect as their nodes are added.
    await Promise.all([this.reader.connect(), ...[...this.nodes.values()].map((n) => n.listener.connect())]);
    for (let i = 0; i < 100 && !this.active; i++) await new Promise((r) => setTimeout(r, 20));
    return this.active;
  }

  get active(): boolean {
    if (this.closed) return false;
    if (this.single) return this.single.listenerId !== null && this.single.tracking;
    const masters = this.masters();
    return masters.length > 0 && masters.every((c) => {
      const node = this.nodes.get(c);
      return node !== undefined && node.listenerId !== null && node.tracking;
    });
  }

  onInvalidate(fn: (keys: string[] | null) => void): void {
    this.listeners.push(fn);
  }

  /** Call before reading keys whose values will be cached; always pair with `end`. */
  begin(): TrackingTicket {
    const ticket = { epoch: this.epoch, seq: this.seq, active: this.active };
    this.open.set(ticket.seq, (this.open.get(ticket.seq) ?? 0) + 1);
    return ticket;
  }

  /** True when tracking was on throughout and none of these keys (all read since `begin`) was invalidated since. */
  unchanged(ticket: TrackingTicket, keys: string[]): boolean {
    if (!ticket.active || ticket.epoch !== this.epoch || !this.active) return false;
    return keys.every((k) => (this.invalidatedAt.get(k) ?? -1) <= ticket.seq);
  }

  end(ticket: TrackingTicket): void {
    const n = (this.open.get(ticket.seq) ?? 1) - 1;
    if (n > 0) this.open.set(ticket.seq, n);
    else this.open.delete(ticket.seq);
    this.forgetOldInvalidations();
  }

  /**
   * Resolves true once every invalidation for writes completed before this call has been applied, false when that
   * cannot be known (tracking is off, a listener is down or slow); the caller then reads Redis instead.
   */
  sync(): Promise<boolean> {
    if (!this.active) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.pinging) this.pingSoon();
    });
  }

  /**
   * The next PING goes out once the event loop has handled what it has in hand (setImmediate): a busy web process
   * reads many requests in one turn, and they all wait for that one PING instead of each sending its own (a PING
   * is a write, and its answer a read, on a socket of its own; under load that was as many PINGs as requests).
   */
  private pingSoon(): void {
    if (this.pingScheduled) return;
    this.pingScheduled = true;
    setImmediate(() => {
      this.pingScheduled = false;
      if (!this.pinging && this.waiting.length > 0) this.ping();
    });
  }

  /**
   * One PING at a time: callers that come while one is out wait for the next, which is sent after their call (a
   * PING sent before it may have reached Redis before a write their request already knows of). On a cluster, one
   * PING to each master's listener: a write's invalidation is queued by the node that ran it.
   */
  private ping(): void {
    const group = this.waiting;
    this.waiting = [];
    const epoch = this.epoch;
    const done = (ok: boolean) => {
      if (this.pinging !== done) return;
      clearTimeout(timer);
      this.pinging = null;
      for (const resolve of group) resolve(ok && this.active && this.epoch === epoch);
      if (this.waiting.length > 0) this.pingSoon();
    };
    this.pinging = done;
    const timer = setTimeout(() => done(false), this.syncTimeoutMs);
    const listeners = this.masters().map((c) => this.nodes.get(c)?.listener);
    if (listeners.some((l) => l === undefined)) return done(false);
    Promise.all(listeners.map((l) => l!.ping())).then(() => done(true), () => done(false));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.invalidate(null);
    this.reader.disconnect();
    for (const node of this.nodes.values()) node.listener.disconnect();
  }

  /** The connections reads go to: the reader's masters (reads never go to replicas), or the one Redis. */
  private masters(): Redis[] {
    if (!isCluster(this.reader)) return [this.reader];
    return this.reader.status === 'ready' ? this.reader.nodes('master') : [];
  }

  private invalidate(keys: string[] | null): void {
    this.seq++;
    if (keys === null) {
      this.epoch++;
    } else if (this.open.size > 0) {
      for (const k of keys) this.invalidatedAt.set(k, this.seq);
    }
    for (const fn of this.listeners) fn(keys);
  }

  private forgetOldInvalidations(): void {
    if (this.open.size === 0) {
      this.invalidatedAt.clear();
      return;
    }
    if (this.invalidatedAt.size < 10_000) return;
    const oldest = this.open.keys().next().value!;
    for (const [k, seq] of this.invalidatedAt) if (seq < oldest) this.invalidatedAt.delete(k);
  }

  private watch(node: TrackedNode): void {
    const { connection, listener } = node;
    this.nodes.set(connection, node);
    listener.on('messageBuffer', (channel: Buffer, message: Buffer[] | Buffer | null) => {
      if (node.removed || channel.toString() !== INVALIDATION_CHANNEL) return;
      // A null message means every key (FLUSHDB, FLUSHALL, or the tracking table was reset).
      if (message === null || !Array.isArray(message)) this.invalidate(null);
      else this.invalidate(message.map((k) => k.toString()));
    });
    listener.on('ready', () => void this.listen(node));
    connection.on('ready', () => void this.track(node));
    listener.on('close', () => this.lost(node, true));
    connection.on('close', () => this.lost(node, false));
  }

  /**
   * A new node connection of the reader (cluster). Commands may already be queued on it and go out before its
   * TRACKING: nothing begun before is trusted (epoch), nor is anything until its tracking is on (`active`).
   */
  private addNode(connection: Redis): void {
    const listener = this.listenerFor!(connection);
    this.watch({ connection, listener, listenerId: null, tracking: false, removed: false });
    this.invalidate(null);
    if (this.closed) listener.disconnect();
    else listener.connect().catch(() => {}); // it reconnects by itself while its node is in the pool
  }

  private removeNode(connection: Redis): void {
    const node = this.nodes.get(connection);
    if (!node) return;
    node.removed = true;
    node.tracking = false;
    this.nodes.delete(connection);
    node.listener.disconnect();
    this.invalidate(null);
  }

  /**
   * After a slots refresh (cluster): if the masters changed without a connection dropping (a replica promoted, a
   * master demoted), keys read from a former master may now be written elsewhere, and no PING there would cover them.
   */
  private checkMasters(): void {
    const masters = new Set((this.reader as Cluster).nodes('master'));
    const same = masters.size === this.masterSet.size && [...masters].every((m) => this.masterSet.has(m));
    this.masterSet = masters;
    if (!same) this.invalidate(null);
  }

  /** The listener (re)connected: learn its id, subscribe, then point the node connection's tracking at it. */
  private async listen(node: TrackedNode): Promise<void> {
    try {
      const id = String(await node.listener.client('ID'));
      await node.listener.subscribe(INVALIDATION_CHANNEL);
      if (node.removed || node.listener.status !== 'ready') return;
      node.listenerId = id;
      await this.track(node);
    } catch {
      // The connection dropped meanwhile; 'ready' comes again after it reconnects.
    }
  }

  private async track(node: TrackedNode): Promise<void> {
    const id = node.listenerId;
    if (id === null || node.removed || node.connection.status !== 'ready') return;
    try {
      await node.connection.client('TRACKING', 'ON', 'REDIRECT', id);
      // Still the same listener: reads sent from now on are tracked for it.
      if (node.listenerId === id && !node.removed && node.connection.status === 'ready') {
        this.epoch++;
        node.tracking = true;
      }
    } catch {
      // As above: the next 'ready' tries again.
    }
  }

  private lost(node: TrackedNode, listener: boolean): void {
    if (node.removed) return; // already counted when it left the pool
    if (listener) node.listenerId = null;
    // The connection's tracking points at the listener's old id either way: it is on again only once track() has
    // pointed it at the new one (until then, reads are not reported to anyone).
    node.tracking = false;
    this.invalidate(null);
  }
}
