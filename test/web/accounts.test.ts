import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { generate } from 'otplib';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, authorizationCodeToken, type RegisteredApp } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let client: RegisteredApp;

beforeAll(async () => {
  // Mail off (no SMTP): new addresses count as confirmed at once, so a trial instance works as it is.
  s = await startTestServer();
  client = await createApp(s.app);
});
afterAll(async () => s?.close());

const count = async (sql: string, params: unknown[] = []) => (await s.ctx.db.query(sql, params)).rows[0].n as number;

async function signUp(browser: WebClient, username: string, extra: Record<string, string> = {}) {
  return browser.submit('/auth/sign_up', '/auth/sign_up', {
    username, email: `${username}@example.com`, password: `pw-${username}-long`, password_confirmation: `pw-${username}-long`, agreement: '1', ...extra,
  });
}

describe('joining from the browser', () => {
  it('signs a new person up and in, with a session cookie that scripts cannot read', async () => {
    const browser = new WebClient(s.app);
    const page = await browser.get('/auth/sign_up');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.headers['content-security-policy']).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).toContain('name="agreement"');
    const res = await signUp(browser, 'walker');
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/@walker');
    const cookie = [res.headers['set-cookie']].flat().find((c) => c?.startsWith('_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).not.toMatch(/Secure/); // plain http here; Secure over https
    const settings = await browser.get('/settings/profile');
    expect(settings.statusCode).toBe(200);
    expect(settings.body).toContain('@walker');
    // The stored session is a hash, never the cookie's token.
    const token = browser.jar.cookies.get('_session')!;
    expect(await count('SELECT count(*)::int AS n FROM web_sessions WHERE token_hash = $1', [token])).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM web_sessions')).toBeGreaterThan(0);
  });

  it('shows the same rules as the API: taken names, short passwords, a missing agreement, mismatched passwords', async () => {
    const browser = new WebClient(s.app);
    const taken = await signUp(browser, 'walker', { email: 'other@example.com' });
    expect(taken.statusCode).toBe(422);
    expect(taken.body).toContain('Username is already taken');
    const short = await signUp(browser, 'shorty', { password: 'abc', password_confirmation: 'abc' });
    expect(short.statusCode).toBe(422);
    expect(short.body).toContain('too short');
    const noAgreement = await signUp(browser, 'nodeal', { agreement: '' });
    expect(noAgreement.statusCode).toBe(422);
    expect(noAgreement.body).toContain('The agreement must be accepted');
    const mismatch = await signUp(browser, 'mismatch', { password_confirmation: 'something-else' });
    expect(mismatch.statusCode).toBe(422);
    expect(mismatch.body).toContain('do not match');
    // Every refusal at once, each by its field: a taken name with a short password, mismatched copies and no agreement.
    const all = await signUp(browser, 'walker', { email: 'walker@example.com', password: 'abc', password_confirmation: 'abd', agreement: '' });
    expect(all.statusCode).toBe(422);
    for (const text of ['Username is already taken', 'Email is already taken', 'too short', 'do not match', 'The agreement must be accepted']) expect(all.body).toContain(text);
    expect(await count(`SELECT count(*)::int AS n FROM accounts WHERE username IN ('shorty', 'nodeal', 'mismatch')`)).toBe(0);
  });

  it('refuses a form without its CSRF token, and writes nothing', async () => {
    const browser = new WebClient(s.app);
    await browser.get('/auth/sign_up');
    const res = await browser.post('/auth/sign_up', { username: 'forged', email: 'forged@example.com', password: 'forged-password', password_confirmation: 'forged-password', agreement: '1' });
    expect(res.statusCode).toBe(403);
    const wrong = await browser.post('/auth/sign_up', { _csrf: 'not-a-token', username: 'forged', email: 'forged@example.com', password: 'forged-password', password_confirmation: 'forged-password', agreement: '1' });
    expect(wrong.statusCode).toBe(403);
    expect(await count(`SELECT count(*)::int AS n FROM accounts WHERE username = 'forged'`)).toBe(0);
  });

  it('signs in and out, and never redirects off this server after sign-in', async () => {
    const browser = new WebClient(s.app);
    const bad = await browser.signIn('walker@example.com', 'wrong-password');
    expect(bad.statusCode).toBe(401);
    expect(bad.body).toContain('Invalid e-mail address or password');
    for (const evil of ['https://evil.example/', '//evil.example/', '/\\evil.example', '/\t/evil.example', '/\n/evil.example']) {
      const res = await new WebClient(s.app).signIn('walker@example.com', 'pw-walker-long', evil);
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe('/');
    }
    const ok = await browser.signIn('walker@example.com', 'pw-walker-long', '/settings/account');
    expect(ok.headers.location).toBe('/settings/account');
    const out = await browser.submit('/auth/sign_out', '/auth/sign_out', {});
    expect(out.statusCode).toBe(303);
    const after = await browser.get('/settings/account');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toMatch(/^\/auth\/sign_in\?return_to=/);
  });
});

