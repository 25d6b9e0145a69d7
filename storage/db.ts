import pg from 'pg';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import { ConfigError } from '../config.ts';

// bigint ids stay strings (they exceed 2^53); counts from count(*) are parsed where used.
export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

export function createPool(databaseUrl: string, max = 10): Db {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis: 5000 });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

const committedHooks = new WeakMap<pg.PoolClient, (() => unknown)[]>();

/**
 * Runs fn once the transaction `q` belongs to has committed (at once when `q` is not in one), and never if it rolls
 * back: for telling others of a change (live events) only when the change is there to be read.
 */
export function afterCommit(q: Queryable, fn: () => unknown): void {
  const hooks = q instanceof pg.Pool ? undefined : committedHooks.get(q);
  if (hooks) hooks.push(fn);
  else void Promise.resolve().then(fn).catch(() => {});
}

/** Runs fn in one transaction: all of it commits, or none of it does. */
export async function transaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  const hooks: (() => unknown)[] = [];
  committedHooks.set(client, hooks);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    committedHooks.delete(client);
    for (const hook of hooks) void Promise.resolve().then(hook).catch(() => {});
    return result;
  } catch (err) {
    committedHooks.delete(client);
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

function describeConnectError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  if (e.code === 'ECONNREFUSED') return 'connection refused';
  if (e.code === 'ENOTFOUND') return 'host not found';
  if (e.code === '28P01' || e.code === '28000') return 'authentication failed';
  return e.message ?? String(err);
}

/** Creates the database named by the URL if it does not exist yet. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const target = new URL(databaseUrl);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    throw new ConfigError('DATABASE_URL', `cannot connect to ${target.host}: ${describeConnectError(err)}`);
  }
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } catch (err) {
        // Another process may have created it between our check and our CREATE
        // (42P04, or 23505 when both CREATEs ran at once).
        const code = (err as { code?: string }).code;
        if (code !== '42P04' && code !== '23505') throw err;
      }
    }
  } finally {
    await client.end();
  }
}

export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

const migrationsDir = fileURLToPath(new URL('./migrations', import.meta.url));

/** Applies pending migrations; concurrent starters wait for each other on node-pg-migrate's advisory lock. */
export async function migrate(databaseUrl: string): Promise<void> {
  const quiet = { debug() {}, info() {}, warn() {}, error: console.error };
  await runner({
    databaseUrl,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    singleTransaction: true,
    advisoryLockMode: 'wait',
    logger: quiet,
    checkOrder: true,
  });
}
