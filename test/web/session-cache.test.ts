import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { closeContext } from '../../server.ts';

/**
 * Signed-in pages resolve their session from a cache in each process; two server processes share one database and
 * Redis, and what one process changes is refused or shown by the other at once (as soon as Redis carries the word),
 * not when the cached copy's minute runs out.
 */
let a: TestServer;
let b: TestServer;
let modoToken: string;
const ids: Record<string, string> = {};
const password = (u: string) => `pw-${u}-long-enough`;

async function signedIn(server: TestServer, u: string): Promise<WebClient> {
  const web = new WebClient(server.app);
  expect((await web.signIn(`${u}@example.com`, password(u), '/home')).statusCode).toBe(303);
  return web;
}

/** The same browser (its cookies) asking the other process. */
function onOther(web: WebClient, server: TestServer): WebClient {
  const other = new WebClient(server.app);
  other.jar.take(web.jar.header().split('; ').filter(Boolean));
  return other;
}

/** Counts the queries of `fn` that read web sessions, on a server's pool. */
async function sessionReads(server: TestServer, fn: () => Promise<unknown>): Promise<number> {
  const db = server.ctx.db as unknown as { query: (...args: unknown[]) => unknown };
  const query = db.query;
  let reads = 0;
  db.query = function (this: unknown, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text ?? '';
    if (/FROM web_sessions/.test(text)) reads++;
    return query.apply(this, args);
  };
  try {
    await fn();
  } finally {
    db.query = query;
  }
  return reads;
}

const signedOut = (res: { statusCode: number; headers: Record<string, unknown> }) => res.statusCode === 303 && String(res.headers.location).startsWith('/auth/sign_in');

beforeAll(async () => {
  a = await startTestServer({ LOCAL_DOMAIN: 'cache.test' });
  b = await startTestServer({ DATABASE_URL: a.config.databaseUrl, REDIS_PREFIX: a.config.redisPrefix, DATA_DIR: a.config.dataDir, LOCAL_DOMAIN: a.config.localDomain, ROLE: 'web' });
  for (const u of ['modo', 'leaver', 'offender', 'editor', 'changer']) {
    const { account } = await registerLocalAccount(a.ctx.db, { username: u, email: `${u}@example.com`, password: password(u), agreement: true, approved: true, confirmed: true });
    ids[u] = account.id;
  }
  await runCli(['accounts', 'role', 'modo', 'Moderator'], a.ctx.db, () => {}, (what) => publishTokenInvalidation(a.ctx.redis, a.config.redisPrefix, what), { redis: a.ctx.redis, redisPrefix: a.config.redisPrefix });
  const client = await createApp(a.app, 'read write admin:read admin:write');
  modoToken = await authorizationCodeToken(a.app, client, 'modo@example.com', password('modo'), 'read admin:read admin:write');
}, 120_000);
afterAll(async () => {
  if (b) {
    await b.app.close();
    await closeContext(b.ctx);
  }
  await a?.close();
});

describe('the cache of web sessions', () => {
  it('reads a known session from memory: no query of web sessions for the next pages', async () => {
    const web = await signedIn(a, 'editor');
    expect((await web.get('/home')).statusCode).toBe(200);
    expect(await sessionReads(a, async () => {
      for (let i = 0; i < 3; i++) expect((await web.get('/home')).statusCode).toBe(200);
    })).toBe(0);
    // A form reads its person afresh.
    const page = await web.get('/settings/appearance');
    expect(await sessionReads(a, () => web.post('/settings/appearance', { theme: 'system', locale: '' }, page.body))).toBe(1);
  });

  it('refuses at once in another process a session ended in one', async () => {
    const web = await signedIn(a, 'leaver');
    const there = onOther(web, b);
    expect((await there.get('/home')).statusCode).toBe(200);
    expect((await there.get('/home')).statusCode).toBe(200); // now in b's cache
    const page = await web.get('/auth/sign_out');
    expect((await web.post('/auth/sign_out', {}, page.body)).statusCode).toBe(303);
    await expect.poll(async () => signedOut(await there.get('/home')), { timeout: 2000, interval: 20 }).toBe(true);
    // Nor does it come back once the other process read it again.
    expect(signedOut(await there.get('/home'))).toBe(true);
  });

  it('refuses at once in another process the session of an account suspended', async () => {
    const web = await signedIn(a, 'offender');
    const there = onOther(web, b);
    expect((await there.get('/home')).statusCode).toBe(200);
    expect((await web.get('/home')).statusCode).toBe(200);
    const act = await a.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${ids.offender}/action`, headers: bearer(modoToken), payload: { type: 'suspend', text: 'Spam.' } });
    expect(act.statusCode).toBe(200);
    // In the process that suspended and in the other one.
    await expect.poll(async () => signedOut(await there.get('/home')), { timeout: 2000, interval: 20 }).toBe(true);
    await expect.poll(async () => signedOut(await web.get('/home')), { timeout: 2000, interval: 20 }).toBe(true);
    // Their strikes stay theirs to read.
    expect((await there.get('/disputes/strikes')).statusCode).toBe(200);
  });

  it('refuses at once in another process the other sessions of a person who changed their password', async () => {
    const phone = await signedIn(a, 'changer');
    const laptop = onOther(await signedIn(a, 'changer'), b);
    expect((await laptop.get('/home')).statusCode).toBe(200);
    const page = await phone.get('/settings/account');
    const changed = await phone.post('/settings/account/password', { current_password: password('changer'), password: 'a-new-password-long-enough', password_confirmation: 'a-new-password-long-enough' }, page.body);
    expect(changed.statusCode).toBe(303);
    await expect.poll(async () => signedOut(await laptop.get('/home')), { timeout: 2000, interval: 20 }).toBe(true);
  });

  it('shows at once in another process what the person changed: appearance on a page, posting defaults through the API', async () => {
    const web = await signedIn(a, 'editor');
    const there = onOther(web, b);
    expect((await there.get('/home')).body).not.toContain('theme-dark');
    const page = await web.get('/settings/appearance');
    expect((await web.post('/settings/appearance', { theme: 'dark', locale: '' }, page.body)).statusCode).toBe(303);
    await expect.poll(async () => (await there.get('/home')).body.includes('class="theme-dark"'), { timeout: 2000, interval: 20 }).toBe(true);

    const selected = (html: string) => /<option value="(\w+)" selected>/.exec(html.slice(html.indexOf('name="visibility"')))?.[1];
    expect(selected((await there.get('/home')).body)).toBe('public');
    const client = await createApp(a.app);
    const token = await authorizationCodeToken(a.app, client, 'editor@example.com', password('editor'));
    const edit = await a.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(token), payload: { source: { privacy: 'unlisted' } } });
    expect(edit.statusCode).toBe(200);
    await expect.poll(async () => selected((await there.get('/home')).body), { timeout: 2000, interval: 20 }).toBe('unlisted');
  });
});
