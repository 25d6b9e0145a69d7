import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { generate } from 'otplib';
import sharp from 'sharp';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { artifactsDir, expectAccessible, testBrowser, screenshot, type TestBrowser } from '../helpers/browser.ts';
import { registerLocalAccount } from '../../services/accounts.ts';

/**
 * A person joins from the browser: the front page, sign-up, the confirmation mail, sign-in,
 * two-factor set-up and sign-in with a code, a profile with an avatar, a password reset from the mail, and an
 * operator approving the account; every page checked with axe and saved as a screenshot.
 */
let s: TestServer & { url: string };
let smtp: TestSmtp;
let browser: TestBrowser;
let shots: string;
let step = 0;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startListeningServer({ SMTP_URL: smtp.url, REGISTRATIONS_MODE: 'approved', INSTANCE_TITLE: 'Journey Social' });
  await registerLocalAccount(s.ctx.db, { username: 'operator', email: 'operator@example.com', password: 'operator-password', agreement: true, approved: true, admin: true, confirmed: true });
  browser = await testBrowser();
  shots = await artifactsDir('web-journey');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
  await smtp?.stop();
});

/** Every page the person sees: no serious accessibility problem, no CSP violation, and a screenshot. */
async function look(page: Page, label: string) {
  await expectAccessible(page, label);
  await screenshot(page, shots, `${String(++step).padStart(2, '0')}-${label}`);
}

/**
 * What would show a broken page: script errors, CSP violations, and a stylesheet, image or icon that did not load.
 * Pages answered with an error status on purpose (a refused sign-in, a used link) log "Failed to load resource" for
 * the document itself, which is not a problem; their subresources still count.
 */
