// `npm run bench:cluster`: what a Redis Cluster costs against a single Redis, in one run. Two servers (as `npm start`
// runs them, each with its own database) run side by side, one on the machine's Redis and one on a 3-master Redis
// Cluster with a replica each (started here, real redis-server processes); the same work is done on both, in
// alternating rounds: the home timeline read, posting, and a fan-out to 10,000 followers. Besides the rates, the
// Redis CPU each side used (INFO cpu, summed over the masters) per request, for the capacity model in docs/scaling.md.
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { RedisCluster } from '../cli/redis-cluster.ts';
import { createPool, dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { HomeFeeds } from '../storage/feeds.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix, mastersOf, type RedisClient } from '../storage/redis.ts';
import { seedFollowers } from './seed.ts';
import { accountMaker, api, benchSettings, peakRssMb, startServer, untilInAllFeeds, waitHealthy } from './common.ts';

const PORT = Number(process.env.BENCH_PORT ?? 3950);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

interface Side {
  name: string;
  base: string;
  settings: ReturnType<typeof benchSettings>;
  server: ChildProcess;
  redis: RedisClient;
  reader: string;
  poster: string;
}

/** Seconds of CPU the Redis side spent so far (user + system, every master). */
async function redisCpuSeconds(redis: RedisClient): Promise<number> {
  let total = 0;
  for (const node of mastersOf(redis)) {
    const info = await node.info('cpu');
    for (const name of ['used_cpu_sys', 'used_cpu_user']) total += Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  }
  return total;
}

async function load(side: Side, kind: 'read' | 'post', seconds: number) {
  const cpuBefore = await redisCpuSeconds(side.redis);
  const result = await autocannon({
    url: kind === 'read' ? `${side.base}/api/v1/timelines/home?limit=20` : `${side.base}/api/v1/statuses`,
    connections: kind === 'read' ? 32 : 16,
    duration: seconds,
    headers: { authorization: `Bearer ${kind === 'read' ? side.reader : side.poster}`, 'content-type': 'application/json' },
    ...(kind === 'post' ? { method: 'POST', body: JSON.stringify({ status: 'A post from the benchmark, fanned out to a hundred followers.' }) } : {}),
  });
  const cpu = (await redisCpuSeconds(side.redis)) - cpuBefore;
  return { rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, redisCpuMsPerRequest: (cpu * 1000) / Math.max(1, result.requests.total) };
}

async function setUp(name: string, port: number, extra: Record<string, string>): Promise<Side> {
  const settings = benchSettings(port, extra);
  await ensureDatabase(settings.config.databaseUrl);
  await migrate(settings.config.databaseUrl);
  const server = startServer({ ...settings.env, POST_HOLD_MS: '0' });
  const redis = createRedis(settings.config);
  await connectRedis(redis, settings.config);
  await waitHealthy(settings.base);
  const register = await accountMaker(settings.base);
  const reader = await register('reader');
  const poster = await register('poster');
  const posterId = (await api(settings.base, '/api/v1/accounts/verify_credentials', { token: poster })).id as string;
  await api(settings.base, '/api/v1/timelines/home', { token: reader });
  for (let i = 0; i < 10; i++) {
    const author = await register(`author${i}`);
    const me = await api(settings.base, '/api/v1/accounts/verify_credentials', { token: author });
    await api(settings.base, `/api/v1/accounts/${me.id}/follow`, { method: 'POST', token: reader });
    for (let j = 0; j < 4; j++) await api(settings.base, '/api/v1/statuses', { method: 'POST', token: author, body: { status: `Status ${j} by author ${i}, with a link https://example.com/${i}-${j} and #benchmarks` } });
  }
  // The poster has 100 local followers with home feeds, so each post is a small fan-out.
  const db = createPool(settings.config.databaseUrl, 2);
  const followers = await seedFollowers(db, posterId, 100, `fan${settings.tag}_`);
  await db.end();
  const feeds = new HomeFeeds(redis, settings.config.redisPrefix);
  await Promise.all(followers.map((id) => feeds.rebuild(id, async () => [])));
  return { name, base: settings.base, settings, server, redis, reader, poster };
}

async function fanOut(side: Side): Promise<number> {
  const register = await accountMaker(side.base);
  const celebrity = await register('celebrity');
  const id = (await api(side.base, '/api/v1/accounts/verify_credentials', { token: celebrity })).id as string;
  const db = createPool(side.settings.config.databaseUrl, 2);
  const followers = await seedFollowers(db, id, 10_000, `cel${side.settings.tag}_`);
  await db.end();
  const feeds = new HomeFeeds(side.redis, side.settings.config.redisPrefix);
  for (let i = 0; i < followers.length; i += 1000) await Promise.all(followers.slice(i, i + 1000).map((f) => feeds.rebuild(f, async () => [])));
  const started = performance.now();
  const status = await api(side.base, '/api/v1/statuses', { method: 'POST', token: celebrity, body: { status: 'Hello, all ten thousand of you!' } });
  return untilInAllFeeds(side.redis, feeds, followers, status.id, started, 20);
}

async function main() {
  const cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  const sides: Side[] = [];
  try {
    sides.push(await setUp('single Redis', PORT, {}));
    sides.push(await setUp('Redis Cluster (3 masters + 3 replicas)', PORT + 1, { REDIS_CLUSTER_NODES: cluster.seeds }));
    // Warm-up: the JIT compiles the hot paths on both.
    for (const side of sides) await load(side, 'read', 3);
    const results = new Map<string, { read: Awaited<ReturnType<typeof load>>[]; post: Awaited<ReturnType<typeof load>>[]; fanOutMs: number }>();
    for (const side of sides) results.set(side.name, { read: [], post: [], fanOutMs: NaN });
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of sides) results.get(side.name)!.read.push(await load(side, 'read', 5));
      for (const side of sides) results.get(side.name)!.post.push(await load(side, 'post', 5));
    }
    for (const side of sides) results.get(side.name)!.fanOutMs = await fanOut(side);

    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`\nsingle Redis vs Redis Cluster, same machine, ${ROUNDS} alternating rounds of 5 s (autocannon: 32 connections reading, 16 posting)`);
    for (const side of sides) {
      const r = results.get(side.name)!;
      console.log(`  ${side.name}:`);
      console.log(`    home read: ${median(r.read.map((x) => x.rps))} req/s (p99 ${median(r.read.map((x) => x.p99))} ms, errors ${r.read.reduce((a, x) => a + x.errors, 0)}), Redis CPU ${median(r.read.map((x) => x.redisCpuMsPerRequest)).toFixed(3)} ms/request`);
      console.log(`    posting (100 followers each): ${median(r.post.map((x) => x.rps))} posts/s (p99 ${median(r.post.map((x) => x.p99))} ms, errors ${r.post.reduce((a, x) => a + x.errors, 0)}), Redis CPU ${median(r.post.map((x) => x.redisCpuMsPerRequest)).toFixed(3)} ms/post`);
      console.log(`    fan-out to 10,000 followers: ${Number.isNaN(r.fanOutMs) ? 'did not finish' : `${Math.round(r.fanOutMs)} ms`}`);
      console.log(`    server peak memory (VmHWM): ${peakRssMb(side.server.pid!)} MB`);
    }
    const [single, clustered] = sides.map((s) => results.get(s.name)!);
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log(`  cluster / single: home read ${ratio(median(clustered!.read.map((x) => x.rps)), median(single!.read.map((x) => x.rps)))}, posting ${ratio(median(clustered!.post.map((x) => x.rps)), median(single!.post.map((x) => x.rps)))}, fan-out time ${ratio(clustered!.fanOutMs, single!.fanOutMs)}\n`);
  } finally {
    for (const side of sides) {
      side.server.kill('SIGTERM');
      await new Promise((r) => side.server.once('exit', r));
      await deleteKeysWithPrefix(side.redis, side.settings.config.redisPrefix).catch(() => {});
      side.redis.disconnect();
      await dropDatabase(side.settings.config.databaseUrl).catch(() => {});
    }
    await cluster.stop();
  }
}

await main();