describe('settings', () => {
  it('changes the profile with an avatar, as the API then shows it', async () => {
    const browser = new WebClient(s.app);
    await signUp(browser, 'painter');
    const page = await browser.get('/settings/profile');
    const avatar = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#36c' } }).png().toBuffer();
    const body = await multipart({
      _csrf: csrfOf(page.body),
      display_name: 'The Painter',
      note: 'I paint <b>things</b>',
      'fields_attributes[0][name]': 'Site',
      'fields_attributes[0][value]': 'https://painter.example',
      locked: '1',
      noindex: '1',
      avatar_description: 'A blue square',
      avatar: { data: avatar, filename: 'me.png', type: 'image/png' },
    });
    const res = await s.app.inject({ method: 'POST', url: '/settings/profile', payload: body.payload, headers: { ...body.headers, cookie: browser.jar.header() } });
    expect(res.statusCode, res.body).toBe(303);
    const api = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=painter' });
    const account = api.json();
    expect(account.display_name).toBe('The Painter');
    expect(account.note).toContain('I paint &lt;b&gt;things&lt;/b&gt;');
    expect(account.locked).toBe(true);
    expect(account.noindex).toBe(true);
    expect(account.avatar_description).toBe('A blue square');
    expect(account.fields[0]).toMatchObject({ name: 'Site' });
    expect(account.avatar).not.toMatch(/missing\.png$/);
    const image = await s.app.inject({ method: 'GET', url: new URL(account.avatar).pathname });
    expect(image.statusCode).toBe(200);

    const notAnImage = await multipart({ _csrf: csrfOf(page.body), avatar: { data: Buffer.from('not an image'), filename: 'x.png', type: 'image/png' } });
    const refused = await s.app.inject({ method: 'POST', url: '/settings/profile', payload: notAnImage.payload, headers: { ...notAnImage.headers, cookie: browser.jar.header() } });
    expect(refused.statusCode).toBe(422);
  });

  it('takes image descriptions through the API too (Mastodon 4.4), validated as Account entities', async () => {
    const user = await registerUser(s.app, client, 'describer');
    const res = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(user.token), payload: { avatar_description: 'My face', header_description: 'A mountain' } });
    expect(res.statusCode, res.body).toBe(200);
    expectEntity('CredentialAccount', res.json());
    expect(res.json()).toMatchObject({ avatar_description: 'My face', header_description: 'A mountain', noindex: false });
    const tooLong = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(user.token), payload: { avatar_description: 'x'.repeat(151) } });
    expect(tooLong.statusCode).toBe(422);
  });

  it('sets posting defaults that the API reports in preferences', async () => {
    const browser = new WebClient(s.app);
    await signUp(browser, 'quiet');
    const res = await browser.submit('/settings/preferences', '/settings/preferences', { privacy: 'unlisted', language: 'de', sensitive: '1' });
    expect(res.statusCode).toBe(303);
    const bad = await browser.submit('/settings/preferences', '/settings/preferences', { privacy: 'everyone', language: 'de' });
    expect(bad.statusCode).toBe(422);
    const token = await authorizationCodeToken(s.app, client, 'quiet@example.com', 'pw-quiet-long', 'read');
    const prefs = (await s.app.inject({ method: 'GET', url: '/api/v1/preferences', headers: bearer(token) })).json();
    expect(prefs).toMatchObject({ 'posting:default:visibility': 'unlisted', 'posting:default:language': 'de', 'posting:default:sensitive': true });
    // "Show which app sent each post" (Mastodon's show_application): on by default, off when the box is left unticked.
    const shows = async () => (await s.ctx.db.query('SELECT show_application FROM accounts WHERE username = $1 AND domain IS NULL', ['quiet'])).rows[0].show_application;
    expect(await shows()).toBe(false);
    expect((await browser.get('/settings/preferences')).body).toMatch(/<input id="show_application" name="show_application" type="checkbox" value="1">/);
    expect((await browser.submit('/settings/preferences', '/settings/preferences', { privacy: 'unlisted', show_application: '1' })).statusCode).toBe(303);
    expect(await shows()).toBe(true);
    expect((await browser.get('/settings/preferences')).body).toMatch(/name="show_application" type="checkbox" value="1" checked>/);
  });

  it('lists authorized apps and revokes one, whose token then stops working', async () => {
    const user = await registerUser(s.app, client, 'appuser');
    const browser = new WebClient(s.app);
    await browser.signIn(user.email, user.password);
    const page = await browser.get('/settings/applications');
    expect(page.body).toContain('Test app');
    const appId = /\/settings\/applications\/(\d+)\/revoke/.exec(page.body)![1]!;
    const res = await browser.post(`/settings/applications/${appId}/revoke`, {}, page.body);
    expect(res.statusCode).toBe(303);
    const denied = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(user.token) });
    expect(denied.statusCode).toBe(401);
  });

  it('changes the password with the current one, signing out every app and browser', async () => {
    const user = await registerUser(s.app, client, 'mover');
    const browser = new WebClient(s.app);
    await browser.signIn(user.email, user.password);
    const other = new WebClient(s.app);
    await other.signIn(user.email, user.password);
    const wrong = await browser.submit('/settings/account', '/settings/account/password', { current_password: 'nope', password: 'new-password-1', password_confirmation: 'new-password-1' });
    expect(wrong.statusCode).toBe(422);
    const ok = await browser.submit('/settings/account', '/settings/account/password', { current_password: user.password, password: 'new-password-1', password_confirmation: 'new-password-1' });
    expect(ok.statusCode).toBe(303);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(user.token) })).statusCode).toBe(401);
    expect((await other.get('/settings/account')).statusCode).toBe(303);
    expect((await browser.signIn(user.email, 'new-password-1')).statusCode).toBe(303);
  });

  it('changes the e-mail address at once while mail is off', async () => {
    const browser = new WebClient(s.app);
    await signUp(browser, 'renamer');
    const res = await browser.submit('/settings/account', '/settings/account/email', { email: 'renamed@example.com', current_password: 'pw-renamer-long' });
    expect(res.statusCode).toBe(303);
    expect(await count(`SELECT count(*)::int AS n FROM users WHERE email = 'renamed@example.com'`)).toBe(1);
    const taken = await browser.submit('/settings/account', '/settings/account/email', { email: 'walker@example.com', current_password: 'pw-renamer-long' });
    expect(taken.statusCode).toBe(422);
  });
});

