import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { generate } from 'otplib';
import { freePort } from '../helpers/listen.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { WebClient } from '../helpers/web.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { enableTwoFactor, newTotpSecret } from '../../services/two-factor.ts';

// Security keys in Chromium with its virtual authenticator (DevTools' WebAuthn domain): the page's own script talks
// to the key, the server checks with @simplewebauthn/server. `localhost` because an RP ID cannot be an IP address.
const EMAIL = 'keyholder@example.com';
const PASSWORD = 'keyholder-password-long';

let s: TestServer;
let origin: string;
let browser: TestBrowser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let totpSecret: string;
let recoveryCodes: string[];
/** The virtual authenticator that holds the key used to sign in. */
let keyAuthenticator: string;
/** What the server logged at warn and above. */
const logged: Record<string, unknown>[] = [];
/** A page of another origin on this machine (another port of localhost, so the same RP ID). */
let elsewhere: Server;
let otherOrigin: string;

const addAuthenticator = async () => (await cdp.send('WebAuthn.addVirtualAuthenticator', {
  options: { protocol: 'ctap2', transport: 'usb', hasResidentKey: false, hasUserVerification: false, automaticPresenceSimulation: true },
})).authenticatorId;

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  [s, browser] = await Promise.all([startTestServer({ LOCAL_DOMAIN: `localhost:${port}`, LOG_LEVEL: 'warn' }, { log: (line) => logged.push(line) }), testBrowser()]);
  await s.app.listen({ port, host: '127.0.0.1' });
  const otherPort = await freePort();
  otherOrigin = `http://localhost:${otherPort}`;
  elsewhere = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Elsewhere</title><p>Another site'));
  await new Promise<void>((resolve) => elsewhere.listen(otherPort, '127.0.0.1', resolve));
  const { user } = await registerLocalAccount(s.ctx.db, { username: 'keyholder', email: EMAIL, password: PASSWORD, agreement: true, confirmed: true, approved: true });
  totpSecret = await newTotpSecret();
  recoveryCodes = await enableTwoFactor(s.ctx, user.id, totpSecret);
  context = await browser.newContext();
  page = await context.newPage();
  page.setDefaultTimeout(8000);
  cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
  await new Promise((resolve) => elsewhere?.close(resolve));
});

const count = async (sql: string) => Number((await s.ctx.db.query(sql)).rows[0].n);

/** The password step; the answer is the second step's page. */
async function password(): Promise<void> {
  await context.clearCookies();
  await page.goto(`${origin}/auth/sign_in`);
  await page.fill('#email', EMAIL);
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(`${origin}/auth/sign_in/two_factor`), page.click('form[action="/auth/sign_in"] button[type=submit]')]);
}

async function addKey(name: string): Promise<void> {
  await page.goto(`${origin}/settings/security_keys`);
  await page.fill('#nickname', name);
  await Promise.all([page.waitForURL(/notice=key_added/), page.click('#security-key-register button')]);
}

