// Other servers' media copied to our file host: a post's attachments and its author's avatar, through the job when
// they arrive and through the media proxy when a copy is missing; what is not an image, too large, on a private
// address or from a server whose media is rejected is never stored; copies pruned by age and copied again on view.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { mediaOrigin, type MediaOrigin } from '../helpers/media-origin.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { copyAttachment } from '../../services/remote-media.ts';
import { findExecutable } from '../../services/media-tools.ts';
import { requireProgram } from '../helpers/programs.ts';
import { peertubeVideo } from './fixtures/other-software.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
// Mastodon's context for what its Notes carry here.
const CONTEXT = [AS, { toot: 'http://joinmastodon.org/ns#', Emoji: 'toot:Emoji', blurhash: 'toot:blurhash', focalPoint: { '@container': '@list', '@id': 'toot:focalPoint' } }];

let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let origin: MediaOrigin;
const gusExtra: Json = {};
let avFiles: Record<string, { type: string; body: Buffer }> = {};


const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> => (await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) })).json();
const path = (url: string) => new URL(url).pathname;
/** The plain name of a colour's hue, for what a person would call it. */
function hue(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
  if (b > r && b > g) return 'blue';
  if (r > b && g > b && Math.abs(r - g) < 60) return 'yellow';
  return `other (${hex})`;
}
let seq = 0;
const VIDEO_UUID = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
/** A Note by gus with these attachments, pushed to our shared inbox as Mastodon sends it. */
async function pushNote(attachment: Json[], extra: Json = {}): Promise<string> {
  const id = `${gus}/statuses/${++seq}`;
  const object = { id, type: 'Note', attributedTo: gus, content: `<p>media ${seq}</p>`, published: new Date().toISOString(), to: PUBLIC, cc: `${gus}/followers`, attachment, ...extra };
  expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': CONTEXT, id: `${id}/activity`, type: 'Create', actor: gus, object, to: PUBLIC })).toBe(202);
  return id;
}
const statusByUri = (uri: string) => until(async () => (await api('GET', `/api/v2/search?q=${encodeURIComponent(uri)}&type=statuses`)).statuses as Json[], (l) => l.length === 1, `status ${uri}`).then((l) => l[0]!);
const image = (file: string, extra: Json = {}) => ({ type: 'Document', mediaType: 'image/jpeg', url: `${origin.url}${file}`, name: `picture ${file}`, ...extra });
const cli = async (...args: string[]) => {
  const lines: string[] = [];
  await runCli(args, ours.ctx.db, (l) => lines.push(l), (what) => publishTokenInvalidation(ours.ctx.redis, ours.config.redisPrefix, what), { redis: ours.ctx.redis, redisPrefix: ours.config.redisPrefix, config: ours.config });
  return lines;
};

