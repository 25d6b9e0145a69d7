import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';
import { acceptUpload, processMedia, type MediaDeps } from '../../services/media.ts';
import { findExecutable } from '../../services/media-tools.ts';
import { requireProgram } from '../helpers/programs.ts';

// Video, audio and animated images as people post them: fixtures made here by ffmpeg itself (1 s, tiny), uploaded
// through the v2 API, checked through the API and, on the stored file, with ffprobe.
let s: TestServer;
let eve: TestUser;
let dir: string;
const heifEnc = findExecutable('heif-enc');
/** Encodes run at idle priority, after everything else on the machine: on a loaded one, one may wait a while. */
const MEDIA_TIMEOUT = 120_000;
/** Each test's own limit: up to three uploads waited on. */
const TESTS = { timeout: 3 * MEDIA_TIMEOUT };

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses and ffprobe's JSON

const ffmpeg = (...args: string[]) => execFileSync('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args]);
const testsrc = (size: string, rate = 10, duration = 1) => ['-f', 'lavfi', '-i', `testsrc=size=${size}:rate=${rate}:duration=${duration}`];
const sine = ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1'];

/** The clips, as ffmpeg makes them (each made once, when first used). */
const FIXTURES: Record<string, () => string[]> = {
  // An iPhone's kind of clip: HEVC in QuickTime, with a location and other metadata.
  'hevc.mov': () => [...testsrc('96x64'), ...sine, '-c:v', 'libx265', '-x265-params', 'log-level=error', '-pix_fmt', 'yuv420p', '-tag:v', 'hvc1', '-c:a', 'aac', '-shortest',
    '-metadata', 'location=+48.8583+002.2945/', '-metadata', 'title=Secret title', '-metadata', 'creation_time=2024-05-01T10:00:00Z'],
  'h264.mp4': () => [...testsrc('80x48'), ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-metadata', 'title=Holiday', '-metadata', 'location=+40.0+010.0/'],
  'vp9.webm': () => [...testsrc('64x64'), '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-pix_fmt', 'yuv420p', '-metadata', 'title=Secret'],
  // Theora and Vorbis in Ogg (Mastodon takes `video/ogg`).
  'theora.ogv': () => [...testsrc('64x48'), ...sine, '-c:v', 'libtheora', '-c:a', 'libvorbis', '-shortest', '-metadata', 'title=Secret', '-f', 'ogg'],
  // One frame over the pixel limit (cheap to make), and a tenth of a second at 240 fps.
  'large.mp4': () => ['-f', 'lavfi', '-i', 'color=c=blue:size=4000x2200:rate=1:duration=1', '-frames:v', '1', '-c:v', 'mpeg4'],
  'fast.mp4': () => [...testsrc('32x32', 240, 0.1), '-c:v', 'mpeg4'],
  'anim.gif': () => testsrc('64x48'),
  'anim.png': () => [...testsrc('64x48'), '-plays', '0', '-f', 'apng'],
  'tone.wav': () => sine,
  // An iPhone's other kind: H.264 + AAC in QuickTime.
  'h264.mov': () => [...testsrc('80x48'), ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-metadata', 'location=+40.0+010.0/', '-f', 'mov'],
  // Opus in Ogg, as a voice message is sent (file-type calls it `audio/ogg; codecs=opus`).
  'voice.opus': () => [...sine, '-c:a', 'libopus', '-metadata', 'artist=Someone', '-f', 'ogg'],
  'many.mp4': () => [...sine, ...Array.from({ length: 20 }, () => ['-map', '0:a']).flat(), '-c:a', 'aac', '-b:a', '16k'],
  // Its index first (faststart), so ffprobe reads it whatever follows: the frames are then overwritten (corrupt.mp4).
  'indexed.mp4': () => [...testsrc('64x48'), '-c:v', 'libx265', '-x265-params', 'log-level=error', '-pix_fmt', 'yuv420p', '-tag:v', 'hvc1', '-movflags', '+faststart'],
  // Without faststart: the index at the end, so a cut-off copy is a header and half its frames.
  'long.mp4': () => [...testsrc('64x48', 10, 2), ...sine.map((a) => a.replace('duration=1', 'duration=2')), '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest'],
};

function fixture(name: string): Buffer {
  const path = join(dir, name);
  if (!existsSync(path)) ffmpeg(...FIXTURES[name]!(), path);
  return readFileSync(path);
}

beforeAll(async () => {
  // The machine's programs, as README.md's prerequisites install them: missing, this file fails saying which package.
  requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
  requireProgram(findExecutable('ffprobe'), 'ffprobe', 'ffmpeg');
  requireProgram(findExecutable('heif-convert'), 'heif-convert', 'libheif-examples');
  s = await startTestServer();
  [eve] = await registerUsers(s.app, 'eve');
  dir = mkdtempSync(join(tmpdir(), 'media-av-test-'));
});
afterAll(async () => {
  await s?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function upload(data: Buffer, filename: string, type: string, fields: Record<string, string | { data: Buffer; filename: string; type: string }> = {}) {
  const form = await multipart({ ...fields, file: { data, filename, type } });
  return s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(eve.token), ...form.headers }, payload: form.payload });
}

async function processed(id: string): Promise<{ status: number; body: Json }> {
  for (const until = Date.now() + MEDIA_TIMEOUT; Date.now() < until;) {
    const res = await s.app.inject({ method: 'GET', url: `/api/v1/media/${id}`, headers: bearer(eve.token) });
    if (res.statusCode !== 206) return { status: res.statusCode, body: res.json() };
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('media did not finish processing');
}

/** Uploaded, processed, and checked as an entity with its files. */
async function uploadAndProcess(data: Buffer, filename: string, type: string, fields = {}): Promise<Json> {
  const res = await upload(data, filename, type, fields);
  expect(res.statusCode, res.body).toBe(202);
  const done = await processed(res.json().id);
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  expectEntity('MediaAttachment', done.body);
  expect(done.body.url).toMatch(/^http/);
  expect(done.body.preview_url).toMatch(/^http/);
  expect(done.body.blurhash).toMatch(/^[0-9A-Za-z#$%*+,-.:;=?@[\]^_{|}~]{10,}$/);
  return done.body;
}

async function fetchFile(url: string): Promise<Buffer> {
  const res = await s.app.inject({ method: 'GET', url: new URL(url).pathname });
  expect(res.statusCode).toBe(200);
  return res.rawPayload;
}

/** ffprobe's streams and format of a served file. */
async function probeServed(url: string): Promise<{ data: Buffer; streams: Json[]; format: Json }> {
  const data = await fetchFile(url);
  const path = join(dir, `served-${Math.random().toString(36).slice(2)}`);
  writeFileSync(path, data);
  const out = JSON.parse(execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path]).toString());
  return { data, ...out };
}

/** Tags that are the muxer's and encoder's own (its name); anything else (a title, a date, a location) is the uploader's metadata. */
const MUXER_TAGS = new Set(['encoder', 'major_brand', 'minor_version', 'compatible_brands', 'handler_name', 'vendor_id', 'language']);
const userTags = (x: { streams: Json[]; format: Json }) => [x.format.tags ?? {}, ...x.streams.map((st) => st.tags ?? {})].flatMap((t) => Object.keys(t)).filter((k) => !MUXER_TAGS.has(k));

/** Whether an MP4's index comes before its media data (`+faststart`: playable while it downloads). */
const fastStart = (mp4: Buffer) => mp4.indexOf('moov') >= 0 && mp4.indexOf('moov') < mp4.indexOf('mdat');

/** The stream packets' checksum: equal when the stream was copied, not re-encoded. */
const streamHash = (path: string, stream: string) => execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-i', path, '-map', stream, '-c', 'copy', '-f', 'md5', '-']).toString().trim();

describe('video', TESTS, () => {
  it('transcodes an HEVC QuickTime clip to H.264 + AAC in MP4 with faststart, without its location or other metadata', async () => {
    const mov = fixture('hevc.mov');
    const sent = JSON.parse(execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', join(dir, 'hevc.mov')]).toString());
    expect(sent.format.tags.location).toBe('+48.8583+002.2945/'); // what we send has it

    const media = await uploadAndProcess(mov, 'clip.mov', 'video/quicktime', { description: 'A test card' });
    expect(media).toMatchObject({ type: 'video', description: 'A test card' });
    expect(media.meta.original).toMatchObject({ width: 96, height: 64, frame_rate: '10/1' });
    expect(media.meta.original.duration).toBeGreaterThan(0.9);
    expect(media.meta.original.duration).toBeLessThan(1.2);
    expect(media.meta.original.bitrate).toBeGreaterThan(0);
    expect(media.meta.small).toMatchObject({ width: 96, height: 64, size: '96x64', aspect: 1.5 });

    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(stored.streams[0]!.pix_fmt).toBe('yuv420p');
    expect(stored.format.format_name).toContain('mp4');
    expect(stored.format.tags?.major_brand).toBe('isom');
    expect(userTags(stored)).toEqual([]);
    expect(stored.data.includes('48.8583')).toBe(false);
    expect(fastStart(stored.data)).toBe(true);
    const preview = await sharp(await fetchFile(media.preview_url)).metadata();
    expect([preview.format, preview.width, preview.height]).toEqual(['jpeg', 96, 64]);
  });

  it('passes H.264 + AAC in MP4 through, its streams as sent, only its metadata removed', async () => {
    const mp4 = fixture('h264.mp4');
    const media = await uploadAndProcess(mp4, 'clip.mp4', 'video/mp4');
    expect(media.type).toBe('video');
    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(userTags(stored)).toEqual([]);
    expect(fastStart(stored.data)).toBe(true);
    const storedPath = join(dir, 'stored-h264.mp4');
    writeFileSync(storedPath, stored.data);
    expect(streamHash(storedPath, '0:v:0')).toBe(streamHash(join(dir, 'h264.mp4'), '0:v:0'));
  });

  it('re-packs H.264 + AAC in QuickTime into MP4, its streams copied, its metadata removed', async () => {
    const media = await uploadAndProcess(fixture('h264.mov'), 'clip.mov', 'video/quicktime');
    expect(media.type).toBe('video');
    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(stored.format.tags?.major_brand).toBe('isom');
    expect(userTags(stored)).toEqual([]);
    expect(fastStart(stored.data)).toBe(true);
    const storedPath = join(dir, 'stored-h264-mov.mp4');
    writeFileSync(storedPath, stored.data);
    expect(streamHash(storedPath, '0:v:0')).toBe(streamHash(join(dir, 'h264.mov'), '0:v:0'));
  });

  it('makes a silent VP9 WebM a gifv, as Mastodon does with a video without sound', async () => {
    const webm = fixture('vp9.webm');
    const media = await uploadAndProcess(webm, 'loop.webm', 'video/webm');
    expect(media.type).toBe('gifv');
    expect(media.meta.original).toMatchObject({ width: 64, height: 64 });
    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => st.codec_name)).toEqual(['h264']);
    expect(userTags(stored)).toEqual([]);
  });

  it('takes Theora and Vorbis in Ogg, as Mastodon does, and makes them H.264 + AAC in MP4', async () => {
    const media = await uploadAndProcess(fixture('theora.ogv'), 'clip.ogv', 'video/ogg');
    expect(media.type).toBe('video');
    expect(media.meta.original).toMatchObject({ width: 64, height: 48, frame_rate: '10/1' });
    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(userTags(stored)).toEqual([]);
  });

  it('uses an uploaded thumbnail as the preview, and its blurhash', async () => {
    const thumbnail = await sharp({ create: { width: 60, height: 40, channels: 3, background: '#f00' } }).png().toBuffer();
    const media = await uploadAndProcess(fixture('h264.mp4'), 'clip.mp4', 'video/mp4', { thumbnail: { data: thumbnail, filename: 't.png', type: 'image/png' } });
    expect(media.preview_url).toContain('thumbnail-');
    expect(media.meta.small).toMatchObject({ width: 80, height: 48 }); // the frame is made all the same
    // Plain red: the blurhash's DC component (characters 2-5) is red's, not the test card's.
    const [r, g, b] = decodeDc(media.blurhash);
    expect([r! > 240, g! < 16, b! < 16]).toEqual([true, true, true]);
  });

  it('refuses with 422, at once, more pixels than 3840x2160 or more than 120 frames a second (never scaled down)', async () => {
    const large = fixture('large.mp4');
    const res = await upload(large, 'large.mp4', 'video/mp4');
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().error).toMatch(/4000x2200 videos are not supported/);
    const fast = fixture('fast.mp4');
    const res2 = await upload(fast, 'fast.mp4', 'video/mp4');
    expect(res2.statusCode, res2.body).toBe(422);
    expect(res2.json().error).toMatch(/240fps videos are not supported/);
  });
});

describe('animated images', TESTS, () => {
  it('makes an animated GIF, APNG and animated WebP a silent looping MP4 (gifv) with a preview', async () => {
    const gif = fixture('anim.gif');
    const apng = fixture('anim.png');
    const webp = await sharp(gif, { animated: true }).webp().toBuffer();
    for (const [name, data, mime] of [['gif', gif, 'image/gif'], ['png', apng, 'image/png'], ['webp', webp, 'image/webp']] as const) {
      const media = await uploadAndProcess(data, `anim.${name}`, mime);
      expect(media.type, name).toBe('gifv');
      expect(media.meta.original, name).toMatchObject({ width: 64, height: 48 });
      expect(media.meta.original.duration, name).toBeGreaterThan(0.5);
      const stored = await probeServed(media.url);
      expect(stored.streams.map((st) => st.codec_name), name).toEqual(['h264']);
      expect(stored.streams[0]!.nb_frames, name).toBe('10');
    }
  });

  it('keeps a still GIF an image', async () => {
    const gif = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#0a0' } }).gif().toBuffer();
    const media = await uploadAndProcess(gif, 'still.gif', 'image/gif');
    expect(media.type).toBe('image');
  });
});

describe('audio', TESTS, () => {
  it('re-encodes to MP3 without metadata, with its cover art as the preview and its duration in meta', async () => {
    const cover = join(dir, 'cover.png');
    writeFileSync(cover, await sharp({ create: { width: 80, height: 60, channels: 3, background: '#36c' } }).png().toBuffer());
    // FLAC with its cover as an attached picture, and tags.
    ffmpeg(...sine, '-i', cover, '-map', '0:a', '-map', '1:v', '-c:a', 'flac', '-c:v', 'png', '-disposition:v', 'attached_pic',
      '-metadata', 'title=Song', '-metadata', 'artist=Someone', '-metadata', 'comment=recorded at home', join(dir, 'song.flac'));
    const flac = readFileSync(join(dir, 'song.flac'));
    const media = await uploadAndProcess(flac, 'song.flac', 'audio/flac');
    expect(media.type).toBe('audio');
    expect(media.meta.original.duration).toBeGreaterThan(0.9);
    expect(media.meta.original.duration).toBeLessThan(1.2);
    expect(media.meta.small).toMatchObject({ width: 80, height: 60 });
    // Mastodon's colours from the cover: its blue (#36c, counted in the histogram bin whose centre is #265ac0) behind,
    // and a lighter colour in front (the cover has no other; the JPEG preview's edges give a few near ones).
    expect(media.meta.colors.background).toBe('#265ac0');
    expect(media.meta.colors.foreground).toMatch(/^#[c-f][0-9a-f][c-f][0-9a-f][c-f][0-9a-f]$/);
    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => [st.codec_type, st.codec_name])).toEqual([['audio', 'mp3']]);
    expect(userTags(stored)).toEqual([]);
    expect(stored.data.includes('Someone')).toBe(false);
  });

  it('takes Opus in Ogg and makes it MP3 without its tags', async () => {
    const media = await uploadAndProcess(fixture('voice.opus'), 'voice.opus', 'audio/ogg');
    expect(media.type).toBe('audio');
    expect(media.meta.original.duration).toBeGreaterThan(0.9);
    const stored = await probeServed(media.url);
    expect(stored.streams.map((st) => [st.codec_type, st.codec_name])).toEqual([['audio', 'mp3']]);
    expect(stored.data.includes('Someone')).toBe(false);
  });

  it('gives audio without cover art a plain preview', async () => {
    const wav = fixture('tone.wav');
    const media = await uploadAndProcess(wav, 'tone.wav', 'audio/wav');
    expect(media.type).toBe('audio');
    expect(media.meta.small).toMatchObject({ width: 400, height: 400 });
    expect(media.meta.colors).toEqual({ background: '#404040', foreground: '#bfbfbf', accent: '#999999' });
    expect((await probeServed(media.url)).streams.map((st) => st.codec_name)).toEqual(['mp3']);
  });

  it("takes the colours from an uploaded thumbnail, and from a new one given before posting; a video has none", async () => {
    // A white frame round a black middle: white behind, black (the only other colour) in front.
    const framed = await sharp({ create: { width: 80, height: 80, channels: 3, background: '#fff' } })
      .composite([{ input: await sharp({ create: { width: 40, height: 40, channels: 3, background: '#000' } }).png().toBuffer(), left: 20, top: 20 }]).png().toBuffer();
    const media = await uploadAndProcess(fixture('tone.wav'), 'tone.wav', 'audio/wav', { thumbnail: { data: framed, filename: 't.png', type: 'image/png' } });
    expect(media.meta.colors.background).toBe('#f3f3f3');
    expect(media.meta.colors.foreground).toBe('#0d0d0d');
    const red = await sharp({ create: { width: 40, height: 40, channels: 3, background: '#c00' } }).png().toBuffer();
    const form = await multipart({ thumbnail: { data: red, filename: 'r.png', type: 'image/png' } });
    const updated = await s.app.inject({ method: 'PUT', url: `/api/v1/media/${media.id}`, headers: { ...bearer(eve.token), ...form.headers }, payload: form.payload });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json().meta.colors.background).toBe('#c00d0d');
    const video = await uploadAndProcess(fixture('h264.mp4'), 'clip.mp4', 'video/mp4');
    expect(video.meta.colors).toBeUndefined();
  });
});

