// `npm run bench`: figures printed, not asserted. Runs the server as a child process (as `npm start` does)
// against its own database and Redis prefix, and drives it over HTTP with autocannon from this process.
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createPool, dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { HomeFeeds } from '../storage/feeds.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix } from '../storage/redis.ts';
import { versionTag } from '../storage/redis-keys.ts';
import { seedFollowers } from './seed.ts';
import { accountMaker, api, benchSettings, cpuMicros, peakRssMb, startServer, untilInAllFeeds, waitHealthy } from './common.ts';
import { benchPublicProfile } from './public-pages.ts';
import { benchWebClient } from './web-client.ts';

// BENCH_PORT moves the three servers' ports (so two benchmarks can run side by side).
const PORT = Number(process.env.BENCH_PORT ?? 3900);
const BARE_PORT = PORT + 1;
/** A second server process with rate limits on, for the same page (see below). */
const LIMITED_PORT = PORT + 2;
const { tag, env, config, base } = benchSettings(PORT);
/** BENCH_ONLY=home: only the home timeline against bare Fastify (without, then with rate limits), then stop. */
const ONLY_HOME = process.env.BENCH_ONLY === 'home';

/** BENCH_ROUNDS: how many alternating rounds of the home timeline against bare Fastify (4 unless told). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);

/**
 * Autocannon on `url`; with the serving process's `pid`, also its CPU time per request (µs), a figure that other
 * work on the machine changes much less than req/s (it takes the cores, not the server's own cost per request).
 */