describe('security keys as a second factor', () => {
  it('adds several named keys, signs in with one, and recovery codes keep working', async () => {
    await password();
    expect(await page.locator('#security-key-sign-in').count()).toBe(0); // no keys yet: codes only
    await page.fill('#code', await generate({ secret: totpSecret }));
    await Promise.all([page.waitForURL(`${origin}/home`), page.click('form:not(#security-key-sign-in) button[type=submit]')]);

    const first = await addAuthenticator();
    await addKey('Blue key');
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: first });
    keyAuthenticator = await addAuthenticator();
    await addKey('Red key');
    const rows = await page.locator('tbody tr td:first-child').allTextContents();
    expect(rows).toEqual(['Blue key', 'Red key']);
    await expectAccessible(page, 'passkeys and security keys, two keys');
    expect(await page.locator('tbody tr').first().textContent()).toContain('never');

    // Signing in again: the second step offers the key, and the page's script uses it.
    await password();
    await Promise.all([page.waitForURL(`${origin}/home`), page.click('#security-key-sign-in button')]);
    const settings = await page.goto(`${origin}/settings/security_keys`);
    expect(settings!.status()).toBe(200);
    const { rows: used } = await s.ctx.db.query(`SELECT nickname, last_used_at, sign_count FROM webauthn_credentials ORDER BY id`);
    expect(used[0].last_used_at).toBeNull();
    expect(used[1].last_used_at).not.toBeNull();
    expect(await page.locator('tbody tr').nth(1).textContent()).not.toContain('never');

    // A recovery code still works in place of the key.
    await password();
    await page.fill('#code', recoveryCodes[0]!);
    await Promise.all([page.waitForURL(`${origin}/home`), page.click('form:not(#security-key-sign-in) button[type=submit]')]);
  });

  it('refuses an answer no key of the person gave, and signs nobody in', async () => {
    const web = new WebClient(s.app);
    const signedIn = await web.signIn(EMAIL, PASSWORD);
    expect(signedIn.headers.location).toBe('/auth/sign_in/two_factor');
    const step = await web.get('/auth/sign_in/two_factor');
    expect(step.body).toContain('Use a security key');
    const csrf = /name="_csrf" value="([^"]*)"/.exec(step.body)![1]!;
    const headers = { 'content-type': 'application/json', 'x-csrf-token': csrf, cookie: web.jar.header(), accept: 'application/json' };
    const options = await s.app.inject({ method: 'POST', url: '/auth/sign_in/webauthn/options', headers, payload: {} });
    expect(options.statusCode, options.body).toBe(200);
    expect(options.json().allowCredentials).toHaveLength(2);
    const forged = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' }, clientExtensionResults: {} };
    const res = await s.app.inject({ method: 'POST', url: '/auth/sign_in/webauthn', headers, payload: { credential: forged } });
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toContain('not accepted');
    expect([res.headers['set-cookie']].flat().some((c) => c?.startsWith('_session='))).toBe(false);
  });

  /** The stored Red key: its counter and last use. */
  const redKey = async () => (await s.ctx.db.query(`SELECT id::text, sign_count::int AS sign_count, last_used_at FROM webauthn_credentials WHERE nickname = 'Red key'`)).rows[0] as { id: string; sign_count: number; last_used_at: Date };
  const hasSession = async () => (await context.cookies(origin)).some((c) => c.name === '_session');
  const keyError = () => page.locator('#security-key-sign-in .webauthn-error');

  it('refuses an answer the key gave a page of another origin, relayed into our sign-in: the page says so, nothing is written', async () => {
    const before = await redKey();
    // The other site's page has the same key (a copy of the credential in its own authenticator: the WebAuthn domain
    // is per page) and asks it to sign our challenge; the answer names that site's origin.
    const other = await context.newPage();
    const otherCdp = await context.newCDPSession(other);
    await otherCdp.send('WebAuthn.enable');
    const otherAuthenticator = (await otherCdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'usb', hasResidentKey: false, hasUserVerification: false, automaticPresenceSimulation: true },
    })).authenticatorId;
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId: keyAuthenticator });
    await otherCdp.send('WebAuthn.addCredential', { authenticatorId: otherAuthenticator, credential: credentials[0]! });
    await other.goto(otherOrigin);

    await password();
    // What our page's script sends is swapped, on its way, for the other origin's answer to the same challenge.
    let relayed: { origin: string; challenge: string } | undefined;
    await page.route(`${origin}/auth/sign_in/webauthn`, async (route) => {
      const sent = route.request().postDataJSON() as { credential: { id: string; response: { clientDataJSON: string } } };
      const { challenge } = JSON.parse(Buffer.from(sent.credential.response.clientDataJSON, 'base64url').toString('utf8')) as { challenge: string };
      const foreign = await other.evaluate(`(async () => (await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON({
        challenge: ${JSON.stringify(challenge)}, rpId: 'localhost', allowCredentials: [{ id: ${JSON.stringify(sent.credential.id)}, type: 'public-key' }], userVerification: 'discouraged',
      }) })).toJSON())()`) as { response: { clientDataJSON: string } };
      relayed = JSON.parse(Buffer.from(foreign.response.clientDataJSON, 'base64url').toString('utf8'));
      await route.continue({ postData: JSON.stringify({ credential: foreign }) });
    });
    try {
      await page.click('#security-key-sign-in button');
      await expect.poll(() => keyError().textContent()).toContain('That security key was not accepted');
    } finally {
      await page.unroute(`${origin}/auth/sign_in/webauthn`);
      await other.close();
    }
    expect(relayed).toMatchObject({ origin: otherOrigin });
    expect(page.url()).toBe(`${origin}/auth/sign_in/two_factor`);
    expect(await hasSession()).toBe(false);
    expect(await redKey()).toEqual(before);
    // Nothing there for an operator: a wrong origin is not a cloned key.
    expect(logged.filter((l) => l.event === 'webauthn_counter_not_moved_on')).toEqual([]);
    // The same pending sign-in then goes through with the key answering our own page.
    await Promise.all([page.waitForURL(`${origin}/home`), page.click('#security-key-sign-in button')]);
    expect((await redKey()).sign_count).toBeGreaterThan(before.sign_count);
  });

  it('refuses a copy of a key whose counter is behind the stored one, logs it for the operators, and the original still signs in', async () => {
    const before = await redKey();
    expect(before.sign_count).toBeGreaterThan(0);
    const { credentials: [original] } = await cdp.send('WebAuthn.getCredentials', { authenticatorId: keyAuthenticator });
    expect(original!.signCount).toBeGreaterThanOrEqual(before.sign_count);
    // The copy: the same credential and private key in another authenticator, taken before the key was first used.
    // Its next answer carries a counter below the stored one (Chromium counts a silent probe of the allowed keys and
    // the signature itself: two a sign-in).
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: keyAuthenticator });
    const clone = await addAuthenticator();
    await cdp.send('WebAuthn.addCredential', { authenticatorId: clone, credential: { ...original!, signCount: 0 } });

    await password();
    await page.click('#security-key-sign-in button');
    await expect.poll(() => keyError().textContent()).toContain('That security key was not accepted');
    expect(page.url()).toBe(`${origin}/auth/sign_in/two_factor`);
    expect(await hasSession()).toBe(false);
    expect(await redKey()).toEqual(before);
    const warning = logged.find((l) => l.event === 'webauthn_counter_not_moved_on');
    expect(warning).toMatchObject({ level: 40, credentialId: before.id, storedCounter: before.sign_count });
    expect(warning!.reportedCounter).toBeLessThanOrEqual(before.sign_count);
    expect(warning!.msg).toContain('cloned key');

    // The original key, whose counter is ahead, signs in on the same pending sign-in.
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: clone });
    keyAuthenticator = await addAuthenticator();
    await cdp.send('WebAuthn.addCredential', { authenticatorId: keyAuthenticator, credential: original! });
    await Promise.all([page.waitForURL(`${origin}/home`), page.click('#security-key-sign-in button')]);
    expect((await redKey()).sign_count).toBeGreaterThan(before.sign_count);
  });

  it('removes a key only with the password', async () => {
    await password();
    await Promise.all([page.waitForURL(`${origin}/home`), page.click('#security-key-sign-in button')]);
    await page.goto(`${origin}/settings/security_keys`);
    const blue = page.locator('tbody tr', { hasText: 'Blue key' });
    await blue.locator('input[type=password]').fill('wrong password');
    await blue.locator('button').click();
    await page.waitForLoadState();
    expect(await page.locator('.flash.error:not(.webauthn-error)').textContent()).toContain('current password is wrong');
    expect(await count('SELECT count(*) AS n FROM webauthn_credentials')).toBe(2);
    const again = page.locator('tbody tr', { hasText: 'Blue key' });
    await again.locator('input[type=password]').fill(PASSWORD);
    await Promise.all([page.waitForURL(/notice=key_removed/), again.locator('button').click()]);
    expect(await page.locator('tbody tr td:first-child').allTextContents()).toEqual(['Red key']);

    // Two-factor off (from its page, with the password) takes the keys with it: they never stand alone.
    await page.goto(`${origin}/settings/two_factor`);
    await page.fill('#disable_password', PASSWORD);
    await Promise.all([page.waitForURL(/notice=two_factor_off/), page.click('form[action="/settings/two_factor/disable"] button')]);
    expect(await count('SELECT count(*) AS n FROM webauthn_credentials')).toBe(0);
  });
});