/** Clips as ffmpeg makes them (1 s, tiny), in a temporary folder. */
function clip(dir: string, name: string, args: string[]): Buffer {
  const out = join(dir, name);
  execFileSync('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args, out]);
  return readFileSync(out);
}
const testsrc = ['-f', 'lavfi', '-i', 'testsrc=size=96x64:rate=25:duration=1'];
const sine = ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1'];

beforeAll(async () => {
  requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
  requireProgram(findExecutable('ffprobe'), 'ffprobe', 'ffmpeg');
  const dir = mkdtempSync(join(tmpdir(), 'remote-media-test-'));
  const cover = await sharp({ create: { width: 60, height: 60, channels: 3, background: '#1b2a6b' } }).composite([{ input: await sharp({ create: { width: 20, height: 20, channels: 3, background: '#f5d90a' } }).png().toBuffer(), left: 20, top: 20 }]).png().toBuffer();
  writeFileSync(join(dir, 'cover.png'), cover);
  const clips = {
    video: clip(dir, 'video.mp4', [...testsrc, ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest']),
    silent: clip(dir, 'silent.mp4', [...testsrc, '-c:v', 'libx264', '-pix_fmt', 'yuv420p']),
    song: clip(dir, 'song.mp3', [...sine, '-i', join(dir, 'cover.png'), '-map', '0:a', '-map', '1:v', '-c:a', 'libmp3lame', '-c:v', 'png', '-disposition:v', 'attached_pic', '-id3v2_version', '3']),
    tone: clip(dir, 'tone.mp3', [...sine, '-c:a', 'libmp3lame']),
  };
  // An MP4 header (it sniffs as one) with nothing a player could read after it.
  const fake = Buffer.concat([clips.video.subarray(0, 32), Buffer.alloc(4000, 0x41)]);
  rmSync(dir, { recursive: true, force: true });
  avFiles = {
    '/media/video.mp4': { type: 'video/mp4', body: clips.video },
    '/media/silent.mp4': { type: 'video/mp4', body: clips.silent },
    '/media/song.mp3': { type: 'audio/mpeg', body: clips.song },
    '/media/tone.mp3': { type: 'audio/mpeg', body: clips.tone },
    '/media/fake.mp4': { type: 'video/mp4', body: fake },
    // A video sent as audio.
    '/media/not-audio.mp3': { type: 'audio/mpeg', body: clips.video },
  };
  const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 30, b: 30 } } })
    .jpeg().withExif({ IFD0: { Copyright: 'where-i-live-48.8583N' } }).toBuffer();
  const avatar = await sharp({ create: { width: 80, height: 80, channels: 3, background: { r: 0, g: 90, b: 200 } } }).png().toBuffer();
  const avatar2 = await sharp({ create: { width: 80, height: 80, channels: 3, background: { r: 0, g: 200, b: 90 } } }).png().toBuffer();
  origin = await mediaOrigin({
    '/media/photo.jpg': { type: 'image/jpeg', body: photo },
    '/media/photo2.jpg': { type: 'image/jpeg', body: photo },
    '/media/photo3.jpg': { type: 'image/jpeg', body: photo },
    '/media/avatar.png': { type: 'image/png', body: avatar },
    '/media/avatar2.png': { type: 'image/png', body: avatar2 },
    '/media/blobcat.png': { type: 'image/png', body: await sharp({ create: { width: 32, height: 32, channels: 4, background: '#f0f' } }).png().toBuffer() },
    '/media/page.jpg': { type: 'image/jpeg', body: Buffer.from('<html><body>not a picture</body></html>') },
    '/media/huge.jpg': { type: 'image/jpeg', body: Buffer.alloc(300_000, 0xff) },
    ...avFiles,
    // A PeerTube video's files: its 720p web video (here the one-second clip) and its preview image.
    [`/static/web-videos/${VIDEO_UUID}-720.mp4`]: avFiles['/media/video.mp4']!,
    [`/lazy-static/previews/${VIDEO_UUID}.jpg`]: { type: 'image/jpeg', body: photo },
  });
  [ours, peer] = await Promise.all([startHttpsInstance({ MAX_IMAGE_BYTES: '200000', MAX_VIDEO_BYTES: '1000000' }), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  Object.assign(gusExtra, { icon: { type: 'Image', mediaType: 'image/png', url: `${origin.url}/media/avatar.png` } });
  gus = await peer.addActor('gus', { extra: gusExtra });
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close(), origin?.close()]);
});

