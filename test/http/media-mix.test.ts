import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { findExecutable } from '../../services/media-tools.ts';
import { requireProgram } from '../helpers/programs.ts';

// Mastodon's rule for a post's files (PostStatusService and UpdateStatusService#validate_media!): a video or an audio
// file goes alone. Images and a video, two videos, a video and an audio file are refused with 422 and Mastodon's
// words, when posting, scheduling and editing, and nothing is written; a GIF (gifv) goes with images.
const MIXED = 'Cannot attach a video to a post that already contains images';

// Four uploads, video among them, are transcoded by the media job before the posts: on a loaded machine that takes
// longer than the suite's 30 s a test.
const MEDIA_TIMEOUT = 120_000;

let s: TestServer;
let ann: TestUser;
let dir: string;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

const ffmpeg = (...args: string[]) => execFileSync('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args]);
const sine = ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1'];

/** A file of each kind, made here (a video with sound, an audio file, an animated GIF, a PNG). */
async function files() {
  const clip = join(dir, 'clip.mp4');
  ffmpeg('-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=1', ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', clip);
  const tone = join(dir, 'tone.wav');
  ffmpeg(...sine, tone);
  const gif = join(dir, 'anim.gif');
  ffmpeg('-f', 'lavfi', '-i', 'testsrc=size=32x32:rate=5:duration=1', gif);
  return {
    video: { data: readFileSync(clip), filename: 'clip.mp4', type: 'video/mp4' },
    audio: { data: readFileSync(tone), filename: 'tone.wav', type: 'audio/wav' },
    gif: { data: readFileSync(gif), filename: 'anim.gif', type: 'image/gif' },
    image: { data: await sharp({ create: { width: 16, height: 16, channels: 3, background: '#0a0' } }).png().toBuffer(), filename: 'green.png', type: 'image/png' },
  };
}
let f: Awaited<ReturnType<typeof files>>;

/** Uploads a file through POST /api/v2/media and waits until it is processed; its id and type. */
async function upload(file: { data: Buffer; filename: string; type: string }): Promise<{ id: string; type: string }> {
  const form = await multipart({ file });
  const res = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(ann.token), ...form.headers }, payload: form.payload });
  expect([200, 202], res.body).toContain(res.statusCode);
  const id = res.json<Json>().id as string;
  // An animation's encode runs at idle priority: on a loaded machine it may wait a while for a core.
  for (const until = Date.now() + MEDIA_TIMEOUT; Date.now() < until;) {
    const got = await s.app.inject({ method: 'GET', url: `/api/v1/media/${id}`, headers: bearer(ann.token) });
    if (got.statusCode === 200) return { id, type: got.json<Json>().type };
    expect(got.statusCode).toBe(206);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('media did not finish processing');
}

const call = (method: 'POST' | 'PUT' | 'GET', url: string, payload?: object) =>
  s.app.inject({ method, url, headers: bearer(ann.token), ...(payload ? { payload } : {}) });
const counts = async () => (await s.ctx.db.query<{ statuses: number; scheduled: number; attached: number }>(
  `SELECT (SELECT count(*)::int FROM statuses) AS statuses, (SELECT count(*)::int FROM scheduled_statuses) AS scheduled,
          (SELECT count(*)::int FROM media_attachments WHERE status_id IS NOT NULL OR scheduled_status_id IS NOT NULL) AS attached`,
)).rows[0]!;

beforeAll(async () => {
  requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
  requireProgram(findExecutable('ffprobe'), 'ffprobe', 'ffmpeg');
  s = await startTestServer();
  [ann] = await registerUsers(s.app, 'ann');
  dir = mkdtempSync(join(tmpdir(), 'media-mix-test-'));
  f = await files();
});
afterAll(async () => {
  await s?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a post whose files mix a video or audio file with others', () => {
  it('is refused with 422 and Mastodon\'s words by POST /api/v1/statuses, posting now or scheduled, and nothing is written', async () => {
    const [image, video, video2, audio] = [await upload(f.image), await upload(f.video), await upload(f.video), await upload(f.audio)];
    expect([image.type, video.type, audio.type]).toEqual(['image', 'video', 'audio']);
    const before = await counts();
    const later = new Date(Date.now() + 60 * 60_000).toISOString();
    for (const ids of [[image.id, video.id], [video.id, image.id], [video.id, video2.id], [video.id, audio.id], [audio.id, image.id]]) {
      for (const scheduled of [{}, { scheduled_at: later }]) {
        const res = await call('POST', '/api/v1/statuses', { status: 'mixed', media_ids: ids, ...scheduled });
        expect(res.statusCode, `${ids} ${JSON.stringify(scheduled)}`).toBe(422);
        expect(res.json()).toEqual({ error: MIXED });
      }
    }
    expect(await counts()).toEqual(before);
    // Each alone is posted, as are images together.
    const alone = await call('POST', '/api/v1/statuses', { status: 'a clip', media_ids: [video.id] });
    expect(alone.statusCode, alone.body).toBe(200);
    const image2 = await upload(f.image);
    const two = await call('POST', '/api/v1/statuses', { status: 'two pictures', media_ids: [image.id, image2.id] });
    expect(two.statusCode, two.body).toBe(200);
  }, MEDIA_TIMEOUT);

  it('takes a GIF (gifv) with an image, as Mastodon does', async () => {
    const [gif, image] = [await upload(f.gif), await upload(f.image)];
    expect(gif.type).toBe('gifv');
    const res = await call('POST', '/api/v1/statuses', { status: 'gif and picture', media_ids: [gif.id, image.id] });
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json<Json>().media_attachments as Json[]).map((m) => m.type)).toEqual(['gifv', 'image']);
  }, MEDIA_TIMEOUT);

  it('is refused by PUT /api/v1/statuses/:id, the post left as it was', async () => {
    const image = await upload(f.image);
    const posted = await call('POST', '/api/v1/statuses', { status: 'a picture', media_ids: [image.id] });
    expect(posted.statusCode).toBe(200);
    const id = posted.json<Json>().id as string;
    const video = await upload(f.video);
    const edit = await call('PUT', `/api/v1/statuses/${id}`, { status: 'now with a clip', media_ids: [image.id, video.id] });
    expect(edit.statusCode).toBe(422);
    expect(edit.json()).toEqual({ error: MIXED });
    const after = (await call('GET', `/api/v1/statuses/${id}`)).json<Json>();
    expect([after.content, after.edited_at, (after.media_attachments as Json[]).map((m) => m.id)]).toEqual(['<p>a picture</p>', null, [image.id]]);
    expect((await s.ctx.db.query(`SELECT status_id FROM media_attachments WHERE id = $1`, [video.id])).rows[0].status_id).toBeNull();
    // The clip in place of the picture is an edit like any other.
    const swapped = await call('PUT', `/api/v1/statuses/${id}`, { status: 'a clip instead', media_ids: [video.id] });
    expect(swapped.statusCode, swapped.body).toBe(200);
    expect((swapped.json<Json>().media_attachments as Json[]).map((m) => m.type)).toEqual(['video']);
  }, MEDIA_TIMEOUT);
});
