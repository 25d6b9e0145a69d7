// The restore drill: content made through the API, a backup taken while the server runs, PostgreSQL, Redis and the
// files wiped, a restore, and the server started again answering as before. Then the refusals, and a file deleted
// between the dump and the copy of the files, which the backup still holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { access, chmod, mkdtemp, readdir, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { startTestServer, testDatabaseName, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { eventually } from '../helpers/eventually.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { backup, BackupFailed, MANIFEST_FORMAT, restore } from '../../cli/backup.ts';
import { closeContext } from '../../server.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix, type RedisClient } from '../../storage/redis.ts';
import { HomeFeeds } from '../../storage/feeds.ts';
import { deferredDeletions } from '../../storage/file-deletions.ts';
import type { Config } from '../../config.ts';

const run = promisify(execFile);
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let config: Config;
let redis: RedisClient;
let work: string;
let alice: TestUser, bob: TestUser, carol: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  config = s.config;
  redis = createRedis(config);
  await connectRedis(redis, config);
  work = await mkdtemp(join(tmpdir(), 'fedi-backups-'));
  [alice, bob, carol] = await registerUsers(s.app, 'alice', 'bob', 'carol');
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await s?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

const get = (url: string, token?: string) => s.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });

async function post(user: TestUser, payload: Json) {
  const res = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Json;
}

async function uploadPhoto(user: TestUser, colour: string): Promise<Json> {
  const data = await sharp({ create: { width: 300, height: 200, channels: 3, background: colour } }).jpeg().toBuffer();
  const form = await multipart({ description: `a ${colour} square`, file: { data, filename: 'photo.jpg', type: 'image/jpeg' } });
  const res = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(user.token), ...form.headers }, payload: form.payload });
  expect([200, 202]).toContain(res.statusCode);
  for (let i = 0; i < 200; i++) {
    const done = await get(`/api/v1/media/${res.json().id}`, user.token);
    if (done.statusCode === 200) return done.json();
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('media did not finish processing');
}

/** What the site answers that a backup must keep: accounts, posts, follows, media bytes, home and list timelines. */
async function snapshot(users: TestUser[], statusIds: string[], mediaUrls: string[], listId: string) {
  const answers: Record<string, unknown> = {};
  for (const u of users) {
    answers[`account ${u.username}`] = (await get(`/api/v1/accounts/${u.id}`)).json();
    answers[`following ${u.username}`] = (await get(`/api/v1/accounts/${u.id}/following`, u.token)).json();
    answers[`followers ${u.username}`] = (await get(`/api/v1/accounts/${u.id}/followers`, u.token)).json();
    answers[`home ${u.username}`] = (await get('/api/v1/timelines/home?limit=40', u.token)).json();
    answers[`me ${u.username}`] = (await get('/api/v1/accounts/verify_credentials', u.token)).statusCode;
  }
  for (const id of statusIds) answers[`status ${id}`] = (await get(`/api/v1/statuses/${id}`, alice.token)).json();
  for (const url of mediaUrls) {
    const res = await get(new URL(url).pathname);
    answers[`file ${url}`] = `${res.statusCode} ${res.rawPayload.toString('base64')}`;
  }
  answers.list = (await get(`/api/v1/timelines/list/${listId}`, alice.token)).json();
  return answers;
}

/** Stops the server's web, workers and connections, leaving its database, Redis keys and files in place. */
async function stopServer(server: TestServer) {
  await server.app.close();
  await server.stopWorkers();
  await closeContext(server.ctx);
}

/**
 * The database gone from under its name, and an empty one made in its place; Redis's keys and the files deleted. The
 * old database is renamed out of the way, one of the run's that are dropped at its end (testDatabaseName): nothing
 * reads it again, and a DROP DATABASE here would wait for PostgreSQL to sync every test database's writes.
 */
