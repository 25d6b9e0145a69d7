// `node bench/side-by-side.ts`: figures printed, not asserted. This server next to GoToSocial 0.19.2, as an operator
// comparing servers would see them: both over plain http on loopback, each with one account holding 20 plain posts
// in its home timeline, the runs alternating between the two (the first of each round swaps) for BENCH_ROUNDS rounds
// (3 unless told):
//  a) reading: GET /api/v1/timelines/home?limit=20, 10 connections, 10 s after a warm-up: req/s, p50/p99, bytes;
//  b) posting: POST /api/v1/statuses (plain text, each post's text its own) from that one account, 32 connections,
//     10 s: posts/s, p50/p99;
// with each server process's CPU time per request (a figure that other work on the machine moves much less than
// req/s) and its resident memory (VmRSS) before and after. Ours runs as `npm start` runs it (one process, ROLE=all,
// rate limits on as by default, RATE_LIMIT_API_PER_5MIN raised as bench/run.ts does so that load is counted, never
// refused) on a database and Redis prefix of its own; its PostgreSQL and Redis are in neither its CPU nor its RSS
// figures, while GoToSocial (SQLite, in-process) has everything in its own process.
//
// GoToSocial is built and run outside the repository (nothing of it is committed): build it as
// ../shared/INTEROP.md (GoToSocial section) says; configure it for plain http on loopback (`protocol: http`, a
// loopback `bind-address` and `port`, `advanced-rate-limit-requests: 0`, `advanced-throttling-multiplier: 0`),
// create and confirm an account with its admin CLI, get it a `read write` token (app, /auth/sign_in with a cookie
// jar, /oauth/authorize, out-of-band code, /oauth/token; it answers 418 without a User-Agent), start it, then:
//   GTS_URL=http://127.0.0.3:8080 GTS_TOKEN=… node bench/side-by-side.ts
// Its posts stay between runs (ours starts from an empty database each time) and it gets slower as they pile up:
// start it from an empty database for a like-for-like run. GTS_PID names its process for the CPU and memory figures
// (else `pgrep -f 'gotosocial.*server start'`).
import { execSync, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import autocannonUntyped from 'autocannon';
import { Redis } from 'ioredis';
import { dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { accountMaker, benchSettings, cleanUpBench, rssMb, startServer, waitHealthy } from './common.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = 10;
const USER_AGENT = 'side-by-side-bench'; // GoToSocial answers 418 to requests without one
const POST_TEXT = 'A plain post for the side-by-side benchmark: a sentence or two of ordinary text, no links, no tags.';

// What of autocannon this file uses beyond bench/autocannon.d.ts: per-request hooks and bytes read.
type Request = { method?: string; path?: string; headers?: Record<string, string>; body?: string };
type Result = { duration: number; '2xx': number; requests: { average: number; total: number }; latency: { p50: number; p99: number }; throughput: { total: number }; errors: number; non2xx: number };
const autocannon = autocannonUntyped as unknown as (options: {
  url: string; connections: number; duration: number; headers?: Record<string, string>;
  requests?: (Request & { setupRequest?: (req: Request) => Request })[];
}) => Promise<Result>;

type Side = { name: string; base: string; token: string; pid: () => number };
type Figures = { rps: number; p50: number; p99: number; wireBytes: number; failed: number; ok: number; cpuUs: number };

function gtsSettings(): { base: string; token: string } {
  const base = process.env.GTS_URL?.replace(/\/$/, '');
  const token = process.env.GTS_TOKEN;
  if (!base || !token) {
    console.error('GTS_URL and GTS_TOKEN must be set (a running GoToSocial and a read+write token; see this file\'s header and ../shared/INTEROP.md).');
    process.exit(2);
  }
  return { base, token };
}

/**
 * Our server's port: BENCH_PORT if free, else one the system picks (the other benchmarks take fixed ports, and
 * another benchmark's server on ours would answer in its place).
 */
function ourPort(): Promise<number> {
  const wanted = Number(process.env.BENCH_PORT ?? 0);
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', () => reject(new Error(`BENCH_PORT ${wanted} is taken (another benchmark?)`)));
    probe.listen(wanted, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

function gtsPid(): number {
  if (process.env.GTS_PID) return Number(process.env.GTS_PID);
  const found = execSync(`pgrep -f '[g]otosocial.*server start' || true`, { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  return found.length > 0 ? Number(found[0]) : NaN;
}

/**
 * CPU time (user + system) a process has used, in microseconds (/proc/<pid>/stat, clock ticks of 10 ms): per request,
 * a figure that other work on the machine moves much less than req/s. Only the server's own process: our
 * PostgreSQL and Redis are not in it, GoToSocial's SQLite is.
 */
function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return NaN;
  }
}

/** A JSON request to either server, with a User-Agent; a 4xx or 5xx stops the benchmark. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- set-up reads a few fields of known responses
async function call(side: Side, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${side.base}${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${side.token}`, 'user-agent': USER_AGENT, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (res.status >= 400) throw new Error(`${side.name} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Posts plain statuses until the account's home timeline shows at least 20; returns how many it shows. */
async function ensureTwentyPosts(side: Side): Promise<number> {
  const have = ((await call(side, '/api/v1/timelines/home?limit=20')) as unknown[]).length;
  for (let i = have; i < 20; i++) await call(side, '/api/v1/statuses', { status: `${POST_TEXT} (${i + 1})`, visibility: 'public' });
  for (let tries = 0; tries < 50; tries++) {
    const shown = ((await call(side, '/api/v1/timelines/home?limit=20')) as unknown[]).length;
    if (shown >= 20) return shown;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${side.name}: home timeline does not show 20 posts`);
}

/** The home page's body size, uncompressed (autocannon asks for no compression either). */
async function homeBodyBytes(side: Side): Promise<number> {
  const res = await fetch(`${side.base}/api/v1/timelines/home?limit=20`, { headers: { authorization: `Bearer ${side.token}`, 'user-agent': USER_AGENT, 'accept-encoding': 'identity' } });
  return (await res.arrayBuffer()).byteLength;
}

function figures(result: Result): Figures {
  return {
    rps: Math.round(result['2xx'] / result.duration), p50: result.latency.p50, p99: result.latency.p99,
    wireBytes: Math.round(result.throughput.total / Math.max(1, result.requests.total)), failed: result.errors + result.non2xx,
    ok: result['2xx'], cpuUs: NaN,
  };
}

/** A load run with the server process's CPU time per answered request, `settleMs` after it included (its jobs). */
async function withCpu(side: Side, run: () => Promise<Figures>, settleMs = 0): Promise<Figures> {
  const before = cpuMicros(side.pid());
  const f = await run();
  await new Promise((r) => setTimeout(r, settleMs));
  return { ...f, cpuUs: Math.round((cpuMicros(side.pid()) - before) / Math.max(1, f.ok)) };
}

async function loadHome(side: Side, duration = SECONDS): Promise<Figures> {
  const url = `${side.base}/api/v1/timelines/home?limit=20`;
  return figures(await autocannon({ url, connections: 10, duration, headers: { authorization: `Bearer ${side.token}`, 'user-agent': USER_AGENT } }));
}

let postNumber = 0;

/** One account posting on 32 connections; every request's text is its own. */
async function loadPosting(side: Side, duration = SECONDS): Promise<Figures> {
  const run = Date.now().toString(36);
  const setupRequest = (req: Request): Request => ({ ...req, body: JSON.stringify({ status: `${POST_TEXT} [${run}-${++postNumber}]`, visibility: 'public' }) });
  return figures(await autocannon({
    url: side.base, connections: 32, duration,
    headers: { authorization: `Bearer ${side.token}`, 'user-agent': USER_AGENT, 'content-type': 'application/json' },
    requests: [{ method: 'POST', path: '/api/v1/statuses', setupRequest }],
  }));
}

function line(label: string, f: Figures, unit: string): string {
  return `  ${label.padEnd(5)} ${String(f.rps).padStart(6)} ${unit}  p50 ${f.p50} ms  p99 ${f.p99} ms  CPU ${f.cpuUs} µs each${f.failed ? `  (${f.failed} failed or refused)` : ''}`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
}

function printSummary(rows: [string, number, number][]): void {
  console.log(`\nsummary (medians of ${ROUNDS} rounds; ratio = ours / GoToSocial)`);
  console.log(`  ${'measure'.padEnd(30)} ${'ours'.padStart(9)} ${'GoToSocial'.padStart(11)} ${'ratio'.padStart(7)}`);
  for (const [name, ours, gts] of rows) {
    console.log(`  ${name.padEnd(30)} ${String(Math.round(ours * 10) / 10).padStart(9)} ${String(Math.round(gts * 10) / 10).padStart(11)} ${(ours / gts).toFixed(2).padStart(7)}`);
  }
}

async function main() {
  const gts = gtsSettings();
  const port = await ourPort();
  const { env, config, base } = benchSettings(port, { RATE_LIMITS: 'true', RATE_LIMIT_API_PER_5MIN: '1000000000' });
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const server: ChildProcess = startServer(env);
  const redis = new Redis(config.redisUrl);
  try {
    await Promise.race([waitHealthy(base), new Promise((_, reject) => server.once('exit', (code) => reject(new Error(`server exited (${code}) before it was healthy`))))]);
    if (server.exitCode !== null) throw new Error(`our server exited (${server.exitCode}): is port ${port} taken?`);
    const ours: Side = { name: 'ours', base, token: await (await accountMaker(base, 'read write'))('bench'), pid: () => server.pid! };
    const theirs: Side = { name: 'GTS', ...gts, pid: gtsPid };
    const sides = [ours, theirs];
    for (const side of sides) {
      const shown = await ensureTwentyPosts(side);
      const bytes = await homeBodyBytes(side);
      console.log(`${side.name} (${side.base}, pid ${side.pid()}): home shows ${shown} posts, ${bytes} bytes of JSON`);
    }
    const rssBefore = sides.map((s) => rssMb(s.pid()));
    console.log(`RSS before: ours ${rssBefore[0]} MB, GoToSocial ${rssBefore[1]} MB`);

    for (const side of sides) await loadHome(side, 3);
    for (const side of sides) await loadPosting(side, 2);
    const home: Figures[][] = [[], []];
    const posting: Figures[][] = [[], []];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      console.log(`\nround ${round + 1}: home timeline (10 connections, ${SECONDS} s)`);
      for (const i of order) {
        home[i]!.push(await withCpu(sides[i]!, () => loadHome(sides[i]!)));
        console.log(`${line(sides[i]!.name, home[i]!.at(-1)!, 'req/s')}  ${home[i]!.at(-1)!.wireBytes} bytes/answer on the wire`);
      }
      console.log(`round ${round + 1}: posting from one account (32 connections, ${SECONDS} s)`);
      for (const i of order) {
        // 3 s after each run let background work (fan-out, jobs) settle; its CPU time counts to the posts.
        posting[i]!.push(await withCpu(sides[i]!, () => loadPosting(sides[i]!), 3000));
        console.log(line(sides[i]!.name, posting[i]!.at(-1)!, 'posts/s'));
      }
    }
    const rssAfter = sides.map((s) => rssMb(s.pid()));
    console.log(`\nRSS after: ours ${rssAfter[0]} MB, GoToSocial ${rssAfter[1]} MB`);

    const m = (runs: Figures[], k: keyof Figures) => median(runs.map((f) => f[k]));
    printSummary([
      ['home req/s', m(home[0]!, 'rps'), m(home[1]!, 'rps')],
      ['home p50 ms', m(home[0]!, 'p50'), m(home[1]!, 'p50')],
      ['home p99 ms', m(home[0]!, 'p99'), m(home[1]!, 'p99')],
      ['home CPU µs/req (process)', m(home[0]!, 'cpuUs'), m(home[1]!, 'cpuUs')],
      ['home bytes/answer (wire)', m(home[0]!, 'wireBytes'), m(home[1]!, 'wireBytes')],
      ['posting posts/s', m(posting[0]!, 'rps'), m(posting[1]!, 'rps')],
      ['posting p50 ms', m(posting[0]!, 'p50'), m(posting[1]!, 'p50')],
      ['posting p99 ms', m(posting[0]!, 'p99'), m(posting[1]!, 'p99')],
      ['posting CPU µs/post (process)', m(posting[0]!, 'cpuUs'), m(posting[1]!, 'cpuUs')],
      ['RSS before MB', rssBefore[0]!, rssBefore[1]!],
      ['RSS after MB', rssAfter[0]!, rssAfter[1]!],
    ]);
  } finally {
    if (server.exitCode === null && server.signalCode === null) await cleanUpBench(server, redis, config, env.DATA_DIR);
    else {
      // It stopped on its own: cleanUpBench would wait for an exit that has been.
      await deleteKeysWithPrefix(redis, config.redisPrefix);
      redis.disconnect();
      await dropDatabase(config.databaseUrl);
      rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  }
}

await main();
