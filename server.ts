import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { databaseDirectSetting, type Config } from './config.ts';
import type { AppContext } from './context.ts';
import { createPool, ensureDatabase, migrate } from './storage/db.ts';
import { withoutNamedStatements } from './storage/pooler.ts';
import { createRedis, connectRedis, createKeyTracking } from './storage/redis.ts';
import { createFileHost } from './storage/filehost/index.ts';
import type { FileHost } from './storage/filehost/index.ts';
import { ActorRegistry } from './actors/registry.ts';
import { buildApp } from './http/app.ts';
import { renderStreamView } from './http/serializers/stream-payloads.ts';
import { LiveDeliveries } from './services/live-deliveries.ts';
import { HomeFeeds } from './storage/feeds.ts';
import { JobQueues } from './jobs/queues.ts';
import { startWorkers } from './jobs/worker.ts';
import { TokenCache } from './services/token-cache.ts';
import { SessionCache, type ResolvedSession } from './services/session-cache.ts';
import { StatusLoader } from './services/hydrate.ts';
import { CacheVersions } from './storage/cache-versions.ts';
import { RenderedPageCache } from './services/page-cache.ts';
import type { SlottedPage } from './http/web/page-slots.ts';
import { defineLazyFederation } from './federation/lazy.ts';
import { compactAfterStart, releaseCompileCache } from './startup-gc.ts';
import { AccountKeyRing } from './federation/keys.ts';
import { BullMqMessageQueue } from './federation/queue.ts';
import { findAccountById } from './storage/accounts.ts';
import { StreamEvents } from './services/stream-events.ts';
import { JobBacklog } from './services/job-backlog.ts';
import { FilterCache } from './services/filters.ts';
import { cutOffConnections, guardCommits, refuseQueriesWhile } from './storage/db.ts';
import { createSubscriber, cutOffNodes, watchMasters } from './storage/redis.ts';
import { Dependencies, DependencyUnavailable } from './storage/dependencies.ts';
import { accountsWithFilters, accountsWithRelations } from './storage/cache-repair.ts';
import { pino } from 'pino';
import { closeHealth } from './federation/health.ts';
import { closeMetrics } from './services/metrics.ts';
import { ReadReplicas } from './storage/replica.ts';
import { setPasswordHashCost } from './services/passwords.ts';
import { ServerSettings } from './services/server-settings.ts';

