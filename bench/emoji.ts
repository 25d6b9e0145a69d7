// `npm run bench:emoji`: the home timeline of 20 posts that each use 10 custom emoji against the same timeline of 20
// plain posts, alternating rounds on one server, so that the cost of emoji on the read path is seen as a ratio.
// Each timeline is read uncompressed and as apps ask for it (brotli as browsers and Node's fetch ask, gzip alone as
// OkHttp does). Each uncompressed page is also sent by bare Fastify (the same bytes), and by bare Fastify waiting first for the client tracking's
// sync as a page served from memory does (storage/key-tracking.ts); each process's CPU time per request is measured
// as well as requests per second, which on a shared machine swing with others' load. Figures are printed, never asserted.
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { Redis } from 'ioredis';
import sharp from 'sharp';
import { createPool, ensureDatabase, migrate } from '../storage/db.ts';
import { connectRedis, createRedis } from '../storage/redis.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { createFileHost } from '../storage/filehost/index.ts';
import { addLocalEmoji } from '../services/custom-emojis.ts';
import { accountMaker, api, benchSettings, cleanUpBench, cpuMicros, startServer, waitHealthy } from './common.ts';

const PORT = Number(process.env.BENCH_PORT ?? 3950);
/** BENCH_ROUNDS: alternating rounds of each timeline (5 unless told), BENCH_SECONDS long each (5). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const EMOJI = 10;
const { env, config, base } = benchSettings(PORT, { METRICS_TOKEN: 'bench-metrics-token-0123456789' });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * `pid`: the process answering, whose CPU time per answered request is measured. `encoding`: the Accept-Encoding
 * asked with, as apps ask (none: as autocannon asks, the uncompressed bytes).
 */
