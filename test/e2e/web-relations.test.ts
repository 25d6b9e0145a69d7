import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { fakeService, type FakeService } from '../helpers/translation-service.ts';

/**
 * A profile's relationship forms, filtered notifications and their rules, followed and featured hashtags and a
 * translated post, in Chromium on a phone-sized screen, in light and dark colours: each done by clicking, with
 * scripts on (the forms work the same without them: test/web/client-relations.test.ts), each page checked with axe
 * and for fitting 390 px.
 */
let s: TestServer & { url: string };
let libre: FakeService;
let browser: TestBrowser;
let me: TestUser;
let friend: TestUser;
let stranger: TestUser;
const PHONE = { width: 390, height: 844 };
let germanPath = '';

beforeAll(async () => {
  libre = await fakeService('libretranslate');
  s = await startListeningServer({ INSTANCE_TITLE: 'Relations Social', LIBRE_TRANSLATE_ENDPOINT: libre.url });
  const client = await createApp(s.app);
  [me, friend, stranger] = await Promise.all([registerUser(s.app, client, 'keeper'), registerUser(s.app, client, 'friend'), registerUser(s.app, client, 'stranger')]);
  const api = (who: TestUser, method: 'POST' | 'PUT', url: string, payload?: object) => s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect((await api(me, 'POST', `/api/v1/accounts/${friend.id}/follow`)).statusCode).toBe(200);
  expect((await api(friend, 'POST', `/api/v1/accounts/${me.id}/follow`)).statusCode).toBe(200);
  const german = (await api(friend, 'POST', '/api/v1/statuses', { status: 'Guten Morgen #garten', language: 'de' })).json();
  germanPath = `/@friend/${german.id}`;
  expect((await api(me, 'POST', '/api/v1/statuses', { status: 'My #garden in spring' })).statusCode).toBe(200);
  expect((await api(me, 'PUT', '/api/v2/notifications/policy', { for_not_following: 'filter' })).statusCode).toBe(200);
  expect((await api(stranger, 'POST', '/api/v1/statuses', { status: '@keeper hello from someone you do not follow' })).statusCode).toBe(200);
  browser = await testBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
  await libre?.close();
});

async function look(page: Page, label: string) {
  await expectAccessible(page, label);
  expect(await page.evaluate<number>('document.documentElement.scrollWidth'), `${label}: wider than the screen`).toBeLessThanOrEqual(PHONE.width);
}

describe('relations on a phone', () => {
  it('mutes, notes and rings the bell on a profile, settles a filtered notification, follows and features tags, translates a post; every page in light and dark', async () => {
    const context = await browser.newContext({ viewport: PHONE });
    const page = await context.newPage();
    await page.goto(`${s.url}/auth/sign_in`);
    await page.getByLabel('E-mail address').fill(me.email);
    await page.getByLabel('Password').fill(me.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/(home|@keeper)$/);

    // A profile: the bell, a note, a mute for a day with notifications still coming.
    await page.goto(`${s.url}/@friend`);
    await expect.poll(() => page.locator('.relationship-states').textContent()).toContain('Follows you');
    await page.getByRole('button', { name: /^Notify me of new posts/ }).click();
    await page.getByRole('button', { name: /^Notify me of new posts/, pressed: true }).waitFor();
    await page.getByText('Private note').click();
    await page.getByLabel('Note, seen only by you').fill('Neighbour, two doors down');
    await page.getByRole('button', { name: 'Save note' }).click();
    await page.waitForURL(/\/@friend$/);
    expect(await page.getByLabel('Note, seen only by you').inputValue()).toBe('Neighbour, two doors down');
    await page.getByText('Mute @friend').click();
    await page.getByLabel('For how long').selectOption({ label: '1 day' });
    await page.getByLabel('Hide their notifications too').uncheck();
    await page.getByRole('button', { name: 'Mute', exact: true }).click();
    await page.getByRole('button', { name: /^Unmute/ }).waitFor();
    await look(page, 'profile with a mute');

    // Filtered notifications: the stranger's mention waits; accepting it moves it to the notifications.
    await page.goto(`${s.url}/notifications`);
    await page.getByRole('link', { name: 'Filtered notifications' }).click();
    await vi.waitFor(async () => {
      await page.reload();
      expect(await page.locator('.notification-request').count()).toBe(1);
    }, { timeout: 5000 });
    await look(page, 'filtered notifications');
    await page.getByRole('button', { name: /^Accept @/ }).click();
    await page.getByText('Nothing kept aside.').waitFor();
    await page.goto(`${s.url}/notifications`);
    await page.getByText('hello from someone you do not follow').first().waitFor();

    // Hashtags: follow one from its page (the script sends the form), feature one used lately.
    await page.goto(`${s.url}/tags/garten`);
    await page.getByRole('button', { name: 'Follow #garten' }).click();
    await page.getByRole('button', { name: 'Unfollow #garten' }).waitFor();
    await page.goto(`${s.url}/featured_tags`);
    await page.getByRole('button', { name: 'Feature #garden' }).click();
    await page.getByRole('button', { name: 'Stop featuring #garden' }).waitFor();
    await page.goto(`${s.url}/followed_tags`);
    await page.getByRole('link', { name: '#garten' }).waitFor();

    // A post in German, translated into the person's English.
    await page.goto(`${s.url}${germanPath}`);
    await page.getByRole('button', { name: /^Translate/ }).click();
    await page.waitForURL(/\?translated=1/);
    expect(await page.locator('#translation').textContent()).toContain('en:Guten en:Morgen');
    await look(page, 'translated post');

    const pages = {
      light: ['/@friend', '/notifications/requests', '/notifications/policy', '/followed_tags', '/featured_tags', '/tags/garten', `${germanPath}?translated=1`],
      dark: ['/@friend', '/notifications/policy', '/featured_tags', `${germanPath}?translated=1`],
    };
    for (const theme of ['light', 'dark'] as const) {
      await page.goto(`${s.url}/settings/appearance`);
      await page.getByRole('radio', { name: theme === 'dark' ? 'Dark' : 'Light', exact: true }).check();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForURL('**/settings/appearance?notice=saved');
      for (const path of pages[theme]) {
        await page.goto(`${s.url}${path}`);
        // The folded forms open, so axe reads them too.
        for (const d of await page.locator('details.relationship-more').all()) await d.evaluate((el) => el.setAttribute('open', ''));
        await look(page, `${path} (${theme})`);
      }
    }

    // The notification rules, changed by their form.
    await page.goto(`${s.url}/notifications/policy`);
    await page.getByLabel('New accounts').selectOption('drop');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const policy = await s.app.inject({ method: 'GET', url: '/api/v2/notifications/policy', headers: bearer(me.token) });
    expect(policy.json()).toMatchObject({ for_new_accounts: 'drop', for_not_following: 'filter' });
    await context.close();
  }, 120_000);
});