describe('HEIC photos', () => {
  it('are made JPEG, without their metadata', async () => {
    requireProgram(heifEnc, 'heif-enc', 'libheif-examples');
    const jpeg = join(dir, 'photo.jpg');
    writeFileSync(jpeg, await sharp({ create: { width: 120, height: 80, channels: 3, background: '#c84' } }).jpeg()
      .withExifMerge({ IFD0: { Copyright: 'secret' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 24/1' } }).toBuffer());
    execFileSync(heifEnc!, ['-q', '60', '-o', join(dir, 'photo.heic'), jpeg], { stdio: 'ignore' });
    const heic = readFileSync(join(dir, 'photo.heic'));
    const media = await uploadAndProcess(heic, 'IMG_0001.HEIC', 'image/heic');
    expect(media.type).toBe('image');
    expect(media.meta.original).toMatchObject({ width: 120, height: 80 });
    const original = await sharp(await fetchFile(media.url)).metadata();
    expect([original.format, original.exif]).toEqual(['jpeg', undefined]);
  });
});

describe('bad input', TESTS, () => {
  it('refuses an executable named .mp4, an empty file, a file of many streams and garbage after a video header, with 422', async () => {
    const elf = readFileSync(process.execPath).subarray(0, 256 * 1024);
    const exe = await upload(elf, 'video.mp4', 'video/mp4');
    expect(exe.statusCode).toBe(422);
    expect(exe.json().error).toMatch(/content type/);
    expect((await upload(Buffer.alloc(0), 'empty.mp4', 'video/mp4')).statusCode).toBe(422);

    const many = fixture('many.mp4');
    const res = await upload(many, 'many.mp4', 'video/mp4');
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().error).toMatch(/more than 16 streams/);

    const mp4 = fixture('h264.mp4');
    const garbage = Buffer.concat([mp4.subarray(0, 32), Buffer.alloc(4096, 0x5a)]);
    const bad = await upload(garbage, 'clip.mp4', 'video/mp4');
    expect(bad.statusCode, bad.body).toBe(422);
  });

  it('refuses a truncated video (its index cut off) with 422 at once', async () => {
    const whole = fixture('long.mp4');
    const res = await upload(whole.subarray(0, Math.floor(whole.length * 0.6)), 'cut.mp4', 'video/mp4');
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().error).toMatch(/not a video or audio file that can be read/);
  });

  it('fails a corrupt video once, cleanly: a clear error, nothing on the file host, no post with it, and the next upload processed', async () => {
    // Its header and index are sound (ffprobe takes it), its frames garbage: the decoder fails in the job.
    const corrupt = Buffer.from(fixture('indexed.mp4'));
    corrupt.fill(0x5a, corrupt.indexOf('mdat') + 20);
    const res = await upload(corrupt, 'clip.mp4', 'video/mp4');
    expect(res.statusCode, res.body).toBe(202);
    const failed = await processed(res.json().id);
    expect(failed.status).toBe(422);
    expect(failed.body.error).toMatch(/^Error processing thumbnail for uploaded media: (ffmpeg|the video could not be made)/);
    await expectNothingStored(res.json().id);
    const post = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(eve.token), payload: { status: 'with it', media_ids: [res.json().id] } });
    expect(post.statusCode).toBe(422);
    expect(post.json().error).toMatch(/could not be processed/);
    const next = await uploadAndProcess(fixture('h264.mp4'), 'clip.mp4', 'video/mp4');
    expect(next.type).toBe('video');
  });

  it('fails an upload whose ffmpeg hangs (killed at the time limit) or crashes, once and cleanly', async () => {
    const hang = join(dir, 'ffmpeg-hangs');
    writeFileSync(hang, '#!/bin/sh\nexec sleep 60\n');
    const crash = join(dir, 'ffmpeg-crashes');
    writeFileSync(crash, '#!/bin/sh\nkill -SEGV $$\n');
    for (const file of [hang, crash]) chmodSync(file, 0o755);
    for (const [program, reason] of [[hang, /took longer than 1 s/], [crash, /SIGSEGV/]] as const) {
      // Processed here, by hand, with the broken program (the server's worker never sees the job).
      const deps: MediaDeps = { ...s.ctx, jobs: { enqueue: async () => {} } as unknown as MediaDeps['jobs'], config: { ...s.ctx.config, ffmpegPath: program, mediaTranscodeTimeoutMs: 1000 } };
      const media = await acceptUpload(deps, eve.id, fixture('hevc.mov'), { description: '', focusX: 0, focusY: 0 });
      const started = Date.now();
      await processMedia(deps, media.id);
      expect(Date.now() - started).toBeLessThan(10_000);
      const { rows } = await s.ctx.db.query('SELECT state, failure FROM media_attachments WHERE id = $1', [media.id]);
      expect(rows[0].state).toBe('failed');
      expect(rows[0].failure).toMatch(reason);
      await expectNothingStored(media.id);
      const got = await s.app.inject({ method: 'GET', url: `/api/v1/media/${media.id}`, headers: bearer(eve.token) });
      expect(got.statusCode).toBe(422);
      expect(got.json().error).toMatch(reason);
    }
  });

  it('refuses video and audio plainly where ffmpeg is missing, and keeps an animated GIF an image there', async () => {
    const deps: MediaDeps = { ...s.ctx, config: { ...s.ctx.config, ffmpegPath: '/nonexistent/ffmpeg' } };
    await expect(acceptUpload(deps, eve.id, fixture('h264.mp4'), { description: '', focusX: 0, focusY: 0 })).rejects.toMatchObject({ statusCode: 422, message: expect.stringMatching(/ffmpeg is not installed/) });
    const gif = await acceptUpload(deps, eve.id, fixture('anim.gif'), { description: '', focusX: 0, focusY: 0 });
    expect(gif.type).toBe('image');
  });
});

/** The average colour a blurhash encodes (its DC component, sRGB). */
function decodeDc(hash: string): number[] {
  const digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~';
  const value = [...hash.slice(2, 6)].reduce((n, c) => n * 83 + digits.indexOf(c), 0);
  return [value >> 16, (value >> 8) & 255, value & 255];
}

/** Nothing of an attachment on the file host: no staged upload, no files under its folder. */
async function expectNothingStored(id: string) {
  const { rows } = await s.ctx.db.query('SELECT staged_key, original_key, small_key FROM media_attachments WHERE id = $1', [id]);
  expect(rows[0]).toEqual({ staged_key: null, original_key: null, small_key: null });
  const root = (s.ctx.fileHost as unknown as { inner: { root: string } }).inner.root;
  const staging = existsSync(join(root, 'staging')) ? readdirSync(join(root, 'staging')).filter((f) => f.startsWith(`${id}-`)) : [];
  expect(staging).toEqual([]);
  expect(existsSync(join(root, 'media', id)) ? readdirSync(join(root, 'media', id)) : []).toEqual([]);
}
