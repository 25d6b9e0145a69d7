import { Redis } from 'ioredis';
import type { StreamEvents, StreamMessage } from '../../services/stream-events.ts';
import { reconnectSoon } from '../../storage/redis.ts';
import { DependencyUnavailable } from '../../storage/dependencies.ts';

export type StreamListener = (message: StreamMessage) => void;

/**
 * This process's side of the live events: one Redis connection subscribed to exactly the channels its sockets
 * listen to (subscribed on the first listener, unsubscribed after the last), each message handed to every listener
 * of its channel in the same turn.
 */
export class StreamBus {
  private readonly listeners = new Map<string, Set<StreamListener>>();
  private readonly events: StreamEvents;
  private readonly redisUrl: string;
  private connection: Redis | null = null;
  /** Channels whose SUBSCRIBE has not been answered yet. */
  private readonly subscribing = new Map<string, Promise<void>>();
  private last: { text: string; message: StreamMessage } | undefined;

  constructor(redisUrl: string, events: StreamEvents) {
    this.redisUrl = redisUrl;
    this.events = events;
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
    const set = this.listeners.get(channel);
    if (!set) return;
    // One event comes on many channels in a row (a post, on each follower's home): its text is parsed once.
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
    for (const listener of set) listener(message);
  }

  async listen(channel: string, listener: StreamListener): Promise<void> {
    const name = this.events.channelName(channel);
    let set = this.listeners.get(name);
    if (!set) {
      set = new Set();
      this.listeners.set(name, set);
      const subscribing = this.connectedWithin(2000).then(() => this.subscriber().subscribe(name)).then(() => undefined);
      this.subscribing.set(name, subscribing);
      void subscribing.then(() => this.subscribing.delete(name), () => {
        // Not subscribed: the channel is forgotten, so the next listener tries again rather than waiting on nothing.
        this.subscribing.delete(name);
        if (this.listeners.get(name) === set) this.listeners.delete(name);
      });
    }
    set.add(listener);
    try {
      await this.subscribing.get(name);
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
    if (set.size === 0) {
      this.listeners.delete(name);
      void this.connection?.unsubscribe(name).catch(() => {});
    }
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
  }
}