async function wipe(cfg: Config) {
  const name = new URL(cfg.databaseUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: cfg.databaseUrl.replace(/\/[^/]+$/, '/postgres') });
  await admin.connect();
  try {
    // A rename waits for no session, as DROP … WITH (FORCE) would not: the server's last ones may still be ending.
    for (let attempt = 1; ; attempt++) {
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
      try {
        await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} RENAME TO ${pg.escapeIdentifier(testDatabaseName('wiped'))}`);
        break;
      } catch (err) {
        // 55006: still in use by a session that is going.
        if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  await deleteKeysWithPrefix(redis, cfg.redisPrefix);
  await rm(join(cfg.dataDir, 'files'), { recursive: true, force: true });
}

describe('backup and restore', () => {
  it('a site wiped and restored from its backup answers as before', async () => {
    // Content made through the API: follows, posts with media, a reply, a private post, a list.
    for (const [who, whom] of [[alice, bob], [alice, carol], [bob, alice], [carol, bob]] as const) {
      expect((await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${whom.id}/follow`, headers: bearer(who.token) })).statusCode).toBe(200);
    }
    const photo1 = await uploadPhoto(bob, '#c84');
    const photo2 = await uploadPhoto(carol, '#48c');
    const posts = [
      await post(bob, { status: 'a red photo', media_ids: [photo1.id] }),
      await post(carol, { status: 'a blue photo', media_ids: [photo2.id], visibility: 'unlisted' }),
      await post(alice, { status: 'hello, followers only', visibility: 'private' }),
    ];
    posts.push(await post(alice, { status: '@bob nice photo', in_reply_to_id: posts[0]!.id }));
    const list = (await s.app.inject({ method: 'POST', url: '/api/v1/lists', headers: bearer(alice.token), payload: { title: 'pictures' } })).json();
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/lists/${list.id}/accounts`, headers: bearer(alice.token), payload: { account_ids: [carol.id] } })).statusCode).toBe(200);
    // Fan-out done: every home timeline holds what it will hold.
    await eventually(() => workSettled(s.ctx), true, 20_000);
    await eventually(async () => (await get('/api/v1/timelines/home', alice.token)).json().length, 4, 10_000);
    const users = [alice, bob, carol];
    const mediaUrls = [photo1.url, photo1.preview_url, photo2.url, photo2.preview_url];
    const before = await snapshot(users, posts.map((p) => p.id), mediaUrls, list.id);
    expect((before['home alice'] as Json[]).map((st) => st.id)).toEqual(posts.map((p) => p.id).reverse());
    expect((before.list as Json[]).map((st) => st.id)).toEqual([posts[1]!.id]);
    for (const url of mediaUrls) expect(before[`file ${url}`]).toMatch(/^200 \S{100,}/);

    // A backup taken while the server runs.
    const dir = join(work, 'site-1');
    const lines: string[] = [];
    const manifest = await backup(config, dir, (l) => lines.push(l));
    expect(manifest).toMatchObject({ format: MANIFEST_FORMAT, database: new URL(config.databaseUrl).pathname.slice(1), file_host: 'local', version: config.softwareVersion });
    expect(manifest.files).toBeGreaterThanOrEqual(4);
    expect(manifest.commit === null || /^[0-9a-f]{40}$/.test(manifest.commit)).toBe(true);
    expect(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'))).toEqual(manifest);
    expect((await stat(join(dir, 'database.dump'))).size).toBeGreaterThan(10_000);
    expect(lines.at(-1)).toBe(`backup written to ${dir}`);
    expect((await readdir(work)).filter((n) => n.includes('partial'))).toEqual([]);

    // Everything gone: the database (an empty one in its place), the Redis keys, the files.
    await stopServer(s);
    await wipe(config);
    expect(await redis.keys(`${config.redisPrefix}*`)).toEqual([]);

    const restored: string[] = [];
    await restore(config, dir, { force: false }, redis, (l) => restored.push(l));
    expect(restored.join('\n')).toMatch(/3 home feed\(s\) and 1 list feed\(s\) rebuilt/);
    // The feeds were built by the restore, before anyone read them.
    const feeds = new HomeFeeds(redis, config.redisPrefix);
    for (const u of users) expect(await feeds.isReady(u.id)).toBe(true);

    s = await startTestServer({ DATABASE_URL: config.databaseUrl, DATA_DIR: config.dataDir, REDIS_PREFIX: config.redisPrefix });
    const after = await snapshot(users, posts.map((p) => p.id), mediaUrls, list.id);
    expect(after).toEqual(before);
    // And the site goes on: a new post reaches its followers' home timelines.
    const next = await post(bob, { status: 'back again' });
    await eventually(async () => (await get('/api/v1/timelines/home', alice.token)).json()[0]?.id, next.id, 10_000);
  }, 180_000);

  it('refuses to restore into a database that is not empty, and replaces it with --force', async () => {
    const dir = join(work, 'site-1');
    const countBefore = (await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n;
    await expect(restore(s.config, dir, { force: false }, redis, () => {})).rejects.toThrow(/is not empty: a restore goes into an empty database/);
    expect((await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n).toBe(countBefore);

    const cfg = s.config;
    await stopServer(s);
    await restore(cfg, dir, { force: true }, redis, () => {});
    s = await startTestServer({ DATABASE_URL: cfg.databaseUrl, DATA_DIR: cfg.dataDir, REDIS_PREFIX: cfg.redisPrefix });
    // The post made after the backup is gone; the backup's are there.
    const home = (await get('/api/v1/timelines/home', alice.token)).json() as Json[];
    expect(home.map((st) => st.content)).not.toContain('<p>back again</p>');
    expect(home).toHaveLength(4);
  }, 120_000);

  it('refuses a directory that is not a backup, and a target that is not an empty directory', async () => {
    const empty = join(work, 'empty');
    await mkdir(empty);
    await expect(restore(s.config, empty, { force: true }, redis, () => {})).rejects.toThrow(/is not a backup: it has no readable manifest.json/);
    await writeFile(join(empty, 'manifest.json'), '{"format":"something-else"}');
    await expect(restore(s.config, empty, { force: true }, redis, () => {})).rejects.toThrow(/is not a backup of this server/);
    await expect(restore(s.config, join(work, 'nowhere'), { force: true }, redis, () => {})).rejects.toThrow(/does not exist/);
    await writeFile(join(work, 'a-file'), 'x');
    await expect(restore(s.config, join(work, 'a-file'), { force: true }, redis, () => {})).rejects.toThrow(/is not a directory/);
    // The database is as it was: nothing was emptied.
    expect((await get('/api/v1/timelines/home', alice.token)).json()).toHaveLength(4);

    await expect(backup(s.config, join(work, 'a-file'), () => {})).rejects.toThrow(/exists and is not a directory/);
    await expect(backup(s.config, join(work, 'site-1'), () => {})).rejects.toThrow(/is not empty/);
    await expect(backup(s.config, empty, () => {})).rejects.toBeInstanceOf(BackupFailed);
  });

  it('the command exits non-zero with a clear message and writes nothing when pg_dump is missing or the directory unwritable', async () => {
    const env = {
      ...process.env,
      DATABASE_URL: s.config.databaseUrl, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.config.redisPrefix, DATA_DIR: s.config.dataDir, LOCAL_DOMAIN: 'test.local', LOG_LEVEL: 'silent',
    };
    const cli = (args: string[], extra: Record<string, string> = {}) =>
      run(process.execPath, ['cli/admin.ts', ...args], { env: { ...env, ...extra }, timeout: 60_000 }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
      );

    const target = join(work, 'no-pg-dump');
    const missing = await cli(['backup', target], { PG_DUMP_PATH: join(work, 'bin', 'pg_dump') });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`error: ${join(work, 'bin', 'pg_dump')} not found: install PostgreSQL's client programs or set PG_DUMP_PATH to its path`);
    expect(await readdir(work)).not.toContain('no-pg-dump');
    expect((await readdir(work)).filter((n) => n.includes('partial'))).toEqual([]);

    // Root writes anywhere it may: where even root may not (sysfs), otherwise a directory without write permission.
    let unwritable: string;
    if (process.getuid?.() === 0) unwritable = '/sys/fedi-backup-test/b';
    else {
      const locked = join(work, 'locked');
      await mkdir(locked, { mode: 0o500 });
      unwritable = join(locked, 'b');
    }
    const refused = await cli(['backup', unwritable]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error: cannot (make|write in) .*: permission denied/);

    const usage = await cli(['restore']);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toContain('restore takes one directory');

    const notBackup = await cli(['restore', join(work, 'empty')]);
    expect(notBackup.code).toBe(1);
    expect(notBackup.stderr).toMatch(/is not a backup/);

    // And a whole backup through the command.
    const ok = await cli(['backup', join(work, 'by-command')]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`backup written to ${join(work, 'by-command')}`);
  }, 120_000);

  it('a file deleted while the backup runs, after the dump, is still in the backup, and is deleted once it ends', async () => {
    const avatar = async (colour: string) => {
      const data = await sharp({ create: { width: 120, height: 120, channels: 3, background: colour } }).png().toBuffer();
      const form = await multipart({ avatar: { data, filename: 'avatar.png', type: 'image/png' } });
      const res = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { ...bearer(alice.token), ...form.headers }, payload: form.payload });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().avatar as string;
    };
    const avatarKey = async () => (await s.ctx.db.query<{ avatar_file: string }>(`SELECT avatar_file FROM accounts WHERE id = $1`, [alice.id])).rows[0]!.avatar_file;
    const live = (key: string) => join(s.config.dataDir, 'files', key);
    const exists = (path: string) => access(path).then(() => true, () => false);
    const firstUrl = await avatar('#e33');
    const first = await avatarKey();
    const firstBytes = await readFile(live(first));

    // pg_dump, then a pause until the test says go: the moment between the dump and the copy of the files.
    const marks = await mkdtemp(join(work, 'marks-'));
    const dumpThenWait = join(marks, 'pg_dump');
    await writeFile(dumpThenWait, [
      '#!/bin/sh',
      `${JSON.stringify(s.config.pgDumpPath)} "$@" || exit $?`,
      `touch ${JSON.stringify(join(marks, 'dumped'))}`,
      'i=0',
      `while [ ! -e ${JSON.stringify(join(marks, 'go'))} ]; do sleep 0.05; i=$((i + 1)); if [ $i -gt 1200 ]; then exit 3; fi; done`,
      'exit 0',
      '',
    ].join('\n'));
    await chmod(dumpThenWait, 0o755);
    const dir = join(work, 'held-deletion');
    const running = backup({ ...s.config, pgDumpPath: dumpThenWait }, dir, () => {});
    await eventually(() => exists(join(marks, 'dumped')), true, 60_000);

    // Alice replaces her avatar: the row names the new file, and the old one, which the dump names, is deleted.
    await avatar('#3e3');
    expect(await avatarKey()).not.toBe(first);
    // Held while the backup runs.
    expect(await exists(live(first))).toBe(true);
    expect(await deferredDeletions(s.ctx.db)).toBe(1);
    await writeFile(join(marks, 'go'), '');
    const manifest = await running;
    expect((await readFile(join(dir, 'files', first))).equals(firstBytes)).toBe(true);
    // Once the backup has ended, the deletion is carried out.
    expect(await exists(live(first))).toBe(false);
    expect(await deferredDeletions(s.ctx.db)).toBe(0);
    expect(manifest.files).toBeGreaterThanOrEqual(1);

    // The site restored from that backup serves the avatar the dump names.
    const cfg = s.config;
    await stopServer(s);
    await restore(cfg, dir, { force: true }, redis, () => {});
    s = await startTestServer({ DATABASE_URL: cfg.databaseUrl, DATA_DIR: cfg.dataDir, REDIS_PREFIX: cfg.redisPrefix });
    const account = (await get(`/api/v1/accounts/${alice.id}`)).json() as Json;
    expect(account.avatar).toBe(firstUrl);
    const served = await get(new URL(firstUrl).pathname);
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(firstBytes)).toBe(true);
  }, 120_000);
});
