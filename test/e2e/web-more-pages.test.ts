import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { artifactsDir, expectAccessible, testBrowser, screenshot, type TestBrowser } from '../helpers/browser.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { insertIdentity } from '../../storage/identities.ts';
import { unsubscribeToken } from '../../services/notification-emails.ts';
import { OIDC_PROVIDER } from '../../services/oidc.ts';

/**
 * Pages walked in Chromium and checked with axe (no serious or critical fault) on a desktop and a phone-sized screen,
 * in light and dark colours, screenshots kept: the operators' announcements, appeals and webhooks; a person's strikes
 * and the appeal form; invites and an invite's sign-up page; remote interaction from a public post and profile; mail
 * settings and the unsubscribe page; single sign-on in account settings (linked and not, with the provider never
 * asked); muted and blocked accounts and blocked servers; a filtered notification request and the list's bulk forms.
 * Each is reached by clicking where a person would, and its forms are used, errors included.
 */
let s: TestServer & { url: string };
let browser: TestBrowser;
let dir: string;
let boss: TestUser;
let person: TestUser;
let friend: TestUser;
let pest: TestUser;
let stranger: TestUser;
let newcomer: TestUser;
let postPath = '';
let postUri = '';
let strikeId = '';
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
const pagesOf: Record<'boss' | 'person' | 'visitor', string[]> = { boss: [], person: [], visitor: [] };

const api = async (who: TestUser, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
  return res.json() as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
};
const userIdOf = async (who: TestUser) => (await s.ctx.db.query<{ id: string }>('SELECT id::text FROM users WHERE account_id = $1', [who.id])).rows[0]!.id;

