// `npm run bench:posting`: figures printed, not asserted. The write path of one server process as `npm start` runs it
// (ROLE=all: the job workers in the same process), rate limits off:
//  1. posting: 32 accounts post at once, one connection each, for 10 s (autocannon): posts accepted per second,
//     latency, and PostgreSQL commits per post (pg_stat_database.xact_commit, the jobs' own included);
//  2. fan-out keeping up: the same with each of the 32 authors followed by the same 100 accounts (home feeds built):
//     when the last post reached all 100 home feeds after posting stopped, and feed insertions per second;
//  3. 10,000 local followers of one author: from the POST being sent to the last of the 10,000 feeds;
//  4. one account posting on 32 connections at once for 10 s (its posts are written in batches, one
//     transaction and one commit each): posts per second, latency, and the transactions that wrote its posts per post
//     (statuses.created_at is the writing transaction's start, so one distinct value per transaction) beside
//     PostgreSQL's commits per post (pg_stat_database.xact_commit: every transaction, the jobs' and reads' included).
//     With `BENCH_POSTING_ONE_ACCOUNT=1`, only this part (after the warm-up), for a quick figure.
// With `BENCH_POSTING_FANOUT=1`: only part 2 (after the warm-up), its figures printed as soon as it ends.
// With `BENCH_PGBOUNCER=1`: part 1 three times on the same database, each figure printed: straight to PostgreSQL,
// then with PREPARED_STATEMENTS=false, then through a PgBouncer of its own (Debian's, transaction pooling, as many
// server connections as the server's pool) with PREPARED_STATEMENTS=false; parts 2 and 3 (fan-out) are left out.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { createPool, dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { HomeFeeds } from '../storage/feeds.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { seedFollowers } from './seed.ts';
import { startPgBouncer, type PgBouncer } from '../test/helpers/pgbouncer.ts';
import { accountMaker, api, benchSettings, peakRssMb, resetPeakRss, sampleRss, stackCpuMs, startServer, untilInAllFeeds, waitHealthy } from './common.ts';

