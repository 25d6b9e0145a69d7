import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { readFile } from 'node:fs/promises';
import type { BrowserContext, Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { artifactsDir, testBrowser, screenshot, type TestBrowser } from '../helpers/browser.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { homeShardOf, streamChannels } from '../../services/stream-events.ts';

// A web client on another origin (another loopback port), driven in Chromium, using the server as Elk and Phanpy
// do: app registration, OAuth with PKCE through the server's own sign-in and authorize pages, the API and the
// streaming API cross-origin. The client is test/e2e/web-client/ (plain HTML and JS), served by a node:http server.

const EMAIL = 'webby@example.com';
const PASSWORD = 'webby-password-long';

let s: TestServer & { url: string };
let client: { server: Server; url: string };
let browser: TestBrowser;
let context: BrowserContext;
let shots: string;
/** What the browser complained about: console errors, page errors, failed requests. */
const problems: string[] = [];

async function startClientServer(): Promise<{ server: Server; url: string }> {
  const dir = new URL('./web-client/', import.meta.url);
  const files: Record<string, string> = {
    '/': 'index.html', '/callback': 'index.html', '/client.js': 'client.js', '/popup': 'popup.html', '/popup-callback': 'popup-callback.html',
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://client').pathname;
    const file = files[path];
    if (!file) {
      res.writeHead(path === '/favicon.ico' ? 204 : 404).end();
      return;
    }
    readFile(new URL(file, dir)).then((body) => {
      const type = file.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/html; charset=utf-8';
      res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
    }, () => res.writeHead(500).end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  [s, client, browser, shots] = await Promise.all([startListeningServer(), startClientServer(), testBrowser(), artifactsDir('web-client')]);
  expect(new URL(s.url).origin).not.toBe(new URL(client.url).origin);
  await registerLocalAccount(s.ctx.db, { username: 'webby', email: EMAIL, password: PASSWORD, agreement: true, confirmed: true, approved: true });
  context = await browser.newContext();
  context.on('console', (m) => {
    if (m.type() === 'error' || /CORS|Access-Control/i.test(m.text())) problems.push(`console ${m.type()} at ${m.page()?.url()}: ${m.text()}`);
  });
  context.on('weberror', (e) => problems.push(`page error: ${e.error().message}`));
  context.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  if (client) {
    const closed = new Promise((resolve) => client.server.close(resolve));
    client.server.closeAllConnections();
    await closed;
  }
  await s?.close();
});

/** Waits for a selector; on time-out, says what the client logged and what the browser complained about. */
async function waitFor(page: Page, selector: string, timeout = 10_000): Promise<void> {
  try {
    await page.waitForSelector(selector, { timeout, state: 'attached' });
  } catch (err) {
    const log = await page.locator('#log').textContent().catch(() => '(no log)');
    const error = await page.locator('#error').textContent().catch(() => '');
    throw new Error(`${(err as Error).message.split('\n')[0]}\nat ${page.url()}\nclient error: ${error}\nclient log:\n${log}\nbrowser problems:\n${problems.join('\n')}`);
  }
}

const ids = (page: Page, selector: string) => page.locator(selector).evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));

/** The server holds the account's home stream in Redis (its channel and its shard's): events published now reach the socket. */
async function homeStreamSubscribed(accountId: string): Promise<boolean> {
  const names = [streamChannels.home(accountId), streamChannels.homeShard(homeShardOf(accountId))].map((c) => s.ctx.events.channelName(c));
  const counts = (await s.ctx.redis.pubsub('NUMSUB', ...names)) as unknown[];
  return counts.filter((_, i) => i % 2 === 1).every((n) => Number(n) > 0);
}

