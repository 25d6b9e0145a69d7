// Behind PgBouncer 1.18 (Debian's) in transaction pooling mode with a pool of 3 server connections, and
// PREPARED_STATEMENTS=false: registering, following, posting (20 at once), a poll, the fan-out job, home and
// notifications, and an idempotent retry all work, with no query failing on a server connection that did not hold
// what an earlier one prepared. First, that the same pool with named statements does fail, so this can catch it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { requirePgBouncer, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.ts';
import { PG_BASE, dropTestDatabase, startTestServer, testDatabaseName, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { eventually } from '../helpers/eventually.ts';
import { createPool, type Db } from '../../storage/db.ts';
import { withoutNamedStatements } from '../../storage/pooler.ts';
import { loadConfig } from '../../config.ts';

const POOL_SIZE = 3;

describe('behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  let s: TestServer;
  let alice: TestUser;
  let bob: TestUser;
  const dbName = testDatabaseName('pgb');

  beforeAll(async () => {
    requirePgBouncer();
    bouncer = await startPgBouncer({ poolSize: POOL_SIZE });
    s = await startTestServer({
      DATABASE_URL: bouncer.url(dbName),
      DATABASE_DIRECT_URL: `${PG_BASE}/${dbName}`,
      PREPARED_STATEMENTS: 'false',
      DATABASE_POOL_SIZE: '20',
    });
    [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
  }, 30_000);

  afterAll(async () => {
    // close() drops the database through PgBouncer (when not one of the run's); straight to PostgreSQL here whatever
    // happened there.
    await s?.close().catch(() => {});
    await bouncer?.stop();
    await dropTestDatabase(`${PG_BASE}/${dbName}`);
    if (s) await rm(s.config.dataDir, { recursive: true, force: true });
  });

  const post = (token: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
    s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: { ...bearer(token), ...headers }, payload });

  it('needs a direct URL for migrations once prepared statements are off', () => {
    expect(() => loadConfig({ DATABASE_URL: bouncer.url(dbName), PREPARED_STATEMENTS: 'false' })).toThrow(/DATABASE_DIRECT_URL/);
    expect(() => loadConfig({ PREPARED_STATEMENTS: 'sometimes' })).toThrow(/PREPARED_STATEMENTS/);
    const config = loadConfig({ DATABASE_URL: bouncer.url(dbName), DATABASE_DIRECT_URL: `${PG_BASE}/${dbName}`, PREPARED_STATEMENTS: 'false' });
    expect([config.databaseDirectUrl, config.preparedStatements]).toEqual([`${PG_BASE}/${dbName}`, false]);
    expect(loadConfig({}).databaseDirectUrl).toBe(loadConfig({}).databaseUrl);
  });

  it('fails with named statements through the pooler, and works without them', async () => {
    // The same named query from more clients than server connections: sooner or later a client names a statement
    // its current server connection never prepared (or prepares one the connection already has).
    const run = async (db: Db) => {
      const errors: string[] = [];
      for (let round = 0; round < 5; round++) {
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            db.query({ name: 'pgbouncer-probe', text: 'SELECT $1::int AS n', values: [i] }).then(
              (r) => expect(r.rows[0].n).toBe(i),
              (e: Error) => errors.push(e.message),
            ),
          ),
        );
      }
      await db.end();
      return errors;
    };
    const named = await run(createPool(bouncer.url(dbName), 12));
    expect(named.length, 'named statements should break behind a transaction pooler').toBeGreaterThan(0);
    expect(named[0]).toMatch(/prepared statement "pgbouncer-probe" (does not exist|already exists)/);
    expect(await run(withoutNamedStatements(createPool(bouncer.url(dbName), 12)))).toEqual([]);
  });

  it('follows, posts 20 at once, fans out, notifies, runs a poll and retries idempotently', async () => {
    const follow = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${alice.id}/follow`, headers: bearer(bob.token) });
    expect(follow.statusCode, follow.body).toBe(200);
    expect(follow.json().following).toBe(true);

    // More requests at once than PgBouncer has server connections: transactions interleave on shared connections.
    const posts = await Promise.all(Array.from({ length: 20 }, (_, i) => post(alice.token, { status: `post ${i} through the pooler #pooled` })));
    for (const r of posts) expect(r.statusCode, r.body).toBe(200);
    const ids = posts.map((r) => r.json().id as string);

    const poll = await post(alice.token, { status: 'Which one?', poll: { options: ['this', 'that'], expires_in: 3600 } });
    expect(poll.statusCode, poll.body).toBe(200);
    const pollId = poll.json().poll.id as string;
    const vote = await s.app.inject({ method: 'POST', url: `/api/v1/polls/${pollId}/votes`, headers: bearer(bob.token), payload: { choices: [1] } });
    expect(vote.statusCode, vote.body).toBe(200);
    expect(vote.json().votes_count).toBe(1);
    expect(vote.json().own_votes).toEqual([1]);

    // The retry of a post with the same Idempotency-Key gets the same post, not a second one.
    const key = { 'idempotency-key': `retry-${randomBytes(4).toString('hex')}` };
    const first = await post(bob.token, { status: '@alice a reply worth retrying' }, key);
    const again = await post(bob.token, { status: '@alice a reply worth retrying' }, key);
    expect(first.statusCode, first.body).toBe(200);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().id).toBe(first.json().id);

    // The fan-out job put every post of alice's into bob's home.
    const home = async () => {
      const r = await s.app.inject({ method: 'GET', url: '/api/v1/timelines/home?limit=40', headers: bearer(bob.token) });
      expect(r.statusCode, r.body).toBe(200);
      const seen = new Set((r.json() as { id: string }[]).map((x) => x.id));
      return [...ids, poll.json().id].every((id) => seen.has(id));
    };
    expect(await eventually(home, true, 10_000)).toBe(true);

    const notifications = async () => {
      const r = await s.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: bearer(alice.token) });
      expect(r.statusCode, r.body).toBe(200);
      return (r.json() as { type: string }[]).map((n) => n.type).sort().join(',');
    };
    expect(await eventually(notifications, 'follow,mention', 10_000)).toBe('follow,mention');

    const mine = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${alice.id}/statuses?limit=40`, headers: bearer(alice.token) });
    expect(mine.statusCode, mine.body).toBe(200);
    expect(mine.json()).toHaveLength(21);
    const tag = await s.app.inject({ method: 'GET', url: '/api/v1/timelines/tag/pooled?limit=40' });
    expect(tag.statusCode, tag.body).toBe(200);
    expect(tag.json()).toHaveLength(20);
  }, 30_000);

  it('shared at most the pool size of server connections, and PgBouncer logged no error', async () => {
    const pools = (await bouncer.show('POOLS')).filter((p) => p.database === dbName);
    expect(pools).toHaveLength(1);
    const servers = (await bouncer.show('SERVERS')).filter((p) => p.database === dbName);
    expect(servers.length).toBeGreaterThan(0);
    expect(servers.length).toBeLessThanOrEqual(POOL_SIZE);
    const stats = (await bouncer.show('STATS')).find((p) => p.database === dbName)!;
    // Many more transactions than connections: they were really shared.
    expect(Number(stats.total_xact_count)).toBeGreaterThan(100);
    const log = bouncer.log();
    expect(log).not.toMatch(/prepared statement|ERROR|WARNING|server conn crashed|pooler error/i);
  });
});
