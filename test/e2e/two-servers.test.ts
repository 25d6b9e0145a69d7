// Two server processes (`node main.ts`) on different ports share one PostgreSQL database and one Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testConfig, dropTestData } from '../helpers/server.ts';
import { freePort } from '../helpers/listen.ts';
import type { Config } from '../../config.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];

function startProcess(env: Record<string, string>): { child: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['main.ts'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

async function waitForHealth(url: string, deadline = Date.now() + 30_000): Promise<void> {
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/health`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become healthy`);
}

async function api(url: string, path: string, init: { method?: string; token?: string; body?: unknown } = {}) {
  const res = await fetch(`${url}${path}`, {
    method: init.method ?? 'GET',
    headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked by the assertions
  return { status: res.status, json: (await res.json()) as any };
}

describe('two processes sharing PostgreSQL and Redis', () => {
  let config: Config;
  let a: string;
  let b: string;

  beforeAll(async () => {
    config = await testConfig();
    const [portA, portB] = [await freePort(), await freePort()];
    const shared = {
      DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl, REDIS_PREFIX: config.redisPrefix,
      DATA_DIR: config.dataDir, LOCAL_DOMAIN: 'shared.test', LOG_LEVEL: 'warn', RATE_LIMITS: 'false',
    };
    // Both start at once: creating the database and migrating must be safe to race.
    startProcess({ ...shared, PORT: String(portA) });
    startProcess({ ...shared, PORT: String(portB) });
    a = `http://127.0.0.1:${portA}`;
    b = `http://127.0.0.1:${portB}`;
    await Promise.all([waitForHealth(a), waitForHealth(b)]);
  });

  afterAll(async () => {
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : (c.once('exit', r), c.kill('SIGTERM'))))));
    if (config) await dropTestData(config);
  });

  it('sees through one process the follow made through the other', async () => {
    const app = await api(a, '/api/v1/apps', { method: 'POST', body: { client_name: 'two', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write follow' } });
    expect(app.status).toBe(200);
    // The app registered through A works through B: both read the same database.
    const appToken = await api(b, '/oauth/token', { method: 'POST', body: { grant_type: 'client_credentials', client_id: app.json.client_id, client_secret: app.json.client_secret, scope: 'read write follow' } });
    expect(appToken.status).toBe(200);
    const register = (url: string, username: string) =>
      api(url, '/api/v1/accounts', { method: 'POST', token: appToken.json.access_token, body: { username, email: `${username}@example.com`, password: 'a long password', agreement: true, locale: 'en' } });
    const ann = await register(a, 'ann');
    const ben = await register(b, 'ben');
    expect([ann.status, ben.status]).toEqual([200, 200]);
    const benAccount = await api(a, '/api/v1/accounts/lookup?acct=ben');

    const follow = await api(a, `/api/v1/accounts/${benAccount.json.id}/follow`, { method: 'POST', token: ann.json.access_token });
    expect(follow.status, JSON.stringify(follow.json)).toBe(200);
    expect(follow.json.following).toBe(true);
    const seenByB = await api(b, `/api/v1/accounts/relationships?id[]=${benAccount.json.id}`, { token: ann.json.access_token });
    expect(seenByB.json[0].following).toBe(true);

    const unfollow = await api(b, `/api/v1/accounts/${benAccount.json.id}/unfollow`, { method: 'POST', token: ann.json.access_token });
    expect(unfollow.json.following).toBe(false);
    const seenByA = await api(a, `/api/v1/accounts/relationships?id=${benAccount.json.id}`, { token: ann.json.access_token });
    expect(seenByA.json[0].following).toBe(false);
    expect((await api(a, `/api/v1/accounts/${benAccount.json.id}`)).json.followers_count).toBe(0);
  });

  it('shows a post made through one process in a follower\'s home timeline read through the other', async () => {
    const app = await api(a, '/api/v1/apps', { method: 'POST', body: { client_name: 'two', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write follow' } });
    const appToken = await api(a, '/oauth/token', { method: 'POST', body: { grant_type: 'client_credentials', client_id: app.json.client_id, client_secret: app.json.client_secret, scope: 'read write follow' } });
    const register = (username: string) =>
      api(a, '/api/v1/accounts', { method: 'POST', token: appToken.json.access_token, body: { username, email: `${username}@example.com`, password: 'a long password', agreement: true, locale: 'en' } });
    const reader = (await register('reader')).json.access_token;
    const writer = (await register('writer')).json.access_token;
    const writerId = (await api(a, '/api/v1/accounts/lookup?acct=writer')).json.id;
    await api(b, `/api/v1/accounts/${writerId}/follow`, { method: 'POST', token: reader });
    expect((await api(b, '/api/v1/timelines/home', { token: reader })).status).toBe(200); // the reader's feed exists

    const posted = await api(a, '/api/v1/statuses', { method: 'POST', token: writer, body: { status: 'across processes' } });
    expect(posted.status).toBe(200);
    let ids: string[] = [];
    for (let i = 0; i < 100 && !ids.includes(posted.json.id); i++) {
      await new Promise((r) => setTimeout(r, 50));
      ids = (await api(b, '/api/v1/timelines/home', { token: reader })).json.map((s: { id: string }) => s.id);
    }
    expect(ids).toContain(posted.json.id);
  });
});

describe('start-up with a bad setting', () => {
  it.each([
    [{ DATABASE_URL: 'postgres://postgres@127.0.0.1:5999/fedi_nowhere' }, /^Cannot start: DATABASE_URL: cannot connect to 127\.0\.0\.1:5999: connection refused$/],
    [{ DATABASE_URL: 'not-a-url' }, /^Cannot start: DATABASE_URL: not a valid URL/],
    [{ REDIS_URL: 'redis://127.0.0.1:6999' }, /^Cannot start: REDIS_URL: cannot connect to 127\.0\.0\.1:6999/],
  ])('%o stops with one line naming it', async (env, message) => {
    const config = await testConfig();
    const proc = startProcess({ DATABASE_URL: config.databaseUrl, DATA_DIR: config.dataDir, PORT: String(await freePort()), ...env });
    expect(await proc.exited).toBe(1);
    const lines = proc.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    await dropTestData(config);
  });
});