function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('response', (r) => { if (r.request().resourceType() !== 'document' && r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
  // A request cut off by the next navigation (ERR_ABORTED, often the icon) is the test moving on, not a fault.
  page.on('requestfailed', (r) => { if (!/ERR_ABORTED/.test(r.failure()?.errorText ?? '')) problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`); });
  return problems;
}

const linkIn = (text: string, path: string) => {
  const m = new RegExp(`https?://[^\\s"<>]+${path.replace(/\//g, '\\/')}[^\\s"<>]*`).exec(text);
  if (!m) throw new Error(`no ${path} link in the mail:\n${text}`);
  return m[0].replace(/&amp;/g, '&');
};

describe('joining from a browser', () => {
  let person: BrowserContext;
  let page: Page;
  let problems: string[];
  let secret = '';
  let recoveryCodes: string[] = [];

  it('finds the server, asks to join, confirms the address from the mail', async () => {
    person = await browser.newContext();
    page = await person.newPage();
    problems = watchConsole(page);
    await page.goto(s.url + '/');
    await expect.poll(() => page.title()).toContain('Journey Social');
    await look(page, 'front-page');
    await page.getByRole('link', { name: /create account|sign up/i }).first().click();
    await page.waitForURL('**/auth/sign_up');
    await page.getByLabel('Username').fill('newcomer');
    await page.getByLabel('E-mail address').fill('newcomer@example.com');
    await page.getByLabel('Password', { exact: true }).fill('newcomer-password');
    await page.getByLabel('Password again').fill('newcomer-password');
    await page.getByLabel('Why do you want to join?').fill('Friends of mine are here.');
    await page.getByLabel(/I agree/).check();
    await look(page, 'sign-up');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await expect.poll(() => page.textContent('main')).toContain('We sent a link to your e-mail address');
    await look(page, 'signed-up');

    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('newcomer@example.com') && /confirm/i.test(m.subject));
    expect(mail.text).toBeTruthy();
    expect(mail.html).toBeTruthy();
    const link = linkIn(mail.text, '/auth/confirmation');
    expect(link.startsWith(s.url)).toBe(true);
    // Not confirmed yet: sign-in is refused with a reason.
    await page.goto(s.url + '/auth/sign_in');
    await page.getByLabel('E-mail address').fill('newcomer@example.com');
    await page.getByLabel('Password').fill('newcomer-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.textContent('main')).toContain('confirm your e-mail address');
    await page.goto(link);
    await expect.poll(() => page.textContent('main')).toContain('Your e-mail address is confirmed');
    await look(page, 'confirmed');
    // The link works once.
    await page.goto(link);
    await expect.poll(() => page.textContent('main')).toContain('invalid');
  });

  it('is approved by an operator in the moderation pages, and hears of it by mail', async () => {
    const operator = await browser.newContext();
    const op = await operator.newPage();
    await op.goto(s.url + '/auth/sign_in');
    await op.getByLabel('E-mail address').fill('operator@example.com');
    await op.getByLabel('Password').fill('operator-password');
    await op.getByRole('button', { name: 'Sign in', exact: true }).click();
    await op.waitForURL(s.url + '/home');
    const alert = await smtp.waitFor((m) => m.envelopeTo.includes('operator@example.com') && /newcomer/.test(m.text));
    expect(linkIn(alert.text, '/admin/approvals')).toBeTruthy();
    await op.goto(s.url + '/admin/approvals');
    await expect.poll(() => op.textContent('main')).toContain('Friends of mine are here.');
    await look(op, 'approvals');
    await op.getByRole('button', { name: 'Approve @newcomer' }).click();
    await expect.poll(() => op.textContent('main')).toContain('approved');
    await op.goto(s.url + '/admin/reports');
    await look(op, 'reports');
    await operator.close();
    const approved = await smtp.waitFor((m) => m.envelopeTo.includes('newcomer@example.com') && /approved/i.test(m.subject + m.text));
    expect(linkIn(approved.text, '/auth/sign_in')).toBeTruthy();
  });

  it('signs in, sets up two-factor sign-in, and signs in again with a code', async () => {
    await page.goto(s.url + '/auth/sign_in');
    await page.getByLabel('E-mail address').fill('newcomer@example.com');
    await page.getByLabel('Password').fill('newcomer-password');
    await look(page, 'sign-in');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(s.url + '/home');
    await page.goto(s.url + '/settings/two_factor');
    await look(page, 'two-factor-off');
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    await page.waitForSelector('#otp-secret');
    secret = (await page.textContent('#otp-secret'))!.trim();
    await look(page, 'two-factor-set-up');
    await page.getByLabel('The six-digit code your app shows now').fill(await generate({ secret }));
    await page.getByLabel('Current password').fill('newcomer-password');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.waitForSelector('#recovery-codes');
    recoveryCodes = (await page.locator('#recovery-codes li').allTextContents()).map((c) => c.trim());
    expect(recoveryCodes).toHaveLength(10);
    await look(page, 'recovery-codes');

    await page.goto(s.url + '/auth/sign_out');
    await look(page, 'sign-out');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(s.url + '/');
    await page.goto(s.url + '/auth/sign_in');
    await page.getByLabel('E-mail address').fill('newcomer@example.com');
    await page.getByLabel('Password').fill('newcomer-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL('**/auth/sign_in/two_factor');
    await look(page, 'two-factor-code');
    // A code of the next time step: the one used to turn it on was spent.
    await page.getByLabel(/Code from your authenticator app/).fill(await generate({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(s.url + '/home');
  });

  it('changes the profile with an avatar, seen on the public page and in the API', async () => {
    const file = { name: 'avatar.png', mimeType: 'image/png', buffer: await sharp({ create: { width: 120, height: 120, channels: 3, background: '#c2410c' } }).png().toBuffer() };
    await page.goto(s.url + '/settings/profile');
    await page.getByLabel('Display name').fill('New Comer');
    await page.getByLabel('Bio').fill('Hello from the browser');
    await page.getByLabel(/^Avatar \(/).setInputFiles(file);
    await page.getByLabel(/Avatar description/).fill('An orange square');
    await look(page, 'profile-settings');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await expect.poll(() => page.textContent('main')).toContain('Your changes are saved');
    await page.goto(s.url + '/@newcomer');
    await expect.poll(() => page.textContent('main')).toContain('New Comer');
    expect(await page.textContent('main')).toContain('Hello from the browser');
    expect(await page.locator('img[alt="An orange square"]').count()).toBeGreaterThan(0);
    await look(page, 'public-profile');
    const api = await (await fetch(`${s.url}/api/v1/accounts/lookup?acct=newcomer`)).json() as Record<string, string>;
    expect(api.display_name).toBe('New Comer');
    expect(api.avatar_description).toBe('An orange square');
    expect(api.avatar).not.toMatch(/missing/);
  });

  it('shows the settings pages to their owner, and none of them to a stranger', async () => {
    // Account portability's pages too: export, import, moving, deleting.
    for (const settings of ['preferences', 'account', 'applications', 'export', 'import', 'migration', 'delete']) {
      await page.goto(`${s.url}/settings/${settings}`);
      await look(page, `settings-${settings}`);
    }
    // A stranger sees none of them: each sends the browser to sign in.
    const stranger = await browser.newContext();
    const strangerPage = await stranger.newPage();
    for (const settings of ['export', 'import', 'migration', 'delete', 'exports/follows.csv']) {
      await strangerPage.goto(`${s.url}/settings/${settings}`);
      expect(new URL(strangerPage.url()).pathname, settings).toBe('/auth/sign_in');
      expect(await strangerPage.textContent('main')).not.toContain('newcomer');
    }
    await stranger.close();
  });

  it('resets a forgotten password from the mail, which signs the browser out', async () => {
    const other = await browser.newContext();
    const p2 = await other.newPage();
    await p2.goto(s.url + '/auth/sign_in');
    await p2.getByRole('link', { name: 'Forgot your password?' }).click();
    await p2.waitForURL('**/auth/password/new');
    await look(p2, 'password-new');
    await p2.getByLabel('E-mail address').fill('newcomer@example.com');
    await p2.getByRole('button', { name: 'Send the link' }).click();
    await expect.poll(() => p2.textContent('main')).toContain('If an account uses that address');
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('newcomer@example.com') && /password/i.test(m.subject));
    await p2.goto(linkIn(mail.text, '/auth/password/edit'));
    await look(p2, 'password-edit');
    await p2.getByLabel('New password', { exact: true }).fill('brand-new-password');
    await p2.getByLabel('New password again').fill('brand-new-password');
    await p2.getByRole('button', { name: 'Change my password' }).click();
    await expect.poll(() => p2.textContent('main')).toContain('Your password is changed');
    await other.close();
    // The first browser was signed out with everything else.
    await page.goto(s.url + '/settings/profile');
    await page.waitForURL('**/auth/sign_in**');
    await page.getByLabel('E-mail address').fill('newcomer@example.com');
    await page.getByLabel('Password').fill('brand-new-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL('**/auth/sign_in/two_factor');
    // A recovery code this time, as after losing the phone.
    await page.getByLabel(/Code from your authenticator app/).fill(recoveryCodes[0]!);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL('**/settings/profile');
    await look(page, 'signed-in-again');
    expect(problems).toEqual([]);
    await person.close();
  });
});
