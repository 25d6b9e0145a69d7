// A signed-in person's relations on the pages (http/web/client-relations.ts, client-notification-requests.ts,
// client-tags.ts, client-translation.ts): a profile's mute, block, note and bell; filtered notifications and their
// policy; followed and featured hashtags; a post's Translate button. Each form needs the session's CSRF token, answers
// with a redirect, changes what the API then reports, and refuses bad input, others' things and unknown ids with a
// clear 4xx page; no page shows what the API would not show the same person.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { fakeService, type FakeService } from '../helpers/translation-service.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let libre: FakeService;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let web: WebClient;
let bobWeb: WebClient;

const api = async (who: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? (res.json() as Json) : null };
};
const post = async (who: TestUser, payload: object) => {
  const res = await api(who, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Json;
};
const relationship = async (who: TestUser, id: string) => ((await api(who, 'GET', `/api/v1/accounts/relationships?id[]=${id}`)).body as unknown as Json[])[0]!;

beforeAll(async () => {
  libre = await fakeService('libretranslate');
  s = await startTestServer({ LIBRE_TRANSLATE_ENDPOINT: libre.url });
  [alice, bob, carol] = await registerUsers(s.app, 'alice', 'bob', 'carol');
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
  bobWeb = new WebClient(s.app);
  expect((await bobWeb.signIn(bob.email, bob.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
  await libre?.close();
});

describe('a profile\'s relationship forms', () => {
  it('mute for an hour with notifications still coming, then unmute, as the API reports it', async () => {
    const profile = await web.get('/@bob');
    expect(profile.statusCode).toBe(200);
    expect(profile.body).toContain(`action="/accounts/${bob.id}/mute"`);
    const before = Date.now();
    const muted = await web.post(`/accounts/${bob.id}/mute`, { return_to: '/@bob', duration: '3600' }, profile.body);
    expect([muted.statusCode, muted.headers.location]).toEqual([303, '/@bob']);
    const r = await relationship(alice, bob.id);
    expect([r.muting, r.muting_notifications]).toEqual([true, false]);
    const ends = Date.parse(r.muting_expires_at);
    expect(ends).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(ends).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    const shown = await web.get('/@bob');
    expect(shown.body).toContain('Muted (notifications still come)');
    expect(shown.body).toContain('Mute ends');
    expect(shown.body).toContain(`action="/accounts/${bob.id}/unmute"`);

    // Until unmuted, notifications hidden too (the box checked, as the form offers it).
    await web.post(`/accounts/${bob.id}/mute`, { return_to: '/@bob', duration: '0', notifications: '1' }, shown.body);
    expect(await relationship(alice, bob.id)).toMatchObject({ muting: true, muting_notifications: true, muting_expires_at: null });
    expect((await web.post(`/accounts/${bob.id}/unmute`, { return_to: '/@bob' }, shown.body)).statusCode).toBe(303);
    expect((await relationship(alice, bob.id)).muting).toBe(false);
    // A duration no form offers, past the API's bound: a 422 page, nothing muted.
    const wrong = await web.post(`/accounts/${bob.id}/mute`, { return_to: '/@bob', duration: '999999999' }, shown.body);
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain('Choose how long to mute for.');
    expect((await relationship(alice, bob.id)).muting).toBe(false);
  });

  it('block hides the Follow button and ends the follow; unblock lifts it', async () => {
    expect((await api(alice, 'POST', `/api/v1/accounts/${carol.id}/follow`)).status).toBe(200);
    const profile = await web.get('/@carol');
    expect(profile.body).toContain(`action="/accounts/${carol.id}/unfollow"`);
    expect((await web.post(`/accounts/${carol.id}/block`, { return_to: '/@carol' }, profile.body)).statusCode).toBe(303);
    expect(await relationship(alice, carol.id)).toMatchObject({ blocking: true, following: false });
    const blocked = await web.get('/@carol');
    expect(blocked.body).toContain('<span class="badge">Blocked</span>');
    expect(blocked.body).not.toContain(`action="/accounts/${carol.id}/follow"`);
    expect(blocked.body).toContain(`action="/accounts/${carol.id}/unblock"`);
    // The one blocked sees no Follow either (the API would refuse it), and is not told who blocks them.
    const carolWeb = new WebClient(s.app);
    await carolWeb.signIn(carol.email, carol.password);
    const seen = await carolWeb.get('/@alice');
    expect(seen.body).not.toContain(`action="/accounts/${alice.id}/follow"`);
    expect(seen.body).not.toContain('Blocked');
    await web.post(`/accounts/${carol.id}/unblock`, { return_to: '/@carol' }, blocked.body);
    expect((await relationship(alice, carol.id)).blocking).toBe(false);
    expect((await web.get('/@carol')).body).toContain(`action="/accounts/${carol.id}/follow"`);
  });

  it('keeps a private note that only its writer reads, within the API\'s limit', async () => {
    const profile = await web.get('/@carol');
    const saved = await web.post(`/accounts/${carol.id}/note`, { return_to: '/@carol', comment: 'Met at the <book> fair\r\nlikes tea' }, profile.body);
    expect(saved.statusCode).toBe(303);
    expect((await relationship(alice, carol.id)).note).toBe('Met at the <book> fair\nlikes tea');
    const shown = await web.get('/@carol');
    expect(shown.body).toContain('Met at the &lt;book&gt; fair');
    // Bob's view of carol has his own (empty) note, never alice's.
    expect((await bobWeb.get('/@carol')).body).not.toContain('book&gt; fair');
    const long = await web.post(`/accounts/${carol.id}/note`, { return_to: '/@carol', comment: 'x'.repeat(2001) }, shown.body);
    expect(long.statusCode).toBe(422);
    expect(long.body).toContain('Comment is too long');
    expect((await relationship(alice, carol.id)).note).toBe('Met at the <book> fair\nlikes tea');
    await web.post(`/accounts/${carol.id}/note`, { return_to: '/@carol', comment: '' }, shown.body);
    expect((await relationship(alice, carol.id)).note).toBe('');
  });

  it('rings the bell on a followed account, and shows who follows whom', async () => {
    expect((await api(alice, 'POST', `/api/v1/accounts/${bob.id}/follow`)).status).toBe(200);
    expect((await api(bob, 'POST', `/api/v1/accounts/${alice.id}/follow`)).status).toBe(200);
    const profile = await web.get('/@bob');
    expect(profile.body).toContain('Follows you');
    expect(profile.body).toContain('aria-pressed="false"');
    await web.post(`/accounts/${bob.id}/notify`, { return_to: '/@bob', notify: '1' }, profile.body);
    expect(await relationship(alice, bob.id)).toMatchObject({ following: true, notifying: true });
    const on = await web.get('/@bob');
    expect(on.body).toContain('aria-pressed="true"');
    expect(on.body).toContain('You are notified of their posts');
    await web.post(`/accounts/${bob.id}/notify`, { return_to: '/@bob', notify: '0' }, on.body);
    expect(await relationship(alice, bob.id)).toMatchObject({ following: true, notifying: false });
    // One's own profile has no such forms.
    const own = await web.get('/@alice');
    expect(own.body).not.toContain(`/accounts/${alice.id}/mute`);
  });

  it('refuse a wrong token, a stranger, oneself and unknown accounts with a 4xx page, never a 500', async () => {
    const profile = await web.get('/@bob');
    const forged = await web.post(`/accounts/${bob.id}/block`, { _csrf: 'not-the-token', return_to: '/@bob' });
    expect(forged.statusCode).toBe(403);
    expect((await relationship(alice, bob.id)).blocking).toBe(false);
    const stranger = new WebClient(s.app);
    const out = await stranger.post(`/accounts/${bob.id}/mute`, { return_to: '/@bob' }, (await stranger.get('/auth/sign_in')).body);
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toMatch(/sign_in|interact/);
    expect((await relationship(alice, bob.id)).muting).toBe(false);
    for (const [path, status] of [
      [`/accounts/${alice.id}/mute`, 403], [`/accounts/${alice.id}/block`, 403],
      ['/accounts/999999999/block', 404], ['/accounts/not-an-id/mute', 404], ['/accounts/999999999/note', 404], ['/accounts/999999999/notify', 404],
    ] as const) {
      const res = await web.post(path, { return_to: '/@bob', comment: 'x' }, profile.body);
      expect(res.statusCode, path).toBe(status);
      expect(res.headers['content-type'], path).toMatch(/^text\/html/);
    }
  });
});

describe('filtered notifications', () => {
  it('keeps aside mentions from people not followed, by the policy set on the page; accept and dismiss them', async () => {
    const policyPage = await bobWeb.get('/notifications/policy');
    expect(policyPage.statusCode).toBe(200);
    expect((await bobWeb.post('/notifications/policy', { for_not_following: 'bogus' }, policyPage.body)).statusCode).toBe(422);
    const saved = await bobWeb.post('/notifications/policy', { for_not_following: 'filter', for_new_accounts: 'accept' }, policyPage.body);
    expect([saved.statusCode, saved.headers.location]).toEqual([303, '/notifications/policy?notice=saved']);
    expect((await api(bob, 'GET', '/api/v2/notifications/policy')).body).toMatchObject({ for_not_following: 'filter', for_new_accounts: 'accept' });
    expect((await bobWeb.get('/notifications/policy')).body).toMatch(/<option value="filter" selected>/);

    const fromCarol = await post(carol, { status: '@bob a word from carol' });
    const requests = await vi.waitFor(async () => {
      const list = (await api(bob, 'GET', '/api/v1/notifications/requests')).body as unknown as Json[];
      expect(list.length).toBe(1);
      return list;
    }, { timeout: 5000 });
    const page = await bobWeb.get('/notifications/requests');
    expect(page.body).toContain(`action="/notifications/requests/${requests[0]!.id}/accept"`);
    expect(page.body).toContain('a word from carol');
    await expectValidHtml(page.body, '/notifications/requests');
    expect((await bobWeb.get('/notifications')).body).not.toContain('a word from carol');
    // Alice has no requests; bob's is not hers to accept (the API's 404).
    expect((await web.get('/notifications/requests')).body).not.toContain('a word from carol');
    const notHers = await web.post(`/notifications/requests/${requests[0]!.id}/accept`, {}, (await web.get('/notifications/policy')).body);
    expect(notHers.statusCode).toBe(404);
    expect((await bobWeb.post('/notifications/requests/999999999/dismiss', {}, page.body)).statusCode).toBe(404);
    expect((await bobWeb.post('/notifications/requests/x/dismiss', {}, page.body)).statusCode).toBe(404);

    const accepted = await bobWeb.post(`/notifications/requests/${requests[0]!.id}/accept`, { return_to: '/notifications/requests' }, page.body);
    expect([accepted.statusCode, accepted.headers.location]).toEqual([303, '/notifications/requests']);
    expect((await bobWeb.get('/notifications')).body).toContain('a word from carol');
    expect((await api(bob, 'GET', '/api/v1/notifications/requests')).body).toEqual([]);
    expect(fromCarol.id).toBeTruthy();

    // A dismissed request's notifications are gone.
    const newcomer = (await registerUsers(s.app, 'dave'))[0];
    await post(newcomer, { status: '@bob dave writes too' });
    const daves = await vi.waitFor(async () => {
      const list = (await api(bob, 'GET', '/api/v1/notifications/requests')).body as unknown as Json[];
      expect(list.length).toBe(1);
      return list;
    }, { timeout: 5000 });
    const again = await bobWeb.get('/notifications/requests');
    expect((await bobWeb.post(`/notifications/requests/${daves[0]!.id}/dismiss`, {}, again.body)).statusCode).toBe(303);
    expect((await api(bob, 'GET', '/api/v1/notifications/requests')).body).toEqual([]);
    expect((await bobWeb.get('/notifications')).body).not.toContain('dave writes too');
    await api(bob, 'PUT', '/api/v2/notifications/policy', { for_not_following: 'accept' });
  });
});

describe('hashtags', () => {
  it('follows and unfollows a tag from its page and the followed list, as the API lists them', async () => {
    const tagPage = await web.get('/tags/gardening');
    expect(tagPage.body).toContain('action="/tags/gardening/follow"');
    const followed = await web.post('/tags/gardening/follow', { return_to: '/tags/gardening' }, tagPage.body);
    expect([followed.statusCode, followed.headers.location]).toEqual([303, '/tags/gardening']);
    expect(((await api(alice, 'GET', '/api/v1/followed_tags')).body as unknown as Json[]).map((t) => t.name)).toEqual(['gardening']);
    expect((await web.get('/tags/gardening')).body).toContain('action="/tags/gardening/unfollow"');
    const list = await web.get('/followed_tags');
    expect(list.body).toContain('href="/tags/gardening"');
    const byName = await web.post('/followed_tags', { name: '#Cooking' }, list.body);
    expect(byName.statusCode).toBe(303);
    const bad = await web.post('/followed_tags', { name: 'not a tag!' }, list.body);
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('A hashtag is letters');
    expect((await web.post('/tags/12 34/follow', {}, list.body)).statusCode).toBe(422);
    await web.post('/tags/gardening/unfollow', { return_to: '/followed_tags' }, list.body);
    expect(((await api(alice, 'GET', '/api/v1/followed_tags')).body as unknown as Json[]).map((t) => t.name.toLowerCase())).toEqual(['cooking']);
    // Bob's followed tags are his.
    expect((await bobWeb.get('/followed_tags')).body).not.toContain('/tags/cooking');
  });

  it('features and stops featuring tags, up to the limit; another person\'s featured tag is not there', async () => {
    await post(alice, { status: 'Reading #books today' });
    const page = await web.get('/featured_tags');
    expect(page.body).toContain('Feature #books');
    expect((await web.post('/tags/books/feature', { return_to: '/featured_tags' }, page.body)).statusCode).toBe(303);
    const featured = (await api(alice, 'GET', '/api/v1/featured_tags')).body as unknown as Json[];
    expect(featured.map((t) => t.name)).toEqual(['books']);
    const listed = await web.get('/featured_tags');
    expect(listed.body).toContain(`action="/featured_tags/${featured[0]!.id}/delete"`);
    expect(listed.body).not.toContain('Feature #books');
    // The tag's page says it is featured.
    expect((await web.get('/tags/books')).body).toContain('Stop featuring on your profile');
    const blank = await web.post('/featured_tags', { name: ' ' }, listed.body);
    expect(blank.statusCode).toBe(422);
    expect(blank.body).toContain('Name can&#39;t be blank');
    for (let i = 0; i < 9; i++) expect((await web.post('/featured_tags', { name: `topic${i}` }, listed.body)).statusCode).toBe(303);
    const over = await web.post('/featured_tags', { name: 'onetoomany' }, listed.body);
    expect(over.statusCode).toBe(422);
    expect(over.body).toContain('cannot feature more than 10');
    // Bob cannot remove alice's, and an unknown id is not found.
    const bobs = await bobWeb.get('/featured_tags');
    expect((await bobWeb.post(`/featured_tags/${featured[0]!.id}/delete`, {}, bobs.body)).statusCode).toBe(404);
    expect((await web.post('/featured_tags/999999999/delete', {}, listed.body)).statusCode).toBe(404);
    expect((await web.post('/featured_tags/nope/delete', {}, listed.body)).statusCode).toBe(404);
    expect((await web.post(`/featured_tags/${featured[0]!.id}/delete`, { return_to: '/featured_tags' }, listed.body)).statusCode).toBe(303);
    expect(((await api(alice, 'GET', '/api/v1/featured_tags')).body as unknown as Json[]).map((t) => t.name)).not.toContain('books');
  });
});

describe('translation', () => {
  it('offers Translate on public posts in another language, shows the translation on the post\'s page, and refuses the rest', async () => {
    const german = await post(carol, { status: 'Guten Morgen', language: 'de' });
    const english = await post(carol, { status: 'Good morning', language: 'en' });
    const privateOne = await post(carol, { status: 'Nur für Folgende', language: 'de', visibility: 'private' });
    expect((await api(alice, 'POST', `/api/v1/accounts/${carol.id}/follow`)).status).toBe(200);
    const thread = await web.get(`/@carol/${german.id}`);
    expect(thread.body).toContain(`action="/statuses/${german.id}/translate"`);
    expect((await web.get(`/@carol/${english.id}`)).body).not.toContain('/translate"');
    expect((await web.get(`/@carol/${privateOne.id}`)).body).not.toContain('/translate"');

    const asked = libre.requests.length;
    const done = await web.post(`/statuses/${german.id}/translate`, { return_to: '/home' }, thread.body);
    expect([done.statusCode, done.headers.location]).toEqual([303, `/@carol/${german.id}?translated=1#translation`]);
    const shown = await web.get(`/@carol/${german.id}?translated=1`);
    expect(shown.body).toContain('en:Guten en:Morgen');
    expect(shown.body).toContain('Translated from de by LibreTranslate');
    await expectValidHtml(shown.body, 'a translated post');
    expect(shown.body).toMatch(/<section class="translation" id="translation"[^>]* lang="en">/);
    // Reading the page again asks the service nothing: the form's translation is kept.
    expect(libre.requests.filter((r) => r.path === '/translate').length).toBe(libre.requests.slice(0, asked).filter((r) => r.path === '/translate').length + 1);
    await web.get(`/@carol/${german.id}?translated=1`);
    expect(libre.requests.filter((r) => r.path === '/translate').length).toBe(libre.requests.slice(0, asked).filter((r) => r.path === '/translate').length + 1);

    // The API's refusals, on pages: a followers-only post (403), one not visible to bob (404), unknown ids (404).
    expect((await web.post(`/statuses/${privateOne.id}/translate`, {}, thread.body)).statusCode).toBe(403);
    const bobThread = await bobWeb.get(`/@carol/${german.id}`);
    expect((await bobWeb.post(`/statuses/${privateOne.id}/translate`, {}, bobThread.body)).statusCode).toBe(404);
    expect((await bobWeb.get(`/@carol/${privateOne.id}?translated=1`)).statusCode).toBe(404);
    expect((await web.post('/statuses/999999999/translate', {}, thread.body)).statusCode).toBe(404);
    expect((await web.post('/statuses/abc/translate', {}, thread.body)).statusCode).toBe(404);
    // A failing service: a 503 page saying so, not a 500.
    const other = await post(carol, { status: 'Gute Nacht', language: 'de' });
    libre.failWith = 500;
    try {
      const failed = await web.post(`/statuses/${other.id}/translate`, {}, thread.body);
      expect(failed.statusCode).toBe(503);
      expect(failed.body).toContain('translation service is unavailable');
    } finally {
      libre.failWith = null;
    }
    expect((await web.get(`/@carol/${other.id}?translated=1`)).body).not.toContain('id="translation"');
  });
});

describe('the new pages', () => {
  it('are valid HTML', async () => {
    for (const path of ['/@bob', '/@carol', '/notifications/requests', '/notifications/policy', '/followed_tags', '/featured_tags', '/tags/books']) {
      const res = await web.get(path);
      expect(res.statusCode, path).toBe(200);
      await expectValidHtml(res.body, path);
    }
  });
});