describe('passkeys, which sign in without a password', () => {
  const PASS_EMAIL = 'passholder@example.com';
  const PASS_PASSWORD = 'passholder-password-long';
  let pkContext: BrowserContext;
  let pk: Page;
  let pkCdp: CDPSession;
  let userId: string;
  let authenticatorId: string;

  beforeAll(async () => {
    const { user } = await registerLocalAccount(s.ctx.db, { username: 'passholder', email: PASS_EMAIL, password: PASS_PASSWORD, agreement: true, confirmed: true, approved: true });
    userId = user.id;
    pkContext = await browser.newContext();
    pk = await pkContext.newPage();
    pk.setDefaultTimeout(8000);
    pkCdp = await pkContext.newCDPSession(pk);
    await pkCdp.send('WebAuthn.enable');
    // A platform authenticator that keeps credentials (resident keys) and verifies its user, as a phone or laptop does.
    authenticatorId = (await pkCdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    })).authenticatorId;
  });
  afterAll(async () => pkContext?.close());

  const signedInAs = async () => {
    const res = await pk.goto(`${origin}/settings/account`);
    return res!.url().startsWith(`${origin}/settings/account`) ? /Your address: <strong>([^<]+)</.exec(await pk.content())?.[1] ?? null : null;
  };

  it('adds a passkey in settings without two-factor, kept on the authenticator; the page passes axe', async () => {
    await pk.goto(`${origin}/auth/sign_in`);
    await pk.fill('#email', PASS_EMAIL);
    await pk.fill('#password', PASS_PASSWORD);
    await Promise.all([pk.waitForURL(`${origin}/home`), pk.click('form[action="/auth/sign_in"] button[type=submit]')]);
    const page = await pk.goto(`${origin}/settings/security_keys`);
    await expectValidHtml(await page!.text(), 'the passkeys page');
    await expectAccessible(pk, 'passkeys and security keys, none yet');
    // Security keys still wait for two-factor; passkeys do not.
    expect(await pk.locator('#security-key-register').count()).toBe(0);
    await pk.fill('#passkey_nickname', 'Laptop');
    await Promise.all([pk.waitForURL(/notice=passkey_added/), pk.click('#passkey-register button')]);
    expect(await pk.locator('table caption').allTextContents()).toEqual(['Your passkeys']);
    expect(await pk.locator('tbody tr td:first-child').allTextContents()).toEqual(['Laptop']);
    await expectAccessible(pk, 'passkeys and security keys, one passkey');
    const { rows } = await s.ctx.db.query(`SELECT credential_id, passkey FROM webauthn_credentials WHERE user_id = $1`, [userId]);
    expect(rows).toMatchObject([{ passkey: true }]);
    // Kept on the authenticator (a resident credential), for the user this server named.
    const { credentials } = await pkCdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]!.isResidentCredential).toBe(true);
    expect(Buffer.from(credentials[0]!.userHandle!, 'base64').toString('utf8')).toBe(userId);
  });

  it('signs in with the passkey alone from the sign-in page, to where the person was going', async () => {
    await pkContext.clearCookies();
    await pk.goto(`${origin}/auth/sign_in?return_to=${encodeURIComponent('/settings/profile')}`);
    expect(await pk.locator('#passkey-sign-in').isVisible()).toBe(true);
    await expectAccessible(pk, 'sign-in page with a passkey button');
    await Promise.all([pk.waitForURL(`${origin}/settings/profile`), pk.click('#passkey-sign-in button')]);
    expect(await signedInAs()).toBe(PASS_EMAIL);
    const { rows } = await s.ctx.db.query(`SELECT last_used_at, sign_count FROM webauthn_credentials WHERE user_id = $1`, [userId]);
    expect(rows[0].last_used_at).not.toBeNull();
  });

  it('refuses a copy of the passkey whose counter is behind, logs it, and the passkey itself still signs in', async () => {
    const platform = { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } as const;
    const stored = async () => (await s.ctx.db.query(`SELECT id::text, sign_count::int AS sign_count, last_used_at FROM webauthn_credentials WHERE user_id = $1`, [userId])).rows[0] as { id: string; sign_count: number; last_used_at: Date };
    const before = await stored();
    expect(before.sign_count).toBeGreaterThan(0);
    const { credentials: [original] } = await pkCdp.send('WebAuthn.getCredentials', { authenticatorId });
    await pkCdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
    const clone = (await pkCdp.send('WebAuthn.addVirtualAuthenticator', { options: platform })).authenticatorId;
    await pkCdp.send('WebAuthn.addCredential', { authenticatorId: clone, credential: { ...original!, signCount: 0 } });
    const warnings = () => logged.filter((l) => l.event === 'webauthn_counter_not_moved_on' && l.credentialId === before.id);

    await pkContext.clearCookies();
    await pk.goto(`${origin}/auth/sign_in`);
    await pk.click('#passkey-sign-in button');
    await expect.poll(() => pk.locator('#passkey-sign-in .webauthn-error').textContent()).toContain('That passkey was not accepted');
    expect((await pkContext.cookies(origin)).some((c) => c.name === '_session')).toBe(false);
    expect(await stored()).toEqual(before);
    expect(warnings()).toEqual([expect.objectContaining({ level: 40, userId, storedCounter: before.sign_count })]);

    await pkCdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: clone });
    authenticatorId = (await pkCdp.send('WebAuthn.addVirtualAuthenticator', { options: platform })).authenticatorId;
    await pkCdp.send('WebAuthn.addCredential', { authenticatorId, credential: original! });
    await pk.goto(`${origin}/auth/sign_in?return_to=${encodeURIComponent('/settings/profile')}`);
    await Promise.all([pk.waitForURL(`${origin}/settings/profile`), pk.click('#passkey-sign-in button')]);
    expect(await signedInAs()).toBe(PASS_EMAIL);
    expect((await stored()).sign_count).toBeGreaterThan(before.sign_count);
  });

  it('lets nobody in whose account may not sign in, and shows why', async () => {
    await s.ctx.db.query(`UPDATE users SET approved = false WHERE id = $1`, [userId]);
    try {
      await pkContext.clearCookies();
      await pk.goto(`${origin}/auth/sign_in`);
      await pk.click('#passkey-sign-in button');
      await expect.poll(() => pk.locator('#passkey-sign-in .webauthn-error').textContent()).toMatch(/approv/i);
      expect((await pkContext.cookies()).some((c) => c.name === '_session')).toBe(false);
    } finally {
      await s.ctx.db.query(`UPDATE users SET approved = true WHERE id = $1`, [userId]);
    }
  });

  it('refuses a forged answer, one without its challenge, and a form without JavaScript', async () => {
    const web = new WebClient(s.app);
    const signInPage = await web.get('/auth/sign_in');
    const csrf = /name="_csrf" value="([^"]*)"/.exec(signInPage.body)![1]!;
    const headers = () => ({ 'content-type': 'application/json', 'x-csrf-token': csrf, cookie: web.jar.header(), accept: 'application/json' });
    // No challenge asked for in this browser.
    const forged = (id: string) => ({ id, rawId: id, type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA', userHandle: Buffer.from(userId).toString('base64url') }, clientExtensionResults: {} });
    const { rows } = await s.ctx.db.query(`SELECT credential_id, passkey FROM webauthn_credentials ORDER BY passkey DESC`);
    const passkeyId = rows.find((r) => r.passkey).credential_id as string;
    const noChallenge = await s.app.inject({ method: 'POST', url: '/auth/sign_in/passkey', headers: headers(), payload: { credential: forged(passkeyId) } });
    expect(noChallenge.statusCode).toBe(401);
    // With a challenge: a made-up signature over the right credential id.
    const options = await s.app.inject({ method: 'POST', url: '/auth/sign_in/passkey/options', headers: headers(), payload: {} });
    expect(options.statusCode, options.body).toBe(200);
    expect(options.json().allowCredentials ?? []).toEqual([]);
    expect(options.json().userVerification).toBe('required');
    web.jar.take([options.headers['set-cookie']].flat().filter((c): c is string => typeof c === 'string'));
    const bad = await s.app.inject({ method: 'POST', url: '/auth/sign_in/passkey', headers: headers(), payload: { credential: forged(passkeyId) } });
    expect(bad.statusCode).toBe(401);
    expect(bad.json().error).toContain('not accepted');
    expect([bad.headers['set-cookie']].flat().some((c) => c?.startsWith('_session='))).toBe(false);
    const noScript = await web.post('/auth/sign_in/passkey', { return_to: '/' }, signInPage.body);
    expect(noScript.statusCode).toBe(422);
    expect(noScript.body).toContain('needs JavaScript');
  });

  it('keeps passkeys when two-factor is turned off, and removes one with the password', async () => {
    await s.ctx.db.query(`UPDATE users SET otp_enabled_at = now() WHERE id = $1`, [userId]);
    const { disableTwoFactor } = await import('../../services/two-factor.ts');
    await disableTwoFactor(s.ctx, userId);
    expect(await count(`SELECT count(*) AS n FROM webauthn_credentials WHERE passkey AND user_id = ${userId}`)).toBe(1);
    await pkContext.clearCookies();
    await pk.goto(`${origin}/auth/sign_in?return_to=${encodeURIComponent('/settings/security_keys')}`);
    await Promise.all([pk.waitForURL(`${origin}/settings/security_keys`), pk.click('#passkey-sign-in button')]);
    const row = pk.locator('tbody tr', { hasText: 'Laptop' });
    await row.locator('input[type=password]').fill(PASS_PASSWORD);
    await Promise.all([pk.waitForURL(/notice=key_removed/), row.locator('button').click()]);
    expect(await count(`SELECT count(*) AS n FROM webauthn_credentials WHERE user_id = ${userId}`)).toBe(0);
  });
});
