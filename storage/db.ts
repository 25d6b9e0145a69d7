import pg from 'pg';
import { AsyncLocalStorage } from 'node:async_hooks';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { ConfigError } from '../config.ts';
import { DependencyUnavailable, unavailableDependency } from './dependencies.ts';

// bigint ids stay strings (they exceed 2^53); counts from count(*) are parsed where used.
export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

/**
 * How long a statement may go unanswered before its connection is given up (a PostgreSQL that hangs, a stalled disk,
 * a network partition: nothing closes the connection, so nothing else would end the wait). The request it served is
 * answered 503 within this; a transaction on it was not committed and is rolled back by PostgreSQL (below). A
 * statement known to need longer passes its own `query_timeout`.
 */
export const QUERY_TIMEOUT_MS = 2000;

/**
 * Background jobs wait longer: a batch of an account's deletion or a trend scoring may legitimately run past 2 s on a
 * large instance, and no request waits on it (a hung PostgreSQL still ends it, later).
 */
export const JOB_QUERY_TIMEOUT_MS = 120_000;
const statementBound = new AsyncLocalStorage<number>();

/** Runs fn with every statement it sends (through any pool made by createPool) bounded by `ms` instead. */
export function withStatementTimeout<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  return statementBound.run(ms, fn);
}

/** Each pool's bound for a request's statements (createPool's `queryTimeoutMs`). */
const requestBounds = new WeakMap<Db, number>();

/**
 * `queryTimeoutMs`: a request's bound (DATABASE_QUERY_TIMEOUT_MS; 2 s), both for a connection and for each statement.
 */
export function createPool(databaseUrl: string, max = 10, queryTimeoutMs = QUERY_TIMEOUT_MS): Db {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    // A request waits at most 2 s for a connection (PostgreSQL away or slow to accept, or every connection busy).
    connectionTimeoutMillis: queryTimeoutMs,
    // A timer per statement on the client: no round trip. (statement_timeout, on the server, cannot end a wait for a
    // server that does not run, and as a startup parameter PgBouncer refuses it.)
    query_timeout: queryTimeoutMs,
    // Idle connections to a host that is gone are found by TCP keepalives rather than by the next request.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  } as pg.PoolConfig);
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  const clients = new Set<pg.PoolClient>();
  pool.on('connect', (c) => {
    clients.add(c);
    // A connection closed under a checked-out client (cut off, below) fails its query; the client's own 'error'
    // event, with no pool listener while it is checked out, must not end the process.
    c.on('error', () => {});
  });
  pool.on('remove', (c) => clients.delete(c));
  poolClients.set(pool, clients);
  requestBounds.set(pool, queryTimeoutMs);
  // Every query and transaction takes a connection through connect (pool.query too): while PostgreSQL is known to be
  // away, it fails at once instead of waiting out the timeouts above, so that every request is answered in time.
  const connect = pool.connect.bind(pool) as (cb?: (err: Error | undefined, client?: pg.PoolClient, done?: () => void) => void) => Promise<pg.PoolClient> | void;
  (pool as unknown as { connect: typeof connect }).connect = (cb) => {
    const refused = queryRefusals.get(pool)?.();
    if (refused) {
      if (!cb) return Promise.reject(refused);
      process.nextTick(() => cb(refused));
      return;
    }
    // The statement bound of whoever takes the connection (a request's 2 s, or a job's), read by pg at each query.
    const bound = statementBound.getStore() ?? queryTimeoutMs;
    const setBound = (c: pg.PoolClient | undefined) => {
      if (c) (c as unknown as { connectionParameters: { query_timeout: number } }).connectionParameters.query_timeout = bound;
      return c;
    };
    if (!cb) return (connect() as Promise<pg.PoolClient>).then((c) => setBound(c)!);
    return connect((err, c, done) => cb(err, setBound(c), done));
  };
  return pool;
}

const queryRefusals = new WeakMap<Db, () => Error | null>();

/** Asked before a connection is taken from the pool: an error (PostgreSQL known to be away) fails the query at once. */
export function refuseQueriesWhile(db: Db, check: () => Error | null): void {
  queryRefusals.set(db, check);
}

/** Closes a connection now, whatever it was waiting for: PostgreSQL, when it reads again, finds it gone. */
function destroyConnection(client: pg.PoolClient): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

const poolClients = new WeakMap<Db, Set<pg.PoolClient>>();

/**
 * Closes every connection of the pool at once (PostgreSQL stopped answering without closing them): what waits on
 * them fails now, uncommitted transactions are rolled back by the server, and the next query connects anew.
 */
