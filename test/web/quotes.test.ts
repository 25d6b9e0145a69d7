// Quote posts on the pages (http/web/page-view.ts QuoteView, templates/public/_quote.eta): the quoted post inside the
// quoting one on every timeline, profile and thread, or the words for the quote's state where the API gives the same
// viewer no post (pending, revoked, deleted, not theirs to see), checked against what the API says to that viewer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { eventually } from '../helpers/eventually.ts';
import { expectValidHtml } from '../helpers/html.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let erin: TestUser;
let web: WebClient;

const api = async (who: TestUser | null, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: who ? bearer(who.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? (res.json() as Json) : null };
};
const post = async (who: TestUser, payload: object): Promise<Json> => {
  const res = await api(who, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body!;
};
/** The quote of a post as the API gives it to this viewer. */
const apiQuote = async (who: TestUser | null, id: string) => (await api(who, 'GET', `/api/v1/statuses/${id}`)).body!.quote as Json;

/** The article of a post on a page (from its opening tag to the next post's, or the end). */
function article(body: string, id: string): string {
  const start = body.indexOf(`id="s-${id}"`);
  expect(start, `post ${id} is on the page`).toBeGreaterThan(-1);
  const next = body.indexOf('<article', start);
  return body.slice(start, next === -1 ? undefined : next);
}

async function uploadImage(who: TestUser, description: string): Promise<string> {
  const png = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#36c' } }).png().toBuffer();
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'blue.png');
  form.append('description', description);
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  const res = await s.app.inject({
    method: 'POST', url: '/api/v2/media', payload: Buffer.from(await request.arrayBuffer()),
    headers: { ...bearer(who.token), 'content-type': request.headers.get('content-type')! },
  });
  expect([200, 202], res.body).toContain(res.statusCode);
  const id = res.json<{ id: string }>().id;
  await eventually(async () => (await api(who, 'GET', `/api/v1/media/${id}`)).status, 200, 10_000);
  return id;
}

let original: Json;
let quote: Json;

beforeAll(async () => {
  s = await startTestServer();
  [alice, bob, carol, dave, erin] = await registerUsers(s.app, 'alice', 'bob', 'carol', 'dave', 'erin');
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
  expect((await api(alice, 'POST', `/api/v1/accounts/${bob.id}/follow`)).status).toBe(200);
  const media = await uploadImage(carol, 'A blue square');
  original = await post(carol, { status: 'Carol says the sky is blue', media_ids: [media] });
  quote = await post(bob, { status: 'Bob agrees about #skies', quoted_status_id: original.id });
  expect(quote.quote.state).toBe('accepted');
});
afterAll(async () => {
  await s?.close();
});

describe('a quoted post on the pages', () => {
  it('is shown inside the quoting post on home, local, federated, tag, list, profile and thread pages, with its author, text, media and a link', async () => {
    const list = await api(alice, 'POST', '/api/v1/lists', { title: 'Bobs' });
    expect((await api(alice, 'POST', `/api/v1/lists/${list.body!.id}/accounts`, { account_ids: [bob.id] })).status).toBe(200);
    // Added after the post: the list's feed has it once a later post arrives, so the list page is read after one.
    const later = await post(bob, { status: 'Another quote by bob', quoted_status_id: original.id });
    await eventually(async () => (await web.get('/home')).body.includes(`id="s-${quote.id}"`), true, 10_000);
    await eventually(async () => (await web.get(`/lists/${list.body!.id}`)).body.includes(`id="s-${later.id}"`), true, 10_000);
    const pages = ['/home', '/public/local', '/public', '/tags/skies', `/@bob`, `/@bob/${quote.id}`];
    for (const path of pages) {
      const page = await web.get(path);
      expect(page.statusCode, path).toBe(200);
      const own = article(page.body, quote.id);
      expect(own, path).toContain('class="status-quote"');
      expect(own, path).toContain('Carol says the sky is blue');
      expect(own, path).toMatch(/<span class="display-name">carol<\/span> <span class="handle">@carol@[^<]+<\/span>/);
      expect(own, path).toContain('1 image');
      // The link leads to the quoted post's page here.
      expect(own, path).toContain(`href="/@carol/${original.id}"`);
      await expectValidHtml(page.body, path);
    }
    const listPage = await web.get(`/lists/${list.body!.id}`);
    expect(article(listPage.body, later.id)).toContain('Carol says the sky is blue');
  });

  it('is shown to a stranger on the public profile and post pages, linking to its public page', async () => {
    const stranger = new WebClient(s.app);
    for (const path of ['/@bob', `/@bob/${quote.id}`, '/tags/skies']) {
      const page = await stranger.get(path);
      expect(page.statusCode, path).toBe(200);
      expect(page.body, path).toContain('class="status-quote"');
      expect(page.body, path).toContain('Carol says the sky is blue');
      expect(page.body, path).toContain(`${s.ctx.config.publicUrl}/@carol/${original.id}`);
      await expectValidHtml(page.body, path);
    }
  });

  it('a quote of a quote shows the inner one as a line, not its post', async () => {
    const third = await post(erin, { status: 'Erin quotes bob', quoted_status_id: quote.id });
    expect((await apiQuote(alice, third.id)).quoted_status.quote).toEqual({ state: 'accepted', quoted_status_id: original.id });
    const page = await web.get(`/@erin/${third.id}`);
    const own = article(page.body, third.id);
    expect(own).toContain('Bob agrees about');
    expect(own).toContain('Quotes another post');
    expect(own).not.toContain('Carol says the sky is blue');
  });
});

