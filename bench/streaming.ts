// `npm run bench:streaming`: figures printed, not asserted. The streaming API (`/api/v1/streaming` over WebSocket)
// of one server process run as `npm start` runs it (ROLE=all):
//  1. latency: 1,000 accounts follow one author, each with a socket on `stream=user`, and 1,000 more sockets (the
//     same accounts' tokens) on `stream=public:local`; the author posts 3 times to warm up, then 20 times, 500 ms apart; each socket's
//     `update` for each status is timed from the moment the POST answered;
//  2. idle sockets: 10,000 more sockets on `stream=user` (many per account), opened by two child processes, the
//     server's resident memory before and after, and whether all are still open past one server ping (30 s).
// The same file is the child that holds idle sockets (when BENCH_STREAMING_CHILD is set), and the floor process
// (BENCH_STREAMING_FLOOR=1, when BENCH_STREAMING_FLOOR_SERVER is set): see floorServer().
// With REDIS_CLUSTER_NODES set (e.g. by `npm run cluster:up`), the servers, the floor process and this benchmark's
// own Redis clients use that Redis Cluster, with sharded pub/sub or not as REDIS_SHARDED_PUBSUB says (default on):
// the two are compared by running the benchmark once with each.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';

const ACCOUNTS = 1_000;
const POSTS = 20;
const POST_GAP_MS = 500;
/**
 * Posts made first and not counted (BENCH_STREAMING_WARMUP): the first events a freshly started streaming process
 * handles run code V8 has not optimized yet. Over 23 rounds with one warm-up post, the slowest socket
 * of the next two posts averaged 107–110 ms against 78 ms for posts 6–20; a streaming process that has been running
 * has long since compiled that code. Their figures are printed on their own line.
 */
