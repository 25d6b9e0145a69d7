import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';

/**
 * A person who uses only the keyboard, in Chromium with the page's script: signs in with Tab and Enter, writes a
 * post (n, Ctrl+Enter), sees a new post arrive live on home and shows it, moves through home (j, k) with the focus
 * visible, favourites (f), replies (r), and opens the shortcuts' list (?). No mouse click anywhere; every page
 * checked with axe; no script error or CSP violation.
 */
let s: TestServer & { url: string };
let browser: TestBrowser;
let reader: TestUser;
let writer: TestUser;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  s = await startListeningServer({ INSTANCE_TITLE: 'Keyboard Social' });
  [reader, writer] = await registerUsers(s.app, 'reader', 'writer');
  expect((await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${writer.id}/follow`, headers: bearer(reader.token) })).statusCode).toBe(200);
  for (const text of ['First post of the writer', 'Second post of the writer']) {
    expect((await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(writer.token), payload: { status: text } })).statusCode).toBe(200);
  }
  browser = await testBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** Presses Tab until the focused element matches `selector` (at most `max` times); fails if it never does. */
async function tabTo(page: Page, selector: string, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate<boolean>(`document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** What has the focus, and whether the browser shows it (`:focus-visible` with an outline that is drawn). */
const focused = (page: Page) => page.evaluate<{ tag: string; id: string; text: string; post: string; visible: boolean; outline: boolean }>(`(() => {
  const el = document.activeElement;
  const style = el ? getComputedStyle(el) : null;
  return {
    tag: el ? el.tagName.toLowerCase() : '', id: el ? el.id : '', text: el ? (el.textContent || '').trim().slice(0, 80) : '',
    post: (el && el.closest('article.status') || {}).id || '', visible: !!el && el.matches(':focus-visible'),
    outline: style ? style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0 : false,
  };
})()`);

const api = async (method: 'GET' | 'POST', url: string, who: TestUser, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return res.json() as Json;
};

describe('the signed-in pages by keyboard alone', () => {
  it('signs in, posts, reads home as it changes, favourites and replies without a mouse', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(e.message));

    // Sign in: Tab to each field, type, Enter.
    await page.goto(`${s.url}/auth/sign_in`);
    await tabTo(page, 'input[type=email], input[name=email]');
    await page.keyboard.type(reader.email);
    await tabTo(page, 'input[type=password]');
    await page.keyboard.type(reader.password);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${s.url}/home`);
    await page.locator('html[data-enhanced="true"]').waitFor({ state: 'attached' });
    await expectAccessible(page, 'home');

    // n: the compose box; Ctrl+Enter sends it.
    await page.keyboard.press('n');
    expect((await focused(page)).id).toBe('status-text');
    await page.keyboard.type('Written with the keyboard alone');
    await page.keyboard.press('Control+Enter');
    await page.waitForURL(/\/home#s-\d+$/);
    const mine = /#s-(\d+)$/.exec(page.url())![1]!;
    expect((await api('GET', `/api/v1/statuses/${mine}`, reader)).content).toContain('Written with the keyboard alone');

    // A post arrives while home is open: a button offers it, and Enter on it shows it, focused.
    await page.locator('[data-stream][data-live="open"]').first().waitFor({ state: 'attached' });
    const fresh = await api('POST', '/api/v1/statuses', writer, { status: 'Arrived while you were reading' });
    const banner = page.getByRole('button', { name: 'Show 1 new post' });
    await banner.waitFor();
    await expectAccessible(page, 'home with a new post waiting');
    await tabTo(page, '.live-banner button');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await focused(page)).post, { timeout: 20_000 }).toBe(`s-${fresh.id}`);
    expect(await page.locator(`#s-${fresh.id}`).textContent()).toContain('Arrived while you were reading');

    // j and k move from post to post, the focus drawn.
    const order = await page.locator('main article.status').evaluateAll((els) => els.map((e) => e.id));
    expect(order[0]).toBe(`s-${fresh.id}`);
    await page.keyboard.press('j');
    let now = await focused(page);
    expect(now.post).toBe(order[1]);
    expect(now.tag).toBe('article');
    expect(now.visible && now.outline).toBe(true);
    await page.keyboard.press('j');
    expect((await focused(page)).post).toBe(order[2]);
    await page.keyboard.press('k');
    expect((await focused(page)).post).toBe(order[1]);

    // f on the writer's post: favourited in place, the focus staying on its (now "Undo favourite") button.
    const target = order.find((id) => id !== `s-${mine}` && id !== `s-${fresh.id}`)!;
    while ((await focused(page)).post !== target) await page.keyboard.press('j');
    await page.keyboard.press('f');
    await expect.poll(async () => (await focused(page)).text, { timeout: 20_000 }).toContain('Undo favourite');
    now = await focused(page);
    expect(now.post).toBe(target);
    expect(now.visible).toBe(true);
    expect((await api('GET', `/api/v1/statuses/${target.slice(2)}`, reader)).favourited).toBe(true);

    // r: the post's page with the reply box focused; Ctrl+Enter sends the reply.
    await page.keyboard.press('r');
    await page.waitForURL(/\/@writer\/\d+#compose$/);
    await expect.poll(async () => (await focused(page)).id, { timeout: 20_000 }).toBe('status-text');
    await expectAccessible(page, 'thread');
    await page.keyboard.type('A reply by keyboard');
    await page.keyboard.press('Control+Enter');
    await page.waitForURL(/#s-\d+$/);
    const replyId = /#s-(\d+)$/.exec(page.url())![1]!;
    const reply = await api('GET', `/api/v1/statuses/${replyId}`, reader);
    expect(reply.in_reply_to_id).toBe(target.slice(2));
    expect(reply.content).toContain('A reply by keyboard');

    // ?: the shortcuts, in a dialog that Escape closes.
    await page.keyboard.press('?');
    const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Favourite the post');
    await expectAccessible(page, 'shortcuts');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });

    // /: search, its box focused.
    await page.keyboard.press('/');
    await page.waitForURL(/\/search#search-q$/);
    await expect.poll(async () => (await focused(page)).id, { timeout: 20_000 }).toBe('search-q');

    expect(problems).toEqual([]);
    await context.close();
  });

  it('shows a new notification live on the notifications page', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${s.url}/auth/sign_in?return_to=%2Fnotifications`);
    await page.getByLabel('E-mail address').fill(writer.email);
    await page.getByLabel('Password').fill(writer.password);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${s.url}/notifications`);
    await page.locator('[data-stream][data-live="open"]').first().waitFor({ state: 'attached' });
    const theirs = await api('POST', '/api/v1/statuses', writer, { status: 'Boost this one' });
    await api('POST', `/api/v1/statuses/${theirs.id}/reblog`, reader);
    const banner = page.getByRole('button', { name: 'Show 1 new notification' });
    await banner.waitFor();
    await tabTo(page, '.live-banner button');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('ol.notifications > li').first().textContent(), { timeout: 20_000 }).toContain('boosted your post');
    await expectAccessible(page, 'notifications');
    await context.close();
  });
});
