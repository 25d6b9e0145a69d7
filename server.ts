import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { createPool, ensureDatabase, migrate } from './storage/db.ts';
import { createRedis, connectRedis } from './storage/redis.ts';
import { LocalFileHost } from './storage/filehost/local.ts';
import { ActorRegistry } from './actors/registry.ts';
import { buildApp } from './http/app.ts';

/** Connects to PostgreSQL (creating and migrating the database) and Redis, and builds the shared services. */
export async function createContext(config: Config): Promise<AppContext> {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const db = createPool(config.databaseUrl);
  const redis = createRedis(config.redisUrl);
  await connectRedis(redis, config.redisUrl);
  const filesRoot = join(config.dataDir, 'files');
  await mkdir(filesRoot, { recursive: true });
  const fileHost = new LocalFileHost(filesRoot, config.publicUrl);
  const actors = new ActorRegistry({ db }, { idleMs: config.actorIdleMs, queryTimeoutMs: 15_000 });
  return {
    config,
    db,
    redis,
    fileHost,
    actors,
    render: { publicUrl: config.publicUrl, localDomain: config.localDomain, fileHost },
  };
}

export async function closeContext(ctx: AppContext): Promise<void> {
  ctx.actors.stop();
  await ctx.db.end();
  ctx.redis.disconnect();
}

/** The web server: builds the app and listens on the configured port. */
export async function startServer(config: Config, options: { logger?: boolean } = {}) {
  const ctx = await createContext(config);
  const app = await buildApp(ctx, options);
  await app.listen({ port: config.port, host: config.bind });
  return {
    app,
    ctx,
    async close() {
      await app.close();
      await closeContext(ctx);
    },
  };
}
