// `npm run bench:transcode-load`: figures printed, not asserted. What four videos being transcoded do to the rest of
// the server: home-timeline reads (32 connections) and posting (32 connections, 8 authors), each for
// BENCH_LOAD_SECONDS (5), in rounds that alternate without transcoding ("quiet") and while four 720p clips are
// transcoded at once (MEDIA_TRANSCODE_CONCURRENCY=4, each ffmpeg on one thread at idle priority, as always); the order inside a round
// alternates too. One server process with web and worker (ROLE=all, what one machine runs). Prints the median of
// BENCH_ROUNDS (5) rounds with the spread (lowest–highest), and busy over quiet.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { accountMaker, api, authorsAndPosters, benchSettings, measureHomeAndPosting, type HomeAndPosting, startServer, waitHealthy } from './common.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5);
const CLIP_SECONDS = Number(process.env.BENCH_CLIP_SECONDS ?? 10);
const VIDEOS = 4;
const { env, config, base } = benchSettings(Number(process.env.BENCH_PORT ?? 3930), { MEDIA_TRANSCODE_CONCURRENCY: String(VIDEOS) });

/** A 720p30 clip with moving detail (noise over a test card), H.264 4:2:2 in QuickTime: transcoded (4:2:0 would only be re-packed). */
function clip(seconds: number, seed: number): Buffer {
  const path = join(tmpdir(), `bench-load-${process.pid}-${seed}.mov`);
  execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=30:duration=${seconds}`,
    '-f', 'lavfi', '-i', `sine=frequency=${300 + seed * 50}:duration=${seconds}`, '-vf', `noise=alls=12:allf=t,hue=h=${seed * 40}`, '-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '6M',
    '-pix_fmt', 'yuv422p', '-c:a', 'aac', '-shortest', path]);
  const data = readFileSync(path);
  rmSync(path);
  return data;
}

/** ffmpeg processes the server runs now (prlimit, chrt and nice exec it, so its parent is the server). */
function ffmpegChildren(server: number): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (/^Name:\s+ffmpeg$/m.test(status) && /PPid:\s+(\d+)/.exec(status)?.[1] === String(server)) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const spread = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`;

const measure = (reader: string, posters: string[]) => measureHomeAndPosting(base, reader, posters, SECONDS);

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const server: ChildProcess = startServer(env);
  const redis = new Redis(config.redisUrl);
  try {
    await Promise.race([waitHealthy(base), new Promise((_, reject) => server.once('exit', (code) => reject(new Error(`server exited (${code}) before it was healthy`))))]);
    const register = await accountMaker(base);
    // The reader follows 10 authors of 4 posts each (the page `npm run bench` reads); 8 others post under load.
    const reader = await register('reader');
    const posters = await authorsAndPosters(base, register, reader, 10);
    const uploader = await register('videographer');
    const clips = Array.from({ length: VIDEOS }, (_, i) => clip(CLIP_SECONDS, i));
    await new Promise((r) => setTimeout(r, 1000));
    await measure(reader, posters); // warm-up, not counted

    const quiet: HomeAndPosting[] = [];
    const busy: HomeAndPosting[] = [];
    const stillRunning: number[] = [];
    const busyRound = async () => {
      const ids: string[] = [];
      for (const [i, data] of clips.entries()) {
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(data)], { type: 'video/quicktime' }), `clip${i}.mov`);
        const res = await fetch(`${base}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${uploader}` }, body: form });
        if (res.status !== 202) throw new Error(`upload: ${res.status} ${await res.text()}`);
        ids.push(((await res.json()) as { id: string }).id);
      }
      const started = performance.now();
      while (ffmpegChildren(server.pid!) < VIDEOS) {
        if (performance.now() - started > 30_000) throw new Error(`${ffmpegChildren(server.pid!)} of ${VIDEOS} transcodes started after 30 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
      busy.push(await measure(reader, posters));
      stillRunning.push(ffmpegChildren(server.pid!));
      for (const id of ids) {
        for (;;) {
          const r = await fetch(`${base}/api/v1/media/${id}`, { headers: { authorization: `Bearer ${uploader}` } });
          if (r.status === 200) break;
          if (r.status !== 206) throw new Error(`media ${id}: ${r.status} ${await r.text()}`);
          await new Promise((r2) => setTimeout(r2, 250));
        }
      }
    };
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        quiet.push(await measure(reader, posters));
        await busyRound();
      } else {
        await busyRound();
        quiet.push(await measure(reader, posters));
      }
      const q = quiet[quiet.length - 1]!;
      const b = busy[busy.length - 1]!;
      console.log(`round ${round + 1}: home ${Math.round(q.homeRps)} quiet / ${Math.round(b.homeRps)} busy req/s; posting ${Math.round(q.postRps)} / ${Math.round(b.postRps)} posts/s; ffmpeg still running at the end: ${stillRunning[stillRunning.length - 1]}; load ${loadavg()[0]!.toFixed(1)}`);
    }
    const row = (name: string, pick: (f: HomeAndPosting) => number, unit: string) => {
      const q = quiet.map(pick);
      const b = busy.map(pick);
      console.log(`  ${name}: quiet ${Math.round(median(q))} ${unit} (${spread(q)}), while ${VIDEOS} videos transcode ${Math.round(median(b))} ${unit} (${spread(b)}): ${(median(b) / median(q)).toFixed(2)} of quiet`);
    };
    console.log(`\n${ROUNDS} alternating rounds, ${SECONDS} s each load, ${VIDEOS} ${CLIP_SECONDS} s 720p30 clips transcoded at once (MEDIA_TRANSCODE_CONCURRENCY=${VIDEOS}), ${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    row('home timeline', (f) => f.homeRps, 'req/s');
    row('home timeline p99', (f) => f.homeP99, 'ms');
    row('posting', (f) => f.postRps, 'posts/s');
    row('posting p99', (f) => f.postP99, 'ms');
    console.log(`  errors: ${[...quiet, ...busy].reduce((n, f) => n + f.errors, 0)}; transcodes still running when a busy round's load ended: ${stillRunning.join(', ')} of ${VIDEOS}\n`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropDatabase(config.databaseUrl);
    rmSync(env.DATA_DIR, { recursive: true, force: true });
  }
}

await main();