beforeAll(async () => {
  // Single sign-on is configured with a provider that is never reached: its settings render without asking it.
  s = await startListeningServer({
    INSTANCE_TITLE: 'Walked Social', OIDC_ENABLED: 'true', OIDC_DISPLAY_NAME: 'Example ID', OIDC_ISSUER: 'http://127.0.0.1:9/',
    OIDC_CLIENT_ID: 'fedi', OIDC_CLIENT_SECRET: 'never-used-secret',
  });
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  const people = (u: string) => registerUser(s.app, client, u);
  [boss, person, friend, pest, stranger, newcomer] = await Promise.all([
    registerUser(s.app, client, 'boss', 'read write follow admin:read admin:write'),
    people('person'), people('friend'), people('pest'), people('stranger'), people('newcomer'),
  ]);
  await makeAdmin(s, boss);
  const post = await api(person, 'POST', '/api/v1/statuses', { status: 'A public post to interact with' });
  postPath = `/@person/${post.id}`;
  postUri = post.uri;
  // Two warnings with a text: one to appeal, one to read with its form.
  await api(boss, 'POST', `/api/v1/admin/accounts/${person.id}/action`, { type: 'none', text: 'Please keep replies civil.' });
  await api(boss, 'POST', `/api/v1/admin/accounts/${person.id}/action`, { type: 'none', text: 'Second reminder about tone.' });
  await api(person, 'POST', `/api/v1/accounts/${friend.id}/mute`, { duration: 86_400, notifications: false });
  await api(person, 'POST', `/api/v1/accounts/${pest.id}/block`);
  await api(person, 'PUT', '/api/v2/notifications/policy', { for_not_following: 'filter' });
  await api(stranger, 'POST', '/api/v1/statuses', { status: '@person hello from a stranger' });
  await api(stranger, 'POST', '/api/v1/statuses', { status: '@person and again' });
  await api(newcomer, 'POST', '/api/v1/statuses', { status: '@person hi, I am new here' });
  await insertIdentity(s.ctx.db, { provider: OIDC_PROVIDER, uid: 'boss-at-example-id', userId: await userIdOf(boss) });
  browser = await testBrowser();
  dir = await artifactsDir('web-more-pages');
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

async function signIn(context: BrowserContext, who: TestUser): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${s.url}/auth/sign_in`);
  await page.getByLabel('E-mail address').fill(who.email);
  await page.getByLabel('Password', { exact: true }).fill(who.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/auth/sign_in'));
  return page;
}

/** Axe on the page as it is, a screenshot, and (on a phone) nothing wider than the screen. */
async function look(page: Page, label: string, width: number) {
  await expectAccessible(page, label);
  await screenshot(page, dir, label);
  const wide = await page.evaluate<string[]>(`[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > ${width} + 0.5)
    .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).split(' ').join('.') : '')).slice(0, 5)`);
  expect(await page.evaluate<number>('document.documentElement.scrollWidth'), `${label}: wider than the screen (${wide.join(', ')})`).toBeLessThanOrEqual(width);
}

/** Remembers the page the walk is on, to be looked at in every size and colour afterwards. */
function seen(who: keyof typeof pagesOf, page: Page) {
  const u = new URL(page.url());
  const path = `${u.pathname}${u.search}`;
  if (!pagesOf[who].includes(path)) pagesOf[who].push(path);
}

describe('pages walked in Chromium with axe', () => {
  it('operators write an announcement, add a webhook and make an invite', async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await signIn(context, boss);
    await page.goto(`${s.url}/admin`);
    await page.getByRole('link', { name: 'Announcements' }).first().click();
    await page.getByLabel(/^Text/).fill('The server moves to a new machine on Sunday.');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('The server moves to a new machine on Sunday.').waitFor();
    await look(page, 'desktop-light-admin-announcements-written', DESKTOP.width);
    seen('boss', page);

    await page.getByRole('link', { name: 'Webhooks' }).first().click();
    await page.getByLabel(/^URL/).fill('http://127.0.0.1:9/hooks');
    await page.locator('form[action="/admin/webhooks"]').getByLabel('report.created').check();
    await page.getByRole('button', { name: 'Add' }).click();
    await page.getByRole('heading', { name: 'http://127.0.0.1:9/hooks' }).waitFor();
    seen('boss', page);

    await page.goto(`${s.url}/invites`);
    await page.getByLabel('Number of uses').selectOption('1');
    await page.getByRole('button', { name: 'Make an invite link' }).click();
    const link = (await page.locator('td code').first().textContent())!;
    expect(link).toMatch(/\/invite\/\w+$/);
    seen('boss', page);
    pagesOf.visitor.push(new URL(link).pathname);

    // A linked single sign-on, with its unlink form; an interaction authorised here.
    await page.goto(`${s.url}/settings/account`);
    await page.getByRole('button', { name: 'Unlink Example ID' }).waitFor();
    seen('boss', page);
    await page.goto(`${s.url}/authorize_interaction?uri=${encodeURIComponent(postUri)}`);
    await page.getByText('A public post to interact with').waitFor();
    seen('boss', page);
    await context.close();
  }, 120_000);

  it('a person reads a strike and appeals it; the operators see the appeal', async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await signIn(context, person);
    await page.goto(`${s.url}/settings/profile`);
    await page.getByRole('link', { name: 'Strikes' }).click();
    seen('person', page);
    await page.locator('.card h2 a[href^="/disputes/strikes/"]').first().click();
    await page.waitForURL(/\/disputes\/strikes\/\d+$/);
    strikeId = /\/disputes\/strikes\/(\d+)/.exec(page.url())![1]!;
    await page.getByLabel('Why the decision should be overturned').fill('I was quoting someone else.');
    await page.getByRole('button', { name: 'Send appeal' }).click();
    await page.getByText('I was quoting someone else.').waitFor();
    seen('person', page);
    // The other strike, with its form still open.
    await page.goto(`${s.url}/disputes/strikes`);
    const other = page.locator(`a[href^="/disputes/strikes/"]:not([href="/disputes/strikes/${strikeId}"])`).first();
    await other.click();
    await page.getByLabel('Why the decision should be overturned').waitFor();
    seen('person', page);
    await context.close();

    const operators = await browser.newContext({ viewport: DESKTOP });
    const admin = await signIn(operators, boss);
    await admin.goto(`${s.url}/admin/disputes/appeals`);
    await admin.getByText('I was quoting someone else.').waitFor();
    seen('boss', admin);
    await operators.close();
  }, 120_000);

  it('a person sees whom they muted and blocked, blocks a server (a wrong name first), and settles filtered notifications in bulk', async () => {
    const context = await browser.newContext({ viewport: PHONE });
    const page = await signIn(context, person);
    await page.goto(`${s.url}/home`);
    await page.getByRole('link', { name: 'Muted', exact: true }).click();
    await page.getByText('@friend').first().waitFor();
    seen('person', page);
    await page.getByRole('link', { name: 'Blocked accounts' }).click();
    await page.getByRole('button', { name: 'Unblock @pest' }).waitFor();
    seen('person', page);

    await page.getByRole('link', { name: 'Blocked servers' }).click();
    await page.getByLabel('Server\'s domain').fill('not a domain!');
    await page.getByRole('button', { name: 'Block', exact: true }).click();
    await page.getByText('Domain is not a valid domain name').waitFor();
    await look(page, 'phone-light-domain-blocks-refused', PHONE.width);
    await page.getByLabel('Server\'s domain').fill('spam.example');
    await page.getByRole('button', { name: 'Block', exact: true }).click();
    await page.waitForURL(/\/domain_blocks$/);
    await page.getByRole('button', { name: 'Unblock spam.example' }).waitFor();
    seen('person', page);
    expect(await api(person, 'GET', '/api/v1/domain_blocks')).toEqual(['spam.example']);

    // Filtered notifications: one sender's page, then the rest ticked and accepted at once.
    await page.goto(`${s.url}/notifications`);
    await page.getByRole('link', { name: 'Filtered notifications' }).click();
    await vi.waitFor(async () => {
      await page.reload();
      expect(await page.locator('.notification-request').count()).toBe(2);
    }, { timeout: 8000 });
    seen('person', page);
    await page.getByRole('link', { name: /notifications from @stranger/ }).click();
    await page.getByText('and again').waitFor();
    seen('person', page);
    await page.getByRole('link', { name: 'All filtered notifications' }).click();
    await page.getByRole('button', { name: 'Accept the ticked' }).click();
    await page.getByText('Choose the requests to accept.').waitFor();
    await look(page, 'phone-light-notification-requests-none-ticked', PHONE.width);
    // The stranger's request stays, for its page to be looked at again below.
    await page.getByLabel('Choose @newcomer').check();
    await page.getByRole('button', { name: 'Accept the ticked' }).click();
    await page.waitForURL(/\/notifications\/requests$/);
    expect(await page.locator('.notification-request').count()).toBe(1);
    await page.getByLabel('Choose @stranger').waitFor();
    await page.goto(`${s.url}/notifications`);
    await page.getByText('hi, I am new here').first().waitFor();

    // Mail settings; single sign-on offered to link, its provider not asked.
    await page.goto(`${s.url}/settings/profile`);
    await page.getByRole('link', { name: 'Mail' }).click();
    seen('person', page);
    await page.goto(`${s.url}/settings/account`);
    await page.getByRole('button', { name: 'Link Example ID' }).waitFor();
    seen('person', page);
    await context.close();
  }, 120_000);

  it('a visitor presses Follow and Favourite on public pages, goes to remote interaction, and unsubscribes from a mail', async () => {
    const context = await browser.newContext({ viewport: PHONE });
    const page = await context.newPage();
    await page.goto(`${s.url}${postPath}`);
    await page.getByRole('link', { name: 'favourite', exact: true }).click();
    await page.waitForURL(/\/remote_interaction\?/);
    await page.getByLabel('Your handle or server').fill('not a handle');
    await page.getByRole('button', { name: 'Go to your server' }).click();
    await page.locator('#acct-error').waitFor();
    await look(page, 'phone-light-remote-interaction-refused', PHONE.width);
    await page.goto(`${s.url}${postPath}`);
    await page.getByRole('link', { name: 'reply', exact: true }).click();
    seen('visitor', page);
    await page.goto(`${s.url}/@person`);
    await page.getByRole('link', { name: 'follow from your server' }).click();
    await page.getByLabel('Your handle or server').waitFor();
    seen('visitor', page);
    // The plain Follow leads to sign in here, and back.
    await page.goto(`${s.url}/@person`);
    await page.getByRole('link', { name: /^Follow/ }).first().click();
    await page.waitForURL(/\/auth\/sign_in\?return_to=/);
    seen('visitor', page);

    const token = unsubscribeToken(s.config, await userIdOf(person), 'mention');
    await page.goto(`${s.url}/unsubscribe?token=${encodeURIComponent(token)}`);
    seen('visitor', page);
    await look(page, 'phone-light-unsubscribe', PHONE.width);
    await page.getByRole('button', { name: 'Unsubscribe' }).click();
    await page.waitForURL(/\/unsubscribe\/done\//);
    await look(page, 'phone-light-unsubscribed', PHONE.width);
    await context.close();
  }, 120_000);

  // Each page once on a desktop in light colours and once on a phone in dark: the colours (contrast) and the width
  // (reflow, target sizes) are styled apart, so each of the four is checked without walking all four pairings, whose
  // axe runs were most of this file's time.
  for (const [size, viewport, colorScheme] of [['desktop', DESKTOP, 'light'], ['phone', PHONE, 'dark']] as const) {
    it(`every page walked, on a ${size} in ${colorScheme} colours`, async () => {
      expect(pagesOf.boss.length).toBeGreaterThanOrEqual(5);
      expect(pagesOf.person.length).toBeGreaterThanOrEqual(8);
      expect(pagesOf.visitor.length).toBeGreaterThanOrEqual(4);
      for (const who of ['boss', 'person', 'visitor'] as const) {
        const context = await browser.newContext({ viewport, colorScheme });
        const page = who === 'visitor' ? await context.newPage() : await signIn(context, who === 'boss' ? boss : person);
        for (const path of pagesOf[who]) {
          const res = await page.goto(`${s.url}${path}`);
          expect(res?.status(), path).toBeLessThan(400);
          await look(page, `${size}-${colorScheme}-${who}-${path}`, viewport.width);
        }
        await context.close();
      }
    }, 300_000);
  }
});
