// Settings pages beyond the profile (http/web/settings*.ts): development apps with their one-time token, signing out
// one browser, appearance and language, the search switch. Real sessions and CSRF tokens over HTTP; every form
// answers with a redirect, bad input shows its reason (422), and nothing of another person's is reachable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let web: WebClient;

const FIREFOX_ANDROID = 'Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0';

/** A form with repeated fields (check boxes of one name), as a browser sends it. */
async function postForm(client: WebClient, url: string, fields: [string, string][], page: string) {
  const res = await client.app.inject({
    method: 'POST', url, payload: new URLSearchParams([['_csrf', csrfOf(page)], ...fields]).toString(),
    headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: client.jar.header() },
  });
  client.jar.take(res.headers['set-cookie']);
  return res;
}

/** Signs in from a browser that names itself (its User-Agent). */
async function signInAs(user: TestUser, userAgent: string) {
  const client = new WebClient(s.app);
  const page = await client.get('/auth/sign_in', { 'user-agent': userAgent });
  const res = await s.app.inject({
    method: 'POST', url: '/auth/sign_in',
    payload: new URLSearchParams({ _csrf: csrfOf(page.body), email: user.email, password: user.password, return_to: '/home' }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: client.jar.header(), 'user-agent': userAgent },
  });
  expect(res.statusCode).toBe(303);
  client.jar.take(res.headers['set-cookie']);
  return client;
}


