// The home page (/home) is kept rendered per person and its posts' entries are shared between people
// (http/web/client-pages.ts, entry-fragments.ts): what changes shows on the next page at once, what one person did to
// a post shows only on their page, and each page carries its own form token and idempotency key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { eventually } from '../helpers/eventually.ts';
import { entryCache } from '../../http/web/entry-fragments.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let aliceWeb: WebClient;
let carolWeb: WebClient;

const api = async (who: TestUser, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json() as Json;
};

/** The entry of one post on a page (its <article>), or null when the page does not show it. */
function entryOf(html: string, id: string): string | null {
  const start = html.indexOf(`<article class="status" id="s-${id}"`);
  return start === -1 ? null : html.slice(start, html.indexOf('</article>', start));
}

/** Opens /home twice: the second is served from what the first rendered (the page, or its entries). */
async function home(web: WebClient): Promise<string> {
  const first = await web.get('/home');
  expect(first.statusCode).toBe(200);
  const again = await web.get('/home');
  // The same page but for the values each response puts in.
  const strip = (html: string) => html.replace(/name="(_csrf|idempotency_key)" value="[^"]*"/g, '');
  expect(strip(again.body)).toBe(strip(first.body));
  return again.body;
}

beforeAll(async () => {
  s = await startTestServer();
  [alice, bob, carol] = await registerUsers(s.app, 'alice', 'bob', 'carol');
  for (const who of [alice, carol]) {
    await api(who, 'POST', `/api/v1/accounts/${bob.id}/follow`);
    await api(who, 'GET', '/api/v1/timelines/home');
  }
  aliceWeb = new WebClient(s.app);
  carolWeb = new WebClient(s.app);
  expect((await aliceWeb.signIn(alice.email, alice.password)).statusCode).toBe(303);
  expect((await carolWeb.signIn(carol.email, carol.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
});

describe('the home page kept rendered', () => {
  it('is served again from memory, with a form token and an idempotency key of its own each time', async () => {
    await api(bob, 'POST', '/api/v1/statuses', { status: 'Kept and served again' });
    expect(await eventually(async () => (await aliceWeb.get('/home')).body.includes('Kept and served again'), true, 10_000)).toBe(true);
    const hits = s.ctx.homePagesHtml.hits;
    const a = await aliceWeb.get('/home');
    const b = await aliceWeb.get('/home');
    expect(s.ctx.homePagesHtml.hits - hits).toBe(2);
    const keys = [a, b].map((r) => /name="idempotency_key" value="([^"]+)"/.exec(r.body)![1]);
    expect(keys[0]).not.toBe(keys[1]);
    // Each response's token works for its forms.
    const posted = await aliceWeb.post('/statuses', { status: 'Posted from a page served again', idempotency_key: keys[1]!, return_to: '/home', visibility: 'public', language: 'en', spoiler_text: '' }, b.body);
    expect(posted.statusCode, posted.body.slice(0, 300)).toBe(303);
    expect((await aliceWeb.get('/home')).body).toContain('Posted from a page served again');
  });

  it('shows an edit at once', async () => {
    const p = await api(bob, 'POST', '/api/v1/statuses', { status: 'Before the edit' });
    expect(await eventually(async () => (await aliceWeb.get('/home')).body.includes('Before the edit'), true, 10_000)).toBe(true);
    expect(entryOf(await home(aliceWeb), p.id)).toContain('Before the edit');
    await api(bob, 'PUT', `/api/v1/statuses/${p.id}`, { status: 'After the edit' });
    const page = (await aliceWeb.get('/home')).body;
    expect(entryOf(page, p.id)).toContain('After the edit');
    expect(page).not.toContain('Before the edit');
  });

  it('shows a favourite as favourited to the person who made it only, though the entry was shared', async () => {
    const p = await api(bob, 'POST', '/api/v1/statuses', { status: 'Favourite me, one of you' });
    for (const who of [alice, carol]) expect(await eventually(async () => (await api(who, 'GET', '/api/v1/timelines/home') as unknown as Json[]).some((st) => st.id === p.id), true, 10_000)).toBe(true);
    // Both see the same entries of bob's posts: carol's page renders none of them again, it uses those alice's kept.
    const aliceEntry = entryOf(await home(aliceWeb), p.id)!;
    const [hits, misses] = [entryCache.hits, entryCache.misses];
    const carolEntry = entryOf(await home(carolWeb), p.id)!;
    expect(entryCache.misses).toBe(misses);
    expect(entryCache.hits).toBeGreaterThan(hits);
    const strip = (html: string) => html.replace(/name="_csrf" value="[^"]*"/g, '');
    expect(strip(aliceEntry)).toBe(strip(carolEntry));

    // Alice favourites it with the form of her page.
    const page = await aliceWeb.get('/home');
    const res = await aliceWeb.post(`/statuses/${p.id}/favourite`, { return_to: `/home#s-${p.id}` }, page.body);
    expect(res.statusCode).toBe(303);
    const alicesNow = entryOf((await aliceWeb.get('/home')).body, p.id)!;
    expect(alicesNow).toContain(`formaction="/statuses/${p.id}/unfavourite"`);
    expect(alicesNow).toContain('1 favourite');
    const carolsNow = entryOf((await carolWeb.get('/home')).body, p.id)!;
    expect(carolsNow).toContain(`formaction="/statuses/${p.id}/favourite"`);
    expect(carolsNow).not.toContain('unfavourite');
    expect(carolsNow).toContain('1 favourite');
    // Each sees their own form token on it.
    expect(csrfOf(alicesNow)).not.toBe(csrfOf(carolsNow));
  });

  it('shows a vote counted in a poll at once', async () => {
    const p = await api(bob, 'POST', '/api/v1/statuses', { status: 'Which one?', poll: { options: ['this', 'that'], expires_in: 3600 } });
    expect(await eventually(async () => (await aliceWeb.get('/home')).body.includes('Which one?'), true, 10_000)).toBe(true);
    expect(entryOf(await home(aliceWeb), p.id)).toContain('0 people');
    await api(carol, 'POST', `/api/v1/polls/${p.poll.id}/votes`, { choices: [1] });
    const entry = entryOf((await aliceWeb.get('/home')).body, p.id)!;
    expect(entry).toContain('1 person');
    // Alice has not voted: she still gets the poll's form; carol, who has, its results.
    expect(entry).toContain(`action="/polls/${p.poll.id}/votes"`);
    expect(entryOf((await carolWeb.get('/home')).body, p.id)).toContain('<progress');
  });

  it('shows a changed media description at once', async () => {
    const png = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#36c' } }).png().toBuffer();
    const form = await multipart({ file: { data: png, filename: 'blue.png', type: 'image/png' }, description: 'A blue square' });
    const media = (await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(bob.token), ...form.headers }, payload: form.payload })).json() as Json;
    expect(await eventually(async () => (await api(bob, 'GET', `/api/v1/media/${media.id}`)).url !== null, true, 10_000)).toBe(true);
    const p = await api(bob, 'POST', '/api/v1/statuses', { status: 'A picture', media_ids: [media.id] });
    expect(await eventually(async () => (await aliceWeb.get('/home')).body.includes('alt="A blue square"'), true, 10_000)).toBe(true);
    expect(entryOf(await home(aliceWeb), p.id)).toContain('alt="A blue square"');
    await api(bob, 'PUT', `/api/v1/statuses/${p.id}`, { status: 'A picture', media_ids: [media.id], media_attributes: [{ id: media.id, description: 'A square of blue' }] });
    const entry = entryOf((await aliceWeb.get('/home')).body, p.id)!;
    expect(entry).toContain('alt="A square of blue"');
    expect(entry).not.toContain('alt="A blue square"');
  });

  it('drops a deleted post at once', async () => {
    const p = await api(bob, 'POST', '/api/v1/statuses', { status: 'Soon gone' });
    expect(await eventually(async () => (await aliceWeb.get('/home')).body.includes('Soon gone'), true, 10_000)).toBe(true);
    expect(entryOf(await home(aliceWeb), p.id)).toContain('Soon gone');
    await api(bob, 'DELETE', `/api/v1/statuses/${p.id}`);
    expect((await aliceWeb.get('/home')).body).not.toContain('Soon gone');
  });

  it('applies a new filter, a mute and a block at once, to that person only', async () => {
    const p = await api(bob, 'POST', '/api/v1/statuses', { status: 'A word about turnips' });
    expect(await eventually(async () => (await aliceWeb.get('/home')).body.includes('about turnips'), true, 10_000)).toBe(true);
    expect(await eventually(async () => (await carolWeb.get('/home')).body.includes('about turnips'), true, 10_000)).toBe(true);
    expect(entryOf(await home(aliceWeb), p.id)).not.toContain('status-filtered');

    await api(alice, 'POST', '/api/v2/filters', { title: 'Roots', context: ['home'], filter_action: 'warn', keywords_attributes: [{ keyword: 'turnips' }] });
    expect(entryOf((await aliceWeb.get('/home')).body, p.id)).toContain('status-filtered');
    expect(entryOf((await carolWeb.get('/home')).body, p.id)).not.toContain('status-filtered');

    await api(alice, 'POST', `/api/v1/accounts/${bob.id}/mute`);
    expect((await aliceWeb.get('/home')).body).not.toContain('about turnips');
    await api(alice, 'POST', `/api/v1/accounts/${bob.id}/unmute`);
    expect((await aliceWeb.get('/home')).body).toContain('about turnips');

    await api(carol, 'POST', `/api/v1/accounts/${bob.id}/block`);
    expect((await carolWeb.get('/home')).body).not.toContain('about turnips');
    expect((await aliceWeb.get('/home')).body).toContain('about turnips');
  });

  it('follows the person\'s language, appearance and defaults', async () => {
    expect(await home(aliceWeb)).toContain('<html lang="en">');
    const page = await aliceWeb.get('/settings/appearance');
    expect((await aliceWeb.post('/settings/appearance', { locale: 'de', theme: 'dark' }, page.body)).statusCode).toBe(303);
    const german = await home(aliceWeb);
    expect(german).toContain('<html lang="de" class="theme-dark">');
    expect(german).toContain('<h1>Startseite</h1>');
    const res = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(alice.token), payload: { source: { privacy: 'unlisted' } } });
    expect(res.statusCode).toBe(200);
    expect(await home(aliceWeb)).toMatch(/<option value="unlisted" selected>/);
  });
});
