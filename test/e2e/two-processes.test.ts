// Two real server processes (`node main.ts`, as `npm start` runs it) on different ports share one PostgreSQL
// database and one Redis: what one writes, the other reads; a token revoked through one stops working in both.
// Then start-up with a bad setting: one line naming it, exit code 1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { api, startProcess, stopAll, waitForHealth, type Proc } from '../helpers/processes.ts';
import pg from 'pg';
import { testConfig, dropTestData } from '../helpers/server.ts';
import { freePort } from '../helpers/listen.ts';
import { eventually } from '../helpers/eventually.ts';
import { createRedis, connectRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import type { Config } from '../../config.ts';

/** Waits for the exit code, killing the process (and failing) if it hangs. */
async function exitCode(proc: Proc, ms: number): Promise<number | null> {
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), ms);
  const code = await proc.exited;
  clearTimeout(timer);
  expect(proc.child.signalCode, `killed after ${ms} ms without exiting\n${proc.output()}`).toBeNull();
  return code;
}

describe('two processes sharing PostgreSQL and Redis', () => {
  let config: Config;
  let a: string;
  let b: string;
  let procA: Proc;
  let procB: Proc;

  beforeAll(async () => {
    config = await testConfig();
    const [portA, portB] = [await freePort(), await freePort()];
    const shared = {
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl,
      REDIS_PREFIX: config.redisPrefix,
      DATA_DIR: config.dataDir,
      LOCAL_DOMAIN: 'shared.test',
      LOG_LEVEL: 'warn',
      // The cheap hash of the test servers (test/helpers/server.ts): nothing here tests its strength.
      PASSWORD_HASH_MEMORY_KIB: '1024', PASSWORD_HASH_TIME_COST: '1',
    };
    // Started together, neither finds the database: both create it and migrate, which must be safe to race.
    // A at info, as `npm start` runs: its first lines say where it answers and how to make the first operator.
    procA = startProcess({ ...shared, PORT: String(portA), LOG_LEVEL: 'info' });
    procB = startProcess({ ...shared, PORT: String(portB) });
    a = `http://127.0.0.1:${portA}`;
    b = `http://127.0.0.1:${portB}`;
    await Promise.all([waitForHealth(a, procA), waitForHealth(b, procB)]);
  });

  afterAll(async () => {
    await stopAll();
    if (!config) return;
    const redis = createRedis(config.redisUrl);
    await connectRedis(redis, config.redisUrl);
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await dropTestData(config);
  });

  it('says where it answers and, with no operator yet, how to make one', () => {
    expect(procA.output()).toContain('Answering at http://shared.test/');
    expect(procA.output()).toContain('No operator yet: make one with `npm run cli -- accounts create <username> --email <address> --admin`');
    expect(procB.output()).not.toContain('Answering at');
  });

  it('applied each migration exactly once', async () => {
    const files = (await readdir(fileURLToPath(new URL('../../storage/migrations', import.meta.url)))).filter((f) => f.endsWith('.sql'));
    const client = new pg.Client({ connectionString: config.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('SELECT name FROM pgmigrations ORDER BY id');
      expect(rows.map((r) => `${r.name}.sql`)).toEqual(files.sort());
    } finally {
      await client.end();
    }
  });

  let annToken: string;
  let benToken: string;
  let benId: string;
  let annId: string;
  let client: { client_id: string; client_secret: string };

  it('registers through A and is known to B', async () => {
    const created = await api(a, '/api/v1/apps', { method: 'POST', body: { client_name: 'two processes', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write follow' } });
    expect(created.status, created.text).toBe(200);
    client = created.json;
    const appToken = await api(a, '/oauth/token', { method: 'POST', body: { grant_type: 'client_credentials', ...client, scope: 'read write follow' } });
    expect(appToken.status, appToken.text).toBe(200);
    const register = (username: string) => api(a, '/api/v1/accounts', {
      method: 'POST', token: appToken.json.access_token,
      body: { username, email: `${username}@example.com`, password: 'a long enough password', agreement: true, locale: 'en' },
    });
    const [ann, ben] = [await register('ann'), await register('ben')];
    expect(ann.status, ann.text).toBe(200);
    expect(ben.status, ben.text).toBe(200);
    annToken = ann.json.access_token;
    benToken = ben.json.access_token;

    // Tokens issued by A work on B, and B finds the accounts A created.
    const annOnB = await api(b, '/api/v1/accounts/verify_credentials', { token: annToken });
    expect(annOnB.status, annOnB.text).toBe(200);
    expect(annOnB.json.username).toBe('ann');
    expect(annOnB.json.url).toBe('http://shared.test/@ann');
    annId = annOnB.json.id;
    const benOnB = await api(b, '/api/v1/accounts/lookup?acct=ben');
    expect(benOnB.status).toBe(200);
    benId = benOnB.json.id;
  });

  it('shows through B a follow made through A, and through A an unfollow made through B', async () => {
    // Before: nothing either way, as both processes see it.
    for (const base of [a, b]) {
      const before = await api(base, `/api/v1/accounts/relationships?id[]=${benId}`, { token: annToken });
      expect(before.status, before.text).toBe(200);
      expect(before.json).toEqual([expect.objectContaining({ id: benId, following: false })]);
    }

    const follow = await api(a, `/api/v1/accounts/${benId}/follow`, { method: 'POST', token: annToken });
    expect(follow.status, follow.text).toBe(200);
    expect(follow.json.following).toBe(true);

    const seenByB = await api(b, `/api/v1/accounts/relationships?id[]=${benId}`, { token: annToken });
    expect(seenByB.status, seenByB.text).toBe(200);
    expect(seenByB.json).toEqual([expect.objectContaining({ id: benId, following: true, followed_by: false })]);
    const benSeesOnB = await api(b, `/api/v1/accounts/relationships?id[]=${annId}`, { token: benToken });
    expect(benSeesOnB.json).toEqual([expect.objectContaining({ id: annId, following: false, followed_by: true })]);
    expect((await api(b, `/api/v1/accounts/${benId}`)).json.followers_count).toBe(1);

    const unfollow = await api(b, `/api/v1/accounts/${benId}/unfollow`, { method: 'POST', token: annToken });
    expect(unfollow.status, unfollow.text).toBe(200);
    expect(unfollow.json.following).toBe(false);

    const seenByA = await api(a, `/api/v1/accounts/relationships?id[]=${benId}`, { token: annToken });
    expect(seenByA.json).toEqual([expect.objectContaining({ id: benId, following: false })]);
    const benSeesOnA = await api(a, `/api/v1/accounts/relationships?id[]=${annId}`, { token: benToken });
    expect(benSeesOnA.json).toEqual([expect.objectContaining({ id: annId, followed_by: false })]);
    expect((await api(a, `/api/v1/accounts/${benId}`)).json.followers_count).toBe(0);
  });

  it('stops honouring a token in both processes as soon as one of them revokes it', async () => {
    // Both processes have just accepted Ben's token (and may remember it).
    for (const base of [a, b]) expect((await api(base, '/api/v1/accounts/verify_credentials', { token: benToken })).status).toBe(200);
    const revoked = await api(b, '/oauth/revoke', { method: 'POST', body: { token: benToken, ...client } });
    expect(revoked.status, revoked.text).toBe(200);
    // B forgets it before answering; A hears of it over Redis pub/sub, within moments.
    expect((await api(b, '/api/v1/accounts/verify_credentials', { token: benToken })).status).toBe(401);
    const onA = () => api(a, '/api/v1/accounts/verify_credentials', { token: benToken }).then((r) => r.status);
    expect(await eventually(onA, 401, 1000)).toBe(401);
    // Ann's token is untouched.
    expect((await api(a, '/api/v1/accounts/verify_credentials', { token: annToken })).status).toBe(200);
  });

  it('shows a post made through A in a follower\'s home timeline read through B', async () => {
    const appToken = await api(b, '/oauth/token', { method: 'POST', body: { grant_type: 'client_credentials', ...client, scope: 'read write follow' } });
    const cid = await api(b, '/api/v1/accounts', {
      method: 'POST', token: appToken.json.access_token,
      body: { username: 'cid', email: 'cid@example.com', password: 'a long enough password', agreement: true, locale: 'en' },
    });
    expect(cid.status, cid.text).toBe(200);
    const readerToken = () => cid.json.access_token as string;
    const follow = await api(b, `/api/v1/accounts/${annId}/follow`, { method: 'POST', token: readerToken() });
    expect(follow.status, follow.text).toBe(200);
    expect((await api(b, '/api/v1/timelines/home', { token: readerToken() })).status).toBe(200);
    const posted = await api(a, '/api/v1/statuses', { method: 'POST', token: annToken, body: { status: 'across processes' } });
    expect(posted.status, posted.text).toBe(200);
    const homeOnB = () => api(b, '/api/v1/timelines/home', { token: readerToken() })
      .then((r) => (r.json as { id: string }[]).some((st) => st.id === posted.json.id));
    expect(await eventually(homeOnB, true, 5000)).toBe(true);
  });

  it('both shut down cleanly on SIGTERM', async () => {
    procA.child.kill('SIGTERM');
    procB.child.kill('SIGTERM');
    const [codeA, codeB] = await Promise.all([exitCode(procA, 10_000), exitCode(procB, 10_000)]);
    expect(codeA, procA.output()).toBe(0);
    expect(codeB, procB.output()).toBe(0);
  });
});

describe.concurrent('start-up with a bad setting prints one line naming it and exits with 1', () => {
  it.each([
    ['DATABASE_URL', { DATABASE_URL: 'postgres://postgres@127.0.0.1:5999/x' }, /^Cannot start: DATABASE_URL: cannot connect to 127\.0\.0\.1:5999: connection refused$/],
    // Behind a pooler, start-up reaches PostgreSQL itself through DATABASE_DIRECT_URL (database creation, migrations).
    ['DATABASE_DIRECT_URL', { DATABASE_DIRECT_URL: 'postgres://postgres@127.0.0.1:5998/x' }, /^Cannot start: DATABASE_DIRECT_URL: cannot connect to 127\.0\.0\.1:5998: connection refused$/],
    ['DATABASE_URL', { DATABASE_URL: 'not-a-url' }, /^Cannot start: DATABASE_URL: not a valid URL: "not-a-url"$/],
    ['REDIS_URL', { REDIS_URL: 'redis://127.0.0.1:6999' }, /^Cannot start: REDIS_URL: cannot connect to 127\.0\.0\.1:6999: connection refused$/],
  ] as const)('%s: %o', async (setting, bad, line) => {
    const config = await testConfig();
    try {
      const proc = startProcess({
        DATABASE_URL: config.databaseUrl,
        REDIS_URL: config.redisUrl,
        REDIS_PREFIX: config.redisPrefix,
        DATA_DIR: config.dataDir,
        LOG_LEVEL: 'warn',
        PORT: String(await freePort()),
        ...bad,
      });
      expect(await exitCode(proc, 45_000), proc.output()).toBe(1);
      const lines = proc.stderr().split('\n').filter((l) => l !== '');
      expect(lines, proc.output()).toHaveLength(1);
      expect(lines[0]).toContain(setting);
      expect(lines[0]).toMatch(line);
    } finally {
      // The Redis case gets as far as creating and migrating its database.
      await dropTestData(config);
    }
  }, 60_000);
});