async function load(token: string, pid: number, origin = base, encoding?: string) {
  // CPU time, unlike requests per second, is hardly moved by others' load.
  const cpuBefore = cpuMicros(pid);
  const headers = { authorization: `Bearer ${token}`, ...(encoding ? { 'accept-encoding': encoding } : {}) };
  const result = await autocannon({ url: `${origin}/api/v1/timelines/home`, connections: 32, duration: SECONDS, headers });
  const cpuUs = (cpuMicros(pid) - cpuBefore) / Math.max(1, result.requests.total);
  return { rps: Math.round(result.requests.average), p99: result.latency.p99, errors: result.errors + result.non2xx, cpuUs };
}

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const db = createPool(config.databaseUrl, 2);
  const redis = createRedis(config);
  await connectRedis(redis, config);
  const fileHost = await createFileHost(config, db);
  const versions = new CacheVersions(redis, config.redisPrefix);
  for (let i = 0; i < EMOJI; i++) {
    const image = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 20 * i, g: 120, b: 200, alpha: 1 } } }).png().toBuffer();
    await addLocalEmoji({ db, fileHost, versions }, { shortcode: `bench_emoji_${i}`, image, category: 'bench', visibleInPicker: true, overwrite: true });
  }
  const server = startServer(env);
  const bare: ChildProcess[] = [];
  try {
    await waitHealthy(base);
    const register = await accountMaker(base);
    const [plainReader, emojiReader, plainAuthor, emojiAuthor] = await Promise.all(['plain_reader', 'emoji_reader', 'plain_author', 'emoji_author'].map(register));
    for (const [reader, author] of [[plainReader!, plainAuthor!], [emojiReader!, emojiAuthor!]] as const) {
      const me = await api(base, '/api/v1/accounts/verify_credentials', { token: author });
      await api(base, `/api/v1/accounts/${me.id}/follow`, { method: 'POST', token: reader });
    }
    // Each post its own words (drawn from a vocabulary by a fixed-seed generator): repeated text would compress far
    // better than real posts do, and flatter the compressed figures.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const vocabulary = [...new Set(readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8').match(/\b[a-z]{3,8}\b/gi)!)];
    const words = (n: number) => Array.from({ length: n }, () => vocabulary[next() % vocabulary.length]).join(' ');
    const text = (i: number) => `Post ${i}: ${words(10)}, with a question about #fediverse? ${words(20)}.`;
    const codes = Array.from({ length: EMOJI }, (_, i) => `:bench_emoji_${i}:`).join(' ');
    for (let i = 0; i < 20; i++) {
      await api(base, '/api/v1/statuses', { method: 'POST', token: plainAuthor, body: { status: text(i) } });
      await api(base, '/api/v1/statuses', { method: 'POST', token: emojiAuthor, body: { status: `${text(i)} ${codes}` } });
    }
    await new Promise((r) => setTimeout(r, 1000));
    const pages = await Promise.all([plainReader!, emojiReader!].map(async (token, i) => {
      const res = await fetch(`${base}/api/v1/timelines/home`, { headers: { authorization: `Bearer ${token}` } });
      const body = Buffer.from(await res.arrayBuffer());
      // Bare Fastify serving the same bytes: what sending a page of that size costs, whatever made it.
      const file = join(env.DATA_DIR, `home-${i}.json`);
      writeFileSync(file, body);
      const port = PORT + 1 + i;
      const child = fork(fileURLToPath(new URL('./bare-server.ts', import.meta.url)), [], { env: { ...process.env, PORT: String(port), BODY_FILE: file }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      bare.push(child);
      await new Promise((r) => child.once('message', r));
      const barrierPort = PORT + 3 + i;
      const barrierChild = fork(fileURLToPath(new URL('./bare-server.ts', import.meta.url)), [], { env: { ...process.env, PORT: String(barrierPort), BODY_FILE: file, BARRIER: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      bare.push(barrierChild);
      await new Promise((r) => barrierChild.once('message', r));
      const entries = (JSON.parse(body.toString()) as { emojis: unknown[] }[]).reduce((n, s) => n + s.emojis.length, 0);
      return { bytes: body.length, entries, bare: `http://127.0.0.1:${port}`, barePid: child.pid!, barrier: `http://127.0.0.1:${barrierPort}`, barrierPid: barrierChild.pid! };
    }));
    // Warm-up: both pages rendered and cached before measuring.
    const pid = server.pid!;
    await load(plainReader!, pid);
    await load(emojiReader!, pid);
    type Load = Awaited<ReturnType<typeof load>>;
    const BR = 'gzip, deflate, br';
    const GZIP = 'gzip';
    const sizes = await Promise.all([plainReader!, emojiReader!].flatMap((token) => [BR, GZIP].map(async (encoding) => {
      const res = await fetch(`${base}/api/v1/timelines/home`, { headers: { authorization: `Bearer ${token}`, 'accept-encoding': encoding } });
      await res.arrayBuffer();
      return `${res.headers.get('content-encoding')} ${res.headers.get('content-length')} bytes`;
    })));
    await load(plainReader!, pid, base, BR);
    await load(emojiReader!, pid, base, BR);
    const rounds: { plain: Load; emoji: Load; plainBare: Load; emojiBare: Load; plainBarrier: Load; emojiBarrier: Load; plainBr: Load; emojiBr: Load; plainGzip: Load; emojiGzip: Load }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const plain = await load(plainReader!, pid);
      const plainBare = await load(plainReader!, pages[0]!.barePid, pages[0]!.bare);
      const plainBarrier = await load(plainReader!, pages[0]!.barrierPid, pages[0]!.barrier);
      const emoji = await load(emojiReader!, pid);
      const emojiBare = await load(emojiReader!, pages[1]!.barePid, pages[1]!.bare);
      const emojiBarrier = await load(emojiReader!, pages[1]!.barrierPid, pages[1]!.barrier);
      const plainBr = await load(plainReader!, pid, base, BR);
      const emojiBr = await load(emojiReader!, pid, base, BR);
      const emojiGzip = await load(emojiReader!, pid, base, GZIP);
      const plainGzip = await load(plainReader!, pid, base, GZIP);
      rounds.push({ plain, emoji, plainBare, emojiBare, plainBarrier, emojiBarrier, plainBr, emojiBr, plainGzip, emojiGzip });
    }
    const metrics = await (await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer bench-metrics-token-0123456789' } })).text();
    const pageCache = metrics.split('\n').filter((l) => /page_cache|home_page/.test(l) && !l.startsWith('#'));
    const ratios = rounds.map((r) => r.emoji.rps / r.plain.rps);
    const plainFloor = rounds.map((r) => r.plain.rps / r.plainBare.rps);
    const emojiFloor = rounds.map((r) => r.emoji.rps / r.emojiBare.rps);
    const spread = (xs: number[]) => `median ${median(xs).toFixed(2)}, spread ${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
    console.log(`\nhome timeline, 20 posts with ${EMOJI} custom emoji each (${pages[1]!.bytes} bytes, ${pages[1]!.entries} emoji entries) against 20 plain posts (${pages[0]!.bytes} bytes), each beside bare Fastify sending the same bytes; autocannon, 32 connections, ${ROUNDS} alternating rounds of ${SECONDS} s`);
    for (const [i, r] of rounds.entries()) {
      console.log(`  round ${i + 1}: plain ${r.plain.rps} req/s (bare ${r.plainBare.rps}, p99 ${r.plain.p99} ms)  |  emoji ${r.emoji.rps} req/s (bare ${r.emojiBare.rps}, p99 ${r.emoji.p99} ms)  |  emoji/plain ${ratios[i]!.toFixed(2)}; errors ${r.plain.errors + r.emoji.errors}`);
    }
    console.log(`  emoji/plain: ${spread(ratios)}`);
    console.log(`  compressed, as apps ask (plain br, plain gzip, emoji br, emoji gzip: ${sizes.join(', ')}):`);
    for (const [i, r] of rounds.entries()) {
      console.log(`  round ${i + 1}: br: plain ${r.plainBr.rps} req/s (p99 ${r.plainBr.p99} ms), emoji ${r.emojiBr.rps} (p99 ${r.emojiBr.p99} ms), emoji/plain ${(r.emojiBr.rps / r.plainBr.rps).toFixed(2)}  |  gzip: plain ${r.plainGzip.rps}, emoji ${r.emojiGzip.rps}, emoji/plain ${(r.emojiGzip.rps / r.plainGzip.rps).toFixed(2)}; errors ${r.plainBr.errors + r.emojiBr.errors + r.plainGzip.errors + r.emojiGzip.errors}`);
    }
    console.log(`  emoji/plain with brotli: ${spread(rounds.map((r) => r.emojiBr.rps / r.plainBr.rps))}; with gzip: ${spread(rounds.map((r) => r.emojiGzip.rps / r.plainGzip.rps))}`);
    console.log(`  compressed/uncompressed (req/s): plain br ${spread(rounds.map((r) => r.plainBr.rps / r.plain.rps))}, emoji br ${spread(rounds.map((r) => r.emojiBr.rps / r.emoji.rps))}`);
    console.log(`  home/bare with the same bytes: plain ${spread(plainFloor)}; emoji ${spread(emojiFloor)}`);
    console.log(`  bare with the tracking barrier (req/s): plain ${rounds.map((r) => r.plainBarrier.rps).join(', ')}; emoji ${rounds.map((r) => r.emojiBarrier.rps).join(', ')}`);
    // Requests per second swing with whatever else the machine runs; the CPU time each process spent per answer hardly does.
    const cpu = (pick: (r: (typeof rounds)[number]) => Load) => { const xs = rounds.map((r) => pick(r).cpuUs); return `${median(xs).toFixed(0)} µs (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`; };
    const cpuRatio = (a: (r: (typeof rounds)[number]) => Load, b: (r: (typeof rounds)[number]) => Load) => spread(rounds.map((r) => a(r).cpuUs / b(r).cpuUs));
    console.log(`  CPU per request, median (spread): plain home ${cpu((r) => r.plain)}, bare ${cpu((r) => r.plainBare)}, bare with barrier ${cpu((r) => r.plainBarrier)}; emoji home ${cpu((r) => r.emoji)}, bare ${cpu((r) => r.emojiBare)}, bare with barrier ${cpu((r) => r.emojiBarrier)}`);
    console.log(`  CPU per request compressed: plain br ${cpu((r) => r.plainBr)}, emoji br ${cpu((r) => r.emojiBr)}, plain gzip ${cpu((r) => r.plainGzip)}, emoji gzip ${cpu((r) => r.emojiGzip)}`);
    console.log(`  CPU per request, home/bare: plain ${cpuRatio((r) => r.plain, (r) => r.plainBare)}; emoji ${cpuRatio((r) => r.emoji, (r) => r.emojiBare)}; home/bare with barrier: plain ${cpuRatio((r) => r.plain, (r) => r.plainBarrier)}; emoji ${cpuRatio((r) => r.emoji, (r) => r.emojiBarrier)}; emoji/plain home ${cpuRatio((r) => r.emoji, (r) => r.plain)}`);
    console.log(`  home page cache (GET /metrics): ${pageCache.join('; ')}`);
  } finally {
    await db.end();
    fileHost.close?.();
    for (const child of bare) child.kill();
    await cleanUpBench(server, redis as Redis, config, env.DATA_DIR);
  }
}

await main();