beforeAll(async () => {
  s = await startTestServer();
  [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
});

describe('development: one\'s own applications', () => {
  it('makes an app with the chosen scopes and shows its token once; the token works with those scopes only', async () => {
    const page = await web.get('/settings/development');
    expect(page.statusCode).toBe(200);
    const made = await postForm(web, '/settings/development', [
      ['name', 'My bot'], ['website', 'https://bot.example'], ['redirect_uris', 'urn:ietf:wg:oauth:2.0:oob'], ['scopes[]', 'read'], ['scopes[]', 'write:statuses'],
    ], page.body);
    expect(made.statusCode).toBe(303);
    const appPath = made.headers.location as string;
    expect(appPath).toMatch(/^\/settings\/development\/\d+$/);
    const shown = await web.get(appPath);
    const token = /Your access token<\/dt><dd><code class="token">([^<]+)</.exec(shown.body)![1]!;
    expect(shown.body).toContain('Client secret</dt>');
    // Shown once: a reload has neither the token nor the secret, and neither is stored in clear.
    const again = await web.get(appPath);
    expect(again.body).not.toContain(token);
    expect(again.body).toContain('Shown once');
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM oauth_access_tokens WHERE token_hash = $1`, [token])).rows[0].n).toBe(0);

    const me = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect([me.statusCode, me.json().id]).toEqual([200, alice.id]);
    const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(token), payload: { status: 'Posted by my bot' } });
    expect(posted.statusCode).toBe(200);
    expect(posted.json().application).toMatchObject({ name: 'My bot' });
    const follow = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${bob.id}/follow`, headers: bearer(token) });
    expect(follow.statusCode).toBe(403);

    const list = await web.get('/settings/development');
    expect(list.body).toContain('My bot');
    expect(list.body).toContain('read, write:statuses');
    // Bob sees neither the app nor its page, and cannot delete it.
    const bobWeb = new WebClient(s.app);
    await bobWeb.signIn(bob.email, bob.password);
    expect((await bobWeb.get('/settings/development')).body).not.toContain('My bot');
    expect((await bobWeb.get(appPath)).statusCode).toBe(404);
    const bobPage = await bobWeb.get('/settings/development');
    expect((await bobWeb.post(`${appPath}/delete`, {}, bobPage.body)).statusCode).toBe(404);

    const deleted = await web.post(`${appPath}/delete`, {}, list.body);
    expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/settings/development?notice=deleted']);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) })).statusCode).toBe(401);
    expect((await web.get('/settings/development')).body).not.toContain('My bot');
  });

  it('refuses a blank name, no scope, a bad redirect URI or website, an operator\'s scope, and a form without its token', async () => {
    const page = await web.get('/settings/development');
    const cases: [[string, string][], string][] = [
      [[['name', ' '], ['redirect_uris', 'urn:ietf:wg:oauth:2.0:oob'], ['scopes[]', 'read']], 'Application name can&#39;t be blank'],
      [[['name', 'A'], ['redirect_uris', 'urn:ietf:wg:oauth:2.0:oob']], 'Choose at least one scope.'],
      [[['name', 'A'], ['redirect_uris', 'not a uri'], ['scopes[]', 'read']], 'Redirect URI must be an absolute URI.'],
      [[['name', 'A'], ['redirect_uris', 'urn:ietf:wg:oauth:2.0:oob'], ['website', 'javascript:alert(1)'], ['scopes[]', 'read']], 'Website is invalid'],
      [[['name', 'A'], ['redirect_uris', 'urn:ietf:wg:oauth:2.0:oob'], ['scopes[]', 'admin:write']], 'Scopes must be valid OAuth scopes.'],
    ];
    for (const [fields, reason] of cases) {
      const res = await postForm(web, '/settings/development', fields, page.body);
      expect(res.statusCode, reason).toBe(422);
      expect(res.body, reason).toContain(reason);
    }
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM oauth_applications WHERE name = 'A'`)).rows[0].n).toBe(0);
    expect((await web.post('/settings/development', { name: 'A', scopes: 'read', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob' })).statusCode).toBe(403);
  });
});

describe('where one is signed in', () => {
  it('names each browser in words and signs one out, not another person\'s', async () => {
    const phone = await signInAs(alice, FIREFOX_ANDROID);
    const page = await web.get('/settings/account');
    expect(page.body).toContain('Firefox on Android');
    expect(page.body).toContain('(this browser)');
    const ids = [...page.body.matchAll(/action="\/settings\/sessions\/(\d+)\/sign_out"/g)].map((m) => m[1]!);
    const phoneId = (await s.ctx.db.query(`SELECT id::text FROM web_sessions WHERE user_agent = $1 ORDER BY id DESC LIMIT 1`, [FIREFOX_ANDROID])).rows[0].id as string;
    expect(ids).toContain(phoneId);

    const bobPhone = await signInAs(bob, FIREFOX_ANDROID);
    const bobSession = (await s.ctx.db.query(`SELECT s.id::text FROM web_sessions s JOIN users u ON u.id = s.user_id WHERE u.account_id = $1`, [bob.id])).rows[0].id as string;
    expect((await web.post(`/settings/sessions/${bobSession}/sign_out`, {}, page.body)).statusCode).toBe(404);
    expect((await bobPhone.get('/home')).statusCode).toBe(200);
    expect((await web.post(`/settings/sessions/${phoneId}/sign_out`, {})).statusCode).toBe(403);

    const out = await web.post(`/settings/sessions/${phoneId}/sign_out`, {}, page.body);
    expect([out.statusCode, out.headers.location]).toEqual([303, '/settings/account?notice=session_ended']);
    expect((await phone.get('/home')).statusCode).toBe(303);
    expect((await web.get('/home')).statusCode).toBe(200);
    expect((await web.get('/settings/account')).body).not.toContain('Firefox on Android');
  });
});

describe('appearance, language and search', () => {
  it('applies the chosen colours, motion and text size to every page as classes on <html>', async () => {
    expect((await web.get('/home')).body).toMatch(/<html lang="en">/);
    const page = await web.get('/settings/appearance');
    const bad = await web.post('/settings/appearance', { theme: 'purple', locale: '' }, page.body);
    expect(bad.statusCode).toBe(422);
    expect((await web.post('/settings/appearance', { theme: 'dark', locale: 'xx-nope' }, page.body)).statusCode).toBe(422);
    const saved = await web.post('/settings/appearance', { theme: 'dark', reduce_motion: '1', larger_text: '1', locale: 'de' }, page.body);
    expect([saved.statusCode, saved.headers.location]).toEqual([303, '/settings/appearance?notice=saved']);
    // The pages speak the chosen language (German), and say so.
    for (const path of ['/home', '/settings/profile', '/lists']) {
      expect((await web.get(path)).body, path).toContain('<html lang="de" class="theme-dark reduce-motion larger-text">');
    }
    expect((await s.ctx.db.query(`SELECT locale FROM users WHERE account_id = $1`, [alice.id])).rows[0].locale).toBe('de');
    // Public pages are the same for everyone (and cached): no one's setting on them.
    expect((await new WebClient(s.app).get('/about')).body).not.toContain('theme-dark');
    await web.post('/settings/appearance', { theme: 'system', locale: '' }, page.body);
    expect((await web.get('/home')).body).toMatch(/<html lang="en">/);
  });

  it('turns "let my posts be found by search" on and off, as the API reports it, with the posting language', async () => {
    const page = await web.get('/settings/preferences');
    expect(page.body).toContain('name="indexable"');
    const on = await web.post('/settings/preferences', { privacy: 'public', language: 'fr', indexable: '1' }, page.body);
    expect(on.statusCode).toBe(303);
    const me = (await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(alice.token) })).json() as Json;
    expect([me.indexable, me.source.language]).toEqual([true, 'fr']);
    await web.post('/settings/preferences', { privacy: 'public', language: '' }, page.body);
    const off = (await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(alice.token) })).json() as Json;
    expect([off.indexable, off.source.language]).toEqual([false, null]);
    expect((await web.post('/settings/preferences', { privacy: 'public', language: 'klingon' }, page.body)).statusCode).toBe(422);
  });

  it('are valid HTML', async () => {
    const made = await postForm(web, '/settings/development', [['name', 'Checked'], ['redirect_uris', 'urn:ietf:wg:oauth:2.0:oob'], ['scopes[]', 'read']], (await web.get('/settings/development')).body);
    for (const path of ['/settings/development', made.headers.location as string, '/settings/appearance', '/settings/preferences', '/settings/account', '/settings/two_factor']) {
      const res = await web.get(path);
      expect(res.statusCode, path).toBe(200);
      await expectValidHtml(res.body, path);
    }
  });
});
