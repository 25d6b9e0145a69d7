// Live updates and the compose form of the signed-in pages: the streaming WebSocket opened with the session cookie
// from a page of this origin (and refused otherwise), the fragments the script puts in place, and a post with
// several files, a video, a schedule or a quote, sent as a browser sends the form.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import sharp from 'sharp';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { eventually } from '../helpers/eventually.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { requireProgram } from '../helpers/programs.ts';
import { findExecutable } from '../../services/media-tools.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer & { url: string };
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let web: WebClient;
let dir: string;

const api = async (who: TestUser, method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? (res.json() as Json) : null };
};
const post = async (who: TestUser, payload: object) => {
  const res = await api(who, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Json;
};

/** A WebSocket to the streaming API as a browser opens it: with the page's cookies and Origin. */
function socket(headers: Record<string, string>) {
  const ws = new WebSocket(`${s.url.replace(/^http/, 'ws')}/api/v1/streaming`, { headers });
  const messages: Json[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Json));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  const opened = new Promise<number>((resolve) => {
    ws.once('open', () => resolve(101));
    ws.once('unexpected-response', (req, res) => { resolve(res.statusCode ?? 0); req.destroy(); });
    ws.once('error', () => resolve(0));
  });
  const waitFor = async (pred: (m: Json) => boolean, ms = 10_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const found = messages.find(pred);
      if (found) return found;
      if (Date.now() > end) throw new Error(`no such message; got ${JSON.stringify(messages).slice(0, 500)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { ws, opened, closed, waitFor };
}

/** Sends the compose form of `page` as a multipart body, as a browser does. */
async function sendCompose(client: WebClient, page: string, fields: Record<string, string | { data: Buffer; filename: string; type: string }>) {
  const form = await multipart({ _csrf: csrfOf(page), visibility: 'public', language: 'en', spoiler_text: '', return_to: '/home', ...fields });
  return s.app.inject({ method: 'POST', url: '/statuses', headers: { ...form.headers, accept: 'text/html', cookie: client.jar.header() }, payload: form.payload });
}

beforeAll(async () => {
  requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
  s = await startListeningServer({ MAX_IMAGE_BYTES: '200000', MAX_VIDEO_BYTES: '2000000' });
  [alice, bob, carol] = await registerUsers(s.app, 'alice', 'bob', 'carol');
  expect((await api(alice, 'POST', `/api/v1/accounts/${bob.id}/follow`)).status).toBe(200);
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
  dir = mkdtempSync(join(tmpdir(), 'web-live-'));
}, 60_000);
afterAll(async () => {
  await s?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the streaming API for a signed-in page', () => {
  it('opens with the session cookie from this origin, and reads what a read token reads', async () => {
    const home = socket({ cookie: web.jar.header(), origin: s.url });
    expect(await home.opened).toBe(101);
    home.ws.send(JSON.stringify({ type: 'subscribe', stream: 'user' }));
    home.ws.send(JSON.stringify({ type: 'subscribe', stream: 'public:local' }));
    // Home and the local timeline: the followed account's post comes on both; a notification on home's stream.
    await new Promise((r) => setTimeout(r, 300));
    const p = await post(bob, { status: 'Live from bob' });
    const update = await home.waitFor((m) => m.event === 'update' && m.stream[0] === 'user');
    expect(JSON.parse(update.payload as string).id).toBe(p.id);
    await home.waitFor((m) => m.event === 'update' && m.stream[0] === 'public:local');
    const mine = await post(alice, { status: 'Something to favourite' });
    expect((await api(carol, 'POST', `/api/v1/statuses/${mine.id}/favourite`)).status).toBe(200);
    const n = await home.waitFor((m) => m.event === 'notification');
    expect(JSON.parse(n.payload as string).type).toBe('favourite');
    home.ws.close();
  });

  it('is refused without a session, with a session from another origin, and with an ended session', async () => {
    expect(await socket({ origin: s.url }).opened).toBe(401);
    expect(await socket({ cookie: web.jar.header(), origin: 'https://evil.example' }).opened).toBe(403);
    expect(await socket({ cookie: web.jar.header() }).opened).toBe(403);
    expect(await socket({ cookie: '_session=not-a-session', origin: s.url }).opened).toBe(401);
    // Server-sent events take no cookie at all.
    const sse = await s.app.inject({ method: 'GET', url: '/api/v1/streaming/user', headers: { cookie: web.jar.header(), origin: s.url } });
    expect(sse.statusCode).toBe(401);
  });

  it('ends when the session ends: signing out, or the session removed from the account settings', async () => {
    const other = new WebClient(s.app);
    expect((await other.signIn(alice.email, alice.password)).statusCode).toBe(303);
    const open = socket({ cookie: other.jar.header(), origin: s.url });
    expect(await open.opened).toBe(101);
    expect((await other.submit('/auth/sign_out', '/auth/sign_out', {})).statusCode).toBe(303);
    expect(await open.closed).toEqual({ code: 1008, reason: 'Session ended' });

    const third = new WebClient(s.app);
    expect((await third.signIn(alice.email, alice.password)).statusCode).toBe(303);
    const again = socket({ cookie: third.jar.header(), origin: s.url });
    expect(await again.opened).toBe(101);
    const settings = await web.get('/settings/account');
    const ids = [...settings.body.matchAll(/action="\/settings\/sessions\/(\d+)\/sign_out"/g)].map((m) => m[1]!);
    // The newest other session is the third one (sessions are listed newest first).
    expect((await web.post(`/settings/sessions/${ids[0]}/sign_out`, {}, settings.body)).statusCode).toBe(303);
    expect(await again.closed).toEqual({ code: 1008, reason: 'Session ended' });
    // The first session still streams.
    const still = socket({ cookie: web.jar.header(), origin: s.url });
    expect(await still.opened).toBe(101);
    still.ws.close();
  });
});

describe('the parts the script puts in place', () => {
  it('renders a post or a notification for the signed-in person, and nothing for others', async () => {
    const p = await post(bob, { status: 'A fragment <b>with</b> & things' });
    const res = await web.get(`/statuses/${p.id}/entry?context=home&return_to=${encodeURIComponent('/home')}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.trim()).toMatch(new RegExp(`^<article class="status" id="s-${p.id}"`));
    expect(res.body).toContain('&amp; things');
    expect(res.body).not.toContain('<b>with</b>');
    expect(res.body).toContain(`name="return_to" value="/home#s-${p.id}"`);
    csrfOf(res.body);
    // Followers only, of someone alice does not follow: not there, as in the API.
    const hidden = await post(carol, { status: 'Only my followers', visibility: 'private' });
    expect((await web.get(`/statuses/${hidden.id}/entry`)).statusCode).toBe(404);
    expect((await new WebClient(s.app).get(`/statuses/${p.id}/entry`)).statusCode).toBe(401);
    // A return_to elsewhere is not followed.
    expect((await web.get(`/statuses/${p.id}/entry?return_to=${encodeURIComponent('https://evil.example/')}`)).body).not.toContain('evil.example');

    const mine = await post(alice, { status: 'Boost me' });
    expect((await api(carol, 'POST', `/api/v1/statuses/${mine.id}/reblog`)).status).toBe(200);
    const notes = await api(alice, 'GET', '/api/v1/notifications?types[]=reblog');
    const id = (notes.body as unknown as Json[])[0]!.id as string;
    const fragment = await web.get(`/notifications/${id}/entry`);
    expect(fragment.statusCode).toBe(200);
    expect(fragment.body).toContain(`id="n-${id}"`);
    expect(fragment.body).toContain('boosted your post');
    const bobWeb = new WebClient(s.app);
    await bobWeb.signIn(bob.email, bob.password);
    expect((await bobWeb.get(`/notifications/${id}/entry`)).statusCode).toBe(404);
  });

  it('marks the newest page of each timeline with its stream, and older pages not', async () => {
    const list = await api(alice, 'POST', '/api/v1/lists', { title: 'Friends' });
    for (const [path, attrs] of [
      ['/home', 'data-stream="user" data-context="home"'],
      ['/public/local', 'data-stream="public:local" data-context="public"'],
      ['/public', 'data-stream="public" data-context="public"'],
      ['/tags/gardening', 'data-stream="hashtag" data-context="public" data-tag="gardening"'],
      [`/lists/${list.body!.id}`, `data-stream="list" data-context="list" data-list="${list.body!.id}"`],
      ['/notifications', 'data-stream="user:notification"'],
    ] as const) {
      const page = await web.get(path);
      expect(page.body, path).toContain(attrs);
      await expectValidHtml(page.body, path);
      expect((await web.get(`${path}?max_id=1`)).body, path).not.toContain('data-stream=');
    }
  });
});

