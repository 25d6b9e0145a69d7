import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';

/**
 * The collections and settings pages on a phone-sized screen, in light and dark colours: a list, a filter, a
 * development app and its one-time token, follow requests, the sessions; each checked with axe and for fitting
 * 390 px. Short: the HTTP-level tests (test/web/client-collections.test.ts, client-settings.test.ts) hold the rules.
 */
let s: TestServer & { url: string };
let browser: TestBrowser;
let me: TestUser;
let friend: TestUser;
const PHONE = { width: 390, height: 844 };

beforeAll(async () => {
  s = await startListeningServer({ INSTANCE_TITLE: 'Collections Social' });
  const client = await createApp(s.app);
  [me, friend] = await Promise.all([registerUser(s.app, client, 'keeper'), registerUser(s.app, client, 'friend')]);
  const api = (who: TestUser, url: string, payload?: object) => s.app.inject({ method: 'POST', url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect((await api(me, `/api/v1/accounts/${friend.id}/follow`)).statusCode).toBe(200);
  expect((await api(friend, '/api/v1/statuses', { status: 'Which season?', poll: { options: ['Spring', 'Autumn'], expires_in: 3600 } })).statusCode).toBe(200);
  browser = await testBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

async function look(page: Page, label: string) {
  await expectAccessible(page, label);
  expect(await page.evaluate<number>('document.documentElement.scrollWidth'), `${label}: wider than the screen`).toBeLessThanOrEqual(PHONE.width);
}

describe('collections and settings on a phone', () => {
  it('makes a list and a filter, an app with its token, and reads every page in light and dark', async () => {
    const context = await browser.newContext({ viewport: PHONE, userAgent: 'Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0' });
    const page = await context.newPage();
    await page.goto(`${s.url}/auth/sign_in`);
    await page.getByLabel('E-mail address').fill(me.email);
    await page.getByLabel('Password').fill(me.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/(home|@keeper)$/);

    await page.goto(`${s.url}/lists`);
    await page.getByLabel('Title').fill('Neighbours');
    await page.getByRole('button', { name: 'Make the list' }).click();
    await page.waitForURL(/\/lists\/\d+$/);
    await page.getByLabel('Find people you follow').fill('friend');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('button', { name: /^Add/ }).click();
    await page.getByRole('button', { name: /^Remove/ }).waitFor();
    const listPath = new URL(page.url()).pathname;

    await page.goto(`${s.url}/filters`);
    await page.getByLabel('Title').fill('Weather');
    await page.getByLabel('Keywords', { exact: true }).fill('rain\nsnow');
    await page.getByRole('button', { name: 'Make the filter' }).click();
    await page.getByRole('link', { name: 'Weather' }).click();
    await page.waitForURL(/\/filters\/\d+$/);
    const filterPath = new URL(page.url()).pathname;

    await page.goto(`${s.url}/settings/development`);
    await page.getByLabel('Name').fill('Phone bot');
    await page.getByRole('button', { name: 'Make the application' }).click();
    await page.waitForURL(/\/settings\/development\/\d+$/);
    expect(await page.locator('code.token').nth(2).textContent()).toMatch(/^[\w-]{40,}$/);
    await look(page, 'development-app-with-token');

    // Every page in light colours; in dark, those whose parts differ most (the axe runs are the test's cost).
    const pages = {
      light: ['/bookmarks', '/favourites', '/follow_requests', '/lists', listPath, '/filters', filterPath, '/settings/development', '/settings/account', '/settings/appearance', '/settings/preferences', '/settings/preferences/notifications', '/settings/two_factor'],
      dark: [listPath, filterPath, '/settings/account', '/settings/appearance'],
    };
    for (const theme of ['light', 'dark'] as const) {
      await page.goto(`${s.url}/settings/appearance`);
      await page.getByRole('radio', { name: theme === 'dark' ? 'Dark' : 'Light', exact: true }).check();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForURL('**/settings/appearance?notice=saved');
      expect(await page.evaluate('document.documentElement.className')).toBe(`theme-${theme}`);
      for (const path of pages[theme]) {
        await page.goto(`${s.url}${path}`);
        await look(page, `${path} (${theme})`);
      }
    }
    await page.goto(`${s.url}/settings/account`);
    expect(await page.locator('.sessions').textContent()).toContain('Firefox on Android');
    await context.close();
  });
});
