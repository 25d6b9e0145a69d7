// `npm run bench:retention`: figures printed, not asserted. Removing 100,000 of other servers' old posts
// (services/status-retention.ts, 500 a batch and a transaction, as the hourly job) while the server serves: home
// timeline reads (32 connections) and posting (32 connections, 8 authors), each for BENCH_LOAD_SECONDS (5), in rounds
// that alternate without removal ("quiet") and while batches are being removed one after another, with the hourly
// job's pause after each (BENCH_RETENTION_PACE, RETENTION_PACE unless told; 0 for none) ("busy"); the order
// inside a round alternates too. Rounds go on (at least BENCH_ROUNDS, 5) until every post is gone, so the whole
// removal happens under measured load. One server process with web and worker (ROLE=all); the removal runs in this
// process as the job runs it (its SQL is PostgreSQL's work; the feeds' part is a job the server's worker takes).
// Set up straight in the tables (bench/seed.ts): 100 remote authors followed by the reader, BENCH_RETENTION_POSTS
// (100,000) posts of theirs received 60 days ago (their ids of then) with a tag each, one in ten mentioning another remote account, one in twenty
// with an attachment and its two files on disk, one in a hundred with a poll; and 1,000 more the reader favourited
// (kept). Prints the median of the rounds with the spread (lowest–highest), busy over quiet, the removal's rate and
// its batches' times, and the load average.
import { type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createPool, dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { createFileHost } from '../storage/filehost/index.ts';
import { JobQueues } from '../jobs/queues.ts';
import { removeStaleRemoteStatuses, RETENTION_BATCH, RETENTION_PACE } from '../services/status-retention.ts';
import { seedRemoteAuthors, seedOldRemotePosts } from './seed.ts';
import { accountMaker, api, authorsAndPosters, benchSettings, measureHomeAndPosting, type HomeAndPosting, median, startServer, waitHealthy } from './common.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const MAX_ROUNDS = Number(process.env.BENCH_MAX_ROUNDS ?? 150);
const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5);
const POSTS = Number(process.env.BENCH_RETENTION_POSTS ?? 100_000);
const KEPT = 1000;
/** The pause after each batch, as a share of its time: the hourly job's (RETENTION_PACE) unless BENCH_RETENTION_PACE says (0: back to back). */
const PACE = Number(process.env.BENCH_RETENTION_PACE ?? RETENTION_PACE);
const AUTHORS = 100;
const { env, config, base } = benchSettings(Number(process.env.BENCH_PORT ?? 3991));