export function cutOffConnections(db: Db): void {
  for (const c of poolClients.get(db) ?? []) destroyConnection(c);
}

const commitGuards = new WeakMap<Db, () => Error | null>();

/**
 * Asked just before every COMMIT: an error keeps the transaction from committing. What follows a commit (feeds,
 * cache versions, queued jobs) needs Redis; a transaction is not committed while Redis is known to be away, so a
 * request answered 503 left nothing behind.
 */
export function guardCommits(db: Db, check: () => Error | null): void {
  commitGuards.set(db, check);
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

let commits = 0;

/** Transactions of this process committed by `transaction` so far (for tests and benchmarks: commits per post). */
export function committedTransactions(): number {
  return commits;
}

/**
 * Runs fn inside a savepoint of the transaction `client` is in: if fn fails, what it wrote is rolled back (and its
 * afterCommit hooks dropped) while the transaction goes on, and fn's error is rethrown. Savepoints are not released:
 * each is one round trip fewer, and a later one of the same name hides it.
 */
export async function inSavepoint<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  const hooks = committedHooks.get(client);
  const mark = hooks?.length ?? 0;
  await client.query('SAVEPOINT one');
  try {
    return await fn();
  } catch (err) {
    if (hooks) hooks.length = mark;
    try {
      await client.query('ROLLBACK TO SAVEPOINT one');
    } catch (lost) {
      throw unavailableDependency(lost) ? lost : new TransactionAborted(lost);
    }
    throw err;
  }
}

/** A savepoint could not be rolled back to: the transaction cannot go on (and must not be committed). */
export class TransactionAborted extends Error {
  constructor(cause: unknown) {
    super('the transaction could not be rolled back to its savepoint', { cause });
  }
}

/** Runs fn in one transaction: all of it commits, or none of it does. */
export async function transaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  const hooks: (() => unknown)[] = [];
  committedHooks.set(client, hooks);
  let broken: Error | undefined;
  let committing = false;
  let txid: string | undefined;
  try {
    // The transaction's id, asked in BEGIN's round trip: if the connection drops during COMMIT, it tells whether
    // the commit happened (txid_status), so the caller is not told "failed" for a change that was made.
    const begun = (await client.query('BEGIN; SELECT txid_current()::text AS txid')) as unknown as pg.QueryResult<{ txid: string }>[];
    txid = begun[1]?.rows[0]?.txid;
    const result = await fn(client);
    // Not sent to a PostgreSQL known to be away: the transaction is rolled back, its connection closed (below).
    const refused = commitGuards.get(db)?.() ?? queryRefusals.get(db)?.();
    if (refused) throw refused;
    committing = true;
    const commitSent = Date.now();
    try {
      await client.query('COMMIT');
    } catch (err) {
      if (!txid || !unavailableDependency(err)) throw err;
      broken = err as Error;
      if (!(await committedAfterAll(db, txid, err, commitSent + (requestBounds.get(db) ?? QUERY_TIMEOUT_MS)))) throw err;
    }
    commits += 1;
    committedHooks.delete(client);
    for (const hook of hooks) void Promise.resolve().then(hook).catch(() => {});
    return result;
  } catch (err) {
    committedHooks.delete(client);
    const gone = unavailableDependency(err);
    if (gone === 'postgres' || gone === 'network') {
      broken ??= err as Error;
      // Closed now, with no COMMIT sent (or one whose outcome is unknown): a PostgreSQL that hangs finds, when it
      // runs again, statements without their COMMIT and then a closed connection, and rolls them back.
      destroyConnection(client);
    }
    if (!committing && !broken) {
      // A rollback that does not come back in time leaves a connection no one should reuse.
      await client.query({ text: 'ROLLBACK', query_timeout: 2000 } as pg.QueryConfig).catch((e: Error) => (broken = e));
    }
    throw err;
  } finally {
    // A connection that failed is closed rather than handed to the next request.
    client.release(broken);
  }
}

/**
 * The connection dropped during COMMIT, or COMMIT went unanswered: asks PostgreSQL (on another connection, until
 * 2 s after the COMMIT was sent) whether the transaction committed. A COMMIT unanswered for 2 s (PostgreSQL hangs) is
 * not asked about. Unknown, the caller answers 503 (a retry with the same Idempotency-Key finds a post that did
 * commit) and the outcome is logged once it is known.
 */
async function committedAfterAll(db: Db, txid: string, cause: unknown, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    const status = await txidStatus(db, txid, deadline - Date.now());
    if (status === 'committed') return true;
    if (status === 'aborted') return false;
    await new Promise((r) => setTimeout(r, Math.min(200, Math.max(0, deadline - Date.now()))));
  }
  void reportLateOutcome(db, txid);
  throw new CommitOutcomeUnknown(txid, cause);
}