const PORT = 3930;
const AUTHORS = 32;
const FOLLOWERS = 100;
const SECONDS = Number(process.env.BENCH_POSTING_SECONDS ?? 10);
/** How long the fan-out part waits for every job its posts queued (link cards included) before counting their CPU. */
const DRAIN_SECONDS = Number(process.env.BENCH_POSTING_DRAIN_SECONDS ?? 60);
const { tag, env, config, base } = benchSettings(PORT);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU time so far (user and system, in ms) of one process. */
function processCpuMs(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * With `BENCH_PG_STATEMENTS=1` and PostgreSQL running with `shared_preload_libraries = 'pg_stat_statements'`: the
 * statements of the posting part (jobs included), per post, by the time PostgreSQL spent executing them.
 */
async function statementStats(db: ReturnType<typeof createPool>) {
  await db.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
  const dbName = (await db.query<{ d: string }>(`SELECT current_database() AS d`)).rows[0]!.d;
  return {
    reset: async () => {
      await db.query(`SELECT pg_stat_statements_reset()`);
    },
    report: async (posts: number) => {
      // Planning time is there when pg_stat_statements.track_planning is on (0 otherwise).
      const { rows } = await db.query<{ calls: string; plans: string; ms: string; plan: string; query: string }>(
        `SELECT s.calls::text, s.plans::text, s.total_exec_time::text AS ms, s.total_plan_time::text AS plan, s.query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
          WHERE d.datname = $1 ORDER BY s.total_exec_time + s.total_plan_time DESC LIMIT 25`,
        [dbName],
      );
      const per = (x: string) => (Number(x) / posts).toFixed(3).padStart(6);
      const lines = rows.map((r) => `  ${(Number(r.calls) / posts).toFixed(2).padStart(5)} calls ${(Number(r.plans) / posts).toFixed(2).padStart(5)} plans ${per(r.ms)} ms ${per(r.plan)} ms  ${r.query.replace(/\s+/g, ' ').slice(0, 150)}`);
      return `  statements per post (calls, plans made, execution time, planning time), by the two:\n${lines.join('\n')}`;
    },
  };
}

/** Fan-out jobs that failed (kept by BullMQ) or wait for a retry, with the first failure's reason; '' if none. */
async function failedJobs(redis: Redis, prefix: string): Promise<string> {
  const queue = `${prefix}bull:{fanout}`;
  // The hourly media clean-up waits among the delayed jobs too (its scheduler's id starts with `repeat:`).
  const [failed, delayedIds] = await Promise.all([redis.zrange(`${queue}:failed`, 0, -1), redis.zrange(`${queue}:delayed`, 0, -1)]);
  const delayed = delayedIds.filter((id) => !id.startsWith('repeat:')).length;
  if (failed.length === 0 && delayed === 0) return '';
  const reason = failed.length > 0 ? await redis.hget(`${queue}:${failed[0]}`, 'failedReason') : null;
  return `fan-out jobs failed: ${failed.length}, waiting for a retry: ${delayed}${reason ? ` (first failure: ${reason})` : ''}`;
}

/** Jobs of the fan-out and pull queues not done yet (waiting, prioritized or running); repeating ones aside. */
async function jobsLeft(redis: Redis, prefix: string): Promise<number> {
  let n = 0;
  for (const queue of ['fanout', 'pull']) {
    const key = `${prefix}bull:{${queue}}`;
    const [wait, active, prioritized] = await Promise.all([redis.llen(`${key}:wait`), redis.llen(`${key}:active`), redis.zcard(`${key}:prioritized`)]);
    n += wait + active + prioritized;
  }
  return n;
}

/**
 * With `BENCH_REDIS_COMMANDS=1`: Redis's own count of the commands run in the fan-out part (the benchmark's polls
 * included), per post, by the time Redis spent in them (INFO commandstats; a script's commands count on their own
 * as well as within EVALSHA).
 */
function redisCommandStats(info: string, posts: number): string {
  const rows = [...info.matchAll(/^cmdstat_(\S+):calls=(\d+),usec=(\d+)/gm)].map((m) => ({ cmd: m[1]!, calls: Number(m[2]), usec: Number(m[3]) }));
  rows.sort((a, b) => b.usec - a.usec);
  const lines = rows.slice(0, 15).map((r) => `  ${(r.calls / posts).toFixed(2).padStart(8)} calls ${(r.usec / posts).toFixed(1).padStart(7)} µs  ${r.cmd}`);
  return `  Redis commands per post (calls, Redis's time), by time:\n${lines.join('\n')}`;
}

/** 32 connections, each posting as its own author (or all as one, with `connections` and one token), for `seconds`. */
async function postAll(tokens: string[], seconds: number, connections = tokens.length) {
  let next = 0;
  const result = await autocannon({
    url: `${base}/api/v1/statuses`,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ status: 'A post about the #fediverse, long enough to look like one: a sentence or two, with a link https://example.com/a/b and nothing else.' }),
    setupClient: (client) => {
      client.setHeaders({ 'content-type': 'application/json', authorization: `Bearer ${tokens[next++ % tokens.length]}` });
    },
  });
  return {
    accepted: result['2xx'],
    refused: result.non2xx + result.errors,
    rps: result['2xx'] / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROFILE] : [];
  let server = startServer(env, { nodeFlags: profile });
  let bouncer: PgBouncer | null = null;
  const db = createPool(config.databaseUrl, 4);
  // Auto-pipelining: the feed polls' thousands of commands go out as one write, as their pipelines did.
  const redis = new Redis(config.redisUrl, { enableAutoPipelining: true });
  const dbName = new URL(config.databaseUrl).pathname.slice(1);
  const commits = async () => Number((await db.query<{ n: string }>(`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1`, [dbName])).rows[0]!.n);
  try {
    await waitHealthy(base);
    const register = await accountMaker(base);
    const tokens: string[] = [];
    for (let i = 0; i < AUTHORS; i++) tokens.push(await register(`poster${i}`));
    const authorIds: string[] = [];
    for (const token of tokens) authorIds.push((await api(base, '/api/v1/accounts/verify_credentials', { token })).id as string);
    // Warm-up: the JIT compiles the hot paths, as in any long-running server.
    await postAll(tokens, 3);
    await db.query('ANALYZE'); // as autovacuum would (see below)
    await sleep(2000);

    /** 4. One account on 32 connections: its posts gather into batches, one transaction each. */
    const oneAccount = async (): Promise<string> => {
      const statusCount = async () => Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM statuses`)).rows[0]!.n);
      const lastBefore = (await db.query<{ id: string }>(`SELECT coalesce(max(id), 0)::text AS id FROM statuses`)).rows[0]!.id;
      const commitsBefore = await commits();
      const countBefore = await statusCount();
      const r = await postAll([tokens[0]!], SECONDS, AUTHORS);
      await sleep(3000); // the jobs of the last posts
      const made = Math.max((await statusCount()) - countBefore, 1);
      const xacts = ((await commits()) - commitsBefore) / made;
      const { rows } = await db.query<{ posts: string; transactions: string }>(
        `SELECT count(*)::text AS posts, count(DISTINCT created_at)::text AS transactions FROM statuses WHERE id > $1 AND account_id = $2`, [lastBefore, authorIds[0]],
      );
      const perPost = Number(rows[0]!.transactions) / Math.max(Number(rows[0]!.posts), 1);
      return `\none account posting, ${AUTHORS} connections, ${SECONDS} s, no followers (target >= 350/s, < 0.2 commits per post)\n` +
        `  ${Math.round(r.rps)} posts/s accepted (${r.accepted} in all${r.refused ? `, ${r.refused} refused or failed` : ''}), p50 ${r.p50} ms, p99 ${r.p99} ms; ` +
        `${perPost.toFixed(3)} commits of its posts per post (${rows[0]!.transactions} transactions for ${rows[0]!.posts} posts, ${(Number(rows[0]!.posts) / Math.max(Number(rows[0]!.transactions), 1)).toFixed(1)} posts each); ` +
        `${xacts.toFixed(2)} PostgreSQL commits per post in all (jobs and reads included)`;
    };
    if (process.env.BENCH_POSTING_ONE_ACCOUNT) {
      console.log(await oneAccount());
      return;
    }
    const fanOutOnly = Boolean(process.env.BENCH_POSTING_FANOUT);

    // 1. Posting, no followers. The peak memory of each part is its own (registration's password hashes excluded).
    const peaks: string[] = [`set-up ${peakRssMb(server.pid!)} MB`];
    const peakOf = (part: string) => {
      peaks.push(`${part} ${peakRssMb(server.pid!)} MB`);
      resetPeakRss(server.pid!);
    };
    const resettable = resetPeakRss(server.pid!);
    const statsBefore = await commits();
    const postsBefore = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM statuses`)).rows[0]!.n);
    const cpuBefore = await stackCpuMs(server.pid!, redis);
    const statements = process.env.BENCH_PG_STATEMENTS ? await statementStats(db) : null;
    await statements?.reset();
    const alone = fanOutOnly ? { accepted: 0, refused: 0, rps: 0, p50: 0, p99: 0 } : await postAll(tokens, SECONDS);
    if (!fanOutOnly) await sleep(3000); // the jobs of the last posts
    const cpuAfter = await stackCpuMs(server.pid!, redis);
    const made = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM statuses`)).rows[0]!.n) - postsBefore;
    const commitsPerPost = ((await commits()) - statsBefore) / Math.max(made, 1);
    const statementReport = statements ? await statements.report(made) : '';
    peakOf('posting');
    // Before any follower is seeded.
    const oneAccountReport = process.env.BENCH_PGBOUNCER || fanOutOnly ? '' : await oneAccount();
    if (process.env.BENCH_PGBOUNCER) {
      const line = (r: typeof alone, commits: number, cpu: string) =>
        `  ${Math.round(r.rps)} posts/s accepted (${r.accepted} in all${r.refused ? `, ${r.refused} refused or failed` : ''}), p50 ${r.p50} ms, p99 ${r.p99} ms; ${commits.toFixed(2)} commits per post; CPU per post (ms): ${cpu}`;
      const per = (k: 'server' | 'postgres' | 'redis') => ((cpuAfter[k] - cpuBefore[k]) / Math.max(made, 1)).toFixed(2);
      const figures = [`direct:\n${line(alone, commitsPerPost, `server ${per('server')}, PostgreSQL ${per('postgres')}, Redis ${per('redis')}`)}`];
      /** Part 1 again with the server restarted on other settings (its pool of 20 connections unchanged). */
      const again = async (label: string, settings: Record<string, string>) => {
        server.kill('SIGTERM');
        await new Promise((r) => server.once('exit', r));
        server = startServer({ ...env, ...settings }, { nodeFlags: profile });
        await waitHealthy(base);
        await postAll(tokens, 3);
        await sleep(2000);
        const commitsBefore = await commits();
        const postsBefore = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM statuses`)).rows[0]!.n);
        const before = await stackCpuMs(server.pid!, redis);
        const bouncerBefore = bouncer ? processCpuMs(bouncer.pid) : 0;
        const result = await postAll(tokens, SECONDS);
        await sleep(3000);
        const after = await stackCpuMs(server.pid!, redis);
        const bouncerMs = bouncer ? processCpuMs(bouncer.pid) - bouncerBefore : 0;
        const n = Math.max(Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM statuses`)).rows[0]!.n) - postsBefore, 1);
        const cpu = (k: 'server' | 'postgres' | 'redis') => ((after[k] - before[k]) / n).toFixed(2);
        figures.push(`${label}:\n${line(result, ((await commits()) - commitsBefore) / n, `server ${cpu('server')}, PostgreSQL ${cpu('postgres')}, Redis ${cpu('redis')}${bouncer ? `, PgBouncer ${(bouncerMs / n).toFixed(2)}` : ''}`)}`);
        return result;
      };
      // What unnamed statements cost on their own, then what the pooler's hop adds.
      const unnamed = await again('direct, PREPARED_STATEMENTS=false', { DATABASE_DIRECT_URL: config.databaseUrl, PREPARED_STATEMENTS: 'false' });
      bouncer = await startPgBouncer({ poolSize: 20, maxClientConn: 200 });
      const pooled = await again('through PgBouncer, PREPARED_STATEMENTS=false', { DATABASE_URL: bouncer.url(dbName), DATABASE_DIRECT_URL: config.databaseUrl, PREPARED_STATEMENTS: 'false' });
      const trouble = bouncer.log().split('\n').filter((l) => / (ERROR|WARNING) /.test(l));
      console.log(`\nposting: ${AUTHORS} accounts at once, one connection each, ${SECONDS} s each, no followers: straight to PostgreSQL, then through PgBouncer (transaction pooling, 20 server connections)`);
      console.log(figures.join('\n'));
      const ratio = (r: typeof alone) => `${(r.rps / alone.rps).toFixed(2)}x the posts per second, p50 ${(r.p50 / Math.max(alone.p50, 1)).toFixed(2)}x, p99 ${(r.p99 / Math.max(alone.p99, 1)).toFixed(2)}x`;
      console.log(`  against direct with prepared statements: unnamed statements ${ratio(unnamed)}; through PgBouncer ${ratio(pooled)}`);
      if (trouble.length > 0) console.log(`  PgBouncer logged ${trouble.length} errors or warnings, the first: ${trouble[0]}`);
      console.log('');
      return;
    }

    // 2. The same authors, each followed by the same 100 accounts whose home feeds are built.
    const followerIds = await seedFollowers(db, authorIds[0]!, FOLLOWERS, `reader${tag}_`);
    await db.query(
      `INSERT INTO follows (account_id, target_account_id) SELECT f, a FROM unnest($1::bigint[]) f, unnest($2::bigint[]) a ON CONFLICT DO NOTHING`,
      [followerIds, authorIds.slice(1)],
    );
    await db.query(`UPDATE accounts SET followers_count = $2 WHERE id = ANY($1::bigint[])`, [authorIds, FOLLOWERS]);
    // Statistics as autovacuum keeps them on a running server (CI's PostgreSQL here runs without it): with none, the
    // planner's estimates for the fresh tables are guesses, and prepared statements may be planned again every time.
    await db.query('ANALYZE');
    const feeds = new HomeFeeds(redis, config.redisPrefix);
    await Promise.all(followerIds.map((id) => feeds.rebuild(id, async () => [])));
    const lastBefore = (await db.query<{ id: string }>(`SELECT coalesce(max(id), 0)::text AS id FROM statuses`)).rows[0]!.id;
    if (process.env.BENCH_REDIS_COMMANDS) await redis.config('RESETSTAT');
    await statements?.reset();
    // Part 2 alone: the warm-up's jobs (fan-out, link cards) end before it starts, as part 1's pause lets them otherwise.
    if (fanOutOnly) await sleep(5000);
    const fanCpuBefore = await stackCpuMs(server.pid!, redis);
    const peakBefore = peakRssMb(server.pid!); // alone (BENCH_POSTING_FANOUT=1): set-up's, password hashing included
    const rss = sampleRss(server.pid!);
    const fanned = await postAll(tokens, SECONDS);
    const stopped = performance.now();
    // Requests still in flight when autocannon stopped may yet commit: the run's posts are read once their number
    // holds still (a late post read after the list would push an expected one out of every feed's newest 800).
    const runPosts = async () => Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM statuses WHERE id > $1`, [lastBefore])).rows[0]!.n);
    for (let n = await runPosts(), was = -1; n !== was; was = n, await sleep(250), n = await runPosts());
    const { rows: posted } = await db.query<{ id: string }>(
      `SELECT id::text FROM statuses WHERE id > $1 AND account_id = ANY($2::bigint[]) ORDER BY id`, [lastBefore, authorIds],
    );
    // Feeds keep their newest 800: each is complete when it holds every post of the run that is among its newest.
    const expected = posted.map((r) => r.id).slice(-800);
    // Each poll asks only about what each feed was still missing (asking for all 80,000 pairs every time would
    // itself load Redis). Before that, while the server is still fanning out, a poll asks each feed only for the
    // last post of each author (32 ids): one that lacks any of them is not complete, and what the benchmark asks
    // costs Redis next to nothing.
    const { rows: lastOfEach } = await db.query<{ id: string }>(
      `SELECT max(id)::text AS id FROM statuses WHERE id > $1 AND account_id = ANY($2::bigint[]) GROUP BY account_id`, [lastBefore, authorIds],
    );
    const lastIds = lastOfEach.map((r) => r.id).filter((id) => expected.includes(id));
    const missing = new Map(followerIds.map((id) => [id, expected]));
    let caughtUpMs = NaN;
    for (let i = 0; i < 600; i++) {
      if (lastIds.length > 0) {
        // Plain commands, not pipelines (which a cluster confines to one node): auto-pipelining sends them at once.
        const lasts = await Promise.all(followerIds.map((id) => redis.zmscore(feeds.key(id), ...lastIds)));
        if (lasts.some((scores) => scores.includes(null))) {
          await sleep(50);
          continue;
        }
      }
      const asked = [...missing];
      const results = await Promise.all(asked.map(([id, ids]) => redis.zmscore(feeds.key(id), ...ids)));
      asked.forEach(([id, ids], k) => {
        const left = ids.filter((_, j) => results[k]![j] === null);
        if (left.length === 0) missing.delete(id);
        else missing.set(id, left);
      });
      if (missing.size === 0) {
        caughtUpMs = performance.now() - stopped;
        break;
      }
      await sleep(50);
    }
    const fanCpuAfter = await stackCpuMs(server.pid!, redis);
    // Then every job the posts queued, the link cards' too (the pull queue's, run once fan-out has caught up): the
    // CPU of the whole of a post's work, which does not depend on how much of it fell before the homes were complete.
    let drained = false;
    const drainUntil = performance.now() + DRAIN_SECONDS * 1000;
    while (!(drained = (await jobsLeft(redis, config.redisPrefix)) === 0) && performance.now() < drainUntil) await sleep(50);
    const drainedMs = performance.now() - stopped;
    const allJobsCpuAfter = await stackCpuMs(server.pid!, redis);
    const rssSamples = rss.stop();
    const rssReport = `  server VmRSS sampled every second while posting and catching up: highest ${Math.max(...rssSamples)} MB (target <= 200), last ${rssSamples.at(-1)} MB; VmHWM before this part ${peakBefore} MB${fanOutOnly ? ' (set-up, password hashing included)' : ''}`;
    const jobTrouble = await failedJobs(redis, config.redisPrefix);
    const redisReport = process.env.BENCH_REDIS_COMMANDS ? redisCommandStats(await redis.info('commandstats'), posted.length) : '';
    const fanStatementReport = statements ? await statements.report(posted.length) : '';
    peakOf('posting with followers');
    const stillMissing = [...missing.values()].reduce((n, ids) => n + ids.length, 0);
    const insertions = posted.length * FOLLOWERS;
    const insertionSeconds = SECONDS + (Number.isNaN(caughtUpMs) ? 30 : caughtUpMs / 1000);

    if (fanOutOnly) {
      console.log(`\nfan-out only: each of ${AUTHORS} authors followed by the same ${FOLLOWERS} accounts, ${SECONDS} s`);
      console.log(`  ${Math.round(fanned.rps)} posts/s accepted, p50 ${fanned.p50} ms, p99 ${fanned.p99} ms; ${posted.length} posts, ${insertions} feed insertions`);
      const fanPer = (k: 'server' | 'postgres' | 'redis') => ((fanCpuAfter[k] - fanCpuBefore[k]) / Math.max(posted.length, 1)).toFixed(2);
      const total = (['server', 'postgres', 'redis'] as const).reduce((n, k) => n + fanCpuAfter[k] - fanCpuBefore[k], 0) / Math.max(posted.length, 1);
      console.log(`  CPU per post, its fan-out included (ms): server ${fanPer('server')}, PostgreSQL ${fanPer('postgres')}, Redis ${fanPer('redis')}; total ${total.toFixed(2)}`);
      const allPer = (k: 'server' | 'postgres' | 'redis') => (allJobsCpuAfter[k] - fanCpuBefore[k]) / Math.max(posted.length, 1);
      const allTotal = allPer('server') + allPer('postgres') + allPer('redis');
      console.log(`  the same with every job it queued done (link cards included; ${drained ? `all done ${(drainedMs / 1000).toFixed(1)} s after posting stopped` : `NOT all done within ${DRAIN_SECONDS} s`}): server ${allPer('server').toFixed(2)}, PostgreSQL ${allPer('postgres').toFixed(2)}, Redis ${allPer('redis').toFixed(2)}; total ${allTotal.toFixed(2)}`);
      if (fanStatementReport) console.log(fanStatementReport);
      if (redisReport) console.log(redisReport);
      if (jobTrouble) console.log(`  ${jobTrouble}`);
      const done = Number.isNaN(caughtUpMs) ? 'did not finish in 30 s' : `${Math.round(caughtUpMs)} ms`;
      console.log(`  every post in every follower's home ${done} after posting stopped${stillMissing ? ` (${stillMissing} (feed, post) pairs still missing)` : ''}`);
      console.log(`${rssReport}\n`);
      return;
    }

    // 3. 10,000 followers of one author.
    const celebrity = await register('celebrity');
    const celebrityId = (await api(base, '/api/v1/accounts/verify_credentials', { token: celebrity })).id as string;
    const fans = await seedFollowers(db, celebrityId, 10_000, `fan${tag}_`);
    for (let i = 0; i < fans.length; i += 1000) await Promise.all(fans.slice(i, i + 1000).map((id) => feeds.rebuild(id, async () => [])));
    const tenK: number[] = [];
    for (let round = 0; round < 3; round++) {
      const sent = performance.now();
      const status = await api(base, '/api/v1/statuses', { method: 'POST', token: celebrity, body: { status: `Hello, all ten thousand of you! (${round + 1})` } });
      tenK.push(await untilInAllFeeds(redis, feeds, fans, status.id, sent));
      await sleep(1000);
    }

    const f = (x: number) => (Number.isNaN(x) ? 'did not finish in 30 s' : `${Math.round(x)} ms`);
    console.log(`\nposting: ${AUTHORS} accounts at once, one connection each, ${SECONDS} s, no followers (target >= 2,800/s, p99 < 50 ms)`);
    console.log(`  ${Math.round(alone.rps)} posts/s accepted (${alone.accepted} in all${alone.refused ? `, ${alone.refused} refused or failed` : ''}), p50 ${alone.p50} ms, p99 ${alone.p99} ms; ${commitsPerPost.toFixed(2)} PostgreSQL commits per post (jobs included)`);
    const per = (k: 'server' | 'postgres' | 'redis') => ((cpuAfter[k] - cpuBefore[k]) / Math.max(made, 1)).toFixed(2);
    console.log(`  CPU per post (jobs included, ms): server ${per('server')}, PostgreSQL ${per('postgres')} (all its processes; what else uses it counts too), Redis ${per('redis')}`);
    if (statementReport) console.log(statementReport);
    console.log(`\nthe same with each author followed by the same ${FOLLOWERS} accounts (target: all in every home feed within 2 s of posting stopping, >= 50,000 feed insertions/s)`);
    console.log(`  ${Math.round(fanned.rps)} posts/s accepted, p50 ${fanned.p50} ms, p99 ${fanned.p99} ms; ${posted.length} posts, ${insertions} feed insertions`);
    const fanPer = (k: 'server' | 'postgres' | 'redis') => ((fanCpuAfter[k] - fanCpuBefore[k]) / Math.max(posted.length, 1)).toFixed(2);
    console.log(`  CPU per post, its fan-out included (ms): server ${fanPer('server')}, PostgreSQL ${fanPer('postgres')}, Redis ${fanPer('redis')}`);
    if (fanStatementReport) console.log(fanStatementReport);
    if (redisReport) console.log(redisReport);
    if (jobTrouble) console.log(`  ${jobTrouble}`);
    console.log(`  every post in every follower's home ${f(caughtUpMs)} after posting stopped${stillMissing ? ` (${stillMissing} (feed, post) pairs still missing)` : ''}: ${Math.round(insertions / insertionSeconds)} feed insertions/s over the run`);
    console.log(rssReport);
    console.log(`\nfan-out to 10,000 local followers, from the POST being sent (so its commit included) to the last feed, 3 posts (target <= 500 ms from the commit): ${tenK.map(f).join(', ')}`);
    peakOf('10,000 followers');
    console.log(oneAccountReport);
    console.log(`\nserver peak memory (VmHWM)${resettable ? ', each part on its own' : ' (could not be reset between parts: the whole run)'}: ${resettable ? peaks.join(', ') : `${peakRssMb(server.pid!)} MB`} (target for posting: <= 300 MB)\n`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await db.end();
    await bouncer?.stop();
    await dropDatabase(config.databaseUrl);
  }
}

await main();
