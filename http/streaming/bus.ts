import { Redis } from 'ioredis';
import { HOME_SHARD_PREFIX, homeShardOf, streamChannels, type HomesMessage, type StreamEvents, type StreamMessage } from '../../services/stream-events.ts';
import { reconnectSoon } from '../../storage/redis.ts';
import { DependencyUnavailable } from '../../storage/dependencies.ts';

export type StreamListener = (message: StreamMessage) => void;

/** A Redis channel this process is subscribed to: how many listened channels need it, and its SUBSCRIBE. */
interface Subscription {
  refs: number;
  ready: Promise<void>;
}

/** One need of a subscription, as a listened channel holds it. */
interface Held {
  name: string;
  subscription: Subscription;
}

/**
 * This process's side of the live events: one Redis connection subscribed to exactly the channels its sockets
 * listen to (subscribed on the first listener, unsubscribed after the last), each message handed to every listener
 * of its channel in the same turn. A home channel's events also come on its shard (services/stream-events.ts): the
 * shard is subscribed to while any of its home channels is listened to here, and its messages are handed to the
 * listeners of the homes they name.
 */
export class StreamBus {
  private readonly listeners = new Map<string, Set<StreamListener>>();
  private readonly events: StreamEvents;
  private readonly redisUrl: string;
  private connection: Redis | null = null;
  private readonly subscriptions = new Map<string, Subscription>();
  /** The Redis channels each listened channel holds (its own, and its home shard's), and whose home it is if one. */
  private readonly holding = new WeakMap<Set<StreamListener>, { held: Held[]; home: string | null }>();
  /**
   * The listeners of home channels by account id, for a shard's messages: each names up to a thousand homes, and
   * building each home's channel name to look it up would cost more than the rest of the hand-over.
   */
  private readonly homeListeners = new Map<string, Set<StreamListener>>();
  /** What the full names of home shard channels begin with. */
  private readonly shardPrefix: string;
  private last: { text: string; message: StreamMessage } | undefined;

  constructor(redisUrl: string, events: StreamEvents) {
    this.redisUrl = redisUrl;
    this.events = events;
    this.shardPrefix = events.channelName(HOME_SHARD_PREFIX);
  }

  private subscriber(): Redis {
    if (!this.connection) {
      // ioredis subscribes again by itself after a reconnection (autoResubscribe). Its connect-time INFO and CLIENT
      // SETINFO are not subscriber commands: sent after a SUBSCRIBE queued while connecting, they fail it
      // (ioredis#2037), so neither is sent, and the connection is opened before the first socket (start()).
      this.connection = new Redis(this.redisUrl, { connectionName: 'streaming', maxRetriesPerRequest: null, enableReadyCheck: false, disableClientInfo: true, lazyConnect: true, retryStrategy: reconnectSoon });
      this.connection.on('error', () => {});
      this.connection.on('message', (channel: string, text: string) => this.dispatch(channel, text));
    }
    return this.connection;
  }

  /** Opens the subscriber connection (before sockets are taken, so that no subscription waits on it). */
  async start(): Promise<void> {
    await this.subscriber().connect().catch(() => {}); // retried by ioredis; subscriptions wait for it
  }

  private dispatch(channel: string, text: string): void {
    const shard = channel.startsWith(this.shardPrefix);
    const set = shard ? undefined : this.listeners.get(channel);
    if (!shard && !set) return;
    // One event may come on many channels in a row (a post, on each follower's home): its text is parsed once.
    // Listeners only read messages.
    let message = this.last?.text === text ? this.last.message : undefined;
    if (!message) {
      try {
        message = JSON.parse(text) as StreamMessage;
      } catch {
        return;
      }
      this.last = { text, message };
    }
    if (set) {
      for (const listener of set) listener(message);
      return;
    }
    const homes = (message as Partial<HomesMessage>).homes;
    if (!Array.isArray(homes)) return;
    for (const id of homes) {
      const listeners = this.homeListeners.get(String(id));
      if (listeners) for (const listener of listeners) listener(message);
    }
  }

  async listen(channel: string, listener: StreamListener): Promise<void> {
    const name = this.events.channelName(channel);
    let set = this.listeners.get(name);
    if (!set) {
      const created = new Set<StreamListener>();
      set = created;
      this.listeners.set(name, created);
      const home = streamChannels.homeOfChannel(channel);
      const shardName = home === null ? null : this.events.channelName(streamChannels.homeShard(homeShardOf(home)));
      const held = [this.acquire(name), ...(shardName ? [this.acquire(shardName)] : [])];
      this.holding.set(created, { held, home });
      if (home !== null) this.homeListeners.set(home, created);
      void Promise.all(held.map((h) => h.subscription.ready)).catch(() => {
        // Not subscribed: the channel is forgotten, so the next listener tries again rather than waiting on nothing.
        if (this.listeners.get(name) === created) this.dropSet(name, created);
      });
    }
    set.add(listener);
    try {
      await Promise.all((this.holding.get(set)?.held ?? []).map((h) => h.subscription.ready));
    } catch (err) {
      set.delete(listener);
      throw err;
    }
  }

  unlisten(channel: string, listener: StreamListener): void {
    const name = this.events.channelName(channel);
    const set = this.listeners.get(name);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.dropSet(name, set);
  }

  private dropSet(name: string, set: Set<StreamListener>): void {
    this.listeners.delete(name);
    const holding = this.holding.get(set);
    for (const held of holding?.held ?? []) this.release(held);
    if (holding?.home != null && this.homeListeners.get(holding.home) === set) this.homeListeners.delete(holding.home);
    this.holding.delete(set);
  }

  /** Subscribes to a Redis channel, or counts one more need of it; a failed SUBSCRIBE is forgotten. */
  private acquire(name: string): Held {
    const held = this.subscriptions.get(name);
    if (held) {
      held.refs += 1;
      return { name, subscription: held };
    }
    const ready = this.connectedWithin(2000).then(() => this.subscriber().subscribe(name)).then(() => undefined);
    const subscription: Subscription = { refs: 1, ready };
    ready.catch(() => {
      if (this.subscriptions.get(name) === subscription) this.subscriptions.delete(name);
    });
    this.subscriptions.set(name, subscription);
    return { name, subscription };
  }

  private release({ name, subscription }: Held): void {
    // A subscription that failed (and was forgotten, perhaps made again since) is not this one to count down.
    if (this.subscriptions.get(name) !== subscription || --subscription.refs > 0) return;
    this.subscriptions.delete(name);
    void this.connection?.unsubscribe(name).catch(() => {});
  }

  /**
   * A new subscription waits for the connection 2 s at most (Redis away): the stream asked for is refused with 503
   * rather than left waiting. Subscriptions already made wait, and are made again by ioredis once it is back.
   */
  private connectedWithin(ms: number): Promise<void> {
    const connection = this.subscriber();
    if (connection.status === 'ready') return Promise.resolve();
    return new Promise((resolve, reject) => {
      const ready = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        connection.off('ready', ready);
        reject(new DependencyUnavailable('redis'));
      }, ms);
      connection.once('ready', ready);
    });
  }

  /** Whether the subscriber connection is up (it subscribes again by itself after a reconnection). */
  get connected(): boolean {
    return this.connection?.status === 'ready' || this.connection?.status === 'connect';
  }

  /** How many channels this process listens to (for tests and operators). */
  get channelCount(): number {
    return this.listeners.size;
  }

  close(): void {
    this.connection?.disconnect();
    this.connection = null;
    this.listeners.clear();
    this.homeListeners.clear();
    this.subscriptions.clear();
  }
}