const spread = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`;
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');

const measure = (reader: string, posters: string[]) => measureHomeAndPosting(base, reader, posters, SECONDS);

async function main() {
  // Another benchmark's server on the port would answer our health check, and be measured in place of ours.
  if (await fetch(`${base}/health`).then(() => true, () => false)) throw new Error(`${base} is taken by another server: set BENCH_PORT`);
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const server: ChildProcess = startServer(env);
  const redis = new Redis(config.redisUrl);
  // Set-up writes in bulk (a long bound); the removal runs with the server's own bound per statement.
  const setup = createPool(config.databaseUrl, 2, 600_000);
  const db = createPool(config.databaseUrl, 4);
  const fileHost = await createFileHost(config, db);
  const jobs = new JobQueues(config.redisUrl, config.redisPrefix);
  const deps = { db, versions: new CacheVersions(redis, config.redisPrefix), jobs, fileHost };
  try {
    await Promise.race([waitHealthy(base), new Promise((_, reject) => server.once('exit', (code) => reject(new Error(`server exited (${code}) before it was healthy`))))]);
    console.log(`\nload average at the start: ${load()} (${cpus().length} cores)`);
    const register = await accountMaker(base);
    const reader = await register('reader');
    const readerId = (await api(base, '/api/v1/accounts/verify_credentials', { token: reader })).id as string;
    // A few local posts the reader's home also holds.
    const posters = await authorsAndPosters(base, register, reader, 4);

    const seeding = performance.now();
    const authors = await seedRemoteAuthors(setup, AUTHORS, 'far', readerId);
    const seeded = await seedOldRemotePosts(setup, { authors, posts: POSTS, kept: KEPT, keptBy: readerId, daysOld: 60, filesRoot: join(env.DATA_DIR, 'files') });
    console.log(`set up ${POSTS + KEPT} old remote posts of ${AUTHORS} authors the reader follows (${KEPT} favourited by the reader), ${seeded.media} attachments with ${seeded.files} files, ${seeded.polls} polls, ${seeded.mentions} mentions, in ${((performance.now() - seeding) / 1000).toFixed(1)} s`);
    // The reader's home feed is built from PostgreSQL at its first read, with the old posts in it.
    await api(base, '/api/v1/timelines/home', { token: reader });
    await measure(reader, posters); // warm-up, not counted

    const quiet: HomeAndPosting[] = [];
    const busy: HomeAndPosting[] = [];
    const batchMs: number[] = [];
    let removed = 0;
    let files = 0;
    let removingMs = 0;
    const busyRound = async () => {
      let on = true;
      const removing = (async () => {
        while (on) {
          const t = performance.now();
          const run = await removeStaleRemoteStatuses(deps, { days: 30, dryRun: false, batch: RETENTION_BATCH, maxBatches: 1 });
          if (run.found === 0) break;
          const took = performance.now() - t;
          batchMs.push(took);
          removingMs += took;
          removed += run.removed;
          files += run.files;
          if (PACE > 0 && on) await new Promise((resolve) => setTimeout(resolve, PACE * took));
        }
      })();
      busy.push(await measure(reader, posters));
      on = false;
      await removing;
    };
    for (let round = 0; round < MAX_ROUNDS && (round < ROUNDS || removed < POSTS); round++) {
      if (round % 2 === 0) {
        quiet.push(await measure(reader, posters));
        await busyRound();
      } else {
        await busyRound();
        quiet.push(await measure(reader, posters));
      }
      const q = quiet.at(-1)!;
      const b = busy.at(-1)!;
      console.log(`round ${round + 1}: home ${Math.round(q.homeRps)} quiet / ${Math.round(b.homeRps)} busy req/s; posting ${Math.round(q.postRps)} / ${Math.round(b.postRps)} posts/s; removed so far ${removed}; load ${loadavg()[0]!.toFixed(1)}`);
    }
    const left = Number((await db.query(`SELECT count(*) AS n FROM statuses s JOIN accounts a ON a.id = s.account_id WHERE a.domain IS NOT NULL`)).rows[0].n);
    const onDisk = readdirSync(join(env.DATA_DIR, 'files'), { recursive: true }).filter((f) => String(f).endsWith('.jpg') || String(f).endsWith('.webp')).length;
    const row = (name: string, pick: (f: HomeAndPosting) => number, unit: string) => {
      const q = quiet.map(pick);
      const b = busy.map(pick);
      console.log(`  ${name}: quiet ${Math.round(median(q))} ${unit} (${spread(q)}), while removing ${Math.round(median(b))} ${unit} (${spread(b)}): ${(median(b) / median(q)).toFixed(2)} of quiet`);
    };
    console.log(`\n${quiet.length} alternating rounds, ${SECONDS} s each load, ${cpus().length} cores, load average at the end ${load()}`);
    row('home timeline', (f) => f.homeRps, 'req/s');
    row('home timeline p99', (f) => f.homeP99, 'ms');
    row('posting', (f) => f.postRps, 'posts/s');
    row('posting p99', (f) => f.postP99, 'ms');
    console.log(`  removal: ${removed} posts and ${files} files in ${batchMs.length} batches of ${RETENTION_BATCH}, a pause of ${PACE}× each batch's time after it, ${(removingMs / 1000).toFixed(1)} s of removing (${Math.round(removed / (removingMs / 1000))} posts/s while a batch ran); a batch ${Math.round(median(batchMs))} ms at the median (${spread(batchMs)})`);
    console.log(`  left: ${left} remote posts (${KEPT} kept by a favourite), ${onDisk} attachment files on disk; errors: ${[...quiet, ...busy].reduce((n, f) => n + f.errors, 0)}\n`);
  } finally {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    await jobs.close();
    fileHost.close();
    await db.end();
    await setup.end();
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropDatabase(config.databaseUrl);
    rmSync(env.DATA_DIR, { recursive: true, force: true });
  }
}

await main();
