// The pages of a signed-in person (http/web/client-pages.ts, client-actions.ts): they show what the API shows the same
// person and nothing more, their forms need the session and its CSRF token, and each form answers with a redirect.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { eventually } from '../helpers/eventually.ts';
import { expectValidHtml } from '../helpers/html.ts';
import sharp from 'sharp';
import { multipart } from '../helpers/multipart.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let erin: TestUser;
let web: WebClient;

const api = async (who: TestUser, method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? (res.json() as Json) : null };
};
const post = async (who: TestUser, payload: object) => {
  const res = await api(who, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Json;
};


beforeAll(async () => {
  s = await startTestServer({ MAX_STATUS_CHARS: '500' });
  [alice, bob, carol, dave, erin] = await registerUsers(s.app, 'alice', 'bob', 'carol', 'dave', 'erin');
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
});

describe('what the pages show a signed-in person', () => {
  it('sends strangers to sign in, and a signed-in person from the front page to home', async () => {
    const stranger = new WebClient(s.app);
    for (const path of ['/home', '/notifications', '/explore', '/search', '/public/local', '/public', '/publish']) {
      const res = await stranger.get(path);
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location).toBe(`/auth/sign_in?return_to=${encodeURIComponent(path)}`);
    }
    expect((await web.get('/')).headers.location).toBe('/home');
    for (const path of ['/home', '/notifications', '/explore', '/search?q=bob', '/public/local', '/public', '/publish', '/tags/anything']) {
      const res = await web.get(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['cache-control'], path).toBe('no-store');
      expect(res.body, path).toContain('href="/notifications"');
    }
  });

  it('never shows a followers-only post of someone not followed, a direct message to another, or a post of someone who blocks the viewer', async () => {
    const secret = await post(bob, { status: 'Only for the followers of bob', visibility: 'private' });
    const direct = await post(carol, { status: '@bob a word for bob alone', visibility: 'direct' });
    const blocked = await post(dave, { status: 'Dave says this in public', visibility: 'public' });
    expect((await api(dave, 'POST', `/api/v1/accounts/${alice.id}/block`)).status).toBe(200);

    // The API says no to alice for each of them…
    for (const p of [secret, direct, blocked]) expect((await api(alice, 'GET', `/api/v1/statuses/${p.id}`)).status).toBe(404);
    // …and so do the pages: their threads, the authors' profiles, the timelines, a search by link.
    for (const [author, p] of [['bob', secret], ['carol', direct], ['dave', blocked]] as const) {
      expect((await web.get(`/@${author}/${p.id}`)).statusCode).toBe(404);
      const profile = await web.get(`/@${author}`);
      expect(profile.body).not.toContain(p.id);
    }
    for (const path of ['/home', '/public/local', '/public', `/search?q=${encodeURIComponent(blocked.url)}`, `/search?q=${encodeURIComponent(secret.url)}`]) {
      const page = await web.get(path);
      expect(page.statusCode, path).toBe(200);
      for (const text of ['Only for the followers of bob', 'a word for bob alone', 'Dave says this in public']) expect(page.body, path).not.toContain(text);
    }
    // The public timeline in the API leaves dave's post out for alice, as the page does; bob sees his own.
    const timeline = await api(alice, 'GET', '/api/v1/timelines/public?local=true');
    expect((timeline.body as unknown as Json[]).map((p) => p.id)).not.toContain(blocked.id);
    expect((await web.get('/public/local')).body).not.toContain(blocked.id);

    // Once alice follows bob (the Follow form), his followers-only post shows on his page, as the API shows it.
    const profile = await web.get('/@bob');
    expect(profile.body).toContain(`action="/accounts/${bob.id}/follow"`);
    const followed = await web.post(`/accounts/${bob.id}/follow`, { return_to: '/@bob' }, profile.body);
    expect(followed.statusCode).toBe(303);
    expect(followed.headers.location).toBe('/@bob');
    expect((await api(alice, 'GET', `/api/v1/statuses/${secret.id}`)).status).toBe(200);
    const after = await web.get('/@bob');
    expect(after.body).toContain('Only for the followers of bob');
    expect(after.body).toContain(`action="/accounts/${bob.id}/unfollow"`);
    expect((await web.get(`/@bob/${secret.id}`)).statusCode).toBe(200);
    // Under another name, the post's page leads to its author's.
    const misnamed = await web.get(`/@carol/${secret.id}`);
    expect([misnamed.statusCode, misnamed.headers.location]).toEqual([301, `/@bob/${secret.id}`]);
  });
});

