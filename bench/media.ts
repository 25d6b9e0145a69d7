// `npm run bench:media`: figures printed, not asserted. 100 photos of about 2 MB uploaded through POST /api/v2/media
// (8 at a time, as a few busy app users would), from the first upload until the last is processed; the web and the
// worker run as separate processes (ROLE=web, ROLE=worker), so the worker's peak memory is its own.
import type { ChildProcess } from 'node:child_process';
import sharp from 'sharp';
import { Redis } from 'ioredis';
import { dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { accountMaker, benchSettings, peakRssMb, startServer, waitHealthy } from './common.ts';

const { env, config, base } = benchSettings(3920);
const PHOTOS = 100;
const PARALLEL = 8;




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
  } finally {
    for (const p of [web, worker]) p.kill('SIGTERM');
    await Promise.all([web, worker].map((p) => new Promise((r) => p.once('exit', r))));
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropDatabase(config.databaseUrl);
  }
}

await main();