describe('two-factor sign-in', () => {
  it('is set up with a code from the app, then asks for a code at sign-in; recovery codes work once', async () => {
    const browser = new WebClient(s.app);
    await signUp(browser, 'careful');
    const start = await browser.submit('/settings/two_factor', '/settings/two_factor/new', {});
    expect(start.statusCode).toBe(303);
    const setup = await browser.get('/settings/two_factor');
    expect(setup.body).toContain('data:image/png;base64,');
    const secret = /id="otp-secret">([A-Z2-7]+)</.exec(setup.body)![1]!;
    const badCode = await browser.post('/settings/two_factor', { code: '000000', current_password: 'pw-careful-long' }, setup.body);
    expect(badCode.statusCode).toBe(422);
    const turnedOn = await browser.post('/settings/two_factor', { code: await generate({ secret }), current_password: 'pw-careful-long' }, setup.body);
    // Post/Redirect/Get: the codes are on the page the form leads to, once; a reload shows them no more.
    expect([turnedOn.statusCode, turnedOn.headers.location]).toEqual([303, '/settings/two_factor?notice=two_factor_on']);
    const on = await browser.get(turnedOn.headers.location as string);
    const codes = [...on.body.matchAll(/<li>([0-9a-f]{10})<\/li>/g)].map((m) => m[1]!);
    expect(codes).toHaveLength(10);
    expect((await browser.get('/settings/two_factor')).body).not.toContain(codes[0]);
    const row = (await s.ctx.db.query(`SELECT otp_secret, otp_backup_code_hashes FROM users WHERE email = 'careful@example.com'`)).rows[0];
    expect(row.otp_backup_code_hashes).not.toContain(codes[0]);
    // The TOTP secret is kept encrypted (AES-GCM, a key outside the database).
    expect(row.otp_secret).toMatch(/^v1:/);
    expect(row.otp_secret).not.toContain(secret);

    const next = new WebClient(s.app);
    const first = await next.signIn('careful@example.com', 'pw-careful-long');
    expect(first.statusCode).toBe(303);
    expect(first.headers.location).toBe('/auth/sign_in/two_factor');
    expect(next.jar.cookies.has('_session')).toBe(false);
    const codePage = await next.get('/auth/sign_in/two_factor');
    expect((await next.post('/auth/sign_in/two_factor', { code: '123456' }, codePage.body)).statusCode).toBe(401);
    const ok = await next.post('/auth/sign_in/two_factor', { code: codes[0]! }, codePage.body);
    expect(ok.statusCode).toBe(303);
    expect(next.jar.cookies.has('_session')).toBe(true);

    // The same recovery code a second time is refused.
    const again = new WebClient(s.app);
    await again.signIn('careful@example.com', 'pw-careful-long');
    const page2 = await again.get('/auth/sign_in/two_factor');
    expect((await again.post('/auth/sign_in/two_factor', { code: codes[0]! }, page2.body)).statusCode).toBe(401);
    // The OAuth authorize page goes through the same second step.
    const authorize = await again.post('/auth/sign_in/two_factor', { code: codes[1]! }, page2.body);
    expect(authorize.statusCode).toBe(303);
  });

  it('locks an account after ten failed attempts, even against the right password', async () => {
    await signUp(new WebClient(s.app), 'target');
    for (let i = 0; i < 10; i++) expect((await new WebClient(s.app).signIn('target@example.com', `guess-${i}`)).statusCode).toBe(401);
    const locked = await new WebClient(s.app).signIn('target@example.com', 'pw-target-long');
    expect(locked.statusCode).toBe(429);
    expect(locked.body).toContain('Too many failed sign-in attempts');
    // An address without an account locks the same way: the lock tells nobody which addresses have accounts.
    for (let i = 0; i < 10; i++) expect((await new WebClient(s.app).signIn('ghost@example.com', `guess-${i}`)).statusCode).toBe(401);
    expect((await new WebClient(s.app).signIn('ghost@example.com', 'anything')).statusCode).toBe(429);
  });

  it('counts wrong current passwords in settings against the same limit', async () => {
    const browser = new WebClient(s.app);
    await signUp(browser, 'borrowed');
    for (let i = 0; i < 10; i++) {
      const res = await browser.submit('/settings/account', '/settings/account/password', { current_password: `guess-${i}`, password: 'whatever-new-1', password_confirmation: 'whatever-new-1' });
      expect(res.statusCode).toBe(422);
    }
    const locked = await browser.submit('/settings/account', '/settings/account/password', { current_password: 'pw-borrowed-long', password: 'whatever-new-1', password_confirmation: 'whatever-new-1' });
    expect(locked.statusCode).toBe(422);
    expect(locked.body).toContain('Too many failed sign-in attempts');
  });

  it('answers a malformed oEmbed URL with 404, not an error', async () => {
    const res = await s.app.inject({ method: 'GET', url: `/api/oembed?url=${encodeURIComponent('http://test.local/@%E0%A4%A/1')}` });
    expect(res.statusCode).toBe(404);
  });
});