describe("other servers' media, copied here", () => {
  let gusId: string;

  it("copies an account's avatar when its actor is stored, and names only our copy", async () => {
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`gus@${peer.domain}`)}&resolve=true&type=accounts`);
    gusId = found.accounts[0].id;
    await api('POST', `/api/v1/accounts/${gusId}/follow`);
    // Followed (gus's server accepts at once), so that gus's posts concern this server.
    await until(async () => (await api('GET', `/api/v1/accounts/relationships?id[]=${gusId}`))[0], (r) => r.following === true, 'alice follows gus');
    const account = await until(() => api('GET', `/api/v1/accounts/${gusId}`), (a) => a.avatar.startsWith(`${ours.url}/system/`), 'avatar copied');
    expect(account.avatar_static).toBe(account.avatar);
    const copy = await ours.app.inject({ method: 'GET', url: path(account.avatar) });
    expect(copy.statusCode).toBe(200);
    expect((await sharp(copy.rawPayload).metadata()).width).toBe(400);
  });

  it("copies a post's image without its metadata, keeps what the sender said of it, and never sends readers to the origin", async () => {
    const uri = await pushNote([image('/media/photo.jpg', { blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj', width: 64, height: 48, focalPoint: [0.5, -0.25] })]);
    const status = await until(() => statusByUri(uri), (s) => s.media_attachments[0]?.url.startsWith(`${ours.url}/system/`), 'image copied');
    const media = status.media_attachments[0];
    expect(media.preview_url.startsWith(`${ours.url}/system/`)).toBe(true);
    expect(media.remote_url).toBe(`${origin.url}/media/photo.jpg`);
    expect(media.description).toBe('picture /media/photo.jpg');
    expect(media.meta.original).toMatchObject({ width: 64, height: 48 });
    expect(JSON.stringify({ ...status, media_attachments: [{ ...media, remote_url: null }] })).not.toContain(origin.url);
    const copy = await ours.app.inject({ method: 'GET', url: path(media.url) });
    expect(copy.statusCode).toBe(200);
    expect(copy.rawPayload.includes(Buffer.from('where-i-live'))).toBe(false);
    expect((await sharp(copy.rawPayload).metadata()).exif).toBeUndefined();
    // Read again and again: the origin was asked once.
    for (let i = 0; i < 3; i++) await statusByUri(uri);
    expect(origin.hits.get('/media/photo.jpg')).toBe(1);
  });

  it('makes a copy on first view through the media proxy when there is none', async () => {
    const uri = await pushNote([image('/media/photo2.jpg')]);
    const copied = await until(() => statusByUri(uri), (s) => s.media_attachments[0]?.url.startsWith(`${ours.url}/system/`), 'copied by the job');
    const id = copied.media_attachments[0].id;
    // As if the job had not run (or its copy were pruned): no copy, and none recorded.
    await ours.ctx.db.query(`UPDATE media_attachments SET original_key = NULL, small_key = NULL WHERE id = $1`, [id]);
    await ours.ctx.db.query(`DELETE FROM cached_files WHERE owner_id = $1`, [id]);
    await ours.ctx.versions.bump({ statuses: [copied.id] });
    const media = (await statusByUri(uri)).media_attachments[0];
    expect(media.url).toBe(`${ours.url}/media_proxy/${id}/original`);
    expect(media.preview_url).toBe(`${ours.url}/media_proxy/${id}/small`);
    const [first, second] = await Promise.all([1, 2].map(() => ours.app.inject({ method: 'GET', url: `/media_proxy/${id}/small` })));
    for (const res of [first!, second!]) {
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toMatch(new RegExp(`^${ours.url}/system/cache/media/${id}/.*/small\\.webp$`));
    }
    expect(origin.hits.get('/media/photo2.jpg')).toBe(2);
    expect((await statusByUri(uri)).media_attachments[0].url.startsWith(`${ours.url}/system/`)).toBe(true);
  });

  it('never stores what is not an image, what is too large, or what lies on a private address', async () => {
    const status = await statusByUri(await pushNote([image('/media/page.jpg'), image('/media/huge.jpg')]));
    await until(async () => origin.hits.get('/media/page.jpg') ?? 0, (n) => n >= 1, 'page fetched');
    await until(async () => origin.hits.get('/media/huge.jpg') ?? 0, (n) => n >= 1, 'huge fetched');
    for (const media of status.media_attachments) {
      const res = await ours.app.inject({ method: 'GET', url: `/media_proxy/${media.id}/original` });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'Record not found' });
    }
    const { rows } = await ours.ctx.db.query(`SELECT count(*)::int AS n FROM cached_files WHERE owner_id = ANY($1::bigint[])`, [status.media_attachments.map((m: Json) => m.id)]);
    expect(rows[0].n).toBe(0);
    // The failure is remembered: the proxy does not ask again at every view.
    expect(origin.hits.get('/media/page.jpg')).toBe(1);

    const uri = await pushNote([image('/media/photo3.jpg')]);
    const loopback = await until(() => statusByUri(uri), (s) => s.media_attachments[0]?.url.startsWith(`${ours.url}/system/`), 'copied by the job');
    await ours.ctx.db.query(`UPDATE media_attachments SET original_key = NULL WHERE id = $1`, [loopback.media_attachments[0].id]);
    const before = origin.hits.get('/media/photo3.jpg') ?? 0;
    const strict = { ...ours.ctx, config: { ...ours.ctx.config, allowPrivateAddresses: false } };
    expect(await copyAttachment(strict, loopback.media_attachments[0].id)).toBe('refused');
    expect(origin.hits.get('/media/photo3.jpg') ?? 0).toBe(before);
  });

  it('probes video and audio it copies: their figures, a preview, and the colours of audio', async () => {
    const av = (file: string, type: string, mediaType: string) => ({ type, mediaType, url: `${origin.url}${file}`, name: `clip ${file}`, width: 1920, height: 1080 });
    const uri = await pushNote([av('/media/video.mp4', 'Video', 'video/mp4'), av('/media/silent.mp4', 'Video', 'video/mp4'), av('/media/song.mp3', 'Audio', 'audio/mpeg'), av('/media/tone.mp3', 'Audio', 'audio/mpeg')]);
    const status = await until(() => statusByUri(uri), (st) => st.media_attachments.every((m: Json) => m.url.startsWith(`${ours.url}/system/`)), 'clips copied');
    const [video, silent, song, tone] = status.media_attachments as Json[];
    expectEntity('MediaAttachment', video);
    // The file's own figures, not the sender's (which said 1920x1080).
    expect(video!.type).toBe('video');
    expect(video!.meta.original).toMatchObject({ width: 96, height: 64, frame_rate: '25/1' });
    expect(video!.meta.original.duration).toBeGreaterThan(0.9);
    expect(video!.meta.original.duration).toBeLessThan(1.2);
    expect(video!.meta.original.bitrate).toBeGreaterThan(0);
    expect(video!.meta.small).toMatchObject({ width: 96, height: 64, size: '96x64' });
    expect(video!.preview_url.startsWith(`${ours.url}/system/`)).toBe(true);
    expect((await sharp((await ours.app.inject({ method: 'GET', url: path(video!.preview_url) })).rawPayload).metadata()).format).toBe('jpeg');
    expect(video!.blurhash).toMatch(/^[0-9A-Za-z#$%*+,\-.:;=?@[\]^_{|}~]{6,}$/);
    // A video without sound is a gifv, as on Mastodon.
    expect(silent!.type).toBe('gifv');
    expect(silent!.meta.original).toMatchObject({ width: 96, height: 64 });

    expect(song!.type).toBe('audio');
    expect(song!.meta.original.duration).toBeGreaterThan(0.9);
    expect(song!.meta.original.bitrate).toBeGreaterThan(0);
    expect(song!.meta.small).toMatchObject({ width: 60, height: 60 });
    // The cover's edge colour (dark blue) behind; its yellow middle, far from it and readable on it, in front.
    expect(song!.meta.colors).toEqual({ background: expect.stringMatching(/^#[0-9a-f]{6}$/), foreground: expect.stringMatching(/^#[0-9a-f]{6}$/), accent: expect.stringMatching(/^#[0-9a-f]{6}$/) });
    expect(hue(song!.meta.colors.background)).toBe('blue');
    expect(hue(song!.meta.colors.accent)).toBe('yellow');
    // No cover art: the colours of the plain preview, foreground and accent made lighter from its grey (by 50 and 35 points).
    expect(tone!.meta.colors).toEqual({ background: '#404040', foreground: '#bfbfbf', accent: '#999999' });
    expect(tone!.meta.small).toMatchObject({ width: 400, height: 400 });
  });

  it('refuses video and audio that are not what their sender says, with a warning and nothing stored, the post delivered with links to them', async () => {
    const av = (file: string, type: string, mediaType: string) => ({ type, mediaType, url: `${origin.url}${file}`, name: `clip ${file}` });
    const uri = await pushNote([av('/media/fake.mp4', 'Video', 'video/mp4'), av('/media/not-audio.mp3', 'Audio', 'audio/mpeg')]);
    const status = await statusByUri(uri);
    expect(status.content).toContain('media');
    await until(async () => (origin.hits.get('/media/fake.mp4') ?? 0) + (origin.hits.get('/media/not-audio.mp3') ?? 0), (n) => n >= 2, 'both fetched');
    const ids = status.media_attachments.map((m: Json) => m.id) as string[];
    await until(async () => (await Promise.all(ids.map((id) => ours.ctx.redis.exists(`${ours.config.redisPrefix}media-cache-failed:attachment:${id}`)))).every((n) => n === 1), (ok) => ok, 'failures remembered');
    for (const id of ids) {
      const res = await ours.app.inject({ method: 'GET', url: `/media_proxy/${id}/original` });
      expect(res.statusCode).toBe(404);
    }
    const { rows } = await ours.ctx.db.query(`SELECT count(*)::int AS n FROM cached_files WHERE owner_id = ANY($1::bigint[])`, [ids]);
    expect(rows[0].n).toBe(0);
    const stored = await ours.ctx.db.query(`SELECT original_key, small_key, meta FROM media_attachments WHERE id = ANY($1::bigint[])`, [ids]);
    expect(stored.rows.every((r) => r.original_key === null && r.small_key === null && !r.meta.original)).toBe(true);
    expect(existsSync(join(ours.config.dataDir, 'files', 'cache', 'media', ids[0]!))).toBe(false);
    // Shown as Mastodon shows what it could not download: `unknown`, a link to the file on its server.
    const shown = (await statusByUri(uri)).media_attachments as Json[];
    expect(shown.map((m) => [m.type, m.url, m.preview_url])).toEqual([['unknown', `${origin.url}/media/fake.mp4`, null], ['unknown', `${origin.url}/media/not-audio.mp3`, null]]);

    // Asked directly (as they arrived), each says why, as a warning.
    await ours.ctx.db.query(`UPDATE media_attachments SET type = CASE WHEN id = $1 THEN 'video' ELSE 'audio' END WHERE id = ANY($2::bigint[])`, [ids[0], ids]);
    await ours.ctx.redis.del(ids.map((id) => `${ours.config.redisPrefix}media-cache-failed:attachment:${id}`));
    const warnings: string[] = [];
    const log = { warn: (o: object, msg: string) => void warnings.push(`${msg}: ${(o as { reason: string }).reason}`) };
    expect(await copyAttachment(ours.ctx, ids[0]!, log)).toBe('refused');
    expect(await copyAttachment(ours.ctx, ids[1]!, log)).toBe('refused');
    expect(warnings).toEqual(['remote media not copied: the file is not a video or audio file that can be read', 'remote media not copied: the file said to be audio has moving pictures']);
  });

  it("copies a PeerTube Video's largest MP4 within MAX_VIDEO_BYTES with its preview image, or shows the preview alone", async () => {
    const uuid = VIDEO_UUID;
    const video = peertubeVideo({ base: peer.url, uuid, account: gus, channel: `${peer.url}/video-channels/gus_channel`, name: 'Harbour timelapse', description: 'Boats', files: origin.url, sizes: { 1080: 3_000_000, 720: 600_000, 480: 200_000 } });
    // PeerTube's account sends the Create (its channel then announces it).
    const { '@context': context, ...object } = video;
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': context, id: `${video.id}/activity`, type: 'Create', actor: gus, object, to: object.to, cc: object.cc })).toBe(202);
    const status = await until(() => statusByUri(String(video.id)), (s) => s.media_attachments[0]?.url.startsWith(`${ours.url}/system/`), 'video copied');
    const media = status.media_attachments[0];
    expect(media).toMatchObject({ type: 'video', remote_url: `${origin.url}/static/web-videos/${uuid}-720.mp4`, preview_remote_url: `${origin.url}/lazy-static/previews/${uuid}.jpg`, description: 'Harbour timelapse' });
    // The file's own figures (the clip is 96×64), and the sender's preview image as our small one.
    expect(media.meta).toMatchObject({ original: { width: 96, height: 64 }, small: { width: expect.any(Number), height: expect.any(Number) } });
    expect(media.preview_url).toMatch(new RegExp(`^${ours.url}/system/cache/media/${media.id}/.*/small\.webp$`));
    expect((await ours.app.inject({ method: 'GET', url: path(media.url) })).rawPayload.subarray(4, 8).toString()).toBe('ftyp');
    expect(origin.hits.get(`/static/web-videos/${uuid}-720.mp4`)).toBe(1);
    expect(origin.hits.get(`/static/web-videos/${uuid}-1080.mp4`)).toBeUndefined();
    expect([...origin.hits.keys()].some((k) => k.includes('fragmented') || k.includes('-480'))).toBe(false);

    // Every MP4 over the cap: the preview image is the attachment, as for a Video that lists no file.
    const big = peertubeVideo({ base: peer.url, uuid: `${uuid}-big`, account: gus, channel: `${peer.url}/video-channels/gus_channel`, name: 'Too big', description: '', files: origin.url, sizes: { 720: 3_000_000 } });
    const { '@context': bigContext, ...bigObject } = big;
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': bigContext, id: `${big.id}/activity`, type: 'Create', actor: gus, object: bigObject, to: bigObject.to, cc: bigObject.cc })).toBe(202);
    const preview = (await statusByUri(String(big.id))).media_attachments;
    expect(preview).toHaveLength(1);
    expect(preview[0]).toMatchObject({ type: 'image', remote_url: `${origin.url}/lazy-static/previews/${uuid}-big.jpg` });
  });

  it("copies a changed avatar and removes the old copy", async () => {
    const old = (await api('GET', `/api/v1/accounts/${gusId}`)).avatar;
    gusExtra.icon = { type: 'Image', mediaType: 'image/png', url: `${origin.url}/media/avatar2.png` };
    const actor = (await peer.signedGet(null, gus)).json!;
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': AS, id: `${gus}#updates/${++seq}`, type: 'Update', actor: gus, object: actor, to: PUBLIC })).toBe(202);
    const account = await until(() => api('GET', `/api/v1/accounts/${gusId}`), (a) => a.avatar !== old && a.avatar.startsWith(`${ours.url}/system/`), 'new avatar copied');
    expect(account.avatar).not.toBe(old);
    await until(async () => (await ours.app.inject({ method: 'GET', url: path(old) })).statusCode, (s) => s === 404, 'old copy removed');
  });

  it('counts the copies, prunes them by age in batches, and copies again on the next view', async () => {
    // The old avatar's copy is gone from the ledger too (just after its file).
    const usage = await until(() => cli('media', 'usage'), (u) => u.some((l) => /^avatars: 1 files/.test(l)), 'one avatar copy');
    expect(usage.find((l) => l.startsWith('attachments:'))).toMatch(/^attachments: [1-9]\d* files/);
    expect(usage.find((l) => l.startsWith('avatars:'))).toMatch(/^avatars: 1 files/);
    await ours.ctx.db.query(`UPDATE cached_files SET cached_at = now() - interval '10 days' WHERE kind = 'attachment'`);
    const copied = (await ours.ctx.db.query(`SELECT count(*)::int AS n FROM cached_files WHERE kind = 'attachment'`)).rows[0].n as number;
    expect(await cli('media', 'remove', '--days', '7')).toEqual([`removed ${copied} files copied more than 7 days ago`]);
    expect((await cli('media', 'usage'))[0]).toBe('attachments: 0 files, 0.0 KB');

    const status = (await api('GET', `/api/v1/timelines/home`)).find((s: Json) => s.media_attachments[0]?.remote_url === `${origin.url}/media/photo.jpg`);
    const media = status.media_attachments[0];
    expect(media.url).toBe(`${ours.url}/media_proxy/${media.id}/original`);
    const res = await ours.app.inject({ method: 'GET', url: `/media_proxy/${media.id}/original` });
    expect(res.statusCode).toBe(302);
    expect(origin.hits.get('/media/photo.jpg')).toBe(2);
  });
  it("shows another server's emoji from our copy of it, made at the first view; an operator copies one to this server's own and disables it", async () => {
    const tag = (name: string, file: string) => ({ id: `${gus}/emojis/${name}`, type: 'Emoji', name: `:${name}:`, icon: { type: 'Image', mediaType: 'image/png', url: `${origin.url}${file}` } });
    const status = await statusByUri(await pushNote([], { content: '<p>:blobcat: and :broken:</p>', tag: [tag('blobcat', '/media/blobcat.png'), tag('broken', '/media/page.jpg')] }));
    const [blobcat, broken] = ['blobcat', 'broken'].map((code) => status.emojis.find((e: Json) => e.shortcode === code));
    expect(blobcat.url).toMatch(new RegExp(`^${ours.url}/media_proxy/emojis/\\d+/original$`));
    expect(blobcat.static_url).toMatch(new RegExp(`^${ours.url}/media_proxy/emojis/\\d+/static$`));
    for (const url of [blobcat.url, blobcat.static_url, blobcat.url]) {
      const res = await ours.app.inject({ method: 'GET', url: path(url) });
      expect(res.statusCode).toBe(302);
      const copy = await ours.app.inject({ method: 'GET', url: path(res.headers.location as string) });
      expect(copy.statusCode).toBe(200);
      expect((await sharp(copy.rawPayload).metadata()).format).toBe('png');
    }
    expect(origin.hits.get('/media/blobcat.png')).toBe(1);
    // Not an image: nothing stored, 404, and not asked for again at once.
    expect((await ours.app.inject({ method: 'GET', url: path(broken.url) })).statusCode).toBe(404);
    expect((await ours.app.inject({ method: 'GET', url: path(broken.static_url) })).statusCode).toBe(404);
    expect(origin.hits.get('/media/page.jpg')).toBe(2);
    const usage = await cli('media', 'usage');
    expect(usage.find((l) => l.startsWith('emojis:'))).toMatch(/^emojis: 2 files/);

    // An operator takes it into this server's own set, then hides the other server's.
    expect(await cli('emoji', 'copy', `blobcat@${peer.domain}`, '--name', 'gus_blobcat')).toEqual([`:gus_blobcat: added from :blobcat@${peer.domain.toLowerCase()}:`]);
    const picker = (await ours.app.inject({ method: 'GET', url: '/api/v1/custom_emojis' })).json() as Json[];
    expect(picker.map((e) => e.shortcode)).toContain('gus_blobcat');
    expect(picker.find((e) => e.shortcode === 'gus_blobcat')!.url.startsWith(`${ours.url}/system/custom_emojis/`)).toBe(true);
    expect(await cli('emoji', 'disable', `blobcat@${peer.domain}`)).toEqual([`:blobcat@${peer.domain}: disabled`]);
    const after = await statusByUri(status.uri);
    expect(after.emojis.map((e: Json) => e.shortcode)).toEqual(['broken']);
    expect((await ours.app.inject({ method: 'GET', url: path(blobcat.url) })).statusCode).toBe(404);
    await expect(cli('emoji', 'copy', `nothing@${peer.domain}`)).rejects.toThrow(/no emoji :nothing:/);
  });

  // Last: a block with reject_media turns the server's attachments already here into links (as Mastodon).
  it("never fetches from a server whose media is rejected", async () => {
    expect((await cli('domains', 'block', peer.domain.split(':')[0]!, '--severity', 'noop', '--reject-media')).join('\n')).toContain(peer.domain.split(':')[0]);
    try {
      const status = await statusByUri(await pushNote([image('/media/photo.jpg', { url: `${origin.url}/media/photo.jpg?rejected` })]));
      const media = status.media_attachments[0];
      expect(media.type).toBe('unknown');
      const res = await ours.app.inject({ method: 'GET', url: `/media_proxy/${media.id}/original` });
      expect(res.statusCode).toBe(404);
      expect(origin.hits.get('/media/photo.jpg?rejected')).toBeUndefined();
    } finally {
      await cli('domains', 'unblock', peer.domain.split(':')[0]!);
    }
  });

});
