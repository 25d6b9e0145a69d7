// A server behind PgBouncer (transaction mode, PREPARED_STATEMENTS=false) on a PostgreSQL primary of this file's own
// with one streaming standby. The primary is stopped as a crash (`pg_ctl stop -m immediate`); requests during the gap
// answer within the bound; cli/pg-failover.ts promotes the standby, points PgBouncer at it and reloads it; the
// same server process, not restarted, then posts, reads its home timeline and reports itself healthy, and a post
// acknowledged before the crash (and replicated) is still there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { requirePgBouncer, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { OwnPostgres } from '../helpers/own-services.ts';
import { pgAnswers } from '../helpers/pg-answers.ts';
import { failOver, pointDatabasesAt } from '../../cli/pg-failover.ts';

const DATABASE = 'fedi_failover_test';
/**
 * Bounded answers: 2 s of waiting at most (the times are printed), checked with the same room for a busy 2-core
 * machine as test/e2e/outages.test.ts: what this catches is a request left waiting for PostgreSQL (15 s before).
 */
const BOUND_MS = 4500;

let primary: OwnPostgres;
let standby: OwnPostgres;
let bouncer: PgBouncer;
let s: TestServer;
let alice: TestUser; // follows bob, reads her home
let bob: TestUser; // posts

async function timed(method: 'GET' | 'POST', url: string, token?: string, payload?: object, headers: Record<string, string> = {}) {
  const start = performance.now();
  const res = await s.app.inject({ method, url, headers: { ...(token ? bearer(token) : {}), ...headers }, ...(payload ? { payload } : {}) });
  return { res, ms: performance.now() - start };
}

const post = (text: string, key?: string) => timed('POST', '/api/v1/statuses', bob.token, { status: text }, key ? { 'idempotency-key': key } : {});
const home = () => timed('GET', '/api/v1/timelines/home', alice.token);
const texts = (body: { content: string }[]) => body.map((st) => st.content.replace(/<[^>]+>/g, ''));
const healthy = async () => (await s.app.inject({ method: 'GET', url: '/health' })).statusCode === 200;
const homeHas = async (text: string) => {
  const r = await home();
  return r.res.statusCode === 200 && texts(r.res.json()).includes(text);
};

