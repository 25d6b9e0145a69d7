import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, listening } from './ports.ts';

const run = promisify(execFile);

/**
 * A Redis Cluster of real `redis-server` processes on loopback: masters with replicas, `cluster-node-timeout` 1 s
 * (a replica takes over a failed master in about 2.5 s), nothing kept on disk but each node's nodes.conf (so a
 * restarted node rejoins). Used by the tests (processes owned by the test) and by `npm run cluster:up` (detached
 * processes that outlive the script, found again by their pid files).
 */
export interface RedisClusterNode {
  port: number;
  busPort: number;
  dir: string;
  process: ChildProcess | null;
}

export interface RedisClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** Where the nodes' directories go (default: a new temporary directory). */
  dir?: string;
  /** Ports to use (default: free ones). */
  ports?: number[];
  /** Processes that keep running after this one exits (the cluster script). */
  detached?: boolean;
}

export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

export class RedisCluster {
  readonly nodes: RedisClusterNode[];
  readonly dir: string;
  private readonly detached: boolean;
  private readonly masterCount: number;
  private readonly replicasPerMaster: number;

  private constructor(nodes: RedisClusterNode[], dir: string, detached: boolean, masterCount: number, replicasPerMaster: number) {
    this.nodes = nodes;
    this.dir = dir;
    this.detached = detached;
    this.masterCount = masterCount;
    this.replicasPerMaster = replicasPerMaster;
  }

