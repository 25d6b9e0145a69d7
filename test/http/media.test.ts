import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';
import { removeAbandonedMedia } from '../../services/media.ts';

// Uploads are checked at once, processed by a job (orientation, no metadata, preview, blurhash) and attached to posts.
let s: TestServer;
let ida: TestUser;
let jon: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [ida, jon] = await registerUsers(s.app, 'ida', 'jon');
});
afterAll(async () => s?.close());

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

async function upload(user: TestUser, data: Buffer, fields: Record<string, string> = {}, filename = 'photo.jpg', type = 'image/jpeg') {
  const form = await multipart({ ...fields, file: { data, filename, type } });
  return s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(user.token), ...form.headers }, payload: form.payload });
}

async function processed(user: TestUser, id: string): Promise<{ status: number; body: Json }> {
  for (let i = 0; i < 200; i++) {
    const res = await s.app.inject({ method: 'GET', url: `/api/v1/media/${id}`, headers: bearer(user.token) });
    if (res.statusCode !== 206) return { status: res.statusCode, body: res.json() };
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('media did not finish processing');
}

/** A served file's bytes, through the server's own file route. */
async function fetchFile(url: string): Promise<Buffer> {
  const res = await s.app.inject({ method: 'GET', url: new URL(url).pathname });
  expect(res.statusCode).toBe(200);
  return res.rawPayload;
}

// A 1200x800 JPEG stored rotated (EXIF orientation 6: shown as 800x1200) with a GPS position in its metadata.
const photo = () => sharp({ create: { width: 1200, height: 800, channels: 3, background: '#c84' } })
  .jpeg().withExifMerge({ IFD0: { Copyright: 'secret' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 24/1' } }).withMetadata({ orientation: 6 }).toBuffer();

describe('uploading', () => {
  it('accepts a photo at once, processes it, and serves files without its metadata, the right way up', async () => {
    const sent = await sharp(await photo()).metadata();
    expect([sent.orientation, sent.exif?.toString('latin1').includes('secret')]).toEqual([6, true]); // what we send has both
    const res = await upload(ida, await photo(), { description: 'A wall, orange', focus: '0.5,-0.25' }, 'x.txt', 'text/plain');
    expect(res.statusCode, res.body).toBe(202);
    const accepted = res.json();
    expectEntity('MediaAttachment', accepted);
    expect(accepted).toMatchObject({ type: 'image', url: null, description: 'A wall, orange' });

    const done = await processed(ida, accepted.id);
    expect(done.status).toBe(200);
    expectEntity('MediaAttachment', done.body);
    expect(done.body.meta).toMatchObject({ original: { width: 800, height: 1200 }, focus: { x: 0.5, y: -0.25 } });
    expect(done.body.blurhash).toMatch(/^[0-9A-Za-z#$%*+,-.:;=?@[\]^_{|}~]{10,}$/);

    const original = await sharp(await fetchFile(done.body.url)).metadata();
    expect([original.width, original.height]).toEqual([800, 1200]);
    expect(original.exif).toBeUndefined();
    expect(original.orientation ?? 1).toBe(1);
    const small = await sharp(await fetchFile(done.body.preview_url)).metadata();
    expect(small.width! * small.height!).toBeLessThanOrEqual(480 * 480);
    expect([small.width, small.height]).toEqual([done.body.meta.small.width, done.body.meta.small.height]);
  });

  it('takes PNG, GIF, WebP and AVIF by their content', async () => {
    for (const format of ['png', 'gif', 'webp', 'avif'] as const) {
      const data = await sharp({ create: { width: 40, height: 30, channels: 4, background: '#08f8' } })[format]().toBuffer();
      const res = await upload(jon, data, {}, 'file.bin', 'application/octet-stream');
      expect(res.statusCode, `${format}: ${res.body}`).toBe(202);
      const done = await processed(jon, res.json().id);
      expect(done.status, format).toBe(200);
      expect(done.body.meta.original).toMatchObject({ width: 40, height: 30 });
    }
  });

  it('refuses what is not an image, and fails a broken one once, cleanly', async () => {
    const text = await upload(ida, Buffer.from('hello, not an image'), {}, 'photo.jpg', 'image/jpeg');
    expect(text.statusCode).toBe(422);
    expect(text.json().error).toMatch(/content type/);
    const empty = await upload(ida, Buffer.alloc(0));
    expect(empty.statusCode).toBe(422);
    const badFocus = await upload(ida, await photo(), { focus: '3,0' });
    expect(badFocus.statusCode).toBe(422);

    const whole = await photo();
    const truncated = whole.subarray(0, Math.floor(whole.length / 3));
    const res = await upload(ida, truncated);
    expect(res.statusCode).toBe(202); // its header reads as a JPEG; decoding it is the job's
    const failed = await processed(ida, res.json().id);
    expect(failed.status).toBe(422);
    expect(failed.body.error).toEqual(expect.any(String));
    const { rows } = await s.ctx.db.query('SELECT state, original_key, staged_key FROM media_attachments WHERE id = $1', [res.json().id]);
    expect(rows[0]).toEqual({ state: 'failed', original_key: null, staged_key: null });
  });

  it('lets the owner change description and focus, and nobody else see it', async () => {
    const id = (await upload(ida, await photo())).json().id;
    const put = await s.app.inject({ method: 'PUT', url: `/api/v1/media/${id}`, headers: bearer(ida.token), payload: { description: 'Now described', focus: '-1,1' } });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ description: 'Now described', meta: { focus: { x: -1, y: 1 } } });
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/media/${id}`, headers: bearer(jon.token) })).statusCode).toBe(404);
    expect((await s.app.inject({ method: 'PUT', url: `/api/v1/media/${id}`, headers: bearer(jon.token), payload: { description: 'mine now' } })).statusCode).toBe(404);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/media/12345', headers: bearer(ida.token) })).statusCode).toBe(404);
  });
});

describe('posting with media', () => {
  it('attaches up to four of the poster\'s own processed uploads, shown in the status and timelines', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const id = (await upload(ida, await photo(), { description: `photo ${i}` })).json().id;
      await processed(ida, id);
      ids.push(id);
    }
    const res = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ida.token), payload: { media_ids: ids } });
    expect(res.statusCode, res.body).toBe(200);
    const status = res.json();
    expectEntity('Status', status);
    expect(status.media_attachments.map((m: Json) => [m.id, m.description])).toEqual([[ids[0], 'photo 0'], [ids[1], 'photo 1']]);
    expect(status.media_attachments[0].url).toMatch(/^http/);

    const mine = (await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${ida.id}/statuses?only_media=true`, headers: bearer(ida.token) })).json();
    expect(mine.map((x: Json) => x.id)).toEqual([status.id]);
    const pub = (await s.app.inject({ method: 'GET', url: '/api/v1/timelines/public?only_media=true' })).json();
    expect(pub.map((x: Json) => x.id)).toEqual([status.id]);
    // Attached media is no longer the upload's to show or to change.
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/media/${ids[0]}`, headers: bearer(ida.token) })).statusCode).toBe(404);
  });

  it('refuses foreign, attached, unknown, broken and too many media with 422, posting nothing', async () => {
    const count = async () => (await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n as number;
    const before = await count();
    const jons = (await upload(jon, await photo())).json().id;
    await processed(jon, jons);
    const five: string[] = [];
    for (let i = 0; i < 5; i++) five.push((await upload(ida, await photo())).json().id);
    for (const id of five) await processed(ida, id);
    const post = (media_ids: string[]) => s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ida.token), payload: { status: 'with media', media_ids } });
    for (const [what, ids] of [['foreign', [jons]], ['unknown', ['99999999']], ['too many', five]] as const) {
      const res = await post([...ids]);
      expect(res.statusCode, what).toBe(422);
      expect(res.json().error, what).toEqual(expect.any(String));
    }
    expect(await count()).toBe(before);
    // One post takes two; a second post naming one of them is refused.
    expect((await post(five.slice(0, 2))).statusCode).toBe(200);
    expect((await post(five.slice(1, 3))).statusCode).toBe(422);
  });
});

describe('clean-up', () => {
  it('removes uploads never attached within a day, files included', async () => {
    const media = (await upload(jon, await photo())).json();
    const done = await processed(jon, media.id);
    const removed = await removeAbandonedMedia(s.ctx, new Date(Date.now() + 2 * 24 * 3600 * 1000));
    expect(removed).toBeGreaterThanOrEqual(1);
    expect((await s.ctx.db.query('SELECT 1 FROM media_attachments WHERE id = $1', [media.id])).rowCount).toBe(0);
    const file = await s.app.inject({ method: 'GET', url: new URL(done.body.url).pathname });
    expect(file.statusCode).toBe(404);
    // Attached media stays.
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM media_attachments WHERE status_id IS NOT NULL');
    expect(rows[0].n).toBeGreaterThan(0);
  });
});

describe('restarts', () => {
  it('completes uploads queued while the worker was stopped, each into one original and one preview', async () => {
    await s.stopWorkers();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await upload(jon, await photo(), { description: `queued ${i}` })).json().id);
    for (const id of ids) expect((await s.app.inject({ method: 'GET', url: `/api/v1/media/${id}`, headers: bearer(jon.token) })).statusCode).toBe(206);
    // What waits for processing still has its metadata: it is never served.
    const { rows } = await s.ctx.db.query('SELECT staged_key FROM media_attachments WHERE id = $1', [ids[0]]);
    expect(rows[0].staged_key).toMatch(/^staging\/\d+-[0-9a-f]{32}$/);
    expect([403, 404]).toContain((await s.app.inject({ method: 'GET', url: `/system/${rows[0].staged_key}` })).statusCode);
    s.startWorkers();
    for (const id of ids) expect((await processed(jon, id)).status).toBe(200);
    const { readdir } = await import('node:fs/promises');
    const { join } = await import('node:path');
    for (const id of ids) expect((await readdir(join(s.config.dataDir, 'files', 'media', id))).sort()).toEqual(['original.jpg', 'small.webp']);
    const staged = await readdir(join(s.config.dataDir, 'files', 'staging')).catch(() => []);
    expect(staged.filter((name) => ids.some((id) => name.startsWith(id)))).toEqual([]);
  });
});

describe('video, audio and limits', () => {
  // A WAV file: RIFF header and a little silence.
  const wav = () => {
    const samples = Buffer.alloc(8000);
    const header = Buffer.alloc(44);
    header.write('RIFF', 0); header.writeUInt32LE(36 + samples.length, 4); header.write('WAVE', 8);
    header.write('fmt ', 12); header.writeUInt32LE(16, 16); header.writeUInt16LE(1, 20); header.writeUInt16LE(1, 22);
    header.writeUInt32LE(8000, 24); header.writeUInt32LE(8000, 28); header.writeUInt16LE(1, 32); header.writeUInt16LE(8, 34);
    header.write('data', 36); header.writeUInt32LE(samples.length, 40);
    return Buffer.concat([header, samples]);
  };
  // The start of an MP4 file: an ftyp box, then an empty mdat.
  const mp4 = () => Buffer.concat([
    Buffer.from('000000186674797069736f6d0000020069736f6d69736f32', 'hex'),
    Buffer.from('000000086d646174', 'hex'),
  ]);

  it('takes audio by its content, whatever its name says, and refuses a video header with nothing after it', async () => {
    const res = await upload(ida, wav(), { description: 'a sound' }, 'sound.bin', 'application/octet-stream');
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().type).toBe('audio');
    const done = await processed(ida, res.json().id);
    expect(done.status).toBe(200);
    expectEntity('MediaAttachment', done.body);
    expect(done.body).toMatchObject({ type: 'audio', url: expect.stringMatching(/\.mp3$/) }); // made MP3 (test/http/media-av.test.ts)
    const empty = await upload(ida, mp4(), {}, 'clip.mp4', 'video/mp4');
    expect(empty.statusCode).toBe(422);
    expect(empty.json().error).toMatch(/not a video or audio file/);
  });

  it('takes a custom thumbnail on upload and on edit, replacing the old one', async () => {
    const cover = await sharp({ create: { width: 900, height: 900, channels: 3, background: '#909' } }).jpeg().toBuffer();
    const form = await multipart({ file: { data: wav(), filename: 's.wav', type: 'audio/wav' }, thumbnail: { data: cover, filename: 'c.jpg', type: 'image/jpeg' } });
    const res = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(ida.token), ...form.headers }, payload: form.payload });
    expect(res.statusCode, res.body).toBe(202);
    const done = await processed(ida, res.json().id);
    expect(done.body.preview_url).toMatch(/thumbnail-/);
    const preview = await sharp(await fetchFile(done.body.preview_url)).metadata();
    expect(preview.width! * preview.height!).toBeLessThanOrEqual(480 * 480);

    const other = await sharp({ create: { width: 100, height: 50, channels: 3, background: '#090' } }).png().toBuffer();
    const edit = await multipart({ thumbnail: { data: other, filename: 't.png', type: 'image/png' } });
    const put = await s.app.inject({ method: 'PUT', url: `/api/v1/media/${done.body.id}`, headers: { ...bearer(ida.token), ...edit.headers }, payload: edit.payload });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().preview_url).not.toBe(done.body.preview_url);
    expect((await s.app.inject({ method: 'GET', url: new URL(done.body.preview_url).pathname })).statusCode).toBe(404); // the old one is gone

    const bad = await multipart({ thumbnail: { data: Buffer.from('not an image'), filename: 't.png', type: 'image/png' } });
    const refused = await s.app.inject({ method: 'PUT', url: `/api/v1/media/${done.body.id}`, headers: { ...bearer(ida.token), ...bad.headers }, payload: bad.payload });
    expect(refused.statusCode).toBe(422);
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/media/${done.body.id}`, headers: bearer(ida.token) })).json().preview_url).toBe(put.json().preview_url);
  });

  it('refuses files over the limit of their kind with 422, storing nothing', async () => {
    const small = await startTestServer({ MAX_IMAGE_BYTES: '20000', MAX_VIDEO_BYTES: '200000' });
    try {
      const [kim] = await registerUsers(small.app, 'kim');
      const big = await sharp({ create: { width: 150, height: 150, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
      expect(big.length).toBeGreaterThan(20000);
      expect(big.length).toBeLessThan(200000);
      const send = async (url: string, method: 'POST' | 'PATCH', field: string, data: Buffer) => {
        const form = await multipart({ [field]: { data, filename: 'f', type: 'application/octet-stream' } });
        return small.app.inject({ method, url, headers: { ...bearer(kim!.token), ...form.headers }, payload: form.payload });
      };
      const image = await send('/api/v2/media', 'POST', 'file', big);
      expect(image.statusCode).toBe(422);
      expect(image.json().error).toMatch(/less than/);
      const avatar = await send('/api/v1/accounts/update_credentials', 'PATCH', 'avatar', big);
      expect(avatar.statusCode).toBe(422);
      // Over the largest limit of any kind, the upload is cut off while it is read.
      const huge = await send('/api/v2/media', 'POST', 'file', Buffer.concat([mp4(), Buffer.alloc(250000)]));
      expect([413, 422]).toContain(huge.statusCode);
      expect(huge.json().error).toEqual(expect.any(String));
      const { rows } = await small.ctx.db.query('SELECT count(*)::int AS n FROM media_attachments');
      expect(rows[0].n).toBe(0);
    } finally {
      await small.close();
    }
  });
});
