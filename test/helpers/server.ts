import { randomBytes, createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../config.ts';
import { createContext, closeContext } from '../../server.ts';
import { startWorkers } from '../../jobs/worker.ts';
import { buildApp, type App } from '../../http/app.ts';
import { dropDatabase } from '../../storage/db.ts';
import { deleteKeysWithPrefix } from '../../storage/redis.ts';
import type { AppContext } from '../../context.ts';

export const PG_BASE = process.env.TEST_DATABASE_BASE_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** Set by test/helpers/database-template.ts: the migrated database every test database is copied from, and this run's tag. */
const TEMPLATE = process.env.TEST_DATABASE_TEMPLATE;
const RUN_ID = process.env.TEST_RUN_ID;

/** A new database, a copy of the migrated template (the server's own start-up then finds every migration run). */
async function copyTemplate(database: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${PG_BASE}/postgres` });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)} TEMPLATE ${pg.escapeIdentifier(TEMPLATE!)}`);
  } finally {
    await client.end();
  }
}

/**
 * A name for a test's database (`label` says whose): in a run, one of the run's, which are dropped together at its
 * end (test/helpers/database-template.ts) rather than by the test. A DROP DATABASE makes PostgreSQL write and sync
 * every test database's changes at once (an immediate checkpoint): in the middle of the suite that took up to a
 * minute, with every other file's queries waiting on the disk meanwhile.
 */
export function testDatabaseName(label: string): string {
  return databaseOfTag(`${label}_${process.pid}_${randomBytes(4).toString('hex')}`);
}

const databaseOfTag = (tag: string) => (RUN_ID ? `fedi_test_${RUN_ID}_${tag}` : `fedi_test_${tag}`);

/** Drops a test's database, unless it is one of the run's (see testDatabaseName). */
export async function dropTestDatabase(databaseUrl: string): Promise<void> {
  const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!RUN_ID || !database.startsWith(`fedi_test_${RUN_ID}_`)) await dropDatabase(databaseUrl);
}

/** Settings for one test server: its own database, Redis prefix and data directory. */
export async function testConfig(overrides: Record<string, string> = {}): Promise<Config> {
  const tag = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const database = databaseOfTag(tag);
  if (TEMPLATE && !overrides.DATABASE_URL) await copyTemplate(database);
  const dataDir = await mkdtemp(join(tmpdir(), 'fedi-test-'));
  return loadConfig({
    DATABASE_URL: `${PG_BASE}/${database}`,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `fedi_test_${tag}:`,
    DATA_DIR: dataDir,
    LOCAL_DOMAIN: 'test.local',
    LOG_LEVEL: 'silent',
    // Suites register many accounts from one address; test/http/rate-limit.test.ts turns the limits on.
    RATE_LIMITS: 'false',
    // Two test files at a time on two cores can leave a probe's SELECT 1 unanswered for 1.5 s: that is not the
    // outage the server would then answer 503 for. The tests of hangs and outages set the production 1.5 s.
    DEPENDENCY_TIMEOUT_MS: '5000',
    // Likewise a request's statements: under two files' load a query can wait past 2 s for its turn.
    DATABASE_QUERY_TIMEOUT_MS: '10000',
    // A cheap hash: suites register hundreds of accounts, and the default argon2 cost is a CPU-second each on a busy
    // machine. Nothing here tests the hash's strength.
    PASSWORD_HASH_MEMORY_KIB: '1024',
    PASSWORD_HASH_TIME_COST: '1',
    ...overrides,
  });
}

export interface TestServer {
  app: App;
  ctx: AppContext;
  config: Config;
  close(): Promise<void>;
  /** Stops the job workers (as a crashed worker process would), and starts them again. */
  stopWorkers(): Promise<void>;
  startWorkers(): void;
}

/**
 * A server on a fresh database, driven through `app.inject` (Fastify's full request handling, no socket). It logs
 * nothing, unless `log` is given: then each line its requests log at LOG_LEVEL (set it too) is handed to it, parsed.
 */
export async function startTestServer(overrides: Record<string, string> = {}, options: { log?: (line: Record<string, unknown>) => void } = {}): Promise<TestServer> {
  const config = await testConfig(overrides);
  const ctx = await createContext(config);
  // A server is ready once it sees PostgreSQL and Redis answer (as /health says), not merely connected: on a busy
  // machine its first probe may still be under way, and a request meanwhile would be refused with a 503.
  await ctx.dependencies.waitFor(['postgres', 'redis'], 15_000);
  const log = options.log;
  const app = await buildApp(ctx, log ? { logStream: { write: (line) => log(JSON.parse(line) as Record<string, unknown>) } } : { logger: false });
  await app.ready();
  let workers = overrides.ROLE === 'web' ? null : startWorkers(ctx);
  return {
    app,
    ctx,
    config,
    async stopWorkers() {
      await workers?.close();
      workers = null;
    },
    startWorkers() {
      workers ??= startWorkers(ctx);
    },
    async close() {
      await app.close();
      await workers?.close();
      await deleteKeysWithPrefix(ctx.redis, config.redisPrefix);
      await closeContext(ctx);
      await dropTestData(config);
    },
  };
}

export async function dropTestData(config: Config): Promise<void> {
  await dropTestDatabase(config.databaseUrl);
  await rm(config.dataDir, { recursive: true, force: true });
}

export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}
