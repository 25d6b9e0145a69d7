// `npm run bench:media-prune`: pruning 100,000 cached copies of other servers' files (the `cached_files` ledger, the
// local file host) by services/remote-media.ts pruneCachedMedia, batch by batch as the hourly job runs it. Set up
// straight in the tables: 50,000 remote attachments of 10,000 posts, each with its original and its small copy (a
// few hundred bytes each) on disk. Printed: the time, the batches and their times, the process's peak memory during
// the prune. Figures are printed, never asserted.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPool, dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix } from '../storage/redis.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { createFileHost } from '../storage/filehost/index.ts';
import { pruneCachedMedia } from '../services/remote-media.ts';
import { benchSettings, peakRssMb, resetPeakRss, rssMb } from './common.ts';

/** BENCH_PRUNE_FILES: how many cached files (100,000 unless told), two per attachment; BENCH_PRUNE_BATCH: per batch (500, as the hourly job). */
const FILES = Number(process.env.BENCH_PRUNE_FILES ?? 100_000);
const BATCH = Number(process.env.BENCH_PRUNE_BATCH ?? 500);
const ATTACHMENTS = Math.ceil(FILES / 2);
const PER_POST = 5;
const { env, config } = benchSettings(3960);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  // Set-up writes in bulk (a long bound); the prune runs with the server's own bound per statement.
  const setup = createPool(config.databaseUrl, 2, 300_000);
  const db = createPool(config.databaseUrl, 4);
  const redis = createRedis(config);
  await connectRedis(redis, config);
  const fileHost = await createFileHost(config, db);
  const versions = new CacheVersions(redis, config.redisPrefix);
  try {
    const setupStart = performance.now();
    const { rows: [author] } = await setup.query<{ id: string }>(
      `INSERT INTO accounts (username, domain, uri, inbox_url, fetched_at) VALUES ('far', 'files.bench.example', 'https://files.bench.example/users/far', 'https://files.bench.example/users/far/inbox', now()) RETURNING id`,
    );
    const posts = Math.ceil(ATTACHMENTS / PER_POST);
    await setup.query(
      `INSERT INTO statuses (account_id, visibility, uri, content)
       SELECT $1, 'public', 'https://files.bench.example/statuses/' || g, '<p>post ' || g || '</p>' FROM generate_series(1, $2) g`, [author!.id, posts],
    );
    // Every attachment copied (both keys set), and its two files in the ledger, cached ten days ago.
    const { rows: media } = await setup.query<{ id: string }>(
      `INSERT INTO media_attachments (account_id, status_id, position, type, state, remote_url, original_key, original_type, small_key, small_type)
       SELECT $1, s.id, p, 'image', 'ready', 'https://files.bench.example/media/' || s.id || '-' || p || '.jpg',
              'cache/media/x/original.jpg', 'image/jpeg', 'cache/media/x/small.webp', 'image/webp'
         FROM (SELECT id FROM statuses WHERE account_id = $1 ORDER BY id) s, generate_series(1, $2) p
        LIMIT $3 RETURNING id`, [author!.id, PER_POST, ATTACHMENTS],
    );
    await setup.query(
      `UPDATE media_attachments SET original_key = 'cache/media/' || id || '/h/original.jpg', small_key = 'cache/media/' || id || '/h/small.webp' WHERE account_id = $1`, [author!.id],
    );
    const ids = media.map((m) => m.id);
    for (let i = 0; i < ids.length; i += 10_000) {
      const chunk = ids.slice(i, i + 10_000);
      await setup.query(
        `INSERT INTO cached_files (key, kind, owner_id, source_url, bytes, cached_at)
         SELECT 'cache/media/' || m || '/h/' || f, 'attachment', m, 'https://files.bench.example/media/' || m, 300, now() - interval '10 days'
           FROM unnest($1::bigint[]) m, unnest(ARRAY['original.jpg', 'small.webp']) f`, [chunk],
      );
    }
    const bytes = Buffer.alloc(300, 7);
    for (const id of ids) {
      const dir = join(env.DATA_DIR, 'files', 'cache', 'media', id, 'h');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'original.jpg'), bytes);
      writeFileSync(join(dir, 'small.webp'), bytes);
    }
    const files = Number((await setup.query(`SELECT count(*) AS n FROM cached_files`)).rows[0].n);
    console.log(`\nset up ${files} cached files of ${ids.length} attachments in ${posts} posts in ${((performance.now() - setupStart) / 1000).toFixed(1)} s (file host: ${config.fileHost ?? 'local'} under ${env.DATA_DIR})`);

    const ctx = { db, redis, config, fileHost, versions };
    const before = new Date(Date.now() - 7 * 86_400_000);
    globalThis.gc?.();
    const rssBefore = rssMb(process.pid);
    const peakReset = resetPeakRss(process.pid);
    const batchMs: number[] = [];
    let removed = 0;
    const started = performance.now();
    for (;;) {
      const t = performance.now();
      const n = await pruneCachedMedia(ctx, before, { batch: BATCH, maxBatches: 1 });
      if (n === 0) break;
      batchMs.push(performance.now() - t);
      removed += n;
    }
    const elapsed = (performance.now() - started) / 1000;
    const peak = peakRssMb(process.pid);
    const left = Number((await db.query(`SELECT count(*) AS n FROM cached_files`)).rows[0].n);
    const stillCopied = Number((await db.query(`SELECT count(*) AS n FROM media_attachments WHERE original_key IS NOT NULL`)).rows[0].n);
    const onDisk = readdirSync(join(env.DATA_DIR, 'files', 'cache', 'media'), { recursive: true }).filter((f) => String(f).includes('.')).length;
    console.log(`prune of ${removed} files older than 7 days, ${BATCH} a batch: ${elapsed.toFixed(1)} s (${Math.round(removed / elapsed)} files/s) in ${batchMs.length} batches`);
    console.log(`  batch time: median ${median(batchMs).toFixed(0)} ms, min ${Math.min(...batchMs).toFixed(0)}, max ${Math.max(...batchMs).toFixed(0)}`);
    console.log(`  process memory: ${rssBefore} MB before, peak ${peak} MB during${peakReset ? '' : ' (peak since start: the kernel would not reset it)'}`);
    console.log(`  left: ${left} ledger rows, ${stillCopied} attachments still naming a copy, ${onDisk} files on disk\n`);
  } finally {
    await db.end();
    await setup.end();
    fileHost.close?.();
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropDatabase(config.databaseUrl);
    rmSync(env.DATA_DIR, { recursive: true, force: true });
  }
}

await main();
