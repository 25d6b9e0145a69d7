import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './listen.ts';
import { listening } from '../../cli/local-postgres.ts';

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

// The PostgreSQL of a test's own lives in cli/ (npm run cluster:up starts it too).
export { OwnPostgres } from '../../cli/local-postgres.ts';
