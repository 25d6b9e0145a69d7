// Other servers' video and audio that would not play everywhere, converted after they are copied: VP9 and Opus in
// WebM made H.264 + AAC in MP4, H.264 + AAC in QuickTime re-packed into MP4 (streams copied), Opus in Ogg made MP3;
// the copy served until the converted file is stored, then the attachment, its meta and the post's renderings name
// the new file. H.264 + AAC in MP4 is left as it came. A file that cannot be converted keeps its copy, with a warning.
// GoToSocial's Ogg video is taken and converted; its Matroska, which Mastodon does not take either, becomes a link.
// Clips made here by ffmpeg (1 s, tiny); the posts arrive as signed deliveries from a strict peer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { mediaOrigin, type MediaOrigin } from '../helpers/media-origin.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { convertAttachment, copyAttachment } from '../../services/remote-media.ts';
import { PROBE_LIMITS } from '../../services/media-av.ts';
import { findExecutable } from '../../services/media-tools.ts';
import { requireProgram } from '../helpers/programs.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses and ffprobe's JSON
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
/** Conversions wait their turn on the media queue at idle priority: on a loaded machine that may take a while. */
const CONVERSION_WAIT_MS = 120_000;

let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let dir: string;
let origin: MediaOrigin;
const sent: Record<string, { type: string; body: Buffer }> = {};


const api = async (url: string, method: 'GET' | 'POST' = 'GET'): Promise<Json> => (await ours.app.inject({ method, url, headers: bearer(alice.token) })).json();
const path = (url: string) => new URL(url).pathname;
let seq = 0;
async function pushNote(attachment: Json[]): Promise<string> {
  const id = `${gus}/statuses/${++seq}`;
  const object = { id, type: 'Note', attributedTo: gus, content: `<p>clips ${seq}</p>`, published: new Date().toISOString(), to: PUBLIC, cc: `${gus}/followers`, attachment };
  expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': AS, id: `${id}/activity`, type: 'Create', actor: gus, object, to: PUBLIC })).toBe(202);
  return id;
}
/** A Note with these attachments as GoToSocial 0.19 sends it: its context, a Document per file with its blurhash. */
async function pushGoToSocialNote(files: string[]): Promise<string> {
  const id = `${gus}/statuses/01GTS${++seq}`;
  const attachment = files.map((file) => ({ blurhash: 'LIIE|gRj00WB-;j[t7j[4nWBj[Rj', mediaType: sent[file]!.type, name: '', type: 'Document', url: `${origin.url}${file}` }));
  const context = ['https://gotosocial.org/ns', AS, { Emoji: 'toot:Emoji', Hashtag: 'as:Hashtag', blurhash: 'toot:blurhash', sensitive: 'as:sensitive', toot: 'http://joinmastodon.org/ns#' }];
  const object = { id, type: 'Note', attributedTo: gus, content: `<p>clips ${seq}</p>`, published: new Date().toISOString(), sensitive: false, to: PUBLIC, cc: `${gus}/followers`, attachment, tag: [] };
  expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': context, id: `${id}/activity`, type: 'Create', actor: gus, object, to: PUBLIC, cc: `${gus}/followers` })).toBe(202);
  return id;
}
const statusByUri = (uri: string) => until(async () => (await api(`/api/v2/search?q=${encodeURIComponent(uri)}&type=statuses`)).statuses as Json[], (l) => l.length === 1, `status ${uri}`).then((l) => l[0]!);
const attachment = (file: string, type: string) => ({ type: 'Document', mediaType: sent[file]!.type, url: `${origin.url}${file}`, name: `clip ${file}`, ...(type === 'Audio' ? {} : { width: 640, height: 480 }) });