const WARMUP_POSTS = Math.max(1, Number(process.env.BENCH_STREAMING_WARMUP ?? 3));
const IDLE_SOCKETS = 10_000;
const IDLE_CHILDREN = 2;
const SETUP_CONCURRENCY = 16;
const OPEN_CONCURRENCY = 100;
const QUIET_MS = 5_000;
/** The server pings every 30 s (http/streaming/routes.ts); the idle sockets are checked a little after that. */
const PAST_ONE_PING_MS = 35_000;
const PORT = 3920;
const INSPECT_PORT = 9329;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` over `items`, at most `limit` at a time, in order of start. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * One WebSocket, resolved once open (rejected on a refused handshake or after 30 s). `setUp` attaches listeners
 * before the handshake ends: a message arriving with the handshake's answer is emitted before `open` resolves.
 */
function openSocket(url: string, headers: Record<string, string> = {}, setUp: (ws: WebSocket) => void = () => {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    setUp(ws);
    const timer = setTimeout(() => { ws.terminate(); reject(new Error('timeout')); }, 30_000);
    ws.once('open', () => { clearTimeout(timer); resolve(ws); });
    ws.once('unexpected-response', (_req, res) => { clearTimeout(timer); ws.terminate(); reject(new Error(`HTTP ${res.statusCode}`)); });
    ws.once('error', (err) => { clearTimeout(timer); reject(err); });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The child: holds idle sockets for the parent and answers its questions over IPC.

/** A latency socket as a client process reports it: when each `update` came (by status id), errors, whether it closed. */
interface LatencyReport {
  group: string;
  channel: string;
  arrivals: [string, number][];
  errors: string[];
  closed: boolean;
}
type LatencySpec = { url: string; headers: Record<string, string>; group: string; channel: string };
type ToChild =
  | { type: 'open'; url: string; tokens: string[]; count: number; concurrency: number } | { type: 'status' } | { type: 'close' }
  | { type: 'latency-open'; sockets: LatencySpec[]; concurrency: number }
  | { type: 'latency-collect'; ids: string[]; waitMs: number }
  | { type: 'latency-close' };
type FromChild =
  | { type: 'opened'; opened: number; failed: number; firstError: string | null; ms: number }
  | { type: 'status'; open: number; closed: number; pinged: number; messages: number; errors: number; firstError: string | null; closeCodes: Record<string, number> }
  | { type: 'closed' }
  | { type: 'latency-opened'; opened: number; failed: number; firstError: string | null }
  | { type: 'latency-report'; sockets: LatencyReport[] }
  | { type: 'latency-closed' };

/**
 * Milliseconds on the machine's monotonic clock (CLOCK_MONOTONIC, the same in every process), so that a time noted
 * by a client process and one noted by the benchmark compare.
 */
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function child(): Promise<void> {
  const sockets: WebSocket[] = [];
  let closed = 0;
  let messages = 0;
  let errors = 0;
  let firstStreamError: string | null = null;
  const pinged = new Set<WebSocket>();
  const closeCodes: Record<string, number> = {};
  const send = (m: FromChild) => process.send!(m);
  // Whatever happens to the parent, this process does not outlive it.
  process.on('disconnect', () => process.exit(0));
  const latency: Listener[] = [];
  process.on('message', async (m: ToChild) => {
    if (m.type === 'latency-open') {
      let failed = 0;
      let firstError: string | null = null;
      await pool(m.sockets, m.concurrency, async (spec) => {
        try {
          latency.push(await latencySocket(spec));
        } catch (err) {
          failed += 1;
          firstError ??= String((err as Error).message ?? err);
        }
      });
      // Messages are noted with their time as they come and read between posts, once none has come for 150 ms: kept
      // unread to the end, 20 posts' messages (tens of MB) would make this process's own collections, in the middle of
      // a post's arrivals, part of the figures.
      setInterval(() => {
        if (now() - lastArrival > 150) for (const l of latency) if (l.unread.length > 0) settle(l);
      }, 50).unref();
      send({ type: 'latency-opened', opened: latency.length, failed, firstError });
    } else if (m.type === 'latency-collect') {
      // Stragglers are waited for, up to waitMs.
      const end = now() + m.waitMs;
      const complete = () => {
        for (const l of latency) settle(l);
        return latency.every((l) => l.closed || m.ids.every((id) => l.arrivals.has(id)));
      };
      while (!complete() && now() < end) await sleep(100);
      send({ type: 'latency-report', sockets: latency.map((l) => ({ group: l.group, channel: l.channel, arrivals: [...l.arrivals], errors: l.errors, closed: l.closed })) });
    } else if (m.type === 'latency-close') {
      await closeAll(latency.splice(0).map((l) => l.ws));
      send({ type: 'latency-closed' });
    } else if (m.type === 'open') {
      const started = performance.now();
      let failed = 0;
      let firstError: string | null = null;
      await pool(Array.from({ length: m.count }, (_, i) => i), m.concurrency, async (i) => {
        try {
          const ws = await openSocket(m.url, { authorization: `Bearer ${m.tokens[i % m.tokens.length]}` }, (s) => {
            s.on('ping', () => pinged.add(s));
            // Idle: nobody posts, so whatever comes is an error message (a subscription the server failed).
            s.on('message', (data) => {
              messages += 1;
              const text = String(data);
              if (text.startsWith('{"error"')) {
                errors += 1;
                firstStreamError ??= text;
              }
            });
            s.on('error', () => {});
          });
          ws.on('close', (code) => { closed += 1; closeCodes[code] = (closeCodes[code] ?? 0) + 1; });
          sockets.push(ws);
        } catch (err) {
          failed += 1;
          firstError ??= String((err as Error).message ?? err);
        }
      });
      send({ type: 'opened', opened: sockets.length, failed, firstError, ms: performance.now() - started });
    } else if (m.type === 'status') {
      send({ type: 'status', open: sockets.filter((s) => s.readyState === WebSocket.OPEN).length, closed, pinged: pinged.size, messages, errors, firstError: firstStreamError, closeCodes });
    } else if (m.type === 'close') {
      await Promise.all(sockets.map((s) => new Promise<void>((resolve) => {
        if (s.readyState === WebSocket.CLOSED) return resolve();
        s.once('close', () => resolve());
        s.close(1000);
        setTimeout(() => { s.terminate(); resolve(); }, 5_000).unref();
      })));
      send({ type: 'closed' });
      process.disconnect();
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The parent.

/** A process's resident memory now (VmRSS), in KB. */
function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** A process's limit on open files (soft, hard), as /proc shows it. */
function openFileLimit(pid: number | 'self'): { soft: number; hard: number } {
  const m = /Max open files\s+(\S+)\s+(\S+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  const n = (s: string | undefined) => (s === 'unlimited' ? Infinity : Number(s));
  return { soft: n(m?.[1]), hard: n(m?.[2]) };
}

/** A session on the server's inspector (Chrome DevTools Protocol over a WebSocket). */
async function inspector(port = INSPECT_PORT): Promise<{ call: (method: string, params?: object) => Promise<unknown>; close: () => void }> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const ws = await openSocket(target!.webSocketDebuggerUrl);
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { id?: number; result?: unknown };
    if (m.id !== undefined) pending.get(m.id)?.(m.result);
  });
  const call = (method: string, params: object = {}) => new Promise<unknown>((resolve, reject) => {
    const n = ++id;
    pending.set(n, resolve);
    ws.send(JSON.stringify({ id: n, method, params }));
    setTimeout(() => reject(new Error(`${method}: no answer`)), 30_000).unref();
  });
  return { call, close: () => ws.close() };
}

/**
 * The server's own view of its memory, through the inspector it was started with: a full garbage collection,
 * then `process.memoryUsage()`. Null if the inspector cannot be reached (the RSS figures stand without it).
 */
async function collectedMemory(): Promise<{ rss: number; heapUsed: number; external: number } | null> {
  try {
    const { call, close } = await inspector();
    try {
      await call('HeapProfiler.collectGarbage');
      await sleep(500);
      await call('HeapProfiler.collectGarbage');
      const r = (await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true })) as { result: { value: string } };
      const u = JSON.parse(r.result.value) as { rss: number; heapUsed: number; external: number };
      return { rss: u.rss / 1024, heapUsed: u.heapUsed / 1024, external: u.external / 1024 };
    } finally {
      close();
    }
  } catch {
    return null;
  }
}

/** A process and its children (a streaming process with STREAMING_PROCESSES > 1 runs its sockets in children). */
function withChildren(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return [pid, ...children];
}

/** CPU time so far, in clock ticks: the machine's (busy and all) and that of some processes. */
function cpuTicks(pids: number[]): { busy: number; total: number; procs: number[] } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3]! + (fields[4] ?? 0);
  const procs = pids.map((pid) => {
    const after = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(after[11]) + Number(after[12]); // utime and stime, fields 14 and 15
  });
  return { busy: total - idle, total, procs };
}

/** Shares of the machine's CPU between two readings (100% = every core busy). */
function cpuShares(a: ReturnType<typeof cpuTicks>, b: ReturnType<typeof cpuTicks>): { machine: number; procs: number[] } {
  const total = b.total - a.total || 1;
  return { machine: (100 * (b.busy - a.busy)) / total, procs: b.procs.map((p, i) => (100 * (p - a.procs[i]!)) / total) };
}

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? NaN;
  return { n: s.length, p50: at(0.5), p99: at(0.99), max: s.at(-1) ?? NaN, min: s[0] ?? NaN };
}
const ms = (x: number) => `${x.toFixed(1)} ms`;
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/** A latency socket: the arrival time of each `update`, by status id. */
interface Listener {
  ws: WebSocket;
  /** Which stream it measures (`user`, `public:local`). */
  group: string;
  /** The Redis channel its updates come through (for the time they were published). */
  channel: string;
  arrivals: Map<string, number>;
  /** Messages as they came (time, bytes), not yet read: reading them waits until the posting is over. */
  unread: [number, Buffer][];
  errors: string[];
  closed: boolean;
}

/**
 * Each message's arrival is noted with its bytes and nothing else: the 2,000 messages of a post are parsed after the
 * posting (settle()), so that parsing one socket's message does not delay the time noted for the next (this process
 * shares the machine's two cores with the server it measures).
 */
/** When a latency socket last got a message in this process (the messages are read once they stop coming). */
let lastArrival = 0;

function listen(ws: WebSocket, group: string, channel: string): Listener {
  const l: Listener = { ws, group, channel, arrivals: new Map(), unread: [], errors: [], closed: false };
  ws.on('message', (data: Buffer) => {
    lastArrival = now();
    l.unread.push([lastArrival, data]);
  });
  ws.on('close', () => { l.closed = true; });
  ws.on('error', () => {});
  return l;
}

/** Reads what a latency socket was sent: each `update`'s status id, with the time it came; error messages. */
function settle(l: Listener): void {
  for (const [at, data] of l.unread.splice(0)) {
    const m = JSON.parse(String(data)) as { event?: string; payload?: string; error?: string };
    if (m.error) l.errors.push(m.error);
    else if (m.event === 'update' && m.payload) {
      const id = (JSON.parse(m.payload) as { id: string }).id;
      if (!l.arrivals.has(id)) l.arrivals.set(id, at);
    }
  }
}

/** Opens a latency socket, listening from the handshake on. */
async function latencySocket(spec: LatencySpec): Promise<Listener> {
  let l: Listener | undefined;
  await openSocket(spec.url, spec.headers, (ws) => { l = listen(ws, spec.group, spec.channel); });
  return l!;
}

function spawnChild(): ChildProcess {
  // Each child raises its own limit on open files before it starts (a no-op when the limit already allows it).
  const script = fileURLToPath(import.meta.url);
  return spawn('sh', ['-c', 'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, script], {
    env: { ...process.env, BENCH_STREAMING_CHILD: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function ask<T extends FromChild['type']>(c: ChildProcess, message: ToChild, answer: T): Promise<Extract<FromChild, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: FromChild) => {
      if (m.type !== answer) return;
      c.off('message', onMessage);
      c.off('exit', onExit);
      resolve(m as Extract<FromChild, { type: T }>);
    };
    const onExit = (code: number | null) => reject(new Error(`client process exited (${code})`));
    c.on('message', onMessage);
    c.once('exit', onExit);
    c.send(message);
  });
}

/** Closes sockets, waiting up to 5 s for each close handshake. */
function closeAll(sockets: WebSocket[]): Promise<unknown> {
  return Promise.all(sockets.map((ws) => new Promise<void>((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve();
    ws.once('close', () => resolve());
    ws.close(1000);
    setTimeout(() => { ws.terminate(); resolve(); }, 5_000).unref();
  })));
}

/**
 * BENCH_STREAMING_FLOOR=1: the latency sockets are held, in place of the streaming process, by a bare `ws` server
 * that does the least a streaming server can: it listens to the same Redis channels, and for each `update` writes
 * one frame, made once per message with a sample status of a real post's size, to every socket of the stream (a
 * `user` socket names its account in `?account=`; no token, no rendering, no query), through the server's own write
 * path (http/streaming/frames.ts). Everything else (the posting process and its fan-out, PostgreSQL, Redis, the
 * client processes, the machine's two cores) is as in the real run, so the figures are this machine's floor for the
 * same measurement.
 */
async function floorServer(): Promise<void> {
  const { createServer } = await import('node:http');
  const { WebSocketServer } = await import('ws');
  const { redisConnection } = await import('../storage/redis.ts');
  const { HOME_SHARDS, streamChannels } = await import('../services/stream-events.ts');
  const { textFrame, writerOf } = await import('../http/streaming/frames.ts');
  type Write = ReturnType<typeof writerOf>;
  const prefix = process.env.FLOOR_CHANNEL_PREFIX!;
  const sample = JSON.parse(process.env.FLOOR_SAMPLE!) as Record<string, unknown>;
  const publicSockets = new Set<Write>();
  const homes = new Map<string, Set<Write>>();
  const http = createServer((req, res) => res.writeHead(req.url === '/health' ? 200 : 404).end());
  const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
  wss.on('connection', (ws, req) => {
    const query = new URL(req.url ?? '/', 'http://floor').searchParams;
    const write = writerOf(ws);
    const account = query.get('account');
    const set = query.get('stream') === 'public:local' ? publicSockets : account ? (homes.get(account) ?? homes.set(account, new Set()).get(account)!) : null;
    set?.add(write);
    ws.on('close', () => set?.delete(write));
  });
  const frameOf = (stream: string, statusId: string) => textFrame(JSON.stringify({ stream: [stream], event: 'update', payload: JSON.stringify({ ...sample, id: statusId }) }));
  // On a cluster with sharded pub/sub, as the streaming server listens (http/streaming/bus.ts).
  const clusterNodes = (process.env.FLOOR_CLUSTER_NODES ?? '').split(',').filter(Boolean);
  const sharded = process.env.FLOOR_SHARDED === '1';
  const subscriber = redisConnection({ redisUrl: process.env.FLOOR_REDIS_URL!, redisClusterNodes: clusterNodes }, {}, { shardedSubscribers: sharded });
  const publicChannel = prefix + streamChannels.public(':local', false);
  subscriber.on(sharded ? 'smessage' : 'message', (channel: string, text: string) => {
    const m = JSON.parse(text) as { event: string; statusId: string; homes?: string[] };
    if (m.event !== 'update') return;
    if (channel === publicChannel) {
      const frame = frameOf('public:local', m.statusId);
      for (const write of publicSockets) write(frame);
      return;
    }
    const frame = frameOf('user', m.statusId);
    for (const id of m.homes ?? []) for (const write of homes.get(id) ?? []) write(frame);
  });
  const channels = [publicChannel, ...Array.from({ length: HOME_SHARDS }, (_, i) => prefix + streamChannels.homeShard(i))];
  // Sharded channels of different slots cannot share one SSUBSCRIBE.
  if (sharded) await Promise.all(channels.map((c) => subscriber.ssubscribe(c)));
  else await subscriber.subscribe(...channels);
  http.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}

async function main(): Promise<void> {
  const { dropDatabase, ensureDatabase, migrate } = await import('../storage/db.ts');
  const { connectRedis, createRedis, deleteKeysWithPrefix, mastersOf, redisConnection } = await import('../storage/redis.ts');
  const { isCluster } = await import('../storage/redis-keys.ts');
  const { HOME_SHARDS, homeShardOf, streamChannels } = await import('../services/stream-events.ts');
  const { accountMaker, api, benchSettings, peakRssMb, startServer, waitHealthy } = await import('./common.ts');

  const clusterEnv = Object.fromEntries(['REDIS_CLUSTER_NODES', 'REDIS_SHARDED_PUBSUB', 'DEPENDENCY_TIMEOUT_MS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));
  // The thousand accounts' passwords hashed cheaply: at argon2's default cost their registration took two minutes and
  // saturated both cores (set-up requests were answered 503 under the production bounds), and this benchmark
  // measures streaming, not sign-ups.
  const { env, config, base } = benchSettings(PORT, { PASSWORD_HASH_MEMORY_KIB: '1024', PASSWORD_HASH_TIME_COST: '1', ...clusterEnv });
  const wsBase = base.replace(/^http/, 'ws');
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const redis = createRedis(config);
  await connectRedis(redis, config);
  const onCluster = isCluster(redis);
  const sharded = onCluster && config.redisShardedPubsub;
  if (onCluster) console.log(`on the Redis Cluster of REDIS_CLUSTER_NODES (${config.redisClusterNodes.length} seeds), ${sharded ? 'sharded' : 'plain'} pub/sub`);
  /** Every node a subscription may be on: a cluster's plain subscriber connects to any node, replicas included. */
  const nodesOf = () => (isCluster(redis) ? redis.nodes(sharded ? 'master' : 'all') : [redis]);
  const children: ChildProcess[] = [];
  const sockets: WebSocket[] = [];
  let server: ChildProcess | null = null;
  // BENCH_STREAMING_SPLIT=1: the latency sockets are held by a process of its own (ROLE=streaming, as Mastodon runs
  // its streaming server), while the first process takes the posts and runs the workers.
  // BENCH_STREAMING_FLOOR=1: every round on the floor process (floorServer()); =alternate: odd rounds on it, even
  // rounds on the real streaming process, for figures taken in the same hour.
  const floorMode = process.env.BENCH_STREAMING_FLOOR;
  const split = floorMode === '1' || floorMode === 'alternate' || process.env.BENCH_STREAMING_SPLIT === '1';
  let streamer: ChildProcess | null = null;

  const stop = async () => {
    const s = server;
    server = null;
    if (!s || s.exitCode !== null || s.signalCode !== null) return;
    s.kill('SIGTERM');
    const killer = setTimeout(() => s.kill('SIGKILL'), 15_000);
    await new Promise((r) => s.once('exit', r));
    clearTimeout(killer);
  };
  /**
   * The server as `npm start` runs it, with an inspector (only there to let this benchmark ask for a garbage
   * collection before reading the heap). Its limit on open files is raised if it would not hold every socket.
   */
  const start = async (needed: number): Promise<{ pid: number; allowed: number; note: string }> => {
    server = startServer(env, { nodeFlags: [`--inspect=127.0.0.1:${INSPECT_PORT}`] });
    await waitHealthy(base);
    const pid = server.pid!;
    const limit = openFileLimit(pid);
    if (limit.soft >= needed) return { pid, allowed: needed, note: `the server's limit on open files is ${limit.soft}, enough` };
    const target = Math.max(needed + 1_000, 65_536);
    try {
      execFileSync('prlimit', ['--pid', String(pid), `--nofile=${target}:${Math.max(target, limit.hard)}`], { stdio: 'ignore' });
    } catch {
      // Without the privilege to raise the hard limit, the soft one goes as far as the hard one.
      try { execFileSync('prlimit', ['--pid', String(pid), `--nofile=${limit.hard}:${limit.hard}`], { stdio: 'ignore' }); } catch { /* as it is */ }
    }
    const now = openFileLimit(pid).soft;
    return { pid, allowed: Math.min(needed, now), note: `the server's limit on open files was ${limit.soft}, raised with prlimit to ${now}${now < needed ? ' (not enough for all)' : ''}` };
  };

  try {
    const first = await start(2 * ACCOUNTS + 500);
    if (first.allowed < 2 * ACCOUNTS + 500) throw new Error(`${first.note}: too few for ${2 * ACCOUNTS} sockets`);
    let pid = first.pid;

    // Set-up, through the API: an author, and 1,000 accounts that follow it and have read their home timeline once.
    let t = performance.now();
    const register = await accountMaker(base);
    const author = await register('author');
    const authorId = (await api(base, '/api/v1/accounts/verify_credentials', { token: author })).id as string;
    const tokens = await pool(Array.from({ length: ACCOUNTS }, (_, i) => i), SETUP_CONCURRENCY, (i) => register(`listener${i}`));
    const registerMs = performance.now() - t;
    t = performance.now();
    const accountIds = await pool(tokens, SETUP_CONCURRENCY, async (token) => {
      await api(base, `/api/v1/accounts/${authorId}/follow`, { method: 'POST', token });
      await api(base, '/api/v1/timelines/home', { token });
      return (await api(base, '/api/v1/accounts/verify_credentials', { token })).id as string;
    });
    const followMs = performance.now() - t;
    console.log(`\nset-up: ${ACCOUNTS} accounts registered in ${(registerMs / 1000).toFixed(1)} s, each following the author and reading home in ${(followMs / 1000).toFixed(1)} s (${SETUP_CONCURRENCY} at a time)`);

    // 1. Latency: a user socket (token in the header) and a public:local socket (token in the query) per account.
    // BENCH_STREAMING_ROUNDS=n: the latency part n times over the same set-up (in split mode each round on a streaming
    // process started afresh). BENCH_STREAMING_WAIT=file: before each round after the first, wait for that file to
    // appear (and remove it), so that a change to the streaming code can be tried on the same set-up.
    const rounds = Math.max(1, Number(process.env.BENCH_STREAMING_ROUNDS ?? 1));
    for (let round = 1; round <= rounds; round++) {
      if (round > 1 && process.env.BENCH_STREAMING_WAIT) {
        console.log(`round ${round}: waiting for ${process.env.BENCH_STREAMING_WAIT}`);
        while (!existsSync(process.env.BENCH_STREAMING_WAIT)) await sleep(500);
        rmSync(process.env.BENCH_STREAMING_WAIT, { force: true });
      }
      if (rounds > 1) console.log(`\nround ${round} of ${rounds}`);
      const floor = floorMode === '1' || (floorMode === 'alternate' && round % 2 === 1);
      t = performance.now();
      const channelPrefix = `${config.redisPrefix}stream:`;
      let socketBase = wsBase;
      if (split) {
        if (streamer && streamer.exitCode === null) {
          streamer.kill('SIGTERM');
          await new Promise((r) => streamer!.once('exit', r));
        }
        const streamingBase = base.replace(`:${PORT}`, `:${PORT + 1}`);
        if (floor) {
          // A post of the benchmark's own, as a follower sees it: the floor's sample payload, of a real post's size.
          await api(base, '/api/v1/statuses', { method: 'POST', token: author, body: { status: 'Streaming benchmark post (the floor\'s sample): a sentence or two, as posts go, for a thousand followers listening live. #streaming' } });
          const [sample] = await api(base, `/api/v1/accounts/${authorId}/statuses?limit=1`, { token: tokens[0] });
          streamer = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
            env: {
              ...process.env, BENCH_STREAMING_FLOOR_SERVER: '1', PORT: String(PORT + 1), FLOOR_REDIS_URL: config.redisUrl, FLOOR_CHANNEL_PREFIX: channelPrefix, FLOOR_SAMPLE: JSON.stringify(sample ?? {}),
              FLOOR_CLUSTER_NODES: config.redisClusterNodes.join(','), FLOOR_SHARDED: sharded ? '1' : '',
            },
            stdio: ['ignore', 'inherit', 'inherit'],
          });
        } else {
          streamer = startServer({ ...env, PORT: String(PORT + 1) }, { role: 'streaming', nodeFlags: [`--inspect=127.0.0.1:${INSPECT_PORT + 1}`] });
        }
        await waitHealthy(streamingBase);
        socketBase = streamingBase.replace(/^http/, 'ws');
        const processes = Number(process.env.STREAMING_PROCESSES ?? 1);
        if (floor) console.log(`latency sockets held by the floor process (BENCH_STREAMING_FLOOR: a bare ws server writing one prebuilt frame per message, pid ${streamer.pid})`);
        else console.log(`latency sockets held by a streaming process of their own (ROLE=streaming, pid ${streamer.pid}${processes > 1 ? `, sockets in ${processes} processes sharing the port: STREAMING_PROCESSES` : ''})`);
      }
      // The latency sockets are held by client processes of their own (BENCH_STREAMING_CLIENTS, 2 by default), each
      // with every n-th user and public socket: one process reading 2,000 sockets would itself put tens of milliseconds
      // between the first socket's message and the last one's, on the same two cores as the server.
      const specs: LatencySpec[] = [
        ...tokens.map((token, i) => ({ url: `${socketBase}/api/v1/streaming?stream=user${floor ? `&account=${accountIds[i]}` : ''}`, headers: { authorization: `Bearer ${token}` }, group: 'user', channel: `${channelPrefix}timeline:${accountIds[i]}` })),
        ...tokens.map((token) => ({ url: `${socketBase}/api/v1/streaming?stream=public:local&access_token=${encodeURIComponent(token)}`, headers: {}, group: 'public:local', channel: `${channelPrefix}timeline:public:local` })),
      ];
      const clientCount = Math.max(1, Number(process.env.BENCH_STREAMING_CLIENTS ?? 2));
      const clients = Array.from({ length: clientCount }, () => spawnChild());
      children.push(...clients);
      const opened = await Promise.all(clients.map((c, k) => ask(c, { type: 'latency-open', sockets: specs.filter((_, i) => i % clientCount === k), concurrency: Math.ceil(OPEN_CONCURRENCY / clientCount) }, 'latency-opened')));
      const openFailed = opened.reduce((n, o) => n + o.failed, 0);
      if (openFailed > 0) throw new Error(`${openFailed} latency sockets could not be opened: ${opened.find((o) => o.firstError)?.firstError}`);
      const openMs = performance.now() - t;
      // Subscriptions are not acknowledged: they are in place once the server's Redis connection listens to every
      // channel (each user socket: its home and its notifications; the homes' shards; one channel for public:local).
      // Waited for, 10 s at most.
      const pattern = `${channelPrefix}timeline:*`;
      // (The floor process listens to the public channel and every home shard, nothing else.)
      const expectedChannels = floor ? 1 + HOME_SHARDS : 2 * ACCOUNTS + 1 + new Set(accountIds.map(homeShardOf)).size;
      let channels = 0;
      // Counted on every node (sharded channels are listed by SHARDCHANNELS, on their master).
      const countChannels = async () => (await Promise.all(nodesOf().map((node) => (sharded ? node.pubsub('SHARDCHANNELS', pattern) : node.pubsub('CHANNELS', pattern)) as Promise<string[]>))).reduce((n, c) => n + c.length, 0);
      for (let i = 0; i < 100; i++) {
        channels = await countChannels();
        if (channels >= expectedChannels) break;
        await sleep(100);
      }
      await sleep(1_000);
      console.log(`latency sockets: ${specs.length} open in ${(openMs / 1000).toFixed(1)} s, held by ${clientCount} client processes; the server listens to ${channels} of ${expectedChannels} Redis channels`);

      // When each update was published (by the fan-out job or a follower's actor), as a Redis client of its own sees
      // it: the latency splits into the server's way to Redis and its way from Redis to the socket.
      const published = new Map<string, number>();
      // Sharded pub/sub has no pattern form: on a cluster with it, the spy SSUBSCRIBEs the channels updates are
      // published on (the home shards, public:local and the followers' own home channels), one per command.
      const spy = redisConnection(config, {}, { shardedSubscribers: sharded });
      const onPublished = (channel: string, text: string) => {
        const at = now();
        const m = JSON.parse(text) as { event: string; statusId?: string; homes?: string[] };
        if (m.event !== 'update') return;
        // A home shard's message stands for each home it names.
        for (const c of m.homes ? m.homes.map((id) => `${channelPrefix}${streamChannels.home(id)}`) : [channel]) {
          if (!published.has(`${c} ${m.statusId}`)) published.set(`${c} ${m.statusId}`, at);
        }
      };
      if (sharded) {
        spy.on('smessage', onPublished);
        const spied = [streamChannels.public(':local', false), ...Array.from({ length: HOME_SHARDS }, (_, i) => streamChannels.homeShard(i)), ...accountIds.map((id) => streamChannels.home(id))];
        await Promise.all(spied.map((c) => spy.ssubscribe(`${channelPrefix}${c}`)));
      } else {
        spy.on('pmessage', (_pattern: string, channel: string, text: string) => onPublished(channel, text));
        await spy.psubscribe(pattern);
      }

      // BENCH_CPU_PROFILE=dir: the server's CPU profile while posting (through the inspector), for a look at where time
      // goes; with BENCH_STREAMING_SPLIT=1, the streaming process's too.
      const profilers = process.env.BENCH_CPU_PROFILE ? [{ name: 'server', session: await inspector() }, ...(split && !floor ? [{ name: 'streaming', session: await inspector(INSPECT_PORT + 1) }] : [])] : [];
      for (const { session } of profilers) {
        await session.call('Profiler.enable');
        await session.call('Profiler.start');
        // BENCH_HEAP_PROFILE=1 with it: where allocation goes (garbage included), sampled every 16 KB.
        if (process.env.BENCH_HEAP_PROFILE) await session.call('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      }
      // Summed over a cluster's masters (its replicas apply the writes, and with plain pub/sub relay every message too).
      const redisCommands = async () => (await Promise.all(mastersOf(redis).map(async (node) => Number(/total_commands_processed:(\d+)/.exec(await node.info('stats'))?.[1])))).reduce((a, b) => a + b, 0);
      const commandsBefore = await redisCommands();
      const measured = [pid, process.pid, ...(streamer ? withChildren(streamer.pid!) : [])];
      const cpuBefore = cpuTicks(measured);
      // The warm-up posts first, not counted (WARMUP_POSTS).
      const posts: { id: string; sent: number; returned: number }[] = [];
      for (let i = -WARMUP_POSTS; i < POSTS; i++) {
        const sent = now();
        const status = await api(base, '/api/v1/statuses', { method: 'POST', token: author, body: { status: `Streaming benchmark post ${i < 0 ? '(warm-up)' : `${i + 1} of ${POSTS}`}: a sentence or two, as posts go, for a thousand followers listening live. #streaming` } });
        posts.push({ id: status.id as string, sent, returned: now() });
        await sleep(POST_GAP_MS);
      }
      // Stragglers are waited for, up to 10 s after the last post.
      const reports = (await Promise.all(clients.map((c) => ask(c, { type: 'latency-collect', ids: posts.map((p) => p.id), waitMs: 10_000 }, 'latency-report')))).flatMap((r) => r.sockets);
      const latencySockets = reports.map((r) => ({ ...r, arrivals: new Map(r.arrivals) }));
      const userSockets = latencySockets.filter((l) => l.group === 'user');
      const publicSockets = latencySockets.filter((l) => l.group === 'public:local');
      const cpu = cpuShares(cpuBefore, cpuTicks(measured));
      const commandsPerPost = (await redisCommands() - commandsBefore) / posts.length;
      for (const { name, session } of profilers) {
        const { profile } = (await session.call('Profiler.stop')) as { profile: unknown };
        if (process.env.BENCH_HEAP_PROFILE) {
          const { profile: heap } = (await session.call('HeapProfiler.stopSampling')) as { profile: unknown };
          mkdirSync(process.env.BENCH_CPU_PROFILE!, { recursive: true });
          writeFileSync(join(process.env.BENCH_CPU_PROFILE!, `streaming-posts-${name}${rounds > 1 ? `-${round}` : ''}.heapprofile`), JSON.stringify(heap));
        }
        session.close();
        mkdirSync(process.env.BENCH_CPU_PROFILE!, { recursive: true });
        writeFileSync(join(process.env.BENCH_CPU_PROFILE!, `streaming-posts-${name}${rounds > 1 ? `-${round}` : ''}.cpuprofile`), JSON.stringify(profile));
      }
      spy.disconnect();

      const report = (name: string, group: { channel: string; arrivals: Map<string, number>; errors: string[]; closed: boolean }[]) => {
        const latencies: number[] = [];
        const fromSent: number[] = [];
        const toRedis: number[] = [];
        const fromRedis: number[] = [];
        let missed = 0;
        const perPostMax: number[] = [];
        const slowestOf = (p: { id: string; returned: number }) => Math.max(...group.map((l) => (l.arrivals.get(p.id) ?? NaN) - p.returned).filter(Number.isFinite));
        // As counted before the warm-up posts were added: the 20 posts after the first (the later warm-up posts among them).
        const asBefore: number[] = [];
        for (const p of posts.slice(1, 1 + POSTS)) for (const l of group) {
          const at = l.arrivals.get(p.id);
          if (at !== undefined) asBefore.push(at - p.returned);
        }
        for (const p of posts.slice(WARMUP_POSTS)) {
          let worst = -Infinity;
          for (const l of group) {
            const at = l.arrivals.get(p.id);
            const pub = published.get(`${l.channel} ${p.id}`);
            if (pub !== undefined) toRedis.push(pub - p.returned);
            if (pub !== undefined && at !== undefined) fromRedis.push(at - pub);
            if (at === undefined) missed += 1;
            else {
              latencies.push(at - p.returned);
              fromSent.push(at - p.sent);
              worst = Math.max(worst, at - p.returned);
            }
          }
          perPostMax.push(worst);
        }
        const s = stats(latencies);
        const f = stats(fromSent);
        const r1 = stats(toRedis);
        const r2 = stats(fromRedis);
        const early = latencies.filter((x) => x < 0).length;
        const closed = group.filter((l) => l.closed).length;
        const silent = group.filter((l) => l.arrivals.size === 0).length;
        const errors = group.flatMap((l) => l.errors);
        console.log(`  stream=${name}: p50 ${ms(s.p50)}, p99 ${ms(s.p99)}, max ${ms(s.max)} over ${s.n} (post, socket) pairs; missed ${missed} of ${POSTS * group.length}${silent ? ` (${silent} sockets got no update at all)` : ''}${closed ? `; ${closed} sockets closed` : ''}${errors.length ? `; ${errors.length} error messages, e.g. "${errors[0]}"` : ''}`);
        console.log(`    from the POST being sent instead: p50 ${ms(f.p50)}, p99 ${ms(f.p99)}, max ${ms(f.max)}${early ? `; ${early} updates came before the POST's answer was read (counted as negative above)` : ''}`);
        console.log(`    split at Redis: published p50 ${ms(r1.p50)}, p99 ${ms(r1.p99)} after the POST's answer (${r1.n} (post, socket) pairs' publications seen); from there to the socket p50 ${ms(r2.p50)}, p99 ${ms(r2.p99)}`);
        const b = stats(asBefore);
        console.log(`    the ${WARMUP_POSTS} warm-up posts before them (not counted above; the first events a freshly started process handles), slowest socket of each: ${posts.slice(0, WARMUP_POSTS).map((p) => slowestOf(p).toFixed(0)).join(' ')} ms; counted the older way (the ${POSTS} posts after the first): p50 ${ms(b.p50)}, p99 ${ms(b.p99)}`);
        console.log(`    slowest socket per post (ms, from the answer): ${perPostMax.map((x) => (Number.isFinite(x) ? x.toFixed(0) : '-')).join(' ')}`);
      };
      const postStats = stats(posts.slice(WARMUP_POSTS).map((p) => p.returned - p.sent));
      console.log(`\nlatency from POST /api/v1/statuses answering to the \`update\` on each socket (${POSTS} posts ${POST_GAP_MS} ms apart after ${WARMUP_POSTS} warm-up posts, ${ACCOUNTS} followers; target p99 < 100 ms)`);
      report('user', userSockets);
      report('public:local', publicSockets);
      console.log(`  the POSTs themselves: p50 ${ms(postStats.p50)}, max ${ms(postStats.max)}`);
      const [serverCpu = 0, benchCpu = 0, ...streamerProcs] = cpu.procs;
      const streamerCpu = streamerProcs.reduce((a, b) => a + b, 0);
      console.log(`  CPU while posting (% of all ${cpus().length} cores): machine ${cpu.machine.toFixed(0)}%, server ${serverCpu.toFixed(0)}%${streamer ? `, streaming process ${streamerCpu.toFixed(0)}%` : ''}, this benchmark ${benchCpu.toFixed(0)}%, everything else (PostgreSQL, Redis, other work) ${(cpu.machine - serverCpu - streamerCpu - benchCpu).toFixed(0)}%; Redis commands per post: ${Math.round(commandsPerPost)} (all of Redis's clients)`);
      await Promise.all(clients.map((c) => ask(c, { type: 'latency-close' }, 'latency-closed').catch(() => undefined)));
      for (const c of clients) c.kill('SIGTERM');
      children.splice(0, children.length, ...children.filter((c) => !clients.includes(c)));
    }
    // BENCH_STREAMING_IDLE=0: the latency part only.
    if (process.env.BENCH_STREAMING_IDLE === '0') return;
    const latencyPeakMb = peakRssMb(pid);

    // 2. Idle sockets, on a server started afresh (same database and Redis): the set-up above (1,000 password
    // hashes, key pairs, follows) leaves the first one's resident memory at whatever the allocator kept, which
    // says nothing about sockets. A few hundred sockets are opened and closed first, so that what is loaded or
    // compiled once (and the server's Redis subscriber connection) is not counted per socket.
    await stop();
    const second = await start(IDLE_SOCKETS + 500);
    pid = second.pid;
    const idleCount = Math.min(IDLE_SOCKETS, second.allowed - 500);
    const warm: WebSocket[] = await pool(tokens.slice(0, 500), OPEN_CONCURRENCY, (token) => openSocket(`${wsBase}/api/v1/streaming?stream=user`, { authorization: `Bearer ${token}` }));
    await closeAll(warm);
    console.log(`\n${idleCount} idle sockets on stream=user (${ACCOUNTS} accounts' tokens, ${Math.ceil(idleCount / ACCOUNTS)} sockets each), opened by ${IDLE_CHILDREN} client processes, ${OPEN_CONCURRENCY} at a time each, on a restarted server warmed up by 500 sockets opened and closed; ${second.note}`);
    await sleep(QUIET_MS);
    const rssBefore = rssKb(pid);
    const gcBefore = await collectedMemory();

    for (let i = 0; i < IDLE_CHILDREN; i++) children.push(spawnChild());
    t = performance.now();
    const shares = children.map((_, i) => Math.floor(idleCount / IDLE_CHILDREN) + (i < idleCount % IDLE_CHILDREN ? 1 : 0));
    const rotate = (i: number) => { const k = Math.floor((i * tokens.length) / IDLE_CHILDREN); return [...tokens.slice(k), ...tokens.slice(0, k)]; };
    const opened = await Promise.all(children.map((c, i) => ask(c, { type: 'open', url: `${wsBase}/api/v1/streaming?stream=user`, tokens: rotate(i), count: shares[i]!, concurrency: OPEN_CONCURRENCY }, 'opened')));
    const openedAt = performance.now();
    const openCount = opened.reduce((n, o) => n + o.opened, 0);
    const failed = opened.reduce((n, o) => n + o.failed, 0);
    const firstError = opened.find((o) => o.firstError)?.firstError;
    console.log(`  opened ${openCount} in ${((openedAt - t) / 1000).toFixed(1)} s${failed ? `, ${failed} failed (first: ${firstError})` : ''}`);
    await sleep(QUIET_MS);
    const rssAfter = rssKb(pid);
    const gcAfter = await collectedMemory();
    const perSocket = (before: number, after: number) => `${((after - before) / Math.max(openCount, 1)).toFixed(1)} KB`;
    console.log(`  server RSS (VmRSS, after ${QUIET_MS / 1000} s quiet): ${mb(rssBefore)} before, ${mb(rssAfter)} after: ${perSocket(rssBefore, rssAfter)} per idle socket (target < 50 KB)`);
    if (gcBefore && gcAfter) {
      console.log(`  after a forced full GC (through the inspector): RSS ${mb(gcBefore.rss)} -> ${mb(gcAfter.rss)} (${perSocket(gcBefore.rss, gcAfter.rss)} per socket), JS heap used ${mb(gcBefore.heapUsed)} -> ${mb(gcAfter.heapUsed)} (${perSocket(gcBefore.heapUsed, gcAfter.heapUsed)}), external ${mb(gcBefore.external)} -> ${mb(gcAfter.external)} (${perSocket(gcBefore.external, gcAfter.external)})`);
    }

    const wait = PAST_ONE_PING_MS - (performance.now() - openedAt);
    if (wait > 0) await sleep(wait);
    const status = await Promise.all(children.map((c) => ask(c, { type: 'status' }, 'status')));
    const still = status.reduce((n, s) => n + s.open, 0);
    const closes = status.reduce((n, s) => n + s.closed, 0);
    const pinged = status.reduce((n, s) => n + s.pinged, 0);
    const errors = status.reduce((n, s) => n + s.errors, 0);
    const codes: Record<string, number> = {};
    for (const s of status) for (const [k, v] of Object.entries(s.closeCodes)) codes[k] = (codes[k] ?? 0) + v;
    console.log(`  ${Math.round(PAST_ONE_PING_MS / 1000)} s after the last one opened: ${still} of ${openCount} still open, ${closes} closed${closes ? ` (codes ${JSON.stringify(codes)})` : ''}; ${pinged} had been pinged by the server; ${status.reduce((n, s) => n + s.messages, 0)} messages received${errors ? `, ${errors} of them errors, e.g. ${status.find((s) => s.firstError)?.firstError}` : ''}`);
    console.log(`  server RSS then: ${mb(rssKb(pid))}`);
    await Promise.all(children.map((c) => ask(c, { type: 'close' }, 'closed').catch(() => undefined)));
    await sleep(QUIET_MS);
    console.log(`  server RSS ${QUIET_MS / 1000} s after all were closed: ${mb(rssKb(pid))}`);
    console.log(`\nserver peak memory (VmHWM): ${latencyPeakMb} MB in the latency part (set-up included), ${peakRssMb(pid)} MB in the idle one\n`);
  } finally {
    for (const ws of sockets) ws.terminate();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (streamer && streamer.exitCode === null) {
      streamer.kill('SIGTERM');
      await new Promise((r) => streamer!.once('exit', r));
    }
    await stop();
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropDatabase(config.databaseUrl);
    rmSync(env.DATA_DIR, { recursive: true, force: true });
  }
}

if (process.env.BENCH_STREAMING_CHILD) await child();
else if (process.env.BENCH_STREAMING_FLOOR_SERVER) await floorServer();
else await main();
