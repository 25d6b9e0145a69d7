// `npm run bench:remote-media`: what copying other servers' media costs the rest of the server. Remote posts with one
// photo each (served by a loopback file server in this process) arrive signed at the shared inbox from a remote
// account followed by a reader and 100 other local accounts, and their photos are copied to our file host as they
// arrive; against the same posts with the copying jobs held (their queue paused, then let go and waited for) and
// against posts without attachments. Each round runs the three ways in turn (a different one first each round), and
// each way twice:
// - fan-out: BENCH_POSTS posts (200) as fast as 8 senders can deliver them, timed until every post is in the reader's
//   feed (the others' feeds are never built), with the reader's home read meanwhile;
// - reads: BENCH_PACED_POSTS posts (600) at BENCH_PACE a second (20), the reader's home-timeline requests per second
//   over that whole window. A burst's read rate swings from round to round by several times (the reader and fan-out
//   take each other's CPU in turns), so the reads are compared while posts arrive at a steady pace, as they do from
//   the servers one follows, long enough for copies to run beside them (a copy waits at most 10 s for fan-out to be
//   quiet).
// Held against copied tells what copying itself costs, apart from what a post with a photo costs anyway (its
// attachment's row and JSON, a larger timeline to render). Figures printed, never asserted.
import { spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { setPriority } from 'node:os';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import type { Redis } from 'ioredis';
import sharp from 'sharp';
import { Queue } from 'bullmq';
import { exportSpki, signRequest } from '@fedify/fedify';
import { createPool, ensureDatabase, migrate } from '../storage/db.ts';
import { connectRedis, createRedis } from '../storage/redis.ts';
import { HomeFeeds } from '../storage/feeds.ts';
import { PULL_QUEUE } from '../jobs/queues.ts';
import { seedFollowers } from './seed.ts';
import { accountMaker, api, benchSettings, cleanUpBench, stackCpuMs, startServer, waitHealthy } from './common.ts';

const PORT = Number(process.env.BENCH_PORT ?? 3970);
/** BENCH_ROUNDS: rounds (5 unless told), each way in turn. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const POSTS = Number(process.env.BENCH_POSTS ?? 200);
/** BENCH_PACED_POSTS posts (600) at BENCH_PACE a second (20) for the reads. */
const PACED_POSTS = Number(process.env.BENCH_PACED_POSTS ?? 600);
const PACE = Number(process.env.BENCH_PACE ?? 20);
const FOLLOWERS = 100;
const SENDERS = 8;
/** BENCH_ONLY=media, held or plain: that way alone in every round, a burst (BENCH_ONLY_PACED=true: paced), to profile one; no ratio printed. */
const ONLY = process.env.BENCH_ONLY;
/** BENCH_READ_CONNECTIONS: the reader's connections (16); 0 measures fan-out alone. */
const READ_CONNECTIONS = Number(process.env.BENCH_READ_CONNECTIONS ?? 16);
const SPLIT = process.env.BENCH_SPLIT === 'true';
// BENCH_IDLE_SPINNER=true: a process that only spins, in the idle scheduling class at nice 19 (as the picture process
// runs), for the whole run: what CPU work at the lowest priority costs the reader on this machine, whatever the work.
const IDLE_SPINNER = process.env.BENCH_IDLE_SPINNER === 'true';
// BENCH_WORKER_NICE=n (with BENCH_SPLIT): the worker process at that nice value, to see what CPU priority alone does.
const { env, config, base } = benchSettings(PORT, { ALLOW_PRIVATE_ADDRESSES: 'true' });
const AS = 'https://www.w3.org/ns/activitystreams';

/** The other server (plain JavaScript, run in a worker thread): its actor, with the key given, and its photos. */
const REMOTE_SERVER = `
const { createServer } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { photo, pem, gets } = workerData;
let actor;
const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (url.startsWith('/media/')) {
    Atomics.add(gets, 0, 1);
    return void res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': photo.length }).end(photo);
  }
  if (url === '/users/far' || url.startsWith('/users/far#')) {
    return void res.writeHead(200, { 'content-type': 'application/activity+json' }).end(JSON.stringify(actor));
  }
  res.writeHead(404).end();
});
server.listen(0, '127.0.0.1', () => {
  const origin = 'http://127.0.0.1:' + server.address().port;
  const far = origin + '/users/far';
  actor = {
    '@context': ['${AS}', 'https://w3id.org/security/v1'], id: far, type: 'Person', preferredUsername: 'far', inbox: far + '/inbox', outbox: far + '/outbox',
    followers: far + '/followers', endpoints: { sharedInbox: origin + '/inbox' }, publicKey: { id: far + '#main-key', owner: far, publicKeyPem: pem },
  };
  parentPort.postMessage(origin);
});
`;

type ReadResult = { requests: { total: number }; latency: { p99: number }; errors: number; non2xx: number };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], digits = 2) => `median ${median(xs).toFixed(digits)}, spread ${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const db = createPool(config.databaseUrl, 4);
  const redis = createRedis(config);
  await connectRedis(redis, config);
  const feeds = new HomeFeeds(redis, config.redisPrefix);
  // The queue the copying jobs (cacheRemoteMedia) run on, paused for the held way.
  const copyQueue = new Queue(PULL_QUEUE, { connection: redis, prefix: `${config.redisPrefix}bull` });

  // The remote server: its actor (with its key) and its files.
  const keys = await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']);
  const pem = await exportSpki(keys.publicKey);
  const photo = await sharp(randomBytes(320 * 240 * 3), { raw: { width: 320, height: 240, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();
  // Its server runs in a thread of its own: in this thread it took the CPU of the reader's load generator only while
  // photos were being fetched (the way with copies), and so counted against copying.
  const gets = new Int32Array(new SharedArrayBuffer(4));
  const remote = new Worker(REMOTE_SERVER, { eval: true, workerData: { photo, pem, gets } });
  const origin = await new Promise<string>((resolve, reject) => { remote.once('message', resolve); remote.once('error', reject); });
  const far = `${origin}/users/far`;


  // BENCH_SPLIT=true: a web process and a worker process (docs/scaling.md) rather than one with every role.
  const spinner = IDLE_SPINNER ? spawn('chrt', ['--idle', '0', 'nice', '-n', '19', process.execPath, '-e', 'for (;;);'], { stdio: 'inherit' }) : null;
  const server = startServer(env, SPLIT ? { role: 'web' } : {});
  const worker = SPLIT ? startServer(env, { role: 'worker' }) : null;
  if (worker?.pid && process.env.BENCH_WORKER_NICE) setPriority(worker.pid, Number(process.env.BENCH_WORKER_NICE));
  try {
    await waitHealthy(base);
    const reader = await (await accountMaker(base))('reader');
    const readerId = (await api(base, '/api/v1/accounts/verify_credentials', { token: reader })).id as string;
    // The remote account as stored on first sight, followed by the reader and by 100 others.
    const { rows: [farRow] } = await db.query<{ id: string }>(
      `INSERT INTO accounts (username, domain, uri, url, inbox_url, shared_inbox_url, followers_url, fetched_at)
       VALUES ('far', $1, $2, $2, $3, $4, $5, now()) RETURNING id`, [new URL(origin).host, far, `${far}/inbox`, `${origin}/inbox`, `${far}/followers`],
    );
    const others = await seedFollowers(db, farRow!.id, FOLLOWERS, 'fan');
    await db.query(`INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2)`, [readerId, farRow!.id]);
    await db.query(`UPDATE accounts SET followers_count = followers_count + 1 WHERE id = $1`, [farRow!.id]);
    // Only the reader's feed is watched: fan-out skips feeds never built (the others never read their home), as it should.
    void others;
    const watched = [readerId];
    // The reader's feed is built by a first read (fan-out then keeps it), also when nothing reads it meanwhile.
    await api(base, '/api/v1/timelines/home', { token: reader });

    let seq = 0;
    let retried = 0;
    async function deliver(withMedia: boolean): Promise<string> {
      const n = ++seq;
      const id = `${far}/statuses/${n}`;
      const note = {
        id, type: 'Note', attributedTo: far, content: `<p>Post ${n}: ${'a few words about the day. '.repeat(4)}</p>`, published: new Date().toISOString(),
        to: [`${AS}#Public`], cc: [`${far}/followers`],
        attachment: withMedia ? [{ type: 'Document', mediaType: 'image/jpeg', url: `${origin}/media/${n}.jpg`, name: `photo ${n}`, width: 320, height: 240 }] : [],
      };
      const body = JSON.stringify({ '@context': AS, id: `${id}/activity`, type: 'Create', actor: far, object: note, to: note.to, cc: note.cc });
      const request = new Request(`${base}/inbox`, { method: 'POST', body, headers: { 'content-type': 'application/activity+json', 'user-agent': 'bench-remote/1.0' } });
      // As a sending server does: a 503 or 429 (a loaded server shedding work) is tried again a little later.
      for (let attempt = 0; ; attempt++) {
        const res = await fetch(await signRequest(request.clone(), keys.privateKey, new URL(`${far}#main-key`), { spec: 'draft-cavage-http-signatures-12' }));
        await res.arrayBuffer();
        if (res.status < 300) return id;
        if ((res.status !== 503 && res.status !== 429) || attempt >= 20) throw new Error(`inbox answered ${res.status}`);
        retried++;
        await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
      }
    }

    /** CPU so far of the server process(es), their children (the picture process), PostgreSQL and Redis (ms). */
    async function cpuNow() {
      const web = await stackCpuMs(server.pid!, redis as Redis);
      if (!worker) return web;
      const other = await stackCpuMs(worker.pid!, redis as Redis);
      return { ...web, server: web.server + other.server, children: web.children + other.children };
    }

    type Way = 'media' | 'held' | 'plain';
    /**
     * One phase: POSTS posts sent SENDERS at a time (a burst), or PACED_POSTS at PACE a second, while the reader's home
     * is read; then waits for fan-out (and copies).
     */
    async function phase(way: Way, paced = false) {
      const count = paced ? PACED_POSTS : POSTS;
      const withMedia = way !== 'plain';
      if (way === 'held') await copyQueue.pause();
      const started = performance.now();
      // The reader's home is read while the posts arrive: from the first delivery until every post is in the feed, so
      // that each way's rate is the rate while its own posts come in (copies still running after that are timed apart).
      let readsDone!: (r: { result: ReadResult; ms: number }) => void;
      const reads = new Promise<{ result: ReadResult; ms: number }>((resolve) => { readsDone = resolve; });
      const readsStarted = performance.now();
      const tracker = READ_CONNECTIONS > 0
        ? autocannon({ url: `${base}/api/v1/timelines/home`, connections: READ_CONNECTIONS, duration: 300, headers: { authorization: `Bearer ${reader}` } },
          (err, result) => { if (err) throw err; readsDone({ result, ms: performance.now() - readsStarted }); })
        : { stop: () => readsDone({ result: { requests: { total: 0 }, latency: { p99: 0 }, errors: 0, non2xx: 0 }, ms: 1 }) };
      const uris: string[] = [];
      let next = 0;
      await Promise.all(Array.from({ length: SENDERS }, async () => {
        while (next < count) {
          // Paced: post n goes at n / PACE seconds from the start (or at once when the senders are behind).
          const due = paced ? started + (next * 1000) / PACE : 0;
          next++;
          if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
          uris.push(await deliver(withMedia));
        }
      }));
      const sent = performance.now() - started;
      let ids: string[] = [];
      let fanout = NaN;
      while (performance.now() - started < 120_000) {
        if (ids.length < uris.length) ids = (await db.query<{ id: string }>(`SELECT id FROM statuses WHERE uri = ANY($1)`, [uris])).rows.map((r) => r.id);
        if (ids.length === uris.length) {
          const pipeline = redis.pipeline();
          for (const account of watched) for (const id of ids) pipeline.zscore(feeds.key(account), id);
          const scores = (await pipeline.exec())!.map(([, s]) => s);
          if (scores.every((s) => s !== null)) { fanout = performance.now() - started; tracker.stop(); break; }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      tracker.stop();
      const { result, ms } = await reads;
      // Held copies let go with nothing else running: what each costs the machine, process by process.
      const cpuBefore = way === 'held' ? await cpuNow() : null;
      if (way === 'held') await copyQueue.resume();
      let copied = NaN;
      if (withMedia) {
        while (performance.now() - started < 300_000) {
          const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM media_attachments WHERE status_id = ANY($1::bigint[]) AND original_key IS NOT NULL`, [ids]);
          if (Number(rows[0]!.n) === uris.length) { copied = performance.now() - started; break; }
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const cpuAfter = cpuBefore ? await cpuNow() : null;
      const copyCpu = cpuBefore && cpuAfter
        ? { web: (cpuAfter.server - cpuBefore.server) / count, pictures: (cpuAfter.children - cpuBefore.children) / count, postgres: (cpuAfter.postgres - cpuBefore.postgres) / count, redis: (cpuAfter.redis - cpuBefore.redis) / count }
        : null;
      return { sentMs: sent, fanoutMs: fanout, copiedMs: copied, rps: Math.round(result.requests.total / (ms / 1000)), p99: result.latency.p99, errors: result.errors + result.non2xx, copyCpu };
    }

    // Warm-up (not counted): the key fetched, the caches and JIT warm.
    await phase('plain');
    type Phase = Awaited<ReturnType<typeof phase>>;
    type Round = Record<Way, { burst: Phase; paced: Phase }>;
    const rounds: Round[] = [];
    // Each round in another order of the three ways (each goes first, second and last in turn).
    const ORDERS: Way[][] = [['media', 'plain', 'held'], ['plain', 'held', 'media'], ['held', 'media', 'plain']];
    const s1 = (ms: number) => (ms / 1000).toFixed(1);
    for (let i = 0; i < ROUNDS; i++) {
      if (ONLY) {
        const p = await phase(ONLY as Way, process.env.BENCH_ONLY_PACED === 'true');
        console.log(`  ${ONLY}: sent in ${s1(p.sentMs)} s, in every watched feed after ${s1(p.fanoutMs)} s, home ${p.rps} req/s${p.copyCpu ? `; CPU per copy (ms) ${Object.entries(p.copyCpu).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}` : ''}`);
        continue;
      }
      const round = {} as Round;
      for (const way of ORDERS[i % ORDERS.length]!) round[way] = { burst: await phase(way), paced: await phase(way, true) };
      rounds.push(round);
      const line = (way: Way, label: string) => {
        const { burst, paced } = round[way];
        return `${label}: burst in every feed after ${s1(burst.fanoutMs)} s${way === 'media' ? ` (photos copied after ${s1(burst.copiedMs)} s)` : ''}, home ${burst.rps} req/s; paced home ${paced.rps} req/s (p99 ${paced.p99} ms, last post in the feed ${s1(paced.fanoutMs - paced.sentMs)} s after it was sent${way === 'media' ? `, photos copied ${s1(paced.copiedMs - paced.sentMs)} s after` : ''})`;
      };
      const errors = (['media', 'held', 'plain'] as Way[]).reduce((n, w) => n + round[w].burst.errors + round[w].paced.errors, 0);
      console.log(`  round ${i + 1}: ${line('media', 'with media')}  |  ${line('held', 'copies held')}  |  ${line('plain', 'without')}; errors ${errors}`);
    }
    if (ONLY) return;
    const copiedFiles = Number((await db.query(`SELECT count(*) AS n FROM cached_files WHERE kind = 'attachment'`)).rows[0].n);
    const total = ROUNDS * (POSTS + PACED_POSTS);
    console.log(`\n${total} remote posts with one ${Math.round(photo.length / 1024)} KB photo each (copied to our file host as they arrive), against ${total} with their copies held until fan-out ends and ${total} without photos; a round each way: a burst of ${POSTS} (${SENDERS} signed deliveries at a time to the shared inbox), then ${PACED_POSTS} at ${PACE} a second; the sender followed by the reader and ${FOLLOWERS} others; the reader's home read meanwhile (autocannon, ${READ_CONNECTIONS} connections, from the first delivery until every post is in the feed); ${SPLIT ? 'a web and a worker process' : 'one process with every role'}`);
    const rate = (p: Phase) => POSTS / (p.fanoutMs / 1000);
    const of = (f: (r: Round) => number) => rounds.map(f);
    console.log(`  burst, posts fanned out per second: with media ${spread(of((r) => rate(r.media.burst)), 0)}; copies held ${spread(of((r) => rate(r.held.burst)), 0)}; without ${spread(of((r) => rate(r.plain.burst)), 0)}`);
    console.log(`    with media / without: ${spread(of((r) => rate(r.media.burst) / rate(r.plain.burst)))}; with media / copies held: ${spread(of((r) => rate(r.media.burst) / rate(r.held.burst)))}`);
    console.log(`  burst, home req/s meanwhile: with media ${spread(of((r) => r.media.burst.rps), 0)}; copies held ${spread(of((r) => r.held.burst.rps), 0)}; without ${spread(of((r) => r.plain.burst.rps), 0)}`);
    console.log(`    with media / without: ${spread(of((r) => r.media.burst.rps / r.plain.burst.rps))}; with media / copies held: ${spread(of((r) => r.media.burst.rps / r.held.burst.rps))}`);
    console.log(`  paced (${PACE} posts a second), home req/s: with media ${spread(of((r) => r.media.paced.rps), 0)}; copies held ${spread(of((r) => r.held.paced.rps), 0)}; without ${spread(of((r) => r.plain.paced.rps), 0)}`);
    console.log(`    with media / without: ${spread(of((r) => r.media.paced.rps / r.plain.paced.rps))}; with media / copies held: ${spread(of((r) => r.media.paced.rps / r.held.paced.rps))}`);
    const copyCpu = (k: 'web' | 'pictures' | 'postgres' | 'redis') => spread(rounds.flatMap((r) => [r.held.burst.copyCpu![k], r.held.paced.copyCpu![k]]));
    console.log(`  CPU per copy (ms; held copies let go with nothing else running): ${SPLIT ? 'web and worker processes' : 'server process'} ${copyCpu('web')}; picture process ${copyCpu('pictures')}; PostgreSQL ${copyCpu('postgres')}; Redis ${copyCpu('redis')}`);
    console.log(`  photos copied per second (burst, from the first delivery): ${spread(of((r) => POSTS / (r.media.burst.copiedMs / 1000)), 0)}; ${copiedFiles} files in the ledger, ${Atomics.load(gets, 0)} GETs to the file server; ${retried} deliveries tried again after a 503 or 429\n`);
  } finally {
    spinner?.kill();
    await copyQueue.close();
    await db.end();
    await remote.terminate();
    if (worker && worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
    }
    await cleanUpBench(server, redis as Redis, config, env.DATA_DIR);
  }
}

await main();