async function load(url: string, token: string, duration: number, pid?: number) {
  const before = pid === undefined ? 0 : cpuMicros(pid);
  const result = await autocannon({ url, connections: 32, duration, headers: { authorization: `Bearer ${token}` } });
  const cpuUs = pid === undefined ? NaN : (cpuMicros(pid) - before) / Math.max(1, result.requests.total);
  return { rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpuUs };
}

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  // BENCH_CPU_PROFILE=dir writes the server's CPU profile there (node --cpu-prof) for a look at where time goes.
  const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROFILE] : [];
  const server: ChildProcess = startServer(env, { nodeFlags: profile });
  const db = createPool(config.databaseUrl, 4);
  const redis = createRedis(config);
  await connectRedis(redis, config);
  let bare: ChildProcess | undefined;
  let limited: ChildProcess | undefined;
  try {
    // A server that could not start (its port taken by another benchmark) must not leave this one loading someone else's.
    await Promise.race([waitHealthy(base), new Promise((_, reject) => server.once('exit', (code) => reject(new Error(`server exited (${code}) before it was healthy`))))]);
    const register = await accountMaker(base);

    // A reader following 10 authors, each with realistic statuses: text with a link, a mention and hashtags.
    const reader = await register('reader');
    const authors: string[] = [];
    for (let i = 0; i < 10; i++) authors.push(await register(`author${i}`));
    await api(base, '/api/v1/timelines/home', { token: reader });
    for (const [i, token] of authors.entries()) {
      const me = await api(base, '/api/v1/accounts/verify_credentials', { token });
      await api(base, `/api/v1/accounts/${me.id}/follow`, { method: 'POST', token: reader });
      for (let j = 0; j < 4; j++) {
        await api(base, '/api/v1/statuses', { method: 'POST', token, body: { status: `Status ${j} by author ${i}: a thought long enough to look like a real post, with a link https://example.com/articles/${i}-${j} and a question for @reader about #fediverse and #benchmarks. ${'More words follow here. '.repeat(6)}` } });
      }
    }
    await new Promise((r) => setTimeout(r, 1000));
    const page = await fetch(`${base}/api/v1/timelines/home?limit=20`, { headers: { authorization: `Bearer ${reader}` } });
    const bytes = Buffer.from(await page.arrayBuffer());
    const bodyFile = join(env.DATA_DIR, 'home.json');
    writeFileSync(bodyFile, bytes);
    const statuses = JSON.parse(bytes.toString()).length;

    bare = fork(fileURLToPath(new URL('./bare-server.ts', import.meta.url)), [], { env: { ...process.env, PORT: String(BARE_PORT), BODY_FILE: bodyFile }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise((r) => bare!.once('message', r));

    // Alternating rounds, so that a change in what else the machine is doing touches both sides of a ratio alike.
    // Both servers are warmed up first (the JIT compiles the hot paths), as any long-running server would be.
    await load(`${base}/api/v1/timelines/home?limit=20`, reader, 5);
    await load(`http://127.0.0.1:${BARE_PORT}/api/v1/timelines/home`, reader, 3);
    const rounds: { real: Awaited<ReturnType<typeof load>>; baseline: Awaited<ReturnType<typeof load>> }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const real = await load(`${base}/api/v1/timelines/home?limit=20`, reader, 5, server.pid);
      const baseline = await load(`http://127.0.0.1:${BARE_PORT}/api/v1/timelines/home`, reader, 5, bare.pid);
      rounds.push({ real, baseline });
    }
    const ratios = rounds.map((r) => r.real.rps / r.baseline.rps);
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
    };

    // The same page with rate limits on, as production runs: a second process (ROLE=web) on the same database and
    // Redis, its API limit raised so that the load is counted but never refused (300 per 5 minutes would 429 at once).
    const limitedBase = `http://127.0.0.1:${LIMITED_PORT}`;
    limited = startServer({ ...env, PORT: String(LIMITED_PORT), RATE_LIMITS: 'true', RATE_LIMIT_API_PER_5MIN: '1000000000' }, { role: 'web', nodeFlags: profile });
    await Promise.race([waitHealthy(limitedBase), new Promise((_, reject) => limited!.once('exit', (code) => reject(new Error(`rate-limited server exited (${code}) before it was healthy`))))]);
    await load(`${limitedBase}/api/v1/timelines/home?limit=20`, reader, 5);
    const limitedRounds: typeof rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      const real = await load(`${limitedBase}/api/v1/timelines/home?limit=20`, reader, 5, limited.pid);
      const baseline = await load(`http://127.0.0.1:${BARE_PORT}/api/v1/timelines/home`, reader, 5, bare.pid);
      limitedRounds.push({ real, baseline });
    }
    const limitedRatios = limitedRounds.map((r) => r.real.rps / r.baseline.rps);
    limited.kill('SIGTERM');
    await new Promise((r) => limited!.once('exit', r));

    const printHome = () => {
      console.log(`\nhome timeline (20 statuses, ${bytes.length} bytes) vs. bare Fastify serving the same bytes (autocannon, 32 connections, after a warm-up, ${ROUNDS} alternating rounds of 5 s)`);
      for (const [i, { real, baseline }] of rounds.entries()) {
        console.log(`  round ${i + 1}: home ${real.rps} req/s (p50 ${real.p50} ms, p99 ${real.p99} ms, errors ${real.errors}, CPU ${real.cpuUs.toFixed(0)} µs/req)  |  bare ${baseline.rps} req/s (p50 ${baseline.p50} ms, p99 ${baseline.p99} ms, errors ${baseline.errors}, CPU ${baseline.cpuUs.toFixed(0)} µs/req)  |  ratio ${ratios[i]!.toFixed(2)}`);
      }
      console.log(`  ratio home/bare, median of rounds: ${median(ratios).toFixed(2)} (target >= 0.6); page had ${statuses} statuses`);
      console.log(`  server CPU per request, median of rounds: home ${median(rounds.map((r) => r.real.cpuUs)).toFixed(0)} µs, bare ${median(rounds.map((r) => r.baseline.cpuUs)).toFixed(0)} µs: ratio bare/home ${median(rounds.map((r) => r.baseline.cpuUs / r.real.cpuUs)).toFixed(2)}`);
      console.log(`\nthe same with rate limits on (RATE_LIMITS=true; a second server process, ROLE=web), ${ROUNDS} alternating rounds of 5 s`);
      for (const [i, { real, baseline }] of limitedRounds.entries()) {
        console.log(`  round ${i + 1}: home ${real.rps} req/s (p50 ${real.p50} ms, p99 ${real.p99} ms, errors ${real.errors}, CPU ${real.cpuUs.toFixed(0)} µs/req)  |  bare ${baseline.rps} req/s (CPU ${baseline.cpuUs.toFixed(0)} µs/req)  |  ratio ${limitedRatios[i]!.toFixed(2)}`);
      }
      console.log(`  ratio home/bare with rate limits, median of rounds: ${median(limitedRatios).toFixed(2)} (target >= 0.6)`);
      console.log(`  server CPU per request, median of rounds: home ${median(limitedRounds.map((r) => r.real.cpuUs)).toFixed(0)} µs, bare ${median(limitedRounds.map((r) => r.baseline.cpuUs)).toFixed(0)} µs: ratio bare/home ${median(limitedRounds.map((r) => r.baseline.cpuUs / r.real.cpuUs)).toFixed(2)}`);
    };
    if (ONLY_HOME) {
      printHome();
      return;
    }

    // The same page for a reader with filters (20 keywords over 3 filters; one matches every status, as a warning):
    // steady state from the page cache, and the first render that pays for matching.
    const filtered = await register('filtered');
    for (const token of authors) {
      const me = await api(base, '/api/v1/accounts/verify_credentials', { token });
      await api(base, `/api/v1/accounts/${me.id}/follow`, { method: 'POST', token: filtered });
    }
    for (let f = 0; f < 3; f++) {
      const words = Array.from({ length: f === 2 ? 6 : 7 }, (_, k) => ({ keyword: `word${f}x${k}`, whole_word: true }));
      if (f === 0) words[0] = { keyword: 'benchmarks', whole_word: true };
      await api(base, '/api/v2/filters', { method: 'POST', token: filtered, body: { title: `filter ${f}`, context: ['home'], filter_action: 'warn', keywords_attributes: words } });
    }
    const firstFiltered = performance.now();
    const filteredPage = await api(base, '/api/v1/timelines/home?limit=20', { token: filtered });
    const firstFilteredMs = performance.now() - firstFiltered;
    const warned = (filteredPage as { filtered: unknown[] }[]).filter((x) => x.filtered.length > 0).length;
    await load(`${base}/api/v1/timelines/home?limit=20`, filtered, 3);
    const filteredRounds = [await load(`${base}/api/v1/timelines/home?limit=20`, filtered, 5), await load(`${base}/api/v1/timelines/home?limit=20`, reader, 5)];

    // Fan-out: a status by an account with 10,000 local followers, until it is in all 10,000 home feeds.
    const celebrity = await register('celebrity');
    const celebrityId = (await api(base, '/api/v1/accounts/verify_credentials', { token: celebrity })).id as string;
    const followers = await seedFollowers(db, celebrityId, 10_000, `fan${tag}_`);
    const feeds = new HomeFeeds(redis, config.redisPrefix);
    for (let i = 0; i < followers.length; i += 1000) await Promise.all(followers.slice(i, i + 1000).map((id) => feeds.rebuild(id, async () => [])));
    const started = performance.now();
    const status = await api(base, '/api/v1/statuses', { method: 'POST', token: celebrity, body: { status: 'Hello, all ten thousand of you!' } });
    const fanOutMs = await untilInAllFeeds(redis, feeds, followers, status.id, started, 20);

    // A reader who blocks 500 accounts and mutes 100 (seeded in PostgreSQL, as if made over months): the cached page's
    // steady state, and what one more block costs the next read (the page is rendered again, relations read once).
    const blocker = await register('blocker');
    const blockerId = (await api(base, '/api/v1/accounts/verify_credentials', { token: blocker })).id as string;
    for (const token of authors) {
      const me = await api(base, '/api/v1/accounts/verify_credentials', { token });
      await api(base, `/api/v1/accounts/${me.id}/follow`, { method: 'POST', token: blocker });
    }
    await db.query(`INSERT INTO blocks (account_id, target_account_id) SELECT $1, unnest($2::bigint[])`, [blockerId, followers.slice(0, 500)]);
    await db.query(`INSERT INTO mutes (account_id, target_account_id) SELECT $1, unnest($2::bigint[])`, [blockerId, followers.slice(500, 600)]);
    await redis.incr(`${config.redisPrefix}ver:${versionTag(blockerId)}:r:${blockerId}`);
    await api(base, '/api/v1/timelines/home?limit=20', { token: blocker });
    await load(`${base}/api/v1/timelines/home?limit=20`, blocker, 3);
    const blockerRounds = [await load(`${base}/api/v1/timelines/home?limit=20`, blocker, 5), await load(`${base}/api/v1/timelines/home?limit=20`, reader, 5)];
    const afterBlock: number[] = [];
    const steady: number[] = [];
    for (let i = 0; i < 20; i++) {
      await api(base, `/api/v1/accounts/${followers[600 + i]}/block`, { method: 'POST', token: blocker });
      let t = performance.now();
      await api(base, '/api/v1/timelines/home?limit=20', { token: blocker });
      afterBlock.push(performance.now() - t);
      t = performance.now();
      await api(base, '/api/v1/timelines/home?limit=20', { token: blocker });
      steady.push(performance.now() - t);
    }

    printHome();
    console.log(`\nhome timeline for a reader with 3 filters of 20 keywords (${warned} of ${filteredPage.length} statuses carry a warning): ${filteredRounds[0]!.rps} req/s (p50 ${filteredRounds[0]!.p50} ms, p99 ${filteredRounds[0]!.p99} ms) against ${filteredRounds[1]!.rps} req/s without filters in the next round; first render with matching ${Math.round(firstFilteredMs)} ms`);
    console.log(`\nhome timeline for a reader who blocks 500 accounts and mutes 100: ${blockerRounds[0]!.rps} req/s (p50 ${blockerRounds[0]!.p50} ms, p99 ${blockerRounds[0]!.p99} ms) against ${blockerRounds[1]!.rps} req/s for a reader with none in the next round`);
    console.log(`  one more block, then the next read: median ${median(afterBlock).toFixed(1)} ms (max ${Math.max(...afterBlock).toFixed(1)} ms) against ${median(steady).toFixed(1)} ms for the read after it (single requests, 20 blocks)`);
    console.log(`\nfan-out to 10,000 local followers: ${Number.isNaN(fanOutMs) ? 'did not finish in time' : `${Math.round(fanOutMs)} ms`} from POST to the last feed (target < 1000 ms)`);
    // The public profile page for strangers, from the page cache, against the API's page of the same posts.
    await benchPublicProfile(base, register);
    // The signed-in home page against the API's home timeline, and each signed-in page's weight with 20 posts.
    await benchWebClient(base, register, server.pid);
    console.log(`\nserver peak memory (VmHWM): ${peakRssMb(server.pid!)} MB\n`);
  } finally {
    bare?.kill();
    if (limited && limited.exitCode === null) limited.kill('SIGTERM');
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await db.end();
    await dropDatabase(config.databaseUrl);
  }
}

await main();
