import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './listen.ts';

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Resolves once something accepts TCP connections on the port (or rejects after `ms`). */
async function listening(port: number, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on ${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A Redis of the test's own on a free port, with no persistence: stopped, it comes back empty, as after a crash. */
export class OwnRedis {
  private process: ChildProcess | null = null;
  readonly port: number;
  private readonly dir: string;
  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
  }

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort(), await mkdtemp(join(tmpdir(), 'fedi-redis-')));
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.process = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    await listening(this.port);
  }

  /** Redis keeps its connections but answers nothing (SIGSTOP), as a hung or swapped-out server would; `resume` ends it. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  resume(): void {
    this.process?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    const p = this.process;
    this.process = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }

  async remove(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A PostgreSQL cluster of the test's own (initdb in a temporary directory, trust authentication, user `postgres`) on
 * a free port. PostgreSQL refuses to run as root: as root, its programs run as the `postgres` user.
 */
export class OwnPostgres {
  readonly port: number;
  private readonly dir: string;
  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
  }

  static async start(): Promise<OwnPostgres> {
    const dir = await mkdtemp(join(tmpdir(), 'fedi-pg-'));
    const pg = new OwnPostgres(await freePort(), dir);
    if (process.getuid?.() === 0) await run('chown', ['postgres', dir]);
    await pg.as(join(PG_BIN, 'initdb'), ['-D', pg.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await pg.start();
    return pg;
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  /** The cluster's data directory (for `pg_ctl -D`, e.g. promoting a standby). */
  get dataDirectory(): string {
    return this.data;
  }

  /** The URL of a database in this cluster (created by the server, which creates its database if missing). */
  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /**
   * A streaming replica of this cluster (pg_basebackup -R: a standby following it over replication), started on a
   * free port of its own; read-only, with every database of this one. initdb's trust covers replication connections.
   */
  async startReplica(): Promise<OwnPostgres> {
    const dir = await mkdtemp(join(tmpdir(), 'fedi-pg-replica-'));
    const replica = new OwnPostgres(await freePort(), dir);
    if (process.getuid?.() === 0) await run('chown', ['postgres', dir]);
    await this.as(join(PG_BIN, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-D', replica.data, '-R', '-X', 'stream', '--no-sync']);
    await replica.start();
    return replica;
  }

  private async as(cmd: string, args: string[]): Promise<void> {
    if (process.getuid?.() === 0) await run('runuser', ['-u', 'postgres', '--', cmd, ...args]);
    else await run(cmd, args);
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
    await this.as(join(PG_BIN, 'pg_ctl'), ['-D', this.data, '-o', options, '-l', join(this.dir, 'log'), '-w', 'start']);
    await listening(this.port);
  }

  /** The postmaster's pid and its children's (backends, checkpointer, walwriter...), from the data directory's pid file. */
  async pids(): Promise<number[]> {
    const postmaster = Number((await readFile(join(this.data, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    const children = await run('pgrep', ['-P', String(postmaster)]).then((r) => r.stdout.split('\n').filter(Boolean).map(Number), () => []);
    return [postmaster, ...children];
  }

  /**
   * Every process of the cluster stops (SIGSTOP, the postmaster first so it starts no new child) and keeps its
   * sockets: a hung primary, a stalled disk or a network partition as a client sees it. `resume` ends it.
   */
  async pause(): Promise<void> {
    const [postmaster, ...children] = await this.pids();
    process.kill(postmaster!, 'SIGSTOP');
    // Children forked just before the postmaster stopped are found by a second look.
    for (const pid of new Set([...children, ...(await this.pids()).slice(1)])) process.kill(pid, 'SIGSTOP');
  }

  async resume(): Promise<void> {
    for (const pid of (await this.pids()).reverse()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Gone meanwhile.
      }
    }
  }

  /** `fast`: sessions are ended, transactions rolled back (a clean stop); `immediate`: as a crash. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.as(join(PG_BIN, 'pg_ctl'), ['-D', this.data, '-m', mode, '-w', 'stop']).catch(() => {});
  }

  async remove(): Promise<void> {
    // A cluster left paused would not stop.
    await this.resume().catch(() => {});
    await this.stop('immediate');
    await rm(this.dir, { recursive: true, force: true });
  }
}