describe('the compose form', () => {
  const png = (color: string) => sharp({ create: { width: 40, height: 30, channels: 3, background: color } }).png().toBuffer();

  it('posts four images with their descriptions and focus points', async () => {
    const home = await web.get('/home');
    const files = await Promise.all(['#c63', '#36c', '#3c6', '#cc3'].map(png));
    const res = await sendCompose(web, home.body, {
      status: 'Four pictures', idempotency_key: 'four-images',
      ...Object.fromEntries(files.flatMap((data, i) => [
        [`media_${i + 1}`, { data, filename: `p${i}.png`, type: 'image/png' }],
        [`description_${i + 1}`, `Picture ${i + 1}`],
        [`focus_x_${i + 1}`, String(i / 4)],
        [`focus_y_${i + 1}`, '-0.5'],
      ])),
    });
    expect(res.statusCode, res.body.slice(0, 400)).toBe(303);
    const id = /#s-(\d+)$/.exec(res.headers.location as string)![1]!;
    const status = (await api(alice, 'GET', `/api/v1/statuses/${id}`)).body!;
    expect((status.media_attachments as Json[]).map((m) => [m.type, m.description, m.meta.focus])).toEqual(
      [0, 1, 2, 3].map((i) => ['image', `Picture ${i + 1}`, { x: i / 4, y: -0.5 }]),
    );
    // A focus point out of range is refused before anything is kept.
    const bad = await sendCompose(web, home.body, { status: 'Bad focus', idempotency_key: 'bad-focus', media_1: { data: files[0]!, filename: 'a.png', type: 'image/png' }, focus_x_1: '2' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('A focus point is two numbers from -1 to 1');
  });

  it('posts a video with its description, transcoded by the media job', async () => {
    const path = join(dir, 'clip.mp4');
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=80x48:rate=10:duration=1', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1',
      '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', path]);
    const home = await web.get('/home');
    const res = await sendCompose(web, home.body, {
      status: 'A short clip', idempotency_key: 'a-video', media_1: { data: readFileSync(path), filename: 'clip.mp4', type: 'video/mp4' }, description_1: 'A test pattern with a tone',
    });
    // On a loaded machine the transcode may outlast the form's wait: the form comes back with the file kept, and
    // sending it again posts it.
    let final = res;
    if (res.statusCode === 422) {
      expect(res.body).toContain('still being processed');
      const kept = /name="media_ids" value="(\d+)"/.exec(res.body)![1]!;
      await eventually(async () => (await api(alice, 'GET', `/api/v1/media/${kept}`)).status, 200, 60_000);
      final = await sendCompose(web, res.body, { status: 'A short clip', idempotency_key: 'a-video-again', media_ids: kept });
    }
    expect(final.statusCode, final.body.slice(0, 400)).toBe(303);
    const id = /#s-(\d+)$/.exec(final.headers.location as string)![1]!;
    const status = (await api(alice, 'GET', `/api/v1/statuses/${id}`)).body!;
    expect((status.media_attachments as Json[]).map((m) => [m.type, m.description])).toEqual([['video', 'A test pattern with a tone']]);
    await eventually(async () => (await web.get(`/@alice/${id}`)).body.includes('<video controls'), true);
  });

  it('answers a file over the upload limit with a page that says the limits', async () => {
    const home = await web.get('/home');
    const res = await sendCompose(web, home.body, { status: 'Too big', idempotency_key: 'too-big', media_1: { data: Buffer.alloc(2_100_000, 1), filename: 'big.mp4', type: 'video/mp4' } });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('File too large');
    expect(res.body).toContain('Images may be up to 0.2 MB, videos and audio up to 1.9 MB');
    // An image over the image limit (but under the largest upload) comes back in the form, the text kept.
    const big = await sharp({ create: { width: 600, height: 600, channels: 3, background: '#888' }, }).png({ compressionLevel: 0 }).toBuffer();
    expect(big.length).toBeGreaterThan(200_000);
    const refused = await sendCompose(web, home.body, { status: 'A large picture', idempotency_key: 'big-image', media_1: { data: big, filename: 'big.png', type: 'image/png' } });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('File file size must be less than');
    expect(refused.body).toContain('A large picture</textarea>');
  });

  it('schedules a post at a time read at the chosen offset, lists it, and cancels it', async () => {
    const home = await web.get('/home');
    // Tomorrow at 09:30 at UTC+02:00 is 07:30 UTC.
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const res = await sendCompose(web, home.body, { status: 'Later, please', idempotency_key: 'scheduled', scheduled_at: `${day}T09:30`, scheduled_offset: '120' });
    expect(res.statusCode, res.body.slice(0, 400)).toBe(303);
    expect(res.headers.location).toBe('/scheduled_statuses?notice=scheduled');
    const listed = (await api(alice, 'GET', '/api/v1/scheduled_statuses')).body as unknown as Json[];
    expect(listed.map((x) => [x.scheduled_at, x.params.text])).toEqual([[`${day}T07:30:00.000Z`, 'Later, please']]);
    const page = await web.get('/scheduled_statuses?notice=scheduled');
    expect(page.body).toContain('Your post is scheduled.');
    expect(page.body).toContain('Later, please');
    await expectValidHtml(page.body, '/scheduled_statuses');
    const cancel = await web.post(`/scheduled_statuses/${listed[0]!.id}/cancel`, {}, page.body);
    expect(cancel.headers.location).toBe('/scheduled_statuses?notice=cancelled');
    expect((await api(alice, 'GET', '/api/v1/scheduled_statuses')).body).toEqual([]);
    // A past time or nonsense: refused with the service's words, the text kept.
    const past = await sendCompose(web, home.body, { status: 'Too soon', idempotency_key: 'nonsense', scheduled_at: 'soon', scheduled_offset: '0' });
    expect(past.statusCode).toBe(422);
    expect(past.body).toContain('Scheduled at is not a valid date');
  });

  it('quotes a post from its Quote link, as quoted_status_id does', async () => {
    const original = await post(bob, { status: 'Quote me if you like' });
    // On home once the fan-out has put it there.
    await eventually(async () => (await web.get('/home')).body.includes(`href="/publish?quote=${original.id}#compose"`), true);
    const form = await web.get(`/publish?quote=${original.id}`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(`name="quoted_status_id" value="${original.id}"`);
    expect(form.body).toContain('Quote me if you like');
    await expectValidHtml(form.body, '/publish?quote');
    const res = await sendCompose(web, form.body, { status: 'Well said', idempotency_key: 'a-quote', quoted_status_id: original.id });
    expect(res.statusCode, res.body.slice(0, 400)).toBe(303);
    const id = /#s-(\d+)$/.exec(res.headers.location as string)![1]!;
    const status = (await api(alice, 'GET', `/api/v1/statuses/${id}`)).body!;
    expect(status.quote?.quoted_status?.id).toBe(original.id);
    // Someone who allows no quotes: no link, and the form is refused by the service.
    const closed = await post(carol, { status: 'Do not quote', quote_approval_policy: 'nobody' });
    expect((await web.get(`/@carol/${closed.id}`)).body).not.toContain(`/publish?quote=${closed.id}`);
    const refused = await sendCompose(web, form.body, { status: 'Quoting anyway', idempotency_key: 'refused-quote', quoted_status_id: closed.id });
    expect(refused.statusCode).toBeGreaterThanOrEqual(400);
    expect(refused.statusCode).toBeLessThan(500);
    expect((await web.get('/publish?quote=123456')).statusCode).toBe(404);
  });
});
