// A PgBouncer of the test's (or benchmark's) own in front of the machine's PostgreSQL (127.0.0.1:5432), in
// transaction pooling mode with a small pool, so that clients really share server connections.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './listen.ts';

export const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p)) ?? null;

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
}

export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  if (!PGBOUNCER) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  const port = await freePort();
  const backend = options.backend ?? { host: '127.0.0.1', port: 5432 };
  const logFile = join(dir, 'pgbouncer.log');
  const iniPath = join(dir, 'pgbouncer.ini');
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/pgbouncer`;
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
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), iniPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
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
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