describe('a web client on another origin (as Elk and Phanpy)', () => {
  it('registers, signs in with PKCE through the server\'s pages, posts, streams and pages the home timeline cross-origin', async () => {
    const page = await context.newPage();
    await page.goto(`${client.url}/`);
    await waitFor(page, 'body[data-ready="true"]');
    await screenshot(page, shots, '1-client');

    // The client registers itself and sends the browser to the server's authorize page, which asks for a sign-in.
    await page.fill('#server', s.url);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.origin === s.url && url.pathname === '/auth/sign_in');
    const returnTo = new URL(page.url()).searchParams.get('return_to') ?? '';
    expect(returnTo).toMatch(/^\/oauth\/authorize\?/);
    const asked = new URLSearchParams(returnTo.slice(returnTo.indexOf('?') + 1));
    expect(asked.get('code_challenge_method')).toBe('S256');
    expect(asked.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(asked.get('redirect_uri')).toBe(`${client.url}/callback`);
    await screenshot(page, shots, '2-sign-in');

    await page.fill('#email', EMAIL);
    await page.fill('#password', PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.origin === s.url && url.pathname === '/oauth/authorize');
    await page.getByRole('heading', { name: 'Authorize Test Web Client' }).waitFor();
    expect(await page.textContent('body')).toContain('@webby');
    await screenshot(page, shots, '3-authorize');

    // Approving sends the browser back to the client, which checks the state and trades the code for a token.
    await page.getByRole('button', { name: 'Authorize' }).click();
    await page.waitForURL((url) => url.origin === client.url);
    await waitFor(page, '#account[data-username]');
    expect(await page.getAttribute('#account', 'data-username')).toBe('webby');
    expect(await page.textContent('#account')).toBe('@webby');
    // The code left the address bar; the token lives in the client's own storage.
    expect(new URL(page.url()).search).toBe('');
    const accountId = (await page.getAttribute('#account', 'data-id'))!;

    // Both ways Mastodon's web clients give the streaming server their token are accepted.
    await waitFor(page, '#socket[data-state="open"]');
    await waitFor(page, '#socket-query[data-state="open"]');

    const compose = async (text: string, n: number) => {
      await page.fill('#text', text);
      await page.getByRole('button', { name: 'Post' }).click();
      await waitFor(page, `#posted li:nth-child(${n})`);
      return (await page.getAttribute(`#posted li:nth-child(${n})`, 'data-id'))!;
    };
    const first = await compose('First post, from another origin', 1);

    // Events published before the server has subscribed to the account's stream in Redis would not be heard.
    await expect.poll(() => homeStreamSubscribed(accountId), { timeout: 5000 }).toBe(true);
    const second = await compose('Second post, which the stream brings back', 2);
    await waitFor(page, `#streamed li[data-via="protocol"][data-id="${second}"]`);
    await waitFor(page, `#streamed li[data-via="query"][data-id="${second}"]`);
    expect(await page.textContent(`#streamed li[data-via="protocol"][data-id="${second}"]`)).toBe('Second post, which the stream brings back');

    // A retry of the first post with its Idempotency-Key (a custom header, so a preflight) gives the same post back.
    const session = JSON.parse(await page.evaluate(() => sessionStorage.getItem('session') ?? 'null')) as { token: string };
    const key = (await page.getAttribute('#posted li:nth-child(1)', 'data-idempotency-key'))!;
    const retried = await page.evaluate(async ({ server, token, key }) => {
      const res = await fetch(`${server}/api/v1/statuses`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify({ status: 'First post, from another origin', visibility: 'public' }),
      });
      return { status: res.status, id: ((await res.json()) as { id: string }).id };
    }, { server: s.url, token: session.token, key });
    expect(retried).toEqual({ status: 200, id: first });

    // The home timeline, one post a page: the next page is named only by the Link header, which CORS must expose.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await waitFor(page, '#timeline[data-pages="1"] li');
    expect(await ids(page, '#timeline li')).toEqual([second]);
    expect(await page.getAttribute('#timeline', 'data-last-status')).toBe('200');
    const link = (await page.getAttribute('#timeline', 'data-link')) ?? '';
    expect(link).toMatch(/rel="next"/);
    const next = (await page.getAttribute('#more', 'data-next'))!;
    expect(new URL(next).origin).toBe(s.url);
    expect(new URL(next).searchParams.get('max_id')).toBe(second);

    await page.getByRole('button', { name: 'Load more' }).click();
    await waitFor(page, '#timeline[data-pages="2"]');
    expect(await page.getAttribute('#timeline', 'data-last-status')).toBe('200');
    expect(await ids(page, '#timeline li')).toEqual([second, first]);

    expect(await page.textContent('#error')).toBe('');
    await screenshot(page, shots, '4-final');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('keeps sign-in and settings same-origin: a page on another origin cannot read them', async () => {
    problems.length = 0;
    const page = await context.newPage();
    await page.goto(`${client.url}/`);
    await waitFor(page, 'body[data-ready]');
    const results = await page.evaluate(async (server) => {
      const attempt = async (url: string, init: RequestInit) => {
        try {
          const res = await fetch(url, init);
          return `answered ${res.status}`;
        } catch (err) {
          return `${(err as Error).name}: ${(err as Error).message}`;
        }
      };
      // A WebSocket with a token the server does not know is refused before it opens.
      const socket = await new Promise<string>((resolve) => {
        const ws = new WebSocket(`${server.replace(/^http/, 'ws')}/api/v1/streaming?stream=user`, 'not-a-token');
        ws.onopen = () => { resolve('opened'); ws.close(); };
        ws.onclose = () => resolve('closed');
      });
      return {
        // The browser still holds its session cookie from signing in: the request goes, the answer stays unreadable.
        settings: await attempt(`${server}/settings/profile`, { credentials: 'include' }),
        signIn: await attempt(`${server}/auth/sign_in`, { method: 'POST', credentials: 'include', body: new URLSearchParams({ email: 'webby@example.com', password: 'guess' }) }),
        preflighted: await attempt(`${server}/auth/sign_in`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }),
        api: await attempt(`${server}/api/v1/instance`, {}),
        socket,
      };
    }, s.url);
    expect(results.settings).toMatch(/^TypeError: /);
    expect(results.signIn).toMatch(/^TypeError: /);
    expect(results.preflighted).toMatch(/^TypeError: /);
    expect(results.api).toBe('answered 200');
    expect(results.socket).toBe('closed');
    // And the browser says why: CORS, the kind of complaint the first test found none of.
    expect(problems.some((p) => /\/settings\/profile.*CORS policy/.test(p))).toBe(true);
    await page.close();
  });

  it('signs in through a popup, as Phanpy does: the sign-in and authorize pages keep the popup tied to its opener', async () => {
    const res = await fetch(`${s.url}/api/v1/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Popup Client', redirect_uris: `${client.url}/popup-callback`, scopes: 'read write' }),
    });
    const app = (await res.json()) as { client_id: string; client_secret: string };
    const authorize = `${s.url}/oauth/authorize?${new URLSearchParams({ client_id: app.client_id, redirect_uri: `${client.url}/popup-callback`, response_type: 'code', scope: 'read write', state: 'popup-state' })}`;
    // A browser that is not signed in yet: the popup goes through the sign-in page first.
    const fresh = await browser.newContext();
    try {
      const page = await fresh.newPage();
      await page.goto(`${client.url}/popup?${new URLSearchParams({ authorize })}`);
      const [popup] = await Promise.all([page.waitForEvent('popup'), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
      await popup.waitForURL((url) => url.origin === s.url && url.pathname === '/auth/sign_in');
      await popup.getByLabel('E-mail address').fill(EMAIL);
      await popup.getByLabel('Password').fill(PASSWORD);
      await popup.getByRole('button', { name: 'Sign in', exact: true }).click();
      await popup.getByRole('heading', { name: 'Authorize Popup Client' }).waitFor();
      await popup.getByRole('button', { name: 'Authorize' }).click();
      await popup.waitForURL((url) => url.origin === client.url && url.pathname === '/popup-callback');
      expect(await popup.textContent('#result')).toBe('sent');
      await page.locator('#code[data-state="popup-state"]').waitFor({ timeout: 5000 });
      const code = (await page.textContent('#code'))!;
      // The code the opener received is the server's: it buys a token.
      const token = await fetch(`${s.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'authorization_code', code, client_id: app.client_id, client_secret: app.client_secret, redirect_uri: `${client.url}/popup-callback` }),
      });
      expect(token.status).toBe(200);
      expect(((await token.json()) as { access_token?: string }).access_token).toBeTruthy();
    } finally {
      await fresh.close();
    }
  });
});
