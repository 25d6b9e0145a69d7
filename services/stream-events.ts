import type { RedisClient } from '../storage/redis.ts';
import { isCluster } from '../storage/redis-keys.ts';

/**
 * What streaming sockets are told of, as it travels between processes over Redis pub/sub (Mastodon's channel
 * names, under our prefix). Messages carry ids: each is rendered where its sockets are, for each receiver (what they
 * may see, their favourites and boosts), once per distinct view; a new status (not a direct one) also carries the
 * view most of its receivers share (`view`).
 */
export type StreamMessage =
  /**
   * `accountId`, when the publisher has it: the status's author (the receiving process reads its version sooner).
   * `view`, from the fan-out job, on messages to those who may see the status: the status as an account that is not
   * its author and has not acted on it sees it (Status JSON), which is what most receivers are sent: a streaming
   * process sends it to them without reading anything (as Mastodon's messages carry the rendered status), and
   * renders the status itself only for the others (its author, those with filters, blocks or mutes, those who
   * favourited or boosted it).
   */
  | { event: 'update'; statusId: string; accountId?: string; view?: string }
  /** An edited status, to the streams that had it (Mastodon's `status.update`, the Status entity as payload). */
  | { event: 'status.update'; statusId: string; accountId?: string; view?: string }
  | { event: 'delete'; statusId: string }
  | { event: 'notification'; notificationId: string }
  /** A direct conversation of the channel's account changed (Mastodon's `conversation`, on the `direct` stream). */
  | { event: 'conversation'; conversationId: string }
  /** The account's filters changed: clients fetch them again (no payload). */
  | { event: 'filters_changed' }
  /** An operator's announcement was published (services/announcements.ts): the Announcement, as each receiver sees it. */
  | { event: 'announcement'; announcementId: string }
  /** A reaction to an announcement was added or taken back: its name and new count, the same for everyone. */
  | { event: 'announcement.reaction'; reaction: { name: string; count: number; announcement_id: string } }
  /** An announcement was unpublished or removed: its id. */
  | { event: 'announcement.delete'; announcementId: string };

/**
 * A new status as most of its receivers see it, rendered once by the fan-out job (http/serializers/stream-payloads.ts
 * renderStreamView) for the `view` of its messages, and whether nothing it shows has changed since: a job that takes
 * seconds for a large audience checks before each batch, so that a later batch does not carry counts or text that a
 * favourite or an edit has made old.
 */
export interface StreamView {
  json: string;
  stillCurrent(): Promise<boolean>;
}

/**
 * Home channels are grouped in this many shards for fan-out: a status going to a thousand followers is one message
 * per shard naming its receivers (`homes`), not a thousand messages, each of which Redis, the publisher and every
 * subscribed process would handle on its own. A process holding a home stream listens to its account's channel and
 * to the account's shard.
 */
export const HOME_SHARDS = 32;

/** Which shard an account's home channel is in (FNV-1a over the id's text: ids need not be evenly spread). */
export function homeShardOf(accountId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < accountId.length; i++) hash = Math.imul(hash ^ accountId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % HOME_SHARDS;
}

const HOME_CHANNEL = /^timeline:(\d+)$/;
/** What home shard channels' names begin with. */
export const HOME_SHARD_PREFIX = 'timeline:homes:';

export const streamChannels = {
  /** An account's home timeline: its own posts and those fanned out to it, and their deletion. */
  home: (accountId: string) => `timeline:${accountId}`,
  /** The shard of home channels an account's is in: the fan-out of one status to many homes. */
  homeShard: (shard: number) => `${HOME_SHARD_PREFIX}${shard}`,
  /** Whose home a channel is, when it is a home channel (its events also come on its shard); null otherwise. */
  homeOfChannel: (channel: string): string | null => HOME_CHANNEL.exec(channel)?.[1] ?? null,
  notifications: (accountId: string) => `timeline:${accountId}:notifications`,
  /** An account's direct conversations (services/conversations.ts). */
  direct: (accountId: string) => `timeline:direct:${accountId}`,
  public: (scope: '' | ':local' | ':remote', media: boolean) => `timeline:public${scope}${media ? ':media' : ''}`,
  hashtag: (tag: string, local: boolean) => `timeline:hashtag:${tag.toLowerCase()}${local ? ':local' : ''}`,
  /**
   * Operators' announcements, for every user stream: one channel that each process holding user streams listens
   * to, rather than one message per account (Mastodon sends one to each recently signed-in user's timeline).
   */
  announcements: 'timeline:announcements',
  /** A list's timeline: its members' posts as the list's feed takes them (actors/account.ts addToListFeeds). */
  list: (listId: string) => `timeline:list:${listId}`,
};

