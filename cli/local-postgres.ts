// A PostgreSQL cluster of one's own on loopback (initdb, trust authentication, user `postgres`), with streaming
// replicas (pg_basebackup -R): used by the tests (in temporary directories, on free ports) and by
// `npm run cluster:up` (in its directory, on its ports; pg_ctl's postmaster outlives the script).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, listening } from './ports.ts';

const run = promisify(execFile);

/** PostgreSQL's programs: PG_BIN, else Debian's 15 (what the tests were written against), else the newest installed. */
export function pgBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const debian = '/usr/lib/postgresql/15/bin';
  if (existsSync(debian)) return debian;
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return newest ? `/usr/lib/postgresql/${newest}/bin` : debian;
}


export interface OwnPostgresOptions {
  /** The cluster's directory (data in `data/`, its log and socket beside it); default: a new temporary directory. */
  dir?: string;
  /** Default: a free port. */
  port?: number;
  /** Default 50; a standby needs at least its primary's. */
  maxConnections?: number;
}

/**
 * A PostgreSQL cluster of one's own (initdb, trust authentication, user `postgres`) on loopback, fsync off.
 * PostgreSQL refuses to run as root: as root, its programs run as the `postgres` user, which owns the directory.
 */
export class OwnPostgres {
  readonly port: number;
  private readonly dir: string;
  private readonly maxConnections: number;
  private constructor(port: number, dir: string, maxConnections: number) {
    this.port = port;
    this.dir = dir;
    this.maxConnections = maxConnections;
  }

  static async start(options: OwnPostgresOptions = {}): Promise<OwnPostgres> {
    const pg = new OwnPostgres(options.port ?? (await freePort()), await OwnPostgres.makeDir(options.dir, 'fedi-pg-'), options.maxConnections ?? 50);
    await pg.as(join(pgBin(), 'initdb'), ['-D', pg.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await pg.start();
    return pg;
  }

  /** A cluster started earlier in `dir` (by `npm run cluster:up`), to stop it. */
  static at(dir: string, port: number): OwnPostgres {
    return new OwnPostgres(port, dir, 50);
  }

  private static async makeDir(dir: string | undefined, prefix: string): Promise<string> {
    if (dir) await mkdir(dir, { recursive: true });
    const made = dir ?? (await mkdtemp(join(tmpdir(), prefix)));
    if (process.getuid?.() === 0) await run('chown', ['postgres', made]);
    return made;
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  /** The cluster's data directory (for `pg_ctl -D`, e.g. promoting a standby). */
  get dataDirectory(): string {
    return this.data;
  }

  /** Its directory (the data directory, its log file `log`, its socket). */
  get directory(): string {
    return this.dir;
  }

  /** The URL of a database in this cluster (created by the server, which creates its database if missing). */
  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /**
   * A streaming replica of this cluster (pg_basebackup -R: a standby following it over replication), started on a
   * free port of its own (or `options.port`); read-only, with every database of this one. initdb's trust covers
   * replication connections.
   */
  async startReplica(options: OwnPostgresOptions = {}): Promise<OwnPostgres> {
    const dir = await OwnPostgres.makeDir(options.dir, 'fedi-pg-replica-');
    const replica = new OwnPostgres(options.port ?? (await freePort()), dir, options.maxConnections ?? this.maxConnections);
    await this.as(join(pgBin(), 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-D', replica.data, '-R', '-X', 'stream', '--no-sync']);
    await replica.start();
    return replica;
  }

  private async as(cmd: string, args: string[]): Promise<void> {
    if (process.getuid?.() === 0) await run('runuser', ['-u', 'postgres', '--', cmd, ...args]);
    else await run(cmd, args);
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=${this.maxConnections}`;
    await this.as(join(pgBin(), 'pg_ctl'), ['-D', this.data, '-o', options, '-l', join(this.dir, 'log'), '-w', 'start']);
    await listening(this.port);
  }

  /** The postmaster's pid, from the data directory's pid file (null when it is not running). */
  async postmasterPid(): Promise<number | null> {
    const pid = Number((await readFile(join(this.data, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
    return pid > 0 ? pid : null;
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
    await this.as(join(pgBin(), 'pg_ctl'), ['-D', this.data, '-m', mode, '-w', 'stop']).catch(() => {});
  }

  async remove(): Promise<void> {
    // A cluster left paused would not stop.
    await this.resume().catch(() => {});
    await this.stop('immediate');
    await rm(this.dir, { recursive: true, force: true });
  }
}

export { freePort, listening } from './ports.ts';
