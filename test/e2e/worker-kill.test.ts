// A worker process killed (SIGKILL) in the middle of fanning out posts loses nothing and doubles nothing: the web
// process (ROLE=web) takes 20 posts by an author with 1,000 local followers, the worker (ROLE=worker) is killed as
// soon as the first reach a feed, and a new worker finishes the rest, including the jobs the dead one held: BullMQ
// finds them stalled once their 5 s locks run out (jobs/worker.ts), not after its default of up to a minute.
// The first worker's process is made ready while the web process starts (its code loaded, nothing connected:
// startProcess's `held`) and let start once the 20 jobs wait.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Queue } from 'bullmq';
import { testConfig, dropTestData } from '../helpers/server.ts';
import { freePort } from '../helpers/listen.ts';
import { api, startProcess, stopAll, waitForHealth, type Proc } from '../helpers/processes.ts';
import { createRedis, connectRedis, deleteKeysWithPrefix } from '../../storage/redis.ts';
import { HomeFeeds } from '../../storage/feeds.ts';
import { FANOUT_QUEUE, bullConnection } from '../../jobs/queues.ts';
import type { Config } from '../../config.ts';
import type { RedisClient } from '../../storage/redis.ts';

const FOLLOWERS = 1_000;
const POSTS = 20;

describe('a worker killed in the middle of a fan-out', () => {
  let config: Config;
  let settings: Record<string, string>;
  let web: string;
  let redis: RedisClient;
  let db: pg.Client;
  let feeds: HomeFeeds;
  let followers: string[];
  let firstWorker: Proc;

  beforeAll(async () => {
    config = await testConfig();
    const port = await freePort();
    settings = {
      DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl, REDIS_PREFIX: config.redisPrefix, DATA_DIR: config.dataDir,
      LOCAL_DOMAIN: 'kill.test', LOG_LEVEL: 'warn', RATE_LIMITS: 'false',
      // The cheap hash of the test servers (test/helpers/server.ts): nothing here tests its strength.
      PASSWORD_HASH_MEMORY_KIB: '1024', PASSWORD_HASH_TIME_COST: '1',
    };
    const webProc = startProcess({ ...settings, ROLE: 'web', PORT: String(port) });
    web = `http://127.0.0.1:${port}`;
    firstWorker = startProcess({ ...settings, ROLE: 'worker' }, { held: true });
    redis = createRedis(config.redisUrl);
    await connectRedis(redis, config.redisUrl);
    db = new pg.Client({ connectionString: config.databaseUrl });
    await db.connect();
    feeds = new HomeFeeds(redis, config.redisPrefix);
    // While the web process starts: 1,000 local accounts whose home feeds are built (as for people who read them).
    const readers = (async () => {
      const { rows } = await db.query<{ id: string }>(`INSERT INTO accounts (username) SELECT 'reader' || g FROM generate_series(1, $1) g RETURNING id`, [FOLLOWERS]);
      followers = rows.map((r) => r.id);
      await Promise.all(followers.map((id) => feeds.rebuild(id, async () => [])));
    })();
    await Promise.all([waitForHealth(web, webProc), readers]);
  });

  afterAll(async () => {
    await stopAll();
    await db?.end();
    if (redis) {
      await deleteKeysWithPrefix(redis, config.redisPrefix);
      redis.disconnect();
    }
    if (config) await dropTestData(config);
  });

  it('loses no post and doubles none in any feed, and the new worker finishes the dead one\'s jobs', { timeout: 120_000 }, async () => {
    const client = (await api(web, '/api/v1/apps', { method: 'POST', body: { client_name: 'kill', redirect_uris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write' } })).json;
    const appToken = (await api(web, '/oauth/token', { method: 'POST', body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: 'read write' } })).json.access_token;
    const token = (await api(web, '/api/v1/accounts', { method: 'POST', token: appToken, body: { username: 'author', email: 'author@kill.test', password: 'a long password', agreement: true, locale: 'en' } })).json.access_token as string;
    const authorId = (await api(web, '/api/v1/accounts/verify_credentials', { token })).json.id as string;

    // The 1,000 local accounts follow the author.
    await db.query(`INSERT INTO follows (account_id, target_account_id) SELECT unnest($1::bigint[]), $2`, [followers, authorId]);

    const statusIds: string[] = [];
    for (let i = 0; i < POSTS; i++) {
      const res = await api(web, '/api/v1/statuses', { method: 'POST', token, body: { status: `post ${i + 1}` } });
      expect(res.status, res.text).toBe(200);
      statusIds.push(res.json.id);
    }
    /** How many (feed, post) pairs are in place. */
    const placed = async () => {
      const pipeline = redis.pipeline();
      for (const id of followers) pipeline.zmscore(feeds.key(id), ...statusIds);
      const results = (await pipeline.exec()) ?? [];
      return results.reduce((n, [, scores]) => n + (scores as (string | null)[]).filter((s) => s !== null).length, 0);
    };

    // The worker starts with the 20 jobs waiting, and is killed as soon as the first feeds have a post.
    let worker = firstWorker;
    worker.release();
    let atKill = 0;
    for (let i = 0; i < 2000 && atKill === 0; i++) {
      atKill = await placed();
      if (atKill === 0) await new Promise((r) => setTimeout(r, 5));
    }
    worker.child.kill('SIGKILL');
    await worker.exited;
    expect(atKill, 'the worker reached no feed within 10 s\n' + worker.output()).toBeGreaterThan(0);
    const queue = new Queue(FANOUT_QUEUE, { connection: bullConnection(config.redisUrl), prefix: `${config.redisPrefix}bull` });
    try {
      const killedWith = await queue.getJobCounts('active', 'wait');
      const stillToDo = FOLLOWERS * POSTS - (await placed());
      // Killed in the middle: jobs it held, or feeds not reached yet (otherwise the test proves nothing).
      expect((killedWith.active ?? 0) + (killedWith.wait ?? 0) > 0 || stillToDo > 0, `nothing was left when the worker was killed: ${JSON.stringify(killedWith)}`).toBe(true);

      worker = startProcess({ ...settings, ROLE: 'worker' });
      const restarted = Date.now();
      let done = await placed();
      // Far less than BullMQ's default lock and stalled check (30 s + 30 s) would take.
      while (done < FOLLOWERS * POSTS && Date.now() - restarted < 30_000) {
        await new Promise((r) => setTimeout(r, 100));
        done = await placed();
      }
      expect(done, `after 30 s: ${done} of ${FOLLOWERS * POSTS} (feed, post) pairs; worker output:\n${worker.output()}`).toBe(FOLLOWERS * POSTS);

      // Nothing doubled or stray: each feed holds exactly the 20 posts; the posts exist once each; every job finished.
      const sizes = await Promise.all(followers.slice(0, 200).map((id) => redis.zcard(feeds.key(id))));
      expect(new Set(sizes)).toEqual(new Set([POSTS]));
      expect((await db.query(`SELECT count(*)::int AS n FROM statuses WHERE account_id = $1`, [authorId])).rows[0].n).toBe(POSTS);
      for (let i = 0; i < 100; i++) {
        if ((await db.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await db.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n).toBe(0);
      expect((await queue.getJobCounts('failed')).failed).toBe(0);
    } finally {
      await queue.close();
    }
  });
});