describe('a quote the viewer is not shown', () => {
  it('of a post by someone who blocks the viewer: "Post unavailable", and nothing of the quoted post', async () => {
    const hidden = await post(dave, { status: 'Dave keeps this from alice' });
    const q = await post(bob, { status: 'Bob quotes dave', quoted_status_id: hidden.id });
    expect((await api(dave, 'POST', `/api/v1/accounts/${alice.id}/block`)).status).toBe(200);
    // The API gives alice no post, only the state.
    expect(await apiQuote(alice, q.id)).toEqual({ state: 'unauthorized', quoted_status: null });
    await eventually(async () => (await web.get('/home')).body.includes(`id="s-${q.id}"`), true, 10_000);
    for (const path of ['/home', '/@bob', `/@bob/${q.id}`]) {
      const page = await web.get(path);
      const own = article(page.body, q.id);
      expect(own, path).toContain('Post unavailable');
      expect(page.body, path).not.toContain('Dave keeps this from alice');
    }
    // Bob, whom dave does not block, sees it.
    const bobWeb = new WebClient(s.app);
    expect((await bobWeb.signIn(bob.email, bob.password)).statusCode).toBe(303);
    expect(article((await bobWeb.get(`/@bob/${q.id}`)).body, q.id)).toContain('Dave keeps this from alice');
  });

  it('of a post by someone the viewer mutes or blocks: folded away behind why, as the API still gives it', async () => {
    const muted = await post(erin, { status: 'Erin rambles on' });
    const q = await post(bob, { status: 'Bob quotes erin', quoted_status_id: muted.id });
    expect((await api(alice, 'POST', `/api/v1/accounts/${erin.id}/mute`)).status).toBe(200);
    expect((await apiQuote(alice, q.id)).state).toBe('muted_account');
    let own = article((await web.get(`/@bob/${q.id}`)).body, q.id);
    expect(own).toMatch(/<details class="status-quote status-quote-hidden">\s*<summary>This post is hidden because you&#39;ve muted @erin@[\w.-]+?\. <span class="quote-reveal">Show anyway<\/span><\/summary>/);
    expect(own).toContain('Erin rambles on');
    expect((await api(alice, 'POST', `/api/v1/accounts/${erin.id}/unmute`)).status).toBe(200);
    expect((await api(alice, 'POST', `/api/v1/accounts/${erin.id}/block`)).status).toBe(200);
    expect((await apiQuote(alice, q.id)).state).toBe('blocked_account');
    own = article((await web.get(`/@bob/${q.id}`)).body, q.id);
    expect(own).toContain('This post is hidden because you&#39;ve blocked @erin@');
    expect((await api(alice, 'POST', `/api/v1/accounts/${erin.id}/unblock`)).status).toBe(200);
  });

  it('revoked by the quoted author, deleted, or still pending: the state\'s words', async () => {
    const revocable = await post(carol, { status: 'Carol changes her mind' });
    const q1 = await post(bob, { status: 'Bob quotes the mind', quoted_status_id: revocable.id });
    expect((await api(carol, 'POST', `/api/v1/statuses/${revocable.id}/quotes/${q1.id}/revoke`)).status).toBe(200);
    expect(await apiQuote(alice, q1.id)).toEqual({ state: 'revoked', quoted_status: null });
    let own = article((await web.get(`/@bob/${q1.id}`)).body, q1.id);
    expect(own).toContain('Post removed by author');
    expect(own).not.toContain('Carol changes her mind');

    const doomed = await post(carol, { status: 'Carol deletes this' });
    const q2 = await post(bob, { status: 'Bob quotes the doomed', quoted_status_id: doomed.id });
    // A stranger's page is kept; the quoted post's deletion makes it anew.
    const stranger = new WebClient(s.app);
    expect((await stranger.get(`/@bob/${q2.id}`)).body).toContain('Carol deletes this');
    expect((await api(carol, 'DELETE', `/api/v1/statuses/${doomed.id}`)).status).toBe(200);
    expect(await apiQuote(null, q2.id)).toEqual({ state: 'deleted', quoted_status: null });
    own = article((await web.get(`/@bob/${q2.id}`)).body, q2.id);
    expect(own).toContain('Post unavailable');
    const after = (await stranger.get(`/@bob/${q2.id}`)).body;
    expect(after).toContain('Post unavailable');
    expect(after).not.toContain('Carol deletes this');

    // A quote waiting for a remote author's approval: written as the inbox leaves it when a QuoteRequest is unanswered.
    const waiting = await post(carol, { status: 'Carol has not answered' });
    const q3 = await post(bob, { status: 'Bob waits', quoted_status_id: waiting.id });
    await s.ctx.db.query(`UPDATE quotes SET state = 'pending' WHERE status_id = $1`, [q3.id]);
    await s.ctx.versions.bump({ statuses: [q3.id] });
    expect(await apiQuote(alice, q3.id)).toEqual({ state: 'pending', quoted_status: null });
    own = article((await web.get(`/@bob/${q3.id}`)).body, q3.id);
    expect(own).toContain('Post pending');
    expect(own).not.toContain('Carol has not answered');
  });

  it('in German, with the same states', async () => {
    // Alice chooses German as her interface language.
    const german = new WebClient(s.app);
    expect((await german.signIn(alice.email, alice.password)).statusCode).toBe(303);
    const saved = await german.submit('/settings/appearance', '/settings/appearance', { locale: 'de', theme: 'system' });
    expect(saved.statusCode).toBe(303);
    const page = await german.get(`/@bob/${quote.id}`);
    expect(page.body).toContain('<html lang="de"');
    expect(article(page.body, quote.id)).toContain('1 Bild');
    const profile = await german.get('/@bob');
    expect(profile.body).toContain('Beitrag nicht verfügbar');
    expect(profile.body).toContain('Beitrag von Autor*in entfernt');
    expect(profile.body).toContain('Beitrag ausstehend');
  });
});
