import { grantsAny } from '../oauth/scopes.ts';
import { streamChannels, type StreamMessage } from '../../services/stream-events.ts';
import type { StreamBus, StreamListener } from './bus.ts';
import type { StreamPayloads } from '../serializers/stream-payloads.ts';
import type { FilterContext } from '../../storage/filters.ts';
import { isId } from '../../storage/ids.ts';

/** Who holds a streaming connection: the account, and what ending its credential would name. */
export interface StreamOwner {
  accountId: string;
  userId: string;
  /**
   * `token:<hash>` for an access token, `session:<hash>` for a signed-in web page's session cookie: as the
   * invalidation that ends it names it (services/token-cache.ts).
   */
  credential: string;
  scopes: string[];
}

/** What a client asks for, as query parameters or in a subscribe message. */
export interface StreamParams {
  tag?: string | undefined;
  list?: string | undefined;
  only_media?: string | boolean | undefined;
}

/**
 * Writes one event to the client: `stream` as Mastodon names it (`["hashtag","foo"]`), payload as JSON text or an
 * id (none for `filters_changed`).
 */
export type StreamOutput = (stream: string[], event: string, payload: string | undefined) => void;

/**
 * Where a stream's statuses are shown, for the viewer's filters and relations: home for the user stream, a list for
 * a list's (home filters; blocks and mutes as in the list's timeline), public for the others.
 */
function filterContext(stream: string[]): FilterContext | 'list' | null {
  const name = stream[0] ?? '';
  if (name === 'user') return 'home';
  if (name === 'list') return 'list';
  return name.startsWith('public') || name.startsWith('hashtag') ? 'public' : null;
}

