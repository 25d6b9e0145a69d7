import type { Cluster, Redis } from 'ioredis';
import { HOME_SHARD_PREFIX, homeShardOf, streamChannels, type HomesMessage, type StreamEvents, type StreamMessage } from '../../services/stream-events.ts';
import { onCluster, reconnectSoon, redisConnection, type RedisClient, type RedisTarget } from '../../storage/redis.ts';
import { isCluster } from '../../storage/redis-keys.ts';
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
 *
 * On a Redis Cluster the subscriber is a Cluster client: with sharded pub/sub (what StreamEvents publishes with), one
 * connection per master, each channel SSUBSCRIBEd on its own shard's master (one channel per command: channels of
 * different slots cannot share one), ioredis moving them to a replica that takes over; with plain pub/sub, one
 * connection to any node.
 */
export class StreamBus {
  private readonly listeners = new Map<string, Set<StreamListener>>();
  private readonly events: StreamEvents;
  private readonly target: string | RedisTarget;
  private readonly cluster: boolean;
  /** SSUBSCRIBE rather than SUBSCRIBE: the publisher's SPUBLISH is heard by nothing else. */
  private readonly sharded: boolean;
  private connection: RedisClient | null = null;
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

  constructor(target: string | RedisTarget, events: StreamEvents) {
    this.target = target;
    this.cluster = onCluster(target);
    this.sharded = this.cluster && events.sharded;
    this.events = events;
    this.shardPrefix = events.channelName(HOME_SHARD_PREFIX);
  }

  private subscriber(): RedisClient {
    if (!this.connection) {
      // ioredis subscribes again by itself after a reconnection (autoResubscribe; on a cluster, after a node is
      // replaced). Its connect-time INFO and CLIENT SETINFO are not subscriber commands: sent after a SUBSCRIBE queued
      // while connecting, they fail it (ioredis#2037), so neither is sent, and the connection is opened before the
      // first socket (start()).
      this.connection = redisConnection(
        this.target,
        { connectionName: 'streaming', maxRetriesPerRequest: null, enableReadyCheck: false, disableClientInfo: true, lazyConnect: true, retryStrategy: reconnectSoon },
        { shardedSubscribers: this.sharded },
      );
      this.connection.on(this.sharded ? 'smessage' : 'message', (channel: string, text: string) => this.dispatch(channel, text));
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
    const subscription: Subscription = { refs: 1, ready: Promise.resolve() };
    subscription.ready = this.cluster ? this.subscribeOnCluster(name, subscription) : this.connectedWithin(2000).then(() => this.subscriber().subscribe(name)).then(() => undefined);
    subscription.ready.catch(() => {
      if (this.subscriptions.get(name) === subscription) this.subscriptions.delete(name);
    });
    this.subscriptions.set(name, subscription);
    return { name, subscription };
  }

  /**
   * On a cluster the client is ready while one master is down, and a (S)SUBSCRIBE for that master's slots waits on
   * ioredis's retries: the whole subscription is bounded by the same 2 s, and refused with 503 past it (or when it
   * fails) rather than leaving the stream waiting. One that completes later, or failed after ioredis noted its
   * channel, is undone unless the channel is wanted again meanwhile.
   */
  private subscribeOnCluster(name: string, subscription: Subscription): Promise<void> {
    const deadline = Date.now() + 2000;
    const forget = () => {
      if (this.subscriptions.get(name) === subscription) this.subscriptions.delete(name);
    };
    return this.connectedWithin(2000).then(() => new Promise<void>((resolve, reject) => {
      const connection = this.subscriber();
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        forget();
        reject(new DependencyUnavailable('redis'));
      }, Math.max(0, deadline - Date.now()));
      (this.sharded ? connection.ssubscribe(name) : connection.subscribe(name)).then(() => {
        clearTimeout(timer);
        if (late && !this.subscriptions.has(name)) this.unsubscribe(name);
        resolve();
      }, (err: unknown) => {
        clearTimeout(timer);
        forget();
        if (!this.subscriptions.has(name)) this.unsubscribe(name);
        // However it failed (a refused connection, ioredis's "No subscriber for the cluster", redirections given up),
        // the shard's Redis is away: 503.
        reject(err instanceof DependencyUnavailable ? err : new DependencyUnavailable('redis', undefined, { cause: err }));
      });
    }));
  }

  private unsubscribe(name: string): void {
    const connection = this.connection;
    if (!connection) return;
    void (this.sharded ? connection.sunsubscribe(name) : connection.unsubscribe(name)).catch(() => {});
  }

  private release({ name, subscription }: Held): void {
    // A subscription that failed (and was forgotten, perhaps made again since) is not this one to count down.
    if (this.subscriptions.get(name) !== subscription || --subscription.refs > 0) return;
    this.subscriptions.delete(name);
    this.unsubscribe(name);
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

  /**
   * Whether the subscriber connection is up (it subscribes again by itself after a reconnection). On a cluster:
   * the client is ready and so are its subscriber connections (one per master when sharded), which ioredis keeps
   * apart from the client's own state: a master that died leaves the client ready but its shard's channels unheard.
   */
  get connected(): boolean {
    const connection = this.connection;
    if (!connection) return false;
    if (!isCluster(connection)) return connection.status === 'ready' || connection.status === 'connect';
    return connection.status === 'ready' && subscribersHealthy(connection, this.sharded);
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

/**
 * ioredis (5.11) keeps a Cluster's subscriber connections in private fields: the plain subscriber (one connection,
 * made on first use) and the sharded subscriber group (one per master). Read defensively: if a later ioredis moves
 * them, the cluster's own state is all that is judged.
 */
interface ClusterInternals {
  subscriber?: { getInstance?(): Redis | null };
  shardedSubscribers?: {
    shardedSubscribers?: Map<string, { isHealthy(): boolean; getInstance(): Redis | null }>;
    hasUnhealthySubscribers?(): boolean;
  };
}

function subscribersHealthy(cluster: Cluster, sharded: boolean): boolean {
  const internals = cluster as unknown as ClusterInternals;
  if (!sharded) {
    if (!internals.subscriber?.getInstance) return true;
    // 'wait': not connected yet, as nothing was subscribed yet.
    return ['ready', 'connect', 'wait'].includes(internals.subscriber.getInstance()?.status ?? 'none');
  }
  const group = internals.shardedSubscribers;
  if (!group?.shardedSubscribers || !group.hasUnhealthySubscribers) return true;
  if (group.hasUnhealthySubscribers()) return false;
  for (const sub of group.shardedSubscribers.values()) {
    if (!sub.isHealthy() || sub.getInstance()?.status !== 'ready') return false;
  }
  return true;
}
