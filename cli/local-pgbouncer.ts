// A PgBouncer of one's own in front of a PostgreSQL (the machine's, 127.0.0.1:5432, by default), in transaction
// pooling mode with a small pool, so that clients really share server connections. Used by the tests and the
// benchmark (a temporary directory, a free port, stopped with them) and by `npm run cluster:up` (in its directory,
// on its port, detached: it outlives the script and is stopped by its pid).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './local-postgres.ts';

/** Debian's pgbouncer, where it is now (null when not installed). */
export function findPgBouncer(): string | null {
  return ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p)) ?? null;
}

export const PGBOUNCER = findPgBouncer();

export interface PgBouncer {
  port: number;
  pid: number;
  /** Its ini (a failover rewrites the [databases] lines) and its admin console's URL. */
  iniPath: string;
  adminUrl: string;
  /** A URL of the database `name` through this PgBouncer. */
  url(name: string): string;
  /** Everything PgBouncer logged so far. */
  log(): string;
  /** PgBouncer's own statistics (SHOW POOLS / SHOW STATS): its admin console. */
  show(what: 'POOLS' | 'STATS' | 'SERVERS'): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  poolSize?: number;
  maxClientConn?: number;
  backend?: { host: string; port: number };
  /** Databases with a line of their own (`name = host=… port=… dbname=name`), besides the `*` fallback. */
  databases?: string[];
  /** Where its ini, log and pid file go (kept by `stop`); default: a new temporary directory (removed by `stop`). */
  dir?: string;
  /** Default: a free port. */
  port?: number;
  /** A process that keeps running after this one exits (its output only in its log file). */
  detached?: boolean;
}

/** Where a PgBouncer started in `dir` has its ini. */
export const pgBouncerIniPath = (dir: string) => join(dir, 'pgbouncer.ini');
/** The admin console of a PgBouncer started on `port`. */
export const pgBouncerAdminUrl = (port: number) => `postgres://postgres@127.0.0.1:${port}/pgbouncer`;

export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const binary = findPgBouncer();
  if (!binary) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  if (options.dir) mkdirSync(dir, { recursive: true });
  const port = options.port ?? (await freePort());
  const backend = options.backend ?? { host: '127.0.0.1', port: 5432 };
  const logFile = join(dir, 'pgbouncer.log');
  const iniPath = pgBouncerIniPath(dir);
  const adminUrl = pgBouncerAdminUrl(port);
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  writeFileSync(
    iniPath,
    [
      '[databases]',
      ...(options.databases ?? []).map((name) => `${name} = host=${backend.host} port=${backend.port} dbname=${name}`),
      // Any database name is passed on to PostgreSQL (each test makes its own).
      `* = host=${backend.host} port=${backend.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'admin_users = postgres',
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 3}`,
      'min_pool_size = 0',
      'reserve_pool_size = 0',
      `max_client_conn = ${options.maxClientConn ?? 500}`,
      `logfile = ${logFile}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: it then runs as postgres, which must own its files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    chownSync(dir, Number(ids.stdout), Number(gid.stdout));
    writeFileSync(logFile, '');
    chownSync(logFile, Number(ids.stdout), Number(gid.stdout));
  }
  let output = '';
  const detached = options.detached ?? false;
  const child: ChildProcess = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), iniPath], { stdio: ['ignore', detached ? 'ignore' : 'pipe', detached ? 'ignore' : 'pipe'], detached });
  if (detached) child.unref();
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8') + output;
    } catch {
      return output;
    }
  };
  const admin = async <T,>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 1000 });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => {});
    }
  };
  // Ready once its admin console answers.
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited at start:\n${log()}`);
    if (await admin((c) => c.query('SHOW VERSION')).then(() => true, () => false)) break;
    if (i > 100) {
      child.kill('SIGKILL');
      throw new Error(`pgbouncer did not start:\n${log()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    pid: child.pid!,
    iniPath,
    adminUrl,
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    log,
    show: (what) => admin(async (c) => (await c.query(`SHOW ${what}`)).rows),
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
      }
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