async function txidStatus(db: Db, txid: string, timeoutMs = 1000): Promise<string | null> {
  try {
    const { rows } = await db.query<{ status: string | null }>({ text: 'SELECT txid_status($1) AS status', values: [txid], query_timeout: Math.max(1, Math.min(1000, timeoutMs)) } as pg.QueryConfig);
    return rows[0]?.status ?? null;
  } catch {
    return null;
  }
}

/** The connection dropped during COMMIT and PostgreSQL could not be asked in time: the change may or may not exist. */
export class CommitOutcomeUnknown extends DependencyUnavailable {
  readonly txid: string;
  constructor(txid: string, cause: unknown) {
    super('postgres', `the outcome of transaction ${txid} is unknown: PostgreSQL went away during its commit`, { cause });
    this.txid = txid;
  }
}

/** Logs, once PostgreSQL answers again (for up to an hour), whether a transaction whose outcome was unknown committed. */
async function reportLateOutcome(db: Db, txid: string): Promise<void> {
  const until = Date.now() + 3_600_000;
  while (Date.now() < until && !db.ending) {
    const status = await txidStatus(db, txid);
    if (status === 'committed' || status === 'aborted') {
      const log = status === 'committed' ? console.error : console.info;
      log(JSON.stringify({ level: status === 'committed' ? 50 : 30, txid, status, msg: `transaction ${txid}, answered 503 when PostgreSQL went away during its commit, had ${status}` }));
      return;
    }
    await new Promise((r) => setTimeout(r, 1000).unref());
  }
}

function describeConnectError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  if (e.code === 'ECONNREFUSED') return 'connection refused';
  if (e.code === 'ENOTFOUND') return 'host not found';
  if (e.code === '28P01' || e.code === '28000') return 'authentication failed';
  return e.message ?? String(err);
}

/**
 * Creates the database named by the URL if it does not exist yet. `setting` is where the URL came from, named when
 * PostgreSQL cannot be reached there.
 */
export async function ensureDatabase(databaseUrl: string, setting = 'DATABASE_URL'): Promise<void> {
  const target = new URL(databaseUrl);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    throw new ConfigError(setting, `cannot connect to ${target.host}: ${describeConnectError(err)}`);
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

/** Whether every migration in the directory is recorded as run (node-pg-migrate's table, named by file without extension). */
async function migrationsApplied(databaseUrl: string): Promise<boolean> {
  const names = (await readdir(migrationsDir)).filter((f) => /\.(sql|ts|js)$/.test(f)).map((f) => f.replace(/\.[^.]+$/, ''));
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`SELECT name FROM pgmigrations`);
    // Exactly the same set: one run here but missing from the directory (an older version started) is for
    // node-pg-migrate to refuse.
    const known = new Set(names);
    return rows.length === names.length && rows.every((r) => known.has(r.name));
  } catch {
    return false; // no table yet: a new database
  } finally {
    await client.end();
  }
}

/**
 * Applies pending migrations; concurrent starters wait for each other on node-pg-migrate's advisory lock. A database
 * that has them all (every start but the first after an upgrade) is not handed to node-pg-migrate, which would load
 * every migration file to find nothing to do: a second a start, and memory a process keeps. When there are some to
 * apply, they are applied by a child process (storage/migrate-process.ts): node-pg-migrate and what it loads (jiti,
 * glob, the migration files; about 2 MB) would otherwise stay for good in a long-lived server (modules are never
 * unloaded). Its error, if any, is thrown here.
 */
export async function migrate(databaseUrl: string): Promise<void> {
  if (await migrationsApplied(databaseUrl)) return;
  const script = fileURLToPath(new URL('./migrate-process.ts', import.meta.url));
  await new Promise<void>((resolve, reject) => {
    // The URL (which may hold a password) in the environment, not on a command line others can read.
    const child = spawn(process.execPath, [script], { env: { ...process.env, MIGRATE_DATABASE_URL: databaseUrl }, stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) return resolve();
      const reason = stderr.trim().split('\n').filter((l) => l.trim() !== '').at(-1) ?? `exit ${code ?? signal}`;
      reject(new Error(`migrations failed: ${reason}`));
    });
  });
}

/** Applies pending migrations in this process (what the child process of `migrate` runs). */
export async function runMigrations(databaseUrl: string): Promise<void> {
  const { runner } = await import('node-pg-migrate');
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
