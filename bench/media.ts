// `npm run bench:media`: figures printed, not asserted. 100 photos of about 2 MB uploaded through POST /api/v2/media
// (8 at a time, as a few busy app users would), from the first upload until the last is processed; the web and the
// worker run as separate processes (ROLE=web, ROLE=worker), so the worker's peak memory is its own. Then a 720p
// video (BENCH_VIDEO_SECONDS long, 20 by default; H.264 4:2:2 in QuickTime, so transcoded) uploaded and
// processed: seconds of processing per minute of video, and the peak memory of the worker and of its ffmpeg.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { Redis } from 'ioredis';
import { dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { accountMaker, benchSettings, peakRssMb, startServer, waitHealthy } from './common.ts';

const { env, config, base } = benchSettings(3920);
const PHOTOS = 100;
const PARALLEL = 8;
const VIDEO_SECONDS = Number(process.env.BENCH_VIDEO_SECONDS ?? 20);

/** A 720p clip at 30 fps with moving detail (noise over a test card, so the encoder has work), H.264 4:2:2 in QuickTime (4:2:0 would only be re-packed). */
function video720p(seconds: number): Buffer {
  const path = join(tmpdir(), `bench-720p-${process.pid}.mov`);
  execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=30:duration=${seconds}`,
    '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`, '-vf', 'noise=alls=12:allf=t', '-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '6M',
    '-pix_fmt', 'yuv422p', '-c:a', 'aac', '-shortest', path]);
  const data = readFileSync(path);
  rmSync(path);
  return data;
}

/** The highest VmHWM of the worker's child processes (ffmpeg: prlimit, chrt and nice exec it) seen while `until` runs. */
async function childrenPeakMb<T>(parent: number, until: Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peak = 0;
  let done = false;
  const sample = () => {
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        if (/PPid:\s+(\d+)/.exec(status)?.[1] !== String(parent)) continue;
        const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
        if (hwm) peak = Math.max(peak, Number(hwm[1]) / 1024);
      } catch {
        // gone meanwhile
      }
    }
  };
  const sampler = (async () => {
    while (!done) {
      sample();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    const result = await until;
    return { result, peakMb: Math.round(peak) };
  } finally {
    done = true;
    await sampler;
  }
}




/** A photo-like JPEG of about 2 MB: noise compresses about as badly as a real photo's detail. */
async function photo(seed: number): Promise<Buffer> {
  const width = 2000;
  const height = 1500;
  const pixels = Buffer.alloc(width * height * 3);
  let x = seed * 2654435761;
  for (let i = 0; i < pixels.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    pixels[i] = (x >>> 24) & 0xff;
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } }).blur(0.8).jpeg({ quality: 94 }).toBuffer();
}

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const start = (role: string): ChildProcess => startServer(env, { role });
  const web = start('web');
  const worker = start('worker');
  const redis = new Redis(config.redisUrl);
  try {
    await waitHealthy(base);
    const token = await (await accountMaker(base))('photographer');
    const photos = await Promise.all(Array.from({ length: 10 }, (_, i) => photo(i + 1)));
    const averageMb = photos.reduce((n, p) => n + p.length, 0) / photos.length / 1024 / 1024;

    const started = performance.now();
    const ids: string[] = [];
    let next = 0;
    const uploader = async () => {
      while (next < PHOTOS) {
        const i = next++;
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(photos[i % photos.length]!)], { type: 'image/jpeg' }), `photo${i}.jpg`);
        form.append('description', `photo ${i}`);
        const res = await fetch(`${base}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
        if (res.status !== 202) throw new Error(`upload ${i}: ${res.status} ${await res.text()}`);
        ids.push(((await res.json()) as { id: string }).id);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, uploader));
    const accepted = performance.now() - started;
    const pending = new Set(ids);
    while (pending.size > 0 && performance.now() - started < 300_000) {
      for (const id of [...pending]) {
        const res = await fetch(`${base}/api/v1/media/${id}`, { headers: { authorization: `Bearer ${token}` } });
        if (res.status === 200) pending.delete(id);
        else if (res.status !== 206) throw new Error(`media ${id}: ${res.status}`);
      }
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 100));
    }
    const processed = performance.now() - started;
    console.log(`\n${PHOTOS} photos of ${averageMb.toFixed(1)} MB (2000x1500 JPEG) through POST /api/v2/media, ${PARALLEL} at a time`);
    console.log(`  all accepted (202) after ${Math.round(accepted)} ms: ${(PHOTOS / (accepted / 1000)).toFixed(1)} uploads/s`);
    console.log(`  all processed after ${Math.round(processed)} ms: ${(PHOTOS / (processed / 1000)).toFixed(1)} uploads/s end to end${pending.size ? ` (${pending.size} NOT processed in time)` : ''}`);
    console.log(`  peak memory (VmHWM): worker ${peakRssMb(worker.pid!)} MB, web ${peakRssMb(web.pid!)} MB\n`);

    const clip = video720p(VIDEO_SECONDS);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(clip)], { type: 'video/quicktime' }), 'clip.mov');
    const uploadStarted = performance.now();
    const res = await fetch(`${base}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    if (res.status !== 202) throw new Error(`video upload: ${res.status} ${await res.text()}`);
    const videoId = ((await res.json()) as { id: string }).id;
    const acceptedMs = performance.now() - uploadStarted;
    const { result: media, peakMb } = await childrenPeakMb(worker.pid!, (async () => {
      for (;;) {
        const r = await fetch(`${base}/api/v1/media/${videoId}`, { headers: { authorization: `Bearer ${token}` } });
        if (r.status !== 206) {
          if (r.status !== 200) throw new Error(`video ${videoId}: ${r.status} ${await r.text()}`);
          return (await r.json()) as { meta: { original: { duration: number; bitrate: number } } };
        }
        await new Promise((r2) => setTimeout(r2, 100));
      }
    })());
    const videoMs = performance.now() - uploadStarted;
    console.log(`A ${VIDEO_SECONDS} s 720p30 clip of ${(clip.length / 1024 / 1024).toFixed(1)} MB (H.264 4:2:2 in QuickTime, so transcoded), MEDIA_TRANSCODE_CONCURRENCY ${config.mediaTranscodeConcurrency}`);
    console.log(`  accepted (202, probed) after ${Math.round(acceptedMs)} ms; processed after ${(videoMs / 1000).toFixed(1)} s: ${((videoMs / 1000) / (VIDEO_SECONDS / 60)).toFixed(0)} s of processing per minute of video`);
    console.log(`  out: ${media.meta.original.duration.toFixed(1)} s at ${Math.round(media.meta.original.bitrate / 1000)} kb/s`);
    console.log(`  peak memory (VmHWM): worker ${peakRssMb(worker.pid!)} MB, its ffmpeg ${peakMb} MB\n`);
  } finally {
    for (const p of [web, worker]) p.kill('SIGTERM');
    await Promise.all([web, worker].map((p) => new Promise((r) => p.once('exit', r))));
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropDatabase(config.databaseUrl);
  }
}

await main();