/** The public channels a new public status belongs on, as Mastodon broadcasts them (not replies to others, not boosts). */
export function publicChannelsOf(s: { local: boolean; hasMedia: boolean; tags: string[] }): string[] {
  const scope = s.local ? ':local' : ':remote';
  const channels = [streamChannels.public('', false), streamChannels.public(scope, false)];
  if (s.hasMedia) channels.push(streamChannels.public('', true), streamChannels.public(scope, true));
  for (const tag of new Set(s.tags.map((t) => t.toLowerCase()))) {
    channels.push(streamChannels.hashtag(tag, false));
    if (s.local) channels.push(streamChannels.hashtag(tag, true));
  }
  return channels;
}

/** A message on a home shard channel: for the home streams of the accounts it names. */
export type HomesMessage = StreamMessage & { homes: string[] };

/** Publishes stream messages; a channel nobody listens to costs Redis next to nothing. */
export class StreamEvents {
  private readonly redis: RedisClient;
  private readonly prefix: string;
  /**
   * Sharded pub/sub (SPUBLISH, REDIS_SHARDED_PUBSUB): on a cluster a PUBLISH is relayed to every node, an SPUBLISH
   * only to its channel's shard. A single Redis keeps PUBLISH (Redis 6 has no SPUBLISH). Subscribers follow this
   * (http/streaming/bus.ts): a sharded message is heard only by SSUBSCRIBE.
   */
  readonly sharded: boolean;

  constructor(redis: RedisClient, redisPrefix: string, sharded = false) {
    this.redis = redis;
    this.prefix = `${redisPrefix}stream:`;
    this.sharded = sharded && isCluster(redis);
  }

  private send(channel: string, text: string): Promise<unknown> {
    // During a master's failover an SPUBLISH gives up ("Too many Cluster redirections"): the event is lost, as any
    // published while nobody can hear it.
    return (this.sharded ? this.redis.spublish(channel, text) : this.redis.publish(channel, text)).catch(() => 0);
  }

  channelName(channel: string): string {
    return this.prefix + channel;
  }

  /** Publishes to each channel; losing a live event is no loss of data (timelines have it), so errors are dropped. */
  async publish(channels: string | string[], message: StreamMessage): Promise<void> {
    const text = JSON.stringify(message);
    await Promise.all([channels].flat().map((c) => this.send(this.channelName(c), text)));
  }

  /** Publishes to the home streams of these accounts: one message per shard they fall in. */
  async publishToHomes(accountIds: Iterable<string>, message: StreamMessage): Promise<void> {
    const byShard = new Map<number, string[]>();
    for (const id of accountIds) {
      const shard = homeShardOf(id);
      const ids = byShard.get(shard);
      if (ids) ids.push(id);
      else byShard.set(shard, [id]);
    }
    const shards = await this.listenedTo([...byShard.keys()], (shard) => this.channelName(streamChannels.homeShard(shard)));
    if (shards.length === 0) return;
    // The message (its view a few KB of JSON) is serialised once, and each shard's text is its homes put in front.
    const rest = JSON.stringify(message).slice(1);
    await Promise.all(shards.map((shard) => {
      const text = `{"homes":${JSON.stringify(byShard.get(shard))}${rest === '}' ? '' : ','}${rest}`;
      return this.send(this.channelName(streamChannels.homeShard(shard)), text);
    }));
  }

  /**
   * Of these shards, those a streaming process listens to. A post's message to a shard carries its view (a few KB),
   * and most shards of most posts have nobody listening (a follower without an open stream): on a single Redis one
   * PUBSUB NUMSUB spares sending it to the others. A process that subscribes meanwhile misses this one message, as it
   * would had it subscribed a moment later. On a cluster, where a node counts only its own subscribers, every shard
   * is sent to; so is every shard when the question fails.
   */
  private async listenedTo<T>(shards: T[], channelOf: (shard: T) => string): Promise<T[]> {
    if (isCluster(this.redis) || shards.length === 0) return shards;
    try {
      const counts = (await this.redis.call('PUBSUB', 'NUMSUB', ...shards.map(channelOf))) as (string | number)[];
      return shards.filter((_, i) => Number(counts[2 * i + 1]) > 0);
    } catch {
      return shards;
    }
  }
}