/** Bob's statuses as PostgreSQL has them (an account's statuses are read from it). */
async function bobsTexts(): Promise<string[]> {
  const res = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${bob.id}/statuses?limit=40`, headers: bearer(alice.token) });
  expect(res.statusCode, res.body).toBe(200);
  return texts(res.json());
}

function expectUnavailable(r: Awaited<ReturnType<typeof timed>>) {
  expect(r.res.statusCode, r.res.body).toBe(503);
  expect(r.res.json()).toEqual({ error: expect.any(String) });
  expect(Number(r.res.headers['retry-after'])).toBeGreaterThan(0);
}

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const start = Date.now();
  while (!(await check().catch(() => false))) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - start;
}

/** One statement straight on a cluster (not through PgBouncer). */
async function direct<T extends pg.QueryResultRow>(cluster: OwnPostgres, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: cluster.url(DATABASE), connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/** SELECT 1 through PgBouncer on a database it makes from its `*` line (an autodb): whether it answered. */
async function throughWildcard(): Promise<boolean> {
  return pgAnswers(bouncer.url('postgres'));
}

/** Waits until the standby has replayed everything the primary has written so far. */
async function standbyCaughtUp(): Promise<void> {
  const [{ lsn }] = (await direct<{ lsn: string }>(primary, 'SELECT pg_current_wal_lsn()::text AS lsn')) as [{ lsn: string }];
  await until(async () => (await direct<{ ok: boolean }>(standby, 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]))[0]!.ok, 10_000, 'the standby replays the primary');
}

describe('pointDatabasesAt (the ini rewrite)', () => {
  it('repoints the entries naming the old primary and keeps everything else', () => {
    const ini = [
      '; the cluster',
      '[databases]',
      "mastodon = host=10.0.0.5 port=5432 dbname=mastodon application_name='fedi web'",
      '  other = host=10.0.0.9 dbname=other',
      '* = host=10.0.0.5',
      '# host=10.0.0.5 in a comment',
      '[pgbouncer]',
      'listen_addr = 10.0.0.5',
      '',
    ].join('\n');
    const { text, databases } = pointDatabasesAt(ini, { host: '10.0.0.6', port: 5433 }, { host: '10.0.0.5', port: 5432 });
    expect(databases).toEqual(['mastodon', '*']);
    expect(text.split('\n')).toEqual([
      '; the cluster',
      '[databases]',
      "mastodon = host=10.0.0.6 port=5433 dbname=mastodon application_name='fedi web'",
      '  other = host=10.0.0.9 dbname=other',
      '* = host=10.0.0.6 port=5433',
      '# host=10.0.0.5 in a comment',
      '[pgbouncer]',
      'listen_addr = 10.0.0.5',
      '',
    ]);
    // Without the old primary named, every entry moves.
    expect(pointDatabasesAt(ini, { host: '10.0.0.6', port: 5432 }).databases).toEqual(['mastodon', 'other', '*']);
  });
});

describe('the primary failing over to its standby behind PgBouncer', () => {
  beforeAll(async () => {
    requirePgBouncer();
    primary = await OwnPostgres.start();
    // The standby is copied from the primary while the server starts on it (through PgBouncer): what the server
    // writes meanwhile reaches the standby by streaming replication, as what it writes later does.
    const standbyStarted = primary.startReplica().then((replica) => (standby = replica));
    try {
      await startServer();
    } finally {
      // Started (and so removed by afterAll) however the server's start went.
      await standbyStarted;
    }
  }, 60_000);

  async function startServer() {
    bouncer = await startPgBouncer({ backend: { host: '127.0.0.1', port: primary.port }, databases: [DATABASE], poolSize: 5 });
    s = await startTestServer({
      DATABASE_URL: bouncer.url(DATABASE),
      // Used at start-up only (database creation, migrations): after the failover the operator points it at the new
      // primary before the next start. This server keeps running with it naming the stopped primary.
      DATABASE_DIRECT_URL: primary.url(DATABASE),
      PREPARED_STATEMENTS: 'false',
      // The production bound of a request's statements: this test checks that every request is answered in time.
      DATABASE_QUERY_TIMEOUT_MS: '2000',
    });
    [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${bob.id}/follow`, headers: bearer(alice.token) })).statusCode).toBe(200);
  }

  afterAll(async () => {
    await s?.close().catch(() => {});
    await bouncer?.stop();
    await standby?.remove();
    await primary?.remove();
  }, 30_000);

  it('answers within the bound during the gap, and the same process works on the promoted standby', async () => {
    const before = await post('before-failover');
    expect(before.res.statusCode, before.res.body).toBe(200);
    // Replication is asynchronous: a post is on the standby only once it has replayed it. This one has; one
    // acknowledged in the last moment before a crash may not have, and is lost with the old primary.
    await standbyCaughtUp();
    await until(() => homeHas('before-failover'), 5000, "the post is in alice's home");

    await primary.stop('immediate');
    const crashed = performance.now();
    // At once, together: the server does not know yet.
    const [gapPost, gapHome] = await Promise.all([post('during-gap', 'failover-key'), home()]);
    await until(async () => !(await healthy()), 5000, 'the server sees PostgreSQL away');
    // Together with those: a database PgBouncer makes from its `*` line fails too (and PgBouncer remembers that failed
    // login).
    const [laterPost, laterHome, wildcardDuringGap] = await Promise.all([post('during-gap-2'), home(), throughWildcard()]);
    expect(wildcardDuringGap).toBe(false);
    console.info(`postgres-failover: during the gap post ${gapPost.res.statusCode} in ${gapPost.ms.toFixed(0)} ms, home ${gapHome.res.statusCode} in ${gapHome.ms.toFixed(0)} ms; later post ${laterPost.res.statusCode} in ${laterPost.ms.toFixed(0)} ms, home ${laterHome.res.statusCode} in ${laterHome.ms.toFixed(0)} ms`);
    for (const r of [gapPost, laterPost]) {
      expectUnavailable(r);
      expect(r.ms).toBeLessThan(BOUND_MS);
    }
    for (const r of [gapHome, laterHome]) {
      expect(r.ms).toBeLessThan(BOUND_MS);
      if (r.res.statusCode === 503) expectUnavailable(r);
      else {
        // Served from Redis: the feed and the cached statuses.
        expect(r.res.statusCode, r.res.body).toBe(200);
        expect(texts(r.res.json())).toContain('before-failover');
      }
    }

    const result = await failOver({
      standbyDataDir: standby.dataDirectory,
      standby: { host: '127.0.0.1', port: standby.port },
      pgbouncerIni: bouncer.iniPath,
      pgbouncerAdminUrl: bouncer.adminUrl,
      oldPrimary: { host: '127.0.0.1', port: primary.port },
    });
    expect(result.databases).toEqual([DATABASE, '*']);
    expect(result.restartedPools.sort()).toEqual([DATABASE, 'postgres'].sort());
    // At once: PgBouncer does not wait out server_login_retry (15 s) after its failed logins to the old primary.
    expect(await throughWildcard()).toBe(true);
    expect((await direct<{ standby: boolean }>(standby, 'SELECT pg_is_in_recovery() AS standby'))[0]!.standby).toBe(false);
    const back = await until(healthy, 10_000, 'the server sees PostgreSQL back');
    console.info(`postgres-failover: failover took ${result.totalMs.toFixed(0)} ms (promotion ${result.promoteMs.toFixed(0)} ms); healthy ${back} ms later, ${((performance.now() - crashed) / 1000).toFixed(1)} s after the crash`);

    // The post answered 503 during the gap was never made; retried with its key, it is made once.
    const retry = await post('during-gap', 'failover-key');
    expect(retry.res.statusCode, retry.res.body).toBe(200);
    expect((await post('during-gap', 'failover-key')).res.json().id).toBe(retry.res.json().id);
    const after = await post('after-failover');
    expect(after.res.statusCode, after.res.body).toBe(200);

    const written = await bobsTexts();
    expect(written).toContain('before-failover');
    expect(written.filter((t) => t === 'during-gap')).toHaveLength(1);
    expect(written).not.toContain('during-gap-2');
    // On the promoted standby itself (the old primary is stopped; nothing else could have taken the write).
    expect(await direct(standby, 'SELECT 1 FROM statuses WHERE id = $1', [after.res.json().id])).toHaveLength(1);

    // The fan-out job (through the outbox and the worker) reaches alice's home.
    await until(() => homeHas('after-failover'), 10_000, "the post after the failover reaches alice's home");
    const timeline = await home();
    expect(timeline.res.statusCode).toBe(200);
    expect(texts(timeline.res.json())).toEqual(expect.arrayContaining(['after-failover', 'during-gap', 'before-failover']));
    // PgBouncer's server connections for the database are all to the promoted standby.
    const servers = (await bouncer.show('SERVERS')).filter((x) => x.database === DATABASE);
    expect(servers.length).toBeGreaterThan(0);
    for (const server of servers) expect(Number(server.port)).toBe(standby.port);
  }, 45_000);
});
