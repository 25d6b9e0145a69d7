import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { artifactsDir, expectAccessible, testBrowser, screenshot, type TestBrowser } from '../helpers/browser.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { registerLocalAccount } from '../../services/accounts.ts';

/**
 * A person who never opens an app reads and writes in the browser, on a phone-sized screen: from a stranger's Follow
 * on a profile to signing in, following, reading home, posting, replying in a thread, boosting, favouriting,
 * bookmarking, a notification, and a search; every page checked with axe. With scripts on, the buttons act without
 * a reload; then the key actions once more with JavaScript turned off, as plain forms.
 */
let s: TestServer & { url: string };
let browser: TestBrowser;
let writer: TestUser;
let shots = '';
let step = 0;
const READER = { email: 'reader@example.com', password: 'reader-password-long' };
const PHONE = { width: 390, height: 844 };

beforeAll(async () => {
  s = await startListeningServer({ INSTANCE_TITLE: 'Reading Social' });
  [writer] = await Promise.all([
    createApp(s.app).then((client) => registerUser(s.app, client, 'writer')),
    registerLocalAccount(s.ctx.db, { username: 'reader', email: READER.email, password: READER.password, agreement: true, approved: true, confirmed: true }),
    registerLocalAccount(s.ctx.db, { username: 'quiet', email: 'quiet@example.com', password: 'quiet-password-long', agreement: true, approved: true, confirmed: true }),
  ]);
  const res = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(writer.token), payload: { status: 'The first post of the writer #gardening' } });
  expect(res.statusCode).toBe(200);
  [browser, shots] = await Promise.all([testBrowser(), artifactsDir('web-reading')]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** Every page the person sees: no serious accessibility problem, nothing wider than the phone, and a screenshot. */
async function look(page: Page, label: string) {
  await expectAccessible(page, label);
  expect(await page.evaluate<number>('document.documentElement.scrollWidth'), `${label}: wider than the screen`).toBeLessThanOrEqual(PHONE.width);
  await screenshot(page, shots, `${String(++step).padStart(2, '0')}-${label}`);
}

const focus = (page: Page) => page.locator('article.status-focus');

async function signIn(page: Page) {
  await page.getByLabel('E-mail address').fill(READER.email);
  await page.getByLabel('Password').fill(READER.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

describe('reading and writing in the browser', () => {
  let context: BrowserContext;
  let page: Page;

  it('follows from a profile after signing in, posts, replies, boosts, favourites, bookmarks, reads a notification and searches', async () => {
    context = await browser.newContext({ viewport: PHONE });
    page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) problems.push(m.text()); });

    // A stranger on the writer's profile presses Follow: sign in first, then back to the profile.
    await page.goto(`${s.url}/@writer`);
    await page.getByRole('link', { name: /^Follow/ }).click();
    await page.waitForURL('**/auth/sign_in?return_to=*');
    await signIn(page);
    await page.waitForURL(`${s.url}/@writer`);
    await look(page, 'profile-signed-in');
    await page.getByRole('button', { name: /^Follow/ }).click();
    await page.getByRole('button', { name: /^Unfollow/ }).waitFor();

    // Home, from the navigation: a post written there comes back at once.
    await page.getByRole('navigation', { name: 'Site' }).getByRole('link', { name: 'Home' }).click();
    await page.waitForURL(`${s.url}/home`);
    await look(page, 'home');
    await page.getByLabel("What's on your mind?").fill('Hello from a browser, no app needed');
    await page.getByRole('button', { name: 'Post', exact: true }).click();
    await page.waitForURL(/\/home#s-\d+$/);
    await expect.poll(() => page.textContent('main')).toContain('Hello from a browser, no app needed');
    // The writer's earlier post reaches home once the follow's merge has run.
    await expect.poll(async () => { await page.reload(); return page.textContent('main'); }, { timeout: 10_000 }).toContain('The first post of the writer');

    // The writer's post in its thread: reply, boost, favourite, bookmark.
    await page.locator('article', { hasText: 'The first post of the writer' }).locator('a.status-time').click();
    await page.waitForURL(/\/@writer\/\d+$/);
    const reply = page.getByLabel('Your reply');
    expect(await reply.inputValue()).toBe('@writer ');
    await reply.fill('@writer What do you grow?');
    await page.getByRole('button', { name: 'Reply', exact: true }).click();
    await page.waitForURL(/\/@writer\/\d+#s-\d+$/);
    await expect.poll(() => page.locator('.thread-replies').textContent()).toContain('What do you grow?');
    // With scripts on, the buttons act without a reload (http/public/assets/client.js): the page's own state survives,
    // and the focus stays on the button pressed, now saying what it would undo.
    await page.locator('html[data-enhanced="true"]').waitFor({ state: 'attached' });
    await page.evaluate('window.stillThisPage = true');
    for (const [press, then] of [['Boost', 'Undo boost'], ['Favourite', 'Undo favourite'], ['Bookmark', 'Remove bookmark']]) {
      await focus(page).getByRole('button', { name: press, exact: true }).click();
      await focus(page).getByRole('button', { name: then }).waitFor();
      expect(await page.evaluate<string | null>('document.activeElement?.textContent ?? null'), problems.join('\n')).toBe(then);
    }
    expect(await page.evaluate('window.stillThisPage'), problems.join('\n')).toBe(true);
    expect(await focus(page).textContent()).toMatch(/1 boost[^s].*1 favourite[^s]/s);
    await look(page, 'thread-after-actions');

    // The writer favourites the reader's post: a notification, with the post.
    const mine = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=reader' });
    const posts = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${mine.json().id}/statuses`, headers: bearer(writer.token) });
    const hello = (posts.json() as { id: string; content: string }[]).find((p) => p.content.includes('Hello from a browser'))!;
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${hello.id}/favourite`, headers: bearer(writer.token) })).statusCode).toBe(200);
    await page.getByRole('link', { name: 'Notifications' }).click();
    await expect.poll(async () => { await page.reload(); return page.textContent('main'); }, { timeout: 10_000 }).toContain('favourited your post');
    await look(page, 'notifications');

    // Search a handle, and follow from the results.
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Handle, link, hashtag or words').fill('@quiet');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL('**/search?q=*');
    await page.locator('html[data-enhanced="true"]').waitFor({ state: 'attached' });
    await page.evaluate('window.stillThisPage = true');
    await page.getByRole('button', { name: 'Follow @quiet@' + new URL(s.url).host }).click();
    await page.getByRole('button', { name: /^Unfollow @quiet/ }).waitFor();
    expect(await page.evaluate('window.stillThisPage'), problems.join('\n')).toBe(true);
    await look(page, 'search');

    // The other pages share these templates (timeline, compose); axe on two of them.
    for (const path of ['/public/local', '/explore']) {
      await page.goto(`${s.url}${path}`);
      await look(page, path.slice(1).replace(/\//g, '-'));
    }
    // Keyboard: the first Tab reaches the skip link, which leads to the content.
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string | null>('document.activeElement?.textContent ?? null')).toBe('Skip to content');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('does the same with JavaScript turned off: everything is a form', async () => {
    const off = await browser.newContext({ viewport: PHONE, javaScriptEnabled: false });
    try {
      const p = await off.newPage();
      await p.goto(`${s.url}/auth/sign_in`);
      await signIn(p);
      await p.waitForURL(`${s.url}/home`);
      await p.getByLabel("What's on your mind?").fill('Written without any script');
      await p.getByLabel('Content warning (optional)').fill('A test');
      await p.getByLabel('Who can see it').selectOption('unlisted');
      await p.getByRole('button', { name: 'Post', exact: true }).click();
      await p.waitForURL(/\/home#s-\d+$/);
      const article = p.locator('article', { hasText: 'Content warning: A test' }).first();
      await article.getByRole('button', { name: 'Favourite', exact: true }).click();
      await p.locator('article', { hasText: 'Content warning: A test' }).first().getByRole('button', { name: 'Undo favourite' }).waitFor();
      // An over-long post is refused with the server's count, the text kept.
      await p.goto(`${s.url}/publish`);
      await p.getByLabel("What's on your mind?").fill('y'.repeat(501));
      await p.getByRole('button', { name: 'Post', exact: true }).click();
      await p.getByText('Your post has 501 characters; the limit is 500.').waitFor();
      expect(await p.getByLabel("What's on your mind?").inputValue()).toBe('y'.repeat(501));
      await p.goto(`${s.url}/@writer`);
      await p.getByRole('button', { name: /^Unfollow/ }).click();
      await p.getByRole('button', { name: /^Follow/ }).waitFor();
    } finally {
      await off.close();
    }
  });
});