describe('paging', () => {
  it('goes to older posts and back to newer ones by id', async () => {
    const made: string[] = [];
    for (let i = 0; i < 22; i++) made.push((await post(carol, { status: `Numbered post ${i}` })).id);
    const idsOf = (body: string) => [...body.matchAll(/<article class="status" id="s-(\d+)"/g)].map((m) => m[1]!);
    const first = await web.get('/@carol');
    const firstIds = idsOf(first.body);
    expect(firstIds).toHaveLength(20);
    expect(firstIds[0]).toBe(made.at(-1));
    expect(first.body).not.toContain('Newer posts');
    const older = /href="(\/@carol\?max_id=\d+)" rel="next">Older posts/.exec(first.body)![1]!;
    expect(older).toBe(`/@carol?max_id=${firstIds.at(-1)}`);
    const second = await web.get(older.replace(/&amp;/g, '&'));
    const secondIds = idsOf(second.body);
    expect(secondIds.slice(0, 2)).toEqual([made[1], made[0]]);
    const newer = /href="(\/@carol\?min_id=\d+)" rel="prev">Newer posts/.exec(second.body)![1]!;
    const back = await web.get(newer);
    expect(idsOf(back.body)).toEqual(firstIds);
    // The newest page has nothing newer, and says so by having no link.
    expect(back.body).not.toContain('Newer posts');
  });
});

