import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, type RegisteredApp } from '../helpers/oauth.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { WebClient } from '../helpers/web.ts';
import { registerLocalAccount } from '../../services/accounts.ts';

/** Joining, confirming, resetting and changing addresses with mail on: what the links do, and what they refuse. */
let s: TestServer;
let smtp: TestSmtp;
let client: RegisteredApp;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ SMTP_URL: smtp.url, LOCAL_DOMAIN: 'mail.test' });
  client = await createApp(s.app);
});
afterAll(async () => {
  await s?.close();
  await smtp?.stop();
});

const linkIn = (text: string, path: string) => {
  const m = new RegExp(`https?://mail\\.test${path.replace(/\//g, '\\/')}\\?[^\\s"<>]+`).exec(text);
  if (!m) throw new Error(`no ${path} link in:\n${text}`);
  return m[0].replace(/&amp;/g, '&').replace('http://mail.test', '');
};

async function apiSignUp(username: string) {
  const res = await s.app.inject({
    method: 'POST', url: '/api/v1/accounts', headers: bearer(await appToken(s.app, client)),
    payload: { username, email: `${username}@example.com`, password: `pw-${username}-long`, agreement: true, locale: 'en' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().access_token as string;
}

describe('address confirmation', () => {
  it('holds an API sign-up until its address is confirmed from the mailed link, which works once', async () => {
    const token = await apiSignUp('fresh');
    const denied = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect(denied.statusCode).toBe(403);
    expect(denied.json()).toEqual({ error: 'Your login is missing a confirmed e-mail address' });
    expect((await new WebClient(s.app).signIn('fresh@example.com', 'pw-fresh-long')).statusCode).toBe(403);

    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('fresh@example.com'));
    const link = linkIn(mail.text, '/auth/confirmation');
    const raw = new URL(link, 'http://x').searchParams.get('confirmation_token')!;
    const { rows } = await s.ctx.db.query(`SELECT confirmation_token_hash FROM users WHERE email = 'fresh@example.com'`);
    expect(rows[0].confirmation_token_hash).not.toBe(raw);

    const browser = new WebClient(s.app);
    expect((await browser.get(link)).statusCode).toBe(200);
    expect((await browser.get(link)).statusCode).toBe(404);
    const ok = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect(ok.statusCode).toBe(200);
    expect((await browser.signIn('fresh@example.com', 'pw-fresh-long')).statusCode).toBe(303);
  });

  it('voids a link once another address is asked for: it never confirms an address its mail did not reach', async () => {
    const token = await apiSignUp('mallory');
    const first = await smtp.waitFor((m) => m.envelopeTo.includes('mallory@example.com'));
    const change = await s.app.inject({ method: 'POST', url: '/api/v1/emails/confirmations', headers: bearer(token), payload: { email: 'victim@example.org' } });
    expect(change.statusCode, change.body).toBe(200);
    expect((await new WebClient(s.app).get(linkIn(first.text, '/auth/confirmation'))).statusCode).toBe(404);
    const { rows } = await s.ctx.db.query(`SELECT email, confirmed_at FROM users WHERE email = 'mallory@example.com'`);
    expect(rows[0].confirmed_at).toBeNull();
    expect((await s.ctx.db.query(`SELECT 1 FROM users WHERE email = 'victim@example.org'`)).rowCount).toBe(0);
  });

  it('sends a new link on request, answering the same for unknown addresses', async () => {
    await apiSignUp('forgetful');
    await smtp.waitFor((m) => m.envelopeTo.includes('forgetful@example.com'));
    const before = smtp.messages.length;
    const browser = new WebClient(s.app);
    const known = await browser.submit('/auth/confirmation/new', '/auth/confirmation', { email: 'forgetful@example.com' });
    const unknown = await browser.submit('/auth/confirmation/new', '/auth/confirmation', { email: 'nobody@example.com' });
    // The same answer either way: a redirect to the same page.
    expect([known.statusCode, known.headers.location]).toEqual([303, '/auth/done/confirmation_sent']);
    expect(unknown.headers.location).toBe(known.headers.location);
    expect((await browser.get(known.headers.location as string)).body).toContain('a new link is on its way');
    await smtp.waitFor((m) => m.envelopeTo.includes('forgetful@example.com') && smtp.messages.indexOf(m) >= before);
    expect(smtp.messages.some((m) => m.envelopeTo.includes('nobody@example.com'))).toBe(false);
  });
});

describe('password reset', () => {
  it('mails a link that works once within the hour and signs the person out everywhere', async () => {
    await registerLocalAccount(s.ctx.db, { username: 'lost', email: 'lost@example.com', password: 'old-password', agreement: true, approved: true, confirmed: true });
    const signedIn = new WebClient(s.app);
    expect((await signedIn.signIn('lost@example.com', 'old-password')).statusCode).toBe(303);

    const browser = new WebClient(s.app);
    const known = await browser.submit('/auth/password/new', '/auth/password', { email: 'lost@example.com' });
    const unknown = await browser.submit('/auth/password/new', '/auth/password', { email: 'stranger@example.com' });
    expect([known.statusCode, known.headers.location]).toEqual([303, '/auth/done/reset_sent']);
    expect(unknown.headers.location).toBe(known.headers.location);
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('lost@example.com') && /password/i.test(m.subject));
    const link = linkIn(mail.text, '/auth/password/edit');
    const token = new URL(link, 'http://x').searchParams.get('reset_password_token')!;

    const short = await browser.submit(link, '/auth/password/edit', { reset_password_token: token, password: 'short', password_confirmation: 'short' });
    expect(short.statusCode).toBe(422);
    const done = await browser.submit(link, '/auth/password/edit', { reset_password_token: token, password: 'new-password-9', password_confirmation: 'new-password-9' });
    expect([done.statusCode, done.headers.location]).toEqual([303, '/auth/done/password_changed']);
    expect((await browser.get(done.headers.location as string)).body).toContain('Your password is changed');
    const again = await browser.submit(link, '/auth/password/edit', { reset_password_token: token, password: 'other-password-9', password_confirmation: 'other-password-9' });
    expect(again.statusCode).toBe(404);
    expect((await signedIn.get('/settings/profile')).statusCode).toBe(303);
    expect((await new WebClient(s.app).signIn('lost@example.com', 'old-password')).statusCode).toBe(401);
    expect((await new WebClient(s.app).signIn('lost@example.com', 'new-password-9')).statusCode).toBe(303);
  });

  it('refuses a link older than an hour', async () => {
    await registerLocalAccount(s.ctx.db, { username: 'slow', email: 'slow@example.com', password: 'slow-password', agreement: true, approved: true, confirmed: true });
    const browser = new WebClient(s.app);
    await browser.submit('/auth/password/new', '/auth/password', { email: 'slow@example.com' });
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('slow@example.com'));
    const link = linkIn(mail.text, '/auth/password/edit');
    await s.ctx.db.query(`UPDATE users SET reset_password_sent_at = now() - interval '61 minutes' WHERE email = 'slow@example.com'`);
    const token = new URL(link, 'http://x').searchParams.get('reset_password_token')!;
    const res = await browser.submit(link, '/auth/password/edit', { reset_password_token: token, password: 'new-password-9', password_confirmation: 'new-password-9' });
    expect(res.statusCode).toBe(404);
    expect((await new WebClient(s.app).signIn('slow@example.com', 'slow-password')).statusCode).toBe(303);
  });
});

describe('a changed e-mail address', () => {
  it('takes effect once confirmed at the new address; the old one is told', async () => {
    await registerLocalAccount(s.ctx.db, { username: 'movingon', email: 'old-home@example.com', password: 'moving-password', agreement: true, approved: true, confirmed: true });
    const browser = new WebClient(s.app);
    await browser.signIn('old-home@example.com', 'moving-password');
    const res = await browser.submit('/settings/account', '/settings/account/email', { email: 'new-home@example.com', current_password: 'moving-password' });
    expect(res.statusCode).toBe(303);
    const notice = await smtp.waitFor((m) => m.envelopeTo.includes('old-home@example.com'));
    expect(notice.text).toContain('new-home@example.com');
    const confirm = await smtp.waitFor((m) => m.envelopeTo.includes('new-home@example.com'));
    // Until then, the old address is the one in use.
    expect((await s.ctx.db.query(`SELECT email FROM users WHERE email = 'old-home@example.com'`)).rowCount).toBe(1);
    expect((await browser.get(linkIn(confirm.text, '/auth/confirmation'))).statusCode).toBe(200);
    expect((await s.ctx.db.query(`SELECT email FROM users WHERE email = 'new-home@example.com'`)).rowCount).toBe(1);
  });
});