  /**
   * Starts the nodes and makes them a cluster. Free ports are found before the nodes bind them, so another process
   * can take one meanwhile (a node then exits): a start that fails that way is tried again, on other ports.
   */
  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await RedisCluster.startOnce(options);
      } catch (err) {
        if (attempt >= 3 || options.ports) throw err;
      }
    }
  }

  private static async startOnce(options: RedisClusterOptions): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const count = masters * (1 + (options.replicasPerMaster ?? 1));
    const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'fedi-redis-cluster-')));
    const nodes: RedisClusterNode[] = [];
    for (let i = 0; i < count; i++) {
      const port = options.ports?.[i] ?? (await freePort());
      nodes.push({ port, busPort: await freePort(), dir: join(dir, String(port)), process: null });
    }
    const cluster = new RedisCluster(nodes, dir, options.detached ?? false, masters, options.replicasPerMaster ?? 1);
    try {
      for (const node of nodes) await cluster.spawnNode(node);
      await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas', String(options.replicasPerMaster ?? 1), '--cluster-yes'], { timeout: 30_000 });
      await cluster.waitUntilHealthy();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** `127.0.0.1:port,…`: the value of REDIS_CLUSTER_NODES. */
  get seeds(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  private async spawnNode(node: RedisClusterNode): Promise<void> {
    await mkdir(node.dir, { recursive: true });
    // A replica's first sync (at creation, and after a restarted master comes back as a replica) starts at once:
    // Redis's default waits 5 s for more replicas to share a diskless transfer, which was most of a start (7 s, now 2.4).
    const args = ['--port', String(node.port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(node.busPort),
      '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000', '--repl-diskless-sync-delay', '0', '--save', '', '--appendonly', 'no', '--dir', node.dir,
      '--pidfile', join(node.dir, 'redis.pid'), '--logfile', join(node.dir, 'redis.log')];
    node.process = spawn('redis-server', args, { stdio: 'ignore', detached: this.detached });
    if (this.detached) node.process.unref();
    await listening(node.port);
  }

  /** Until every node says the cluster is ok and agrees on who serves every slot. */
  async waitUntilHealthy(ms = 30_000, replicasPerMaster = this.replicasPerMaster): Promise<void> {
    const end = Date.now() + ms;
    for (;;) {
      const states = await Promise.all(this.running().map((n) => redisCli(n.port, 'cluster', 'info').catch(() => '')));
      // Replicas count only once they replicate: until then a failed master has nobody to take over.
      const replication = await Promise.all(this.running().map((n) => redisCli(n.port, 'info', 'replication').catch(() => '')));
      const replicating = replication.filter((r) => r.includes('role:slave') && r.includes('master_link_status:up')).length;
      if (states.every((s) => s.includes('cluster_state:ok')) && replicating >= this.masterCount * replicasPerMaster) {
        const check = await run('redis-cli', ['--cluster', 'check', `127.0.0.1:${this.running()[0]!.port}`], { timeout: 10_000 }).then(() => true, () => false);
        if (check) return;
      }
      if (Date.now() > end) throw new Error('the Redis Cluster did not become healthy');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private running(): RedisClusterNode[] {
    return this.nodes.filter((n) => n.process && n.process.exitCode === null && n.process.signalCode === null);
  }

  /** The running nodes that answer a PING within 1 s: a paused (SIGSTOP) node is still running but answers nothing. */
  private async answering(): Promise<RedisClusterNode[]> {
    const alive = await Promise.all(this.running().map((n) => run('redis-cli', ['-h', '127.0.0.1', '-p', String(n.port), 'ping'], { timeout: 1000 }).then(() => true, () => false)));
    return this.running().filter((_, i) => alive[i]);
  }

  /** The port of the master now serving a key's slot. */
  async masterOf(key: string): Promise<number> {
    const live = (await this.answering())[0]!;
    const slot = Number((await redisCli(live.port, 'cluster', 'keyslot', key)).trim());
    return this.masterOfSlot(slot);
  }

  async masterOfSlot(slot: number): Promise<number> {
    for (const node of await this.answering()) {
      const lines = (await redisCli(node.port, 'cluster', 'nodes').catch(() => '')).trim().split('\n');
      for (const line of lines) {
        const [, addr, flags, , , , , , ...ranges] = line.split(' ');
        if (!flags?.includes('master') || flags.includes('fail')) continue;
        for (const range of ranges) {
          const [from, to] = range.split('-').map(Number);
          if (slot >= from! && slot <= (to ?? from)!) return Number(addr!.split('@')[0]!.split(':')[1]);
        }
      }
      if (lines.length > 0) break;
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /** The ports of the current masters. */
  async masters(): Promise<number[]> {
    const node = (await this.answering())[0]!;
    const lines = (await redisCli(node.port, 'cluster', 'nodes')).trim().split('\n');
    return lines.filter((l) => {
      const flags = l.split(' ')[2] ?? '';
      return flags.includes('master') && !flags.includes('fail');
    }).map((l) => Number(l.split(' ')[1]!.split('@')[0]!.split(':')[1]));
  }

  private node(port: number): RedisClusterNode {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no node on ${port}`);
    return node;
  }

  /** A crash: the node's process is killed at once. */
  kill(port: number): void {
    const node = this.node(port);
    node.process?.kill('SIGKILL');
  }

  /** A hang: the node keeps its connections and answers nothing until `resume`. */
  pause(port: number): void {
    this.node(port).process?.kill('SIGSTOP');
  }

  resume(port: number): void {
    this.node(port).process?.kill('SIGCONT');
  }

  /** Starts a killed node again from its nodes.conf: it rejoins (as a replica once its slots moved on). */
  async restart(port: number): Promise<void> {
    await this.spawnNode(this.node(port));
  }

  /** Until a master other than `oldMaster` serves `slot`, and the cluster is healthy again. */
  async waitForFailover(oldMaster: number, slot: number, ms = 20_000): Promise<number> {
    const end = Date.now() + ms;
    for (;;) {
      const master = await this.masterOfSlot(slot).catch(() => oldMaster);
      if (master !== oldMaster) return master;
      if (Date.now() > end) throw new Error(`slot ${slot} still on ${oldMaster} after ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map(async (node) => {
      const p = node.process;
      node.process = null;
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      p.kill('SIGCONT');
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await exited;
    }));
  }

  /** Stops the nodes of a detached cluster started earlier in `dir` (by their pid files). */
  static async stopDetached(dir: string, ports: number[]): Promise<void> {
    for (const port of ports) {
      const pid = Number(await readFile(join(dir, String(port), 'redis.pid'), 'utf8').catch(() => '0'));
      if (pid > 0) try { process.kill(pid, 'SIGTERM'); } catch { /* already gone */ }
    }
  }
}
