import type { Redis } from 'ioredis';

/** What a caller holds while it reads keys it may cache: see KeyTracking.begin. */
export interface TrackingTicket {
  readonly epoch: number;
  readonly seq: number;
  readonly active: boolean;
}

const INVALIDATION_CHANNEL = '__redis__:invalidate';

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
 */
export class KeyTracking {
  /** Reads through this connection are tracked. */
  readonly reader: Redis;
  private readonly listener: Redis;
  private listenerId: string | null = null;
  private readerTracking = false;
  private epoch = 0;
  private seq = 0;
  /** Recently invalidated keys and the seq of their invalidation, kept while a ticket may ask about them. */
  private readonly invalidatedAt = new Map<string, number>();
  /** Open tickets by their seq (first key is the oldest: seqs only grow). */
  private readonly open = new Map<number, number>();
  private readonly listeners: ((keys: string[] | null) => void)[] = [];
  /** The PING out, as the function that settles it; callers waiting for the next one. */
  private pinging: ((ok: boolean) => void) | null = null;
  private waiting: ((ok: boolean) => void)[] = [];
  private readonly syncTimeoutMs: number;
  private closed = false;

  /** `reader` and `listener` are two connections of their own, not yet connected (lazyConnect). */
  constructor(reader: Redis, listener: Redis, options: { syncTimeoutMs?: number } = {}) {
    this.reader = reader;
    this.listener = listener;
    this.syncTimeoutMs = options.syncTimeoutMs ?? 2000;
    listener.on('messageBuffer', (channel: Buffer, message: Buffer[] | Buffer | null) => {
      if (channel.toString() !== INVALIDATION_CHANNEL) return;
      // A null message means every key (FLUSHDB, FLUSHALL, or the tracking table was reset).
      if (message === null || !Array.isArray(message)) this.invalidate(null);
      else this.invalidate(message.map((k) => k.toString()));
    });
    listener.on('ready', () => void this.listen());
    reader.on('ready', () => void this.track());
    for (const connection of [reader, listener]) {
      connection.on('close', () => this.lost(connection === listener));
    }
  }

  /**
   * Connects both connections and waits (up to 2 s) for tracking to be on. Without it (a Redis older than 6, a
   * proxy that refuses CLIENT) nothing is trusted from memory and every read asks Redis: slower, still correct.
   */
  async start(): Promise<boolean> {
    await Promise.all([this.reader.connect(), this.listener.connect()]);
    for (let i = 0; i < 100 && !this.active; i++) await new Promise((r) => setTimeout(r, 20));
    return this.active;
  }

  get active(): boolean {
    return this.listenerId !== null && this.readerTracking && !this.closed;
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
   * cannot be known (tracking is off, the listener is down or slow); the caller then reads Redis instead.
   */
  sync(): Promise<boolean> {
    if (!this.active) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.pinging) this.ping();
    });
  }

  /**
   * One PING at a time: callers that come while one is out wait for the next, which is sent after their call (a
   * PING sent before it may have reached Redis before a write their request already knows of).
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
      if (this.waiting.length > 0) this.ping();
    };
    this.pinging = done;
    const timer = setTimeout(() => done(false), this.syncTimeoutMs);
    this.listener.ping().then(() => done(true), () => done(false));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.invalidate(null);
    this.reader.disconnect();
    this.listener.disconnect();
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

  /** The listener (re)connected: learn its id, subscribe, then point the reader's tracking at it. */
  private async listen(): Promise<void> {
    try {
      const id = String(await this.listener.client('ID'));
      await this.listener.subscribe(INVALIDATION_CHANNEL);
      this.listenerId = id;
      await this.track();
    } catch {
      // The connection dropped meanwhile; 'ready' comes again after it reconnects.
    }
  }

  private async track(): Promise<void> {
    const id = this.listenerId;
    if (id === null || this.reader.status !== 'ready') return;
    try {
      await this.reader.client('TRACKING', 'ON', 'REDIRECT', id);
      // Still the same listener: reads sent from now on are tracked for it.
      if (this.listenerId === id && this.reader.status === 'ready') {
        this.epoch++;
        this.readerTracking = true;
      }
    } catch {
      // As above: the next 'ready' tries again.
    }
  }

  private lost(listener: boolean): void {
    if (listener) this.listenerId = null;
    // The reader's tracking points at the listener's old id either way: it is on again only once track() has
    // pointed it at the new one (until then, reads are not reported to anyone).
    this.readerTracking = false;
    this.invalidate(null);
  }
}