/** Connects to PostgreSQL (creating and migrating the database) and Redis, and builds the shared services. */
export async function createContext(config: Config): Promise<AppContext> {
  setPasswordHashCost(config.passwordHash);
  await ensureDatabase(config.databaseDirectUrl, databaseDirectSetting(config));
  await migrate(config.databaseDirectUrl);
  const db = createPool(config.databaseUrl, config.databasePoolSize, config.databaseQueryTimeoutMs);
  if (!config.preparedStatements) withoutNamedStatements(db);
  const redis = createRedis(config);
  await connectRedis(redis, config);
  // Job workers read from the primary: what they read is what they are about to act on.
  const replicas = config.databaseReplicaUrls.length === 0 || config.role === 'worker' ? null
    : new ReadReplicas(db, config.databaseReplicaUrls, { poolSize: config.databasePoolSize, redis, redisPrefix: config.redisPrefix, maxLagMs: config.databaseReplicaMaxLagMs });
  // Replicas behind the same kind of pooler as the primary.
  if (!config.preparedStatements) for (const replica of replicas?.replicas ?? []) withoutNamedStatements(replica.pool);
  await replicas?.start();
  const fileHost = await createFileHost(config, db);
  const tokens = new TokenCache();
  const subscriber = createSubscriber(config, 'fedi:invalidations');
  await tokens.subscribe(subscriber, config.redisPrefix);
  const sessions = new SessionCache<ResolvedSession>();
  await sessions.subscribe(subscriber, config.redisPrefix);
  // The operators' run-time settings, over the environment's, before anything reads them.
  const settings = new ServerSettings(db, redis, config);
  await settings.start(subscriber);
  // Home pages and the version counters they are checked against are read under client tracking.
  const tracking = createKeyTracking(config);
  await tracking.start();
  const jobs = new JobQueues(config, config.redisPrefix);
  // Redis is back for requests once every connection they use is: its commands' and tracking's, and the one their
  // jobs are added on (whose adds fail at once while it reconnects).
  const dependencies = new Dependencies({
    databaseUrl: config.databaseUrl,
    timeoutMs: config.dependencyTimeoutMs,
    redis,
    alsoRedis: [tracking.reader, jobs.connection],
    log: pino({ level: config.logLevel }).child({ component: 'dependencies' }),
    // Connections that hang are closed, so what waits on them fails now and the next use connects anew.
    onHang: (name, nodes) => (name === 'postgres' ? cutOffConnections(db) : [redis, tracking.reader].forEach((c) => cutOffNodes(c, nodes))),
  });
  dependencies.start();
  guardCommits(db, () => (dependencies.isUp('redis') ? null : new DependencyUnavailable('redis')));
  // While PostgreSQL is known to be away (hung, cut off), queries fail at once rather than wait out their timeouts.
  refuseQueriesWhile(db, () => (dependencies.isUp('postgres') ? null : new DependencyUnavailable('postgres')));
  const homePages = new RenderedPageCache(64 * 1024 * 1024, 10 * 60_000);
  const homePagesHtml = new RenderedPageCache<SlottedPage>(32 * 1024 * 1024, 10 * 60_000);
  tracking.onInvalidate((keys) => {
    homePages.invalidate(keys);
    homePagesHtml.invalidate(keys);
  });
  const feeds = new HomeFeeds(redis, config.redisPrefix, tracking.reader);
  const listFeeds = new HomeFeeds(redis, config.redisPrefix, redis, 'list');
  const versions = new CacheVersions(redis, config.redisPrefix, tracking.reader, tracking);
  const statusLoader = new StatusLoader(db, versions);
  // Redis lost its counters (restarted empty, flushed): filter and relation versions are restored from PostgreSQL,
  // so that 0 still means "none" and no mute or filter is forgotten.
  versions.repairWith(async () => versions.bump({ relations: await accountsWithRelations(db), filters: await accountsWithFilters(db) }));
  await versions.ensureEpoch();
  // A Redis Cluster failover may lose what the old master acknowledged last (replication is asynchronous): counters
  // can go back, so nothing rendered under them is trusted, and write positions may be gone (storage/REDIS-CLUSTER.md §4).
  watchMasters(redis, () => {
    versions.forgetAll();
    homePages.invalidate(null);
    homePagesHtml.invalidate(null);
    replicas?.forgetWritePositions();
  });
  // Mentions of unknown remote accounts resolve through the federation, which needs the finished context.
  let self: AppContext | undefined;
  const resolveRemote = async (username: string, domain: string, actingAccountId: string) => {
    if (!self) return null;
    const acting = await findAccountById(db, actingAccountId);
    const { resolveAcct } = await import('./federation/remote-accounts.ts');
    return resolveAcct(self, self.federation.createContext(new URL(config.publicUrl), self), username, domain, acting);
  };
  const events = new StreamEvents(redis, config.redisPrefix, config.redisShardedPubsub);
  const liveDeliveries = new LiveDeliveries();
  const actors = new ActorRegistry({ db, feeds, listFeeds, jobs, config, versions, events, resolveRemote, statusLoader }, { idleMs: config.actorIdleMs, queryTimeoutMs: 15_000, liveDeliveries });
  const render = { publicUrl: config.publicUrl, localDomain: config.localDomain, fileHost };
  const ctx = {
    config,
    settings,
    db,
    replicas,
    readDb: (viewerId: string | null | undefined) => (replicas ? replicas.readDb(viewerId) : Promise.resolve(db)),
    redis,
    fileHost,
    actors,
    feeds,
    listFeeds,
    jobs,
    jobBacklog: new JobBacklog(config.postHoldMs),
    tokens,
    sessions,
    versions,
    events,
    statusLoader,
    filters: new FilterCache(db, versions),
    homePages,
    homePagesHtml,
    tracking,
    subscriber,
    render,
    liveDeliveries,
    renderStreamView: (statusId: string, authorId: string) => renderStreamView({ statusLoader, render, versions }, statusId, authorId),
    keyRing: new AccountKeyRing(db),
    dependencies,
    federationQueue: new BullMqMessageQueue(config, config.redisPrefix),
  } as Omit<AppContext, 'federation'> as AppContext;
  // Fedify's handlers get this context as their data, so the federation is made once the rest exists (at first use).
  defineLazyFederation(ctx);
  self = ctx;
  return ctx;
}

export async function closeContext(ctx: AppContext): Promise<void> {
  ctx.actors.stop();
  await ctx.jobs.close();
  await ctx.federationQueue.close();
  ctx.fileHost.close?.();
  ctx.settings.close();
  ctx.subscriber.disconnect();
  await ctx.tracking.close();
  // What this process saw of other servers, and its counts, are written while the connections are still open.
  await Promise.all([closeHealth(ctx), closeMetrics(ctx)]);
  await ctx.replicas?.close();
  await ctx.db.end();
  ctx.redis.disconnect();
}

/** Starts the roles this process plays: the web server or streaming sockets (listening), the job workers, or both. */
export async function startServer(config: Config, options: { logger?: boolean } = {}) {
  releaseCompileCache();
  const ctx = await createContext(config);
  const app = await buildApp(ctx, options);
  const workers = config.role === 'web' || config.role === 'streaming' ? null : startWorkers(ctx);
  if (config.role !== 'worker') await app.listen({ port: config.port, host: config.bind });
  compactAfterStart();
  return {
    app,
    ctx,
    async close() {
      await app.close();
      await workers?.close();
      await closeContext(ctx);
    },
  };
}
