// What the benchmarks share: their own database and Redis prefix, the server as `npm start` runs it, a small API
// client for set-up, and the peak-memory reading.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../config.ts';
import { dropDatabase } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import type { Cluster, Redis } from 'ioredis';
import autocannon from 'autocannon';
import type { HomeFeeds } from '../storage/feeds.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Settings for a benchmark's server on `port`, with a database and Redis prefix of its own. */
export function benchSettings(port: number, extra: Record<string, string> = {}) {
  const tag = randomBytes(3).toString('hex');
  const env = {
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/fedi_bench_${tag}`,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `fedi_bench_${tag}:`,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'fedi-bench-')),
    LOCAL_DOMAIN: `127.0.0.1:${port}`,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMITS: 'false',
    ...extra,
  };
  return { tag, env, config: loadConfig(env), base: `http://127.0.0.1:${port}` };
}

import { startCommand } from '../cli/start-command.ts';
export { startCommand };

/** The server as `npm start` runs it, same flags and environment (with extra node flags and environment when given). */
export function startServer(env: Record<string, string>, options: { nodeFlags?: string[]; role?: string } = {}): ChildProcess {
  const start = startCommand();
  // BENCH_NODE_FLAGS: node flags after npm start's own, to try another setting (the last one given wins).
  const extra = process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
  return spawn(process.execPath, [...start.nodeFlags, ...extra, ...(options.nodeFlags ?? []), start.script], {
    cwd: root, env: { ...process.env, ...start.env, ...env, ...(options.role ? { ROLE: options.role } : {}) }, stdio: ['ignore', 'inherit', 'inherit'],
  });
}

export async function waitHealthy(base: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

/** JSON from the API, for set-up; a 4xx or 5xx stops the benchmark. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- benchmark set-up reads a few fields of known responses
export async function api(base: string, path: string, init: { method?: string; token?: string; body?: unknown } = {}): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  if (res.status >= 400) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Registers accounts through the API (an app, its token, then each account); returns a function making one. */
export async function accountMaker(base: string, scopes = 'read write follow'): Promise<(username: string) => Promise<string>> {
  const app = await api(base, '/api/v1/apps', { method: 'POST', body: { client_name: 'bench', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob', scopes } });
  const appToken = (await api(base, '/oauth/token', { method: 'POST', body: { grant_type: 'client_credentials', client_id: app.client_id, client_secret: app.client_secret, scope: scopes } })).access_token;
  return async (username) => (await api(base, '/api/v1/accounts', { method: 'POST', token: appToken, body: { username, email: `${username}@bench.example`, password: 'bench password', agreement: true, locale: 'en' } })).access_token as string;
}

/**
 * Starts a process's peak resident memory (VmHWM) over from its present size (Linux: `5` to clear_refs), so that a
 * phase's peak is not its set-up's. False where the kernel does not allow it.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A process's resident memory now (VmRSS), in MB; NaN once it has exited. */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** Samples a process's VmRSS (MB) every second into `samples` until `stop`, which returns them. */
export function sampleRss(pid: number): { samples: number[]; stop: () => number[] } {
  const samples = [rssMb(pid)];
  const timer = setInterval(() => samples.push(rssMb(pid)), 1000);
  return { samples, stop: () => (clearInterval(timer), samples.push(rssMb(pid)), samples) };
}

/** A process's peak resident memory (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/**
 * Milliseconds from `since` (performance.now()) until the status is in every one of these home feeds, polling
 * Redis every `everyMs`; NaN if it is not after `timeoutMs`.
 */
export async function untilInAllFeeds(redis: Redis | Cluster, feeds: HomeFeeds, accountIds: string[], statusId: string, since: number, everyMs = 10, timeoutMs = 30_000): Promise<number> {
  while (performance.now() - since < timeoutMs) {
    // Plain commands, not a pipeline (which a cluster confines to one node); auto-pipelining sends them at once.
    const scores = await Promise.all(accountIds.map((id) => redis.zscore(feeds.key(id), statusId)));
    if (scores.every((score) => score !== null)) return performance.now() - since;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return NaN;
}

/** Stops a benchmark's server and removes what it made: its Redis keys, its database and its data directory. */
export async function cleanUpBench(server: ChildProcess, redis: Redis, config: Config, dataDir?: string): Promise<void> {
  // A server that could not start has exited already: its exit is not waited for again.
  if (server.exitCode === null && server.signalCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
  await deleteKeysWithPrefix(redis, config.redisPrefix);
  redis.disconnect();
  await dropDatabase(config.databaseUrl);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

/** The median of the rounds (the mean of the middle two when they are even in number). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
}

/**
 * CPU time so far (user and system, in ms) of the server, of its child processes (the picture process, ffmpeg: those
 * running and those ended), of every PostgreSQL process and of Redis: unlike throughput, CPU time per post holds still
 * when other work shares the machine.
 */
export async function stackCpuMs(serverPid: number, redis: Redis): Promise<{ server: number; children: number; postgres: number; redis: number }> {
  const tick = 1000 / 100; // USER_HZ
  // Fields after the command name: [1] parent, [11] utime, [12] stime, [13] cutime, [14] cstime. Null once gone.
  const stat = (pid: string | number) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    } catch {
      return null;
    }
  };
  const comm = (pid: string) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      return ''; // gone meanwhile
    }
  };
  const serverStat = stat(serverPid);
  let postgres = 0;
  let children = serverStat ? (Number(serverStat[13]) + Number(serverStat[14])) * tick : 0; // those ended and reaped
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const name = comm(pid);
    if (name !== 'postgres') {
      const f = stat(pid);
      if (f && Number(f[1]) === serverPid) children += (Number(f[11]) + Number(f[12])) * tick;
      continue;
    }
    const f = stat(pid);
    if (!f) continue; // gone meanwhile
    // The postmaster (its parent is not PostgreSQL) with the CPU of its children that have ended: it reaps the
    // backends, so a connection closed meanwhile (an idle pool connection) does not take its CPU out of the sum.
    const ended = comm(f[1]!) !== 'postgres' ? Number(f[13]) + Number(f[14]) : 0;
    postgres += (Number(f[11]) + Number(f[12]) + ended) * tick;
  }
  const info = await redis.info('cpu');
  const redisCpu = 1000 * (Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]));
  return { server: serverStat ? (Number(serverStat[11]) + Number(serverStat[12])) * tick : 0, children, postgres, redis: redisCpu };
}

/** CPU time (user + system) a process has used, in microseconds (Linux: /proc/<pid>/stat, in clock ticks of 10 ms). */
export function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * One round of GETs at `url` (32 connections): requests per second, latencies and what failed; with the serving
 * process's `pid`, also its CPU time per request (µs), which other work on the machine changes much less than req/s.
 */
export async function loadPage(url: string, headers: Record<string, string>, duration: number, pid?: number) {
  const before = pid === undefined ? 0 : cpuMicros(pid);
  const result = await autocannon({ url, connections: 32, duration, headers });
  const cpuUs = pid === undefined ? NaN : (cpuMicros(pid) - before) / Math.max(1, result.requests.total);
  return { rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpuUs };
}

/** Home-timeline reads and posting on 32 connections each, one after the other, `seconds` each. */
export interface HomeAndPosting { homeRps: number; homeP99: number; postRps: number; postP99: number; errors: number }

export async function measureHomeAndPosting(base: string, reader: string, posters: string[], seconds: number): Promise<HomeAndPosting> {
  const home = await autocannon({ url: `${base}/api/v1/timelines/home`, connections: 32, duration: seconds, headers: { authorization: `Bearer ${reader}` } });
  let next = 0;
  const post = await autocannon({
    url: `${base}/api/v1/statuses`, method: 'POST', connections: 32, duration: seconds,
    body: JSON.stringify({ status: 'A post about the #fediverse, long enough to look like one: a sentence or two, with a link https://example.com/a/b.' }),
    setupClient: (client) => client.setHeaders({ 'content-type': 'application/json', authorization: `Bearer ${posters[next++ % posters.length]}` }),
  });
  return {
    homeRps: home.requests.average, homeP99: home.latency.p99, postRps: post['2xx'] / seconds, postP99: post.latency.p99,
    errors: home.errors + home.non2xx + post.errors + post.non2xx,
  };
}

/**
 * `authors` accounts of 4 posts each (a link and a hashtag) that the reader follows, and 8 accounts that post under
 * load: their tokens.
 */
export async function authorsAndPosters(base: string, register: (name: string) => Promise<string>, reader: string, authors: number): Promise<string[]> {
  for (let i = 0; i < authors; i++) {
    const token = await register(`author${i}`);
    const me = await api(base, '/api/v1/accounts/verify_credentials', { token });
    await api(base, `/api/v1/accounts/${me.id}/follow`, { method: 'POST', token: reader });
    for (let j = 0; j < 4; j++) await api(base, '/api/v1/statuses', { method: 'POST', token, body: { status: `Status ${j} by author ${i}, with a link https://example.com/${i}/${j} and #benchmarks. ${'More words. '.repeat(8)}` } });
  }
  const posters: string[] = [];
  for (let i = 0; i < 8; i++) posters.push(await register(`poster${i}`));
  return posters;
}
