// The compose form's files (http/web/client-actions.ts): images and a video in one post are refused as the API refuses
// them (services/attachments.ts), as a form error with the form kept, whose kept files can then be left out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { findExecutable } from '../../services/media-tools.ts';
import { requireProgram } from '../helpers/programs.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

// Each form sends a video the media job transcodes: on a loaded machine longer than the suite's 30 s a test.
const MEDIA_TIMEOUT = 120_000;

let s: TestServer;
let ann: TestUser;
let web: WebClient;
let dir: string;
let video: { data: Buffer; filename: string; type: string };
let image: { data: Buffer; filename: string; type: string };

/** Sends the compose form of `page` as a browser does (multipart, with its files; `repeated`: the kept files' boxes). */
async function compose(page: string, fields: Record<string, string | { data: Buffer; filename: string; type: string }>, repeated: [string, string][] = []) {
  const data = new FormData();
  const all: Record<string, string | { data: Buffer; filename: string; type: string }> = { _csrf: csrfOf(page), idempotency_key: `k-${Math.random()}`, visibility: 'public', language: 'en', ...fields };
  for (const [k, v] of Object.entries(all)) {
    if (typeof v === 'string') data.append(k, v);
    else data.append(k, new Blob([new Uint8Array(v.data)], { type: v.type }), v.filename);
  }
  for (const [k, v] of repeated) data.append(k, v);
  const request = new Request('http://localhost/', { method: 'POST', body: data });
  return s.app.inject({
    method: 'POST', url: '/statuses', payload: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')!, accept: 'text/html', cookie: web.jar.header() },
  });
}

/** The kept files' check boxes of a refused form: id and what the label says. */
const keptFiles = (body: string) => [...body.matchAll(/name="media_ids\[\]" value="(\d+)" checked><span>([^<“]*)/g)].map((m) => ({ id: m[1]!, label: m[2]!.trim() }));

beforeAll(async () => {
  requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
  requireProgram(findExecutable('ffprobe'), 'ffprobe', 'ffmpeg');
  s = await startTestServer();
  [ann] = await registerUsers(s.app, 'ann');
  web = new WebClient(s.app);
  expect((await web.signIn(ann.email, ann.password)).statusCode).toBe(303);
  dir = mkdtempSync(join(tmpdir(), 'compose-media-test-'));
  const clip = join(dir, 'clip.mp4');
  execFileSync('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=1',
    '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', clip]);
  video = { data: readFileSync(clip), filename: 'clip.mp4', type: 'video/mp4' };
  image = { data: await sharp({ create: { width: 16, height: 16, channels: 3, background: '#a30' } }).png().toBuffer(), filename: 'red.png', type: 'image/png' };
});
afterAll(async () => {
  await s?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a picture and a video in one post from the compose form', () => {
  it('is refused with the API\'s words as a form error (422), the text and both files kept; leaving the video out posts the picture', async () => {
    const home = await web.get('/home');
    const before = (await s.ctx.db.query(`SELECT count(*)::int AS n FROM statuses`)).rows[0].n;
    const refused = await compose(home.body, {
      status: 'Sunset and its sound', return_to: '/home', description_1: 'A red square', media_1: image, description_2: 'The waves', media_2: video,
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toMatch(/<p class="flash error" role="alert" id="compose-error">Cannot attach a video to a post that already contains images\./);
    expect(refused.body).toContain('Sunset and its sound</textarea>');
    await expectValidHtml(refused.body, 'refused form');
    const kept = keptFiles(refused.body);
    expect(kept.map((k) => k.label)).toEqual(['Image', 'Video']);
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM statuses`)).rows[0].n).toBe(before);

    // Sent again with both still ticked: the same refusal, from the post itself.
    const again = await compose(refused.body, { status: 'Sunset and its sound', return_to: '/home' }, kept.map((k) => ['media_ids[]', k.id]));
    expect(again.statusCode).toBe(422);
    expect(again.body).toContain('Cannot attach a video to a post that already contains images.');
    // The video unticked: the picture alone is posted.
    const posted = await compose(again.body, { status: 'Sunset and its sound', return_to: '/home' }, [['media_ids[]', kept[0]!.id]]);
    expect(posted.statusCode, /id="compose-error">([^<]*)/.exec(posted.body)?.[1] ?? '').toBe(303);
    const id = /#s-(\d+)$/.exec(posted.headers.location as string)![1]!;
    const status = (await s.app.inject({ method: 'GET', url: `/api/v1/statuses/${id}`, headers: bearer(ann.token) })).json<Json>();
    expect((status.media_attachments as Json[]).map((m) => [m.type, m.description])).toEqual([['image', 'A red square']]);
  }, MEDIA_TIMEOUT);

  it('is refused the same when scheduled, and in a reply\'s form on the thread page', async () => {
    const home = await web.get('/home');
    const scheduled = await compose(home.body, {
      status: 'Later, with both', return_to: '/home', media_1: image, media_2: video, scheduled_at: '2999-01-01T10:00', scheduled_offset: '0',
    });
    expect(scheduled.statusCode).toBe(422);
    expect(scheduled.body).toContain('Cannot attach a video to a post that already contains images.');
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM scheduled_statuses`)).rows[0].n).toBe(0);

    const parent = (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ann.token), payload: { status: 'A thread' } })).json<Json>();
    const thread = await web.get(`/@ann/${parent.id}`);
    const reply = await compose(thread.body, { status: 'A reply with both', in_reply_to_id: parent.id, return_to: `/@ann/${parent.id}`, media_1: image, media_2: video });
    expect(reply.statusCode).toBe(422);
    expect(reply.body).toContain('A thread');
    expect(reply.body).toContain('Cannot attach a video to a post that already contains images.');
    expect(reply.body).toContain('A reply with both</textarea>');
  }, MEDIA_TIMEOUT);
});