export class StreamError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The Redis channels behind a stream, and the name events carry, as Mastodon's streaming server maps them. */
export function resolveStream(owner: StreamOwner, name: string, params: StreamParams): { channels: string[]; stream: string[] } {
  // Every stream needs `read` or the granular scope of what it carries, public ones too: a token that may only write
  // reads nothing.
  const needed = name === 'user:notification' ? ['read:notifications'] : name === 'list' ? ['read:lists'] : ['read:statuses'];
  if (!grantsAny(owner.scopes, needed)) throw new StreamError(401, 'Access token does not have the required scopes');
  const media = params.only_media === true || params.only_media === 'true' || params.only_media === '1';
  switch (name) {
    case 'user': {
      const channels = [streamChannels.home(owner.accountId), streamChannels.announcements];
      // Notifications ride on the user stream only for tokens that may read them.
      if (grantsAny(owner.scopes, ['read:notifications'])) channels.push(streamChannels.notifications(owner.accountId));
      return { channels, stream: ['user'] };
    }
    case 'user:notification':
      return { channels: [streamChannels.notifications(owner.accountId)], stream: [name] };
    case 'public':
    case 'public:media':
    case 'public:local':
    case 'public:local:media':
    case 'public:remote':
    case 'public:remote:media': {
      const scope = name.includes(':local') ? ':local' : name.includes(':remote') ? ':remote' : '';
      const withMedia = media || name.endsWith(':media');
      return { channels: [streamChannels.public(scope, withMedia)], stream: [`public${scope}${withMedia ? ':media' : ''}`] };
    }
    case 'hashtag':
    case 'hashtag:local': {
      const tag = params.tag?.replace(/^#/, '');
      if (!tag) throw new StreamError(400, 'Missing tag name parameter');
      return { channels: [streamChannels.hashtag(tag, name === 'hashtag:local')], stream: [name, tag] };
    }
    case 'direct':
      // Carries `conversation` events (services/conversations.ts).
      return { channels: [`timeline:direct:${owner.accountId}`], stream: [name] };
    case 'list':
      if (!params.list) throw new StreamError(400, 'Missing list name parameter');
      // Whether the list is the owner's is checked before subscribing (http/streaming/routes.ts), against the database.
      if (!isId(params.list)) throw new StreamError(401, 'Not authorized to stream this list');
      return { channels: [streamChannels.list(params.list)], stream: [name, params.list] };
    default:
      throw new StreamError(400, 'Unknown stream type');
  }
}

/**
 * One client connection's subscriptions. Events are written in the order they arrived, each rendered for this
 * connection's account: an update it may not see is left out.
 */
export class StreamSession {
  readonly owner: StreamOwner;
  private readonly bus: StreamBus;
  private readonly payloads: StreamPayloads;
  private readonly output: StreamOutput;
  private readonly subscriptions = new Map<string, { channels: string[]; listener: StreamListener }>();
  private readonly waiting: Waiting[] = [];
  private closed = false;

  constructor(owner: StreamOwner, bus: StreamBus, payloads: StreamPayloads, output: StreamOutput) {
    this.owner = owner;
    this.bus = bus;
    this.payloads = payloads;
    this.output = output;
  }

  /** Subscribes; a second subscription to the same stream is a no-op, as in Mastodon. Throws StreamError. */
  async subscribe(name: string, params: StreamParams): Promise<void> {
    const { channels, stream } = resolveStream(this.owner, name, params);
    const key = channels.join(';');
    if (this.closed || this.subscriptions.has(key)) return;
    const context = filterContext(stream);
    const listener: StreamListener = (message) => this.enqueue(stream, context, message);
    this.subscriptions.set(key, { channels, listener });
    await Promise.all(channels.map((c) => this.bus.listen(c, listener)));
  }

  unsubscribe(name: string, params: StreamParams): void {
    const { channels } = resolveStream(this.owner, name, params);
    this.remove(channels.join(';'));
  }

  close(): void {
    this.closed = true;
    for (const key of [...this.subscriptions.keys()]) this.remove(key);
  }

  private remove(key: string): void {
    const sub = this.subscriptions.get(key);
    if (!sub) return;
    for (const c of sub.channels) this.bus.unlisten(c, sub.listener);
    this.subscriptions.delete(key);
  }

  private enqueue(stream: string[], context: FilterContext | 'list' | null, message: StreamMessage): void {
    // Rendering starts at once (receivers of one event are batched); writing keeps the order of arrival. Events
    // wait in an array rather than a chain of promises: a post reaches thousands of sessions in one turn.
    const item: Waiting = { stream, event: message.event, payload: NOT_YET };
    this.waiting.push(item);
    const settle = (payload: string | null | undefined) => {
      item.payload = payload;
      this.drain();
    };
    switch (message.event) {
      case 'update':
      case 'status.update':
        return this.payloads.status(message, this.owner.accountId, context, settle);
      case 'delete':
        return settle(message.statusId);
      case 'filters_changed':
        return settle(undefined);
      case 'notification':
        return void this.payloads.notification(message.notificationId, this.owner.accountId).then(settle, () => settle(null));
      case 'conversation':
        return void this.payloads.conversation(message.conversationId, this.owner.accountId).then(settle, () => settle(null));
      case 'announcement':
        return void this.payloads.announcement(message.announcementId, this.owner.accountId).then(settle, () => settle(null));
      case 'announcement.reaction':
        return settle(JSON.stringify(message.reaction));
      case 'announcement.delete':
        return settle(message.announcementId);
      default:
        return settle(null);
    }
  }

  /** Writes the events whose payloads are ready, in order, up to the first still being rendered. */
  private drain(): void {
    while (this.waiting.length > 0 && this.waiting[0]!.payload !== NOT_YET) {
      const { stream, event, payload } = this.waiting.shift()!;
      if (payload === null || payload === NOT_YET || this.closed) continue;
      this.output(stream, event, payload);
    }
  }
}

const NOT_YET = Symbol('not rendered yet');

/** An event on its way to the client: its payload once rendered (null: not for this receiver; undefined: none). */
interface Waiting {
  stream: string[];
  event: StreamMessage['event'];
  payload: string | null | undefined | typeof NOT_YET;
}
