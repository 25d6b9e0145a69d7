import type { RedisClient } from './storage/redis.ts';
import type { Config } from './config.ts';
import type { Db } from './storage/db.ts';
import type { Dependencies } from './storage/dependencies.ts';
import type { FileHost } from './storage/filehost/index.ts';
import type { ActorRegistry } from './actors/registry.ts';
import type { RenderContext } from './http/serializers/context.ts';
import type { HomeFeeds } from './storage/feeds.ts';
import type { JobQueues } from './jobs/queues.ts';
import type { TokenCache } from './services/token-cache.ts';
import type { ResolvedSession, SessionCache } from './services/session-cache.ts';
import type { StatusLoader } from './services/hydrate.ts';
import type { StreamEvents, StreamView } from './services/stream-events.ts';
import type { FilterCache } from './services/filters.ts';
import type { CacheVersions } from './storage/cache-versions.ts';
import type { RenderedPageCache } from './services/page-cache.ts';
import type { KeyTracking } from './storage/key-tracking.ts';
import type { SlottedPage } from './http/web/page-slots.ts';
import type { Federation } from '@fedify/fedify';
import type { AccountKeyRing } from './federation/keys.ts';
import type { BullMqMessageQueue } from './federation/queue.ts';
import type { JobBacklog } from './services/job-backlog.ts';
import type { LiveDeliveries } from './services/live-deliveries.ts';
import type { ReadReplicas } from './storage/replica.ts';
import type { ServerSettings } from './services/server-settings.ts';

/** ActivityPub through Fedify, with this context as the data every handler gets. */
export type AppFederation = Federation<AppContext>;

/** The long-lived services one process shares between its parts. */
export interface AppContext {
  /** The environment's settings, with the run-time ones (services/server-settings.ts) written over it as they change. */
  config: Config;
  /** The settings operators change while the server runs (/admin/settings): stored, applied to `config` everywhere. */
  settings: ServerSettings;
  db: Db;
  /**
   * Where a viewer's reads that may be slightly behind go (public pages, account pages, search, suggestions,
   * ActivityPub GETs): a replica that has their last write, else `db`. Never for writes or transactions.
   */
  readDb: (viewerId: string | null | undefined) => Promise<Db>;
  /** DATABASE_REPLICA_URL's replicas, when set. */
  replicas: ReadReplicas | null;
  redis: RedisClient;
  /** Whether PostgreSQL and Redis answer, as this process sees them (logged once per change, shown by /health). */
  dependencies: Dependencies;
  fileHost: FileHost;
  actors: ActorRegistry;
  feeds: HomeFeeds;
  /** Each list's feed, by list id. */
  listFeeds: HomeFeeds;
  jobs: JobQueues;
  /** How far behind this process's job worker is; new posts wait while it is too far behind (ROLE=all). */
  jobBacklog: JobBacklog;
  tokens: TokenCache;
  /** The pages' resolved web sessions (http/web/session.ts), forgotten with the tokens' invalidations. */
  sessions: SessionCache<ResolvedSession>;
  versions: CacheVersions;
  /** Live events for streaming sockets, published over Redis pub/sub. */
  events: StreamEvents;
  /** Live stream deliveries under way in this process: feed writes wait for them (services/live-deliveries.ts). */
  liveDeliveries: LiveDeliveries;
  /** A new status as most of its live receivers see it, for its stream messages (http/serializers/stream-payloads.ts). */
  renderStreamView: (statusId: string, authorId: string) => Promise<StreamView | null>;
  statusLoader: StatusLoader;
  /** Each viewer's filters, compiled, kept while their version holds. */
  filters: FilterCache;
  /** Rendered home timeline pages, per viewer and paging. */
  homePages: RenderedPageCache;
  /** Rendered home pages (`/home`) of signed-in people, kept and dropped as `homePages` (http/web/client-pages.ts). */
  homePagesHtml: RenderedPageCache<SlottedPage>;
  /** Redis client tracking: reads that tell this process when what they read changes. */
  tracking: KeyTracking;
  /** The connection subscribed to cache invalidations. */
  subscriber: RedisClient;
  /** ActivityPub: Fedify, our accounts' signing keys, and the queue of deliveries and received activities. */
  federation: AppFederation;
  keyRing: AccountKeyRing;
  federationQueue: BullMqMessageQueue;
  render: RenderContext;
}

/**
 * One helper object per context, made on first use and kept on the context under a registered symbol rather than in
 * a module-level map: a module loaded twice (once by the test runner, once by Node's own loader, as
 * federation/lazy.ts loads Fedify's side) still finds the one object. `close` closes it and forgets it.
 */
export function contextSlot<T extends { close(): Promise<void> }>(name: string, make: (app: AppContext) => T) {
  const key = Symbol.for(`fedi-server.${name}`);
  const holder = (app: AppContext) => app as unknown as Record<symbol, T | undefined>;
  return {
    of: (app: AppContext): T => (holder(app)[key] ??= make(app)),
    close: async (app: AppContext): Promise<void> => {
      await holder(app)[key]?.close();
      delete holder(app)[key];
    },
  };
}