const ffmpeg = (...args: string[]) => execFileSync('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args]);
function clip(name: string, args: string[]): Buffer {
  ffmpeg(...args, join(dir, name));
  return readFileSync(join(dir, name));
}
async function served(url: string): Promise<Buffer> {
  const res = await ours.app.inject({ method: 'GET', url: path(url) });
  expect(res.statusCode, url).toBe(200);
  return res.rawPayload;
}
/** ffprobe's streams and format of a file. */
function probe(data: Buffer): { streams: Json[]; format: Json } {
  const file = join(dir, `probed-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, data);
  return JSON.parse(execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file]).toString());
}
/** A stream's packets' checksum: equal when the stream was copied, not re-encoded. */
function streamHash(data: Buffer, stream: string): string {
  const file = join(dir, `hashed-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, data);
  return execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-i', file, '-map', stream, '-c', 'copy', '-f', 'md5', '-']).toString().trim();
}
const MUXER_TAGS = new Set(['encoder', 'major_brand', 'minor_version', 'compatible_brands', 'handler_name', 'vendor_id', 'language']);
const userTags = (x: { streams: Json[]; format: Json }) => [x.format.tags ?? {}, ...x.streams.map((st) => st.tags ?? {})].flatMap((t) => Object.keys(t)).filter((k) => !MUXER_TAGS.has(k));
const fastStart = (mp4: Buffer) => mp4.indexOf('moov') >= 0 && mp4.indexOf('moov') < mp4.indexOf('mdat');

beforeAll(async () => {
  requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
  requireProgram(findExecutable('ffprobe'), 'ffprobe', 'ffmpeg');
  dir = mkdtempSync(join(tmpdir(), 'remote-media-convert-test-'));
  const sine = ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1'];
  // An odd size (VP9 takes it; H.264 in 4:2:0 is made even), so the converted file's figures differ from the copy's.
  const vp9 = clip('vp9.webm', ['-f', 'lavfi', '-i', 'testsrc=size=65x49:rate=10:duration=1', ...sine, '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8',
    '-pix_fmt', 'yuv420p', '-c:a', 'libopus', '-shortest', '-metadata', 'title=Secret title']);
  const testsrc = ['-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10:duration=1'];
  const mov = clip('h264.mov', [...testsrc, ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-metadata', 'location=+48.8583+002.2945/', '-f', 'mov']);
  const opus = clip('voice.opus', [...sine, '-c:a', 'libopus', '-metadata', 'artist=Someone', '-f', 'ogg']);
  const mp4 = clip('h264.mp4', [...testsrc, ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest']);
  // What GoToSocial takes from its users and sends on as it came (it names Matroska `video/x-matroska`).
  const theora = clip('theora.ogv', [...testsrc, ...sine, '-c:v', 'libtheora', '-c:a', 'libvorbis', '-shortest', '-f', 'ogg']);
  const mkv = clip('h264.mkv', [...testsrc, ...sine, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-f', 'matroska']);
  Object.assign(sent, {
    '/media/vp9.webm': { type: 'video/webm', body: vp9 },
    '/media/h264.mov': { type: 'video/quicktime', body: mov },
    '/media/voice.opus': { type: 'audio/ogg; codecs=opus', body: opus },
    '/media/h264.mp4': { type: 'video/mp4', body: mp4 },
    '/fileserver/01GTS/attachment/original/01THEORA.ogv': { type: 'video/ogg', body: theora },
    '/fileserver/01GTS/attachment/original/01MATROSKA.mkv': { type: 'video/x-matroska', body: mkv },
  });
  origin = await mediaOrigin(sent);
  [ours, peer] = await Promise.all([startHttpsInstance({ MAX_VIDEO_BYTES: '1000000' }), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  gus = await peer.addActor('gus');
  const found = await api(`/api/v2/search?q=${encodeURIComponent(`gus@${peer.domain}`)}&resolve=true&type=accounts`);
  const gusId = found.accounts[0].id;
  await api(`/api/v1/accounts/${gusId}/follow`, 'POST');
  // Followed (gus's server accepts at once), so that gus's posts concern this server.
  await until(async () => (await api(`/api/v1/accounts/relationships?id[]=${gusId}`))[0], (r) => r.following === true, 'alice follows gus');
}, 60_000);
afterAll(async () => {
  await ours?.ctx.jobs.media.resume().catch(() => {});
  await Promise.all([ours?.close(), peer?.close(), origin?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("other servers' video and audio that would not play everywhere", () => {
  it('are served as copied, then converted on the media queue: the attachment, its meta and the post name the new file', async () => {
    // The media queue held, so that the copies can be seen before their conversion.
    await ours.ctx.jobs.media.pause();
    const uri = await pushNote([attachment('/media/vp9.webm', 'Video'), attachment('/media/h264.mov', 'Video'), attachment('/media/voice.opus', 'Audio'), attachment('/media/h264.mp4', 'Video')]);
    const copied = await until(() => statusByUri(uri), (s) => s.media_attachments.length === 4 && s.media_attachments.every((m: Json) => m.url.startsWith(`${ours.url}/system/`)), 'copies made', CONVERSION_WAIT_MS);
    const [webm, mov, opus, mp4] = copied.media_attachments as Json[];
    // Opus in Ogg (which file-type calls `audio/ogg; codecs=opus`) is copied, not refused.
    expect([webm!.url, mov!.url, opus!.url, mp4!.url].map((u: string) => u.slice(u.lastIndexOf('/') + 1))).toEqual(['original.webm', 'original.mov', 'original.ogg', 'original.mp4']);
    expect(await served(webm!.url)).toEqual(sent['/media/vp9.webm']!.body);
    expect(webm!.meta.original).toMatchObject({ width: 65, height: 49 });
    const { rows: queued } = await ours.ctx.db.query(`SELECT payload->>'mediaId' AS id FROM outbox WHERE kind = 'transcodeRemoteMedia' ORDER BY id`);
    expect(queued.map((r) => r.id).sort()).toEqual([webm!.id, mov!.id, opus!.id].sort());

    await ours.ctx.jobs.media.resume();
    const converted = await until(() => statusByUri(uri), (s) => s.media_attachments.filter((m: Json) => /\/converted\.mp[34]$/.test(m.url)).length === 3, 'conversions', CONVERSION_WAIT_MS);
    const [webm2, mov2, opus2, mp42] = converted.media_attachments as Json[];
    for (const m of [webm2, mov2, opus2, mp42]) expectEntity('MediaAttachment', m);
    // The same answer through the status itself (its cached rendering refreshed too).
    expect((await api(`/api/v1/statuses/${converted.id}`)).media_attachments.map((m: Json) => m.url)).toEqual(converted.media_attachments.map((m: Json) => m.url));

    // VP9 and Opus in WebM: H.264 + AAC in MP4, faststart, metadata gone; the meta is the new file's (made even).
    expect(webm2!.url).toMatch(new RegExp(`^${ours.url}/system/cache/media/${webm2!.id}/.*/converted\\.mp4$`));
    expect(webm2!.type).toBe('video');
    const webmFile = await served(webm2!.url);
    const webmProbe = probe(webmFile);
    expect(webmProbe.streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(webmProbe.format.tags?.major_brand).toBe('isom');
    expect(userTags(webmProbe)).toEqual([]);
    expect(fastStart(webmFile)).toBe(true);
    expect(webm2!.meta.original).toMatchObject({ width: 64, height: 48, frame_rate: '10/1' });
    expect(webm2!.meta.original.duration).toBeGreaterThan(0.9);
    expect(webm2!.meta.small).toEqual(webm!.meta.small);
    expect(webm2!.preview_url).toBe(webm!.preview_url);
    // The copy as sent is gone, and so is its entry in the ledger of copies.
    expect((await ours.app.inject({ method: 'GET', url: path(webm!.url) })).statusCode).toBe(404);
    const { rows: files } = await ours.ctx.db.query(`SELECT key FROM cached_files WHERE owner_id = $1 ORDER BY key`, [webm2!.id]);
    expect(files.map((f) => f.key.slice(f.key.lastIndexOf('/') + 1))).toEqual(['converted.mp4', 'small.jpg']);

    // H.264 + AAC in QuickTime: re-packed into MP4, its streams copied, its metadata gone.
    const movFile = await served(mov2!.url);
    const movProbe = probe(movFile);
    expect(mov2!.url.endsWith('/converted.mp4')).toBe(true);
    expect(movProbe.streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(movProbe.format.tags?.major_brand).toBe('isom');
    expect(streamHash(movFile, '0:v:0')).toBe(streamHash(sent['/media/h264.mov']!.body, '0:v:0'));
    expect(movFile.includes('48.8583')).toBe(false);
    expect(fastStart(movFile)).toBe(true);

    // Opus in Ogg: MP3, its tags gone, its duration in meta.
    expect(opus2!.type).toBe('audio');
    expect(opus2!.url.endsWith('/converted.mp3')).toBe(true);
    const opusFile = await served(opus2!.url);
    const opusProbe = probe(opusFile);
    expect(opusProbe.streams.map((st) => [st.codec_type, st.codec_name])).toEqual([['audio', 'mp3']]);
    expect(opusFile.includes('Someone')).toBe(false);
    expect(opus2!.meta.original.duration).toBeGreaterThan(0.9);
    expect(opus2!.meta.original.duration).toBeLessThan(1.3);
    const { rows: stored } = await ours.ctx.db.query(`SELECT original_type FROM media_attachments WHERE id = $1`, [opus2!.id]);
    expect(stored[0].original_type).toBe('audio/mpeg');

    // H.264 + AAC in MP4 plays everywhere: kept as it came.
    expect(mp42!.url).toBe(mp4!.url);
    expect(await served(mp42!.url)).toEqual(sent['/media/h264.mp4']!.body);
    // Each file fetched once from its server.
    for (const file of ['/media/vp9.webm', '/media/h264.mov', '/media/voice.opus', '/media/h264.mp4']) expect(origin.hits.get(file), file).toBe(1);
  }, CONVERSION_WAIT_MS * 3);

  it('keeps serving the copy of a file that cannot be converted, with a warning, and the post is read as before', async () => {
    await ours.ctx.jobs.media.pause();
    const uri = await pushNote([attachment('/media/vp9.webm', 'Video')]);
    const copied = await until(() => statusByUri(uri), (s) => s.media_attachments[0]?.url.startsWith(`${ours.url}/system/`), 'copy made', CONVERSION_WAIT_MS);
    const media = copied.media_attachments[0];
    // Converted here by hand with an ffmpeg that crashes (the server's worker, held, never sees the job).
    const crash = join(dir, 'ffmpeg-crashes');
    writeFileSync(crash, '#!/bin/sh\nkill -SEGV $$\n');
    chmodSync(crash, 0o755);
    const warnings: string[] = [];
    const log = { warn: (o: object, msg: string) => void warnings.push(`${msg}: ${(o as { reason: string }).reason}`) };
    expect(await convertAttachment({ ...ours.ctx, config: { ...ours.ctx.config, ffmpegPath: crash } }, media.id, log)).toBe('kept');
    expect(warnings).toEqual([expect.stringMatching(/^remote media not converted: its copy is served as sent: ffmpeg was stopped by SIGSEGV/)]);
    const res = await ours.app.inject({ method: 'GET', url: `/api/v1/statuses/${copied.id}`, headers: bearer(alice.token) });
    expect(res.statusCode).toBe(200);
    expect(res.json().media_attachments[0].url).toBe(media.url);
    expect(await served(media.url)).toEqual(sent['/media/vp9.webm']!.body);
    const { rows } = await ours.ctx.db.query(`SELECT key FROM cached_files WHERE owner_id = $1 AND key LIKE '%converted%'`, [media.id]);
    expect(rows).toEqual([]);

    // With the machine's ffmpeg, the queued job converts it.
    await ours.ctx.jobs.media.resume();
    await until(() => statusByUri(uri), (s) => s.media_attachments[0]?.url.endsWith('/converted.mp4'), 'converted by the job', CONVERSION_WAIT_MS);
  }, CONVERSION_WAIT_MS * 3);

  it("takes GoToSocial's Ogg video as Mastodon does and converts it; its Matroska, which Mastodon does not take, becomes a link to its server", async () => {
    const theora = '/fileserver/01GTS/attachment/original/01THEORA.ogv';
    const matroska = '/fileserver/01GTS/attachment/original/01MATROSKA.mkv';
    const uri = await pushGoToSocialNote([theora, matroska]);
    const status = await until(() => statusByUri(uri), (s) => s.media_attachments[0]?.url.endsWith('/converted.mp4') && s.media_attachments[1]?.type === 'unknown', 'Ogg converted, Matroska refused', CONVERSION_WAIT_MS);
    const [ogv, mkv] = status.media_attachments as Json[];
    for (const m of [ogv, mkv]) expectEntity('MediaAttachment', m);
    expect(ogv!.type).toBe('video');
    expect(probe(await served(ogv!.url)).streams.map((st) => st.codec_name)).toEqual(['h264', 'aac']);
    expect(ogv!.meta.original).toMatchObject({ width: 64, height: 64, frame_rate: '10/1' });
    expect(ogv!.preview_url.startsWith(`${ours.url}/system/`)).toBe(true);

    // Not a video that never loads: a link to the file on its server, as Mastodon shows what it could not download.
    expect(mkv).toMatchObject({ type: 'unknown', url: `${origin.url}${matroska}`, remote_url: `${origin.url}${matroska}`, preview_url: null });
    expect((await ours.app.inject({ method: 'GET', url: `/media_proxy/${mkv!.id}/original` })).statusCode).toBe(404);
    const { rows } = await ours.ctx.db.query(`SELECT count(*)::int AS n FROM cached_files WHERE owner_id = $1`, [mkv!.id]);
    expect(rows[0].n).toBe(0);
    // Fetched once: neither later views nor the end of the failure's memory ask its server again.
    await ours.ctx.redis.del(`${ours.config.redisPrefix}media-cache-failed:attachment:${mkv!.id}`);
    expect((await ours.app.inject({ method: 'GET', url: `/media_proxy/${mkv!.id}/original` })).statusCode).toBe(404);
    expect(origin.hits.get(matroska)).toBe(1);
    expect(origin.hits.get(theora)).toBe(1);
  }, CONVERSION_WAIT_MS * 3);

  it('takes a probe that does not finish in its time for the machine, not the file: the attachment stays a video and is copied later', async () => {
    const uri = await pushNote([attachment('/media/h264.mp4', 'Video')]);
    const status = await statusByUri(uri);
    const media = status.media_attachments[0];
    // The copy the job made, taken away again, as if the job had never run.
    await ours.ctx.db.query(`UPDATE media_attachments SET original_key = NULL, small_key = NULL WHERE id = $1`, [media.id]);
    const hang = join(dir, 'ffprobe-hangs');
    writeFileSync(hang, '#!/bin/sh\nexec sleep 30\n');
    chmodSync(hang, 0o755);
    const before = PROBE_LIMITS.timeoutMs;
    PROBE_LIMITS.timeoutMs = 300;
    const warnings: string[] = [];
    const log = { warn: (o: object, msg: string) => void warnings.push(`${msg}: ${(o as { reason: string }).reason}`) };
    try {
      expect(await copyAttachment({ ...ours.ctx, config: { ...ours.ctx.config, ffprobePath: hang } }, media.id, log)).toBe('refused');
    } finally {
      PROBE_LIMITS.timeoutMs = before;
    }
    expect(warnings).toEqual([expect.stringMatching(/^remote media not copied: ffprobe took longer than/)]);
    const { rows: [row] } = await ours.ctx.db.query(`SELECT type FROM media_attachments WHERE id = $1`, [media.id]);
    expect(row.type).toBe('video');
    // Once the failure's memory ends, the next view copies it with the machine's ffprobe.
    await ours.ctx.redis.del(`${ours.config.redisPrefix}media-cache-failed:attachment:${media.id}`);
    expect(await copyAttachment(ours.ctx, media.id)).toBe('copied');
    expect((await api(`/api/v1/statuses/${status.id}`)).media_attachments[0]).toMatchObject({ type: 'video', meta: { original: { width: 64, height: 64 } } });
  }, CONVERSION_WAIT_MS);
});