describe('filters and mutes on the pages', () => {
  it('fold a warned post behind its filter, leave out a hidden one and a muted account\'s, as the API does', async () => {
    for (const [title, action, keyword] of [['Spoilers', 'warn', 'finale'], ['Never', 'hide', 'brussels']]) {
      const res = await api(alice, 'POST', '/api/v2/filters', { title, context: ['public', 'thread'], filter_action: action, keywords_attributes: [{ keyword }] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const warned = await post(carol, { status: 'The finale was something' });
    const hidden = await post(carol, { status: 'I like brussels sprouts' });
    const muted = await post(erin, { status: 'Erin talks a lot' });
    expect((await api(alice, 'POST', `/api/v1/accounts/${erin.id}/mute`)).status).toBe(200);
    const apiIds = ((await api(alice, 'GET', '/api/v1/timelines/public?local=true')).body as unknown as Json[]).map((p) => p.id);
    expect(apiIds).toContain(warned.id);
    expect(apiIds).not.toContain(hidden.id);
    expect(apiIds).not.toContain(muted.id);
    const page = (await web.get('/public/local')).body;
    expect(page).toMatch(/<summary>Filtered: Spoilers<\/summary>[\s\S]*The finale was something/);
    expect(page).not.toContain('brussels sprouts');
    expect(page).not.toContain('Erin talks a lot');
    // The hidden post's own page is still there (a filter hides in lists and threads, not the post itself), as in the API.
    expect((await api(alice, 'GET', `/api/v1/statuses/${hidden.id}`)).status).toBe(200);
    expect((await web.get(`/@carol/${hidden.id}`)).statusCode).toBe(200);
  });
});

describe('the forms of the signed-in pages', () => {
  it('refuse a form without its token, and a stranger', async () => {
    const target = await post(bob, { status: 'Something to favourite' });
    const noToken = await web.post(`/statuses/${target.id}/favourite`, { return_to: '/home' });
    expect(noToken.statusCode).toBe(403);
    const stranger = new WebClient(s.app);
    const page = await stranger.get('/auth/sign_in');
    const res = await stranger.post(`/statuses/${target.id}/favourite`, { return_to: `/@bob/${target.id}` }, page.body);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/auth/sign_in?return_to=${encodeURIComponent(`/@bob/${target.id}`)}`);
    expect((await api(bob, 'GET', `/api/v1/statuses/${target.id}`)).body!.favourites_count).toBe(0);
  });

  it('favourite, boost and bookmark with a redirect back, as the API sees it; reloading sends nothing', async () => {
    const target = await post(bob, { status: 'A post for the buttons' });
    const thread = await web.get(`/@bob/${target.id}`);
    expect(thread.statusCode).toBe(200);
    for (const action of ['favourite', 'reblog', 'bookmark']) {
      const res = await web.post(`/statuses/${target.id}/${action}`, { return_to: `/@bob/${target.id}` }, thread.body);
      expect(res.statusCode, action).toBe(303);
      expect(res.headers.location).toBe(`/@bob/${target.id}`);
    }
    const seen = (await api(alice, 'GET', `/api/v1/statuses/${target.id}`)).body!;
    expect([seen.favourited, seen.reblogged, seen.bookmarked]).toEqual([true, true, true]);
    const again = await web.get(`/@bob/${target.id}`);
    expect(again.body).toContain('Undo favourite');
    expect(again.body).toContain('Undo boost');
    expect(again.body).toContain('Remove bookmark');
    const undo = await web.post(`/statuses/${target.id}/unfavourite`, { return_to: '/home' }, again.body);
    expect(undo.headers.location).toBe('/home');
    expect((await api(alice, 'GET', `/api/v1/statuses/${target.id}`)).body!.favourited).toBe(false);
    // A post alice may not see cannot be acted on through the pages either.
    const hidden = await post(carol, { status: 'Followers of carol only', visibility: 'private' });
    const refused = await web.post(`/statuses/${hidden.id}/favourite`, { return_to: '/home' }, again.body);
    expect(refused.statusCode).toBe(404);
  });

  it('post once per form, keep an over-long text with the server\'s count, and reply in a thread', async () => {
    const home = await web.get('/home');
    const key = /name="idempotency_key" value="([^"]+)"/.exec(home.body)![1]!;
    const fields = { status: 'Hello from the web pages', visibility: 'public', language: 'en', spoiler_text: '', idempotency_key: key, return_to: '/home' };
    const first = await web.post('/statuses', fields, home.body);
    expect(first.statusCode).toBe(303);
    const id = /^\/home#s-(\d+)$/.exec(first.headers.location as string)![1]!;
    // The same form again (a resend): the same post, not a second one.
    const second = await web.post('/statuses', fields, home.body);
    expect(second.headers.location).toBe(`/home#s-${id}`);
    const mine = await api(alice, 'GET', `/api/v1/accounts/${alice.id}/statuses`);
    expect((mine.body as unknown as Json[]).filter((p) => p.content.includes('Hello from the web pages'))).toHaveLength(1);

    const long = 'x'.repeat(490) + ' https://example.com/a/very/long/link/that/counts/as/twenty/three';
    const tooLong = await web.post('/statuses', { ...fields, status: long, spoiler_text: 'cw', idempotency_key: 'another-key' }, home.body);
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.body).toContain('Your post has 516 characters; the limit is 500.');
    expect(tooLong.body).toContain(long);
    expect(tooLong.body).toContain('value="cw"');

    const target = await post(bob, { status: 'Reply to me, please' });
    const thread = await web.get(`/@bob/${target.id}`);
    expect(thread.body).toContain('@bob </textarea>');
    const reply = await web.post('/statuses', {
      status: '@bob Here is a reply', in_reply_to_id: target.id, visibility: 'public', language: 'en', idempotency_key: /name="idempotency_key" value="([^"]+)"/.exec(thread.body)![1]!, return_to: `/@bob/${target.id}`,
    }, thread.body);
    expect(reply.statusCode).toBe(303);
    const replyId = /#s-(\d+)$/.exec(reply.headers.location as string)![1]!;
    expect(reply.headers.location).toBe(`/@bob/${target.id}#s-${replyId}`);
    // A reply refused for its length: the thread again, the text kept, its forms still leading back to the thread.
    const longReply = await web.post('/statuses', { status: 'z'.repeat(600), in_reply_to_id: target.id, return_to: `/@bob/${target.id}`, idempotency_key: 'long-reply' }, thread.body);
    expect(longReply.statusCode).toBe(422);
    expect(longReply.body).toContain('Your post has 600 characters; the limit is 500.');
    expect(longReply.body).toContain(`${'z'.repeat(600)}</textarea>`);
    expect(longReply.body).toContain(`name="return_to" value="/@bob/${target.id}#s-${target.id}"`);
    const context = await api(bob, 'GET', `/api/v1/statuses/${target.id}/context`);
    expect((context.body!.descendants as Json[]).map((d) => d.id)).toEqual([replyId]);
    // The stranger's page of the thread is a kept one, dropped by the reply's version bump.
    await eventually(async () => (await new WebClient(s.app).get(`/@bob/${target.id}`)).body.includes('Here is a reply'), true);

    // Deleting one's own post: a page that asks, then the form.
    const ask = await web.get(`/statuses/${replyId}/delete`);
    expect(ask.statusCode).toBe(200);
    expect((await web.get(`/statuses/${target.id}/delete`)).statusCode).toBe(404);
    const deleted = await web.post(`/statuses/${replyId}/delete`, { return_to: '/@alice' }, ask.body);
    expect(deleted.statusCode).toBe(303);
    expect((await api(alice, 'GET', `/api/v1/statuses/${replyId}`)).status).toBe(404);
  });

  it('post an image with its description (a multipart form)', async () => {
    const home = await web.get('/home');
    expect(home.body).toContain('enctype="multipart/form-data"');
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#c63' } }).png().toBuffer();
    const form = await multipart({
      _csrf: csrfOf(home.body), status: 'A picture of an orange thing', visibility: 'public', language: 'en', spoiler_text: '',
      idempotency_key: 'with-an-image', return_to: '/home', description_1: 'An orange rectangle', media_1: { data: png, filename: 'orange.png', type: 'image/png' },
    });
    const res = await s.app.inject({ method: 'POST', url: '/statuses', headers: { ...form.headers, accept: 'text/html', cookie: web.jar.header() }, payload: form.payload });
    expect(res.statusCode, /class="flash error"[^>]*>([^<]*)/.exec(res.body)?.[1] ?? res.body.slice(0, 300)).toBe(303);
    const id = /#s-(\d+)$/.exec(res.headers.location as string)![1]!;
    const status = (await api(alice, 'GET', `/api/v1/statuses/${id}`)).body!;
    expect((status.media_attachments as Json[]).map((m) => [m.type, m.description])).toEqual([['image', 'An orange rectangle']]);
    // Once processed, the page shows it with its description as alt text.
    await eventually(async () => (await web.get('/home')).body.includes('alt="An orange rectangle"'), true, 10_000);
    // A file that is no image is refused, with the form kept.
    const bad = await multipart({ _csrf: csrfOf(home.body), status: 'Not a picture', idempotency_key: 'bad-file', return_to: '/home', description_1: 'text', media_1: { data: Buffer.from('hello'), filename: 'a.png', type: 'image/png' } });
    const refused = await s.app.inject({ method: 'POST', url: '/statuses', headers: { ...bad.headers, accept: 'text/html', cookie: web.jar.header() }, payload: bad.payload });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('File content type is invalid');
    expect(refused.body).toContain('Not a picture</textarea>');
  });

  it('shows notifications, with the post they are about', async () => {
    const mine = await post(alice, { status: 'Favourite this one' });
    expect((await api(carol, 'POST', `/api/v1/statuses/${mine.id}/favourite`)).status).toBe(200);
    await eventually(async () => (await web.get('/notifications')).body.includes('Favourite this one'), true);
    const page = await web.get('/notifications');
    expect(page.body).toMatch(/carol<\/a> <span class="muted">@carol@[^<]+<\/span> favourited your post/);
    csrfOf(page.body);
  });

  it('are valid HTML', async () => {
    const mine = await post(alice, { status: 'A post of #gardening with a thread', spoiler_text: 'plants' });
    for (const path of ['/home', '/notifications', '/search?q=bob', '/search?q=%23gardening', '/@bob', '/@alice', `/@alice/${mine.id}`, `/statuses/${mine.id}/delete`, '/public/local', '/public', '/explore', '/publish', '/tags/gardening']) {
      const page = await web.get(path);
      expect(page.statusCode, path).toBe(200);
      await expectValidHtml(page.body, path);
    }
  });
});
