import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { OwnPostgres } from '../helpers/own-services.ts';
import { transaction } from '../../storage/db.ts';
import { DependencyUnavailable } from '../../storage/dependencies.ts';
import { insertPost } from '../../storage/statuses.ts';

// A server on a PostgreSQL cluster of this file's own whose every process is stopped (SIGSTOP) under it, as a hung
// primary, a stalled disk or a network partition looks from here: every request is answered within the bound,
// nothing answered 503 is made when PostgreSQL wakes, and the server comes back by itself.
let pg: OwnPostgres;
let s: TestServer & { url: string };
let alice: TestUser; // follows bob, reads her home
let bob: TestUser; // posts

/**
 * Bounded answers: 2 s of waiting at most (the times are printed), checked with the same room for a busy 2-core
 * machine as test/e2e/outages.test.ts: what this catches is a request left waiting for PostgreSQL (15 s before).
 */
const BOUND_MS = 4500;

async function timed(method: 'GET' | 'POST', url: string, token: string, payload?: object, headers: Record<string, string> = {}) {
  const start = performance.now();
  const res = await s.app.inject({ method, url, headers: { ...bearer(token), ...headers }, ...(payload ? { payload } : {}) });
  return { res, ms: performance.now() - start };
}

const post = (text: string, key?: string) => timed('POST', '/api/v1/statuses', bob.token, { status: text }, key ? { 'idempotency-key': key } : {});
const home = () => timed('GET', '/api/v1/timelines/home', alice.token);

function expectUnavailable(r: Awaited<ReturnType<typeof timed>>) {
  expect(r.res.statusCode, r.res.body).toBe(503);
  expect(r.res.json()).toEqual({ error: expect.any(String) });
  expect(Number(r.res.headers['retry-after'])).toBeGreaterThan(0);
}

/** Bob's statuses as PostgreSQL has them (an account's statuses are read from it). */
async function bobsTexts(): Promise<string[]> {
  const res = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${bob.id}/statuses?limit=40`, headers: bearer(alice.token) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { content: string }[]).map((st) => st.content.replace(/<[^>]+>/g, ''));
}

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const start = Date.now();
  while (!(await check().catch(() => false))) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - start;
}

const healthy = async () => (await s.app.inject({ method: 'GET', url: '/health' })).statusCode === 200;

/** The cluster's processes (postmaster and children) as they were while it was last stopped. */
let stoppedPids: number[] = [];

/** Runs fn (which stops the cluster), then wakes it and waits for the server to see it back. */
async function thenResume<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    stoppedPids = await pg.pids().catch(() => []);
    await pg.resume();
    const ms = await until(healthy, 15_000, 'the server sees PostgreSQL back');
    console.info(`postgres-hang: healthy ${ms} ms after SIGCONT`);
  }
}

/**
 * Waits until every connection PostgreSQL had while it was stopped has done what it had been sent by then: its
 * transaction committed or rolled back (the connection closed under it: the backend ends once it reads that), or idle.
 */
async function stoppedConnectionsSettled(): Promise<void> {
  const sql = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND pid <> pg_backend_pid()
    AND backend_type = 'client backend' AND state IS DISTINCT FROM 'idle'`;
  const ms = await until(async () => (await s.ctx.db.query<{ n: number }>(sql, [stoppedPids])).rows[0]!.n === 0, 10_000, 'the connections PostgreSQL had while stopped have settled');
  console.info(`postgres-hang: the connections it had while stopped settled in ${ms} ms`);
}

beforeAll(async () => {
  pg = await OwnPostgres.start();
  s = await startListeningServer({ DATABASE_URL: pg.url('fedi_pg_hang'), DEPENDENCY_TIMEOUT_MS: '1500', DATABASE_QUERY_TIMEOUT_MS: '2000' });
  [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
  expect((await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${bob.id}/follow`, headers: bearer(alice.token) })).statusCode).toBe(200);
  expect((await post('before-hang')).res.statusCode).toBe(200);
  // Alice's home is in Redis (her feed, the statuses cached) before PostgreSQL hangs.
  await until(async () => (await home()).res.json().some((st: { content: string }) => st.content.includes('before-hang')), 5000, 'the post is in alice\'s home');
}, 60_000);

afterAll(async () => {
  // Never left stopped, whatever failed.
  await pg?.resume().catch(() => {});
  await s?.close().catch(() => {});
  await pg?.remove();
}, 30_000);

describe('a PostgreSQL whose every process is stopped', () => {
  it('answers reads and posts within the bound, makes no post answered 503, and takes a retry once it is back', async () => {
    const { first, homeAtOnce, homeLater, second, needsPostgres } = await thenResume(async () => {
      await pg.pause();
      // Sent in the first second of the hang, at once and together.
      const [first, homeAtOnce] = await Promise.all([post('during-hang', 'hang-key-1'), home()]);
      const [homeLater, second] = await Promise.all([home(), post('during-hang-2')]);
      // Once the server knows PostgreSQL is away, what needs it fails at once rather than after its timeout.
      await until(async () => !(await healthy()), 5000, 'the server sees PostgreSQL away');
      const needsPostgres = await timed('GET', `/api/v1/accounts/${bob.id}/statuses`, alice.token);
      return { first, homeAtOnce, homeLater, second, needsPostgres };
    });
    console.info(`postgres-hang: a read that needs PostgreSQL, once it is known away: ${needsPostgres.res.statusCode} in ${needsPostgres.ms.toFixed(0)} ms`);
    console.info(`postgres-hang: post ${first.res.statusCode} in ${first.ms.toFixed(0)} ms, home ${homeAtOnce.res.statusCode} in ${homeAtOnce.ms.toFixed(0)} ms; then home ${homeLater.res.statusCode} in ${homeLater.ms.toFixed(0)} ms, post ${second.res.statusCode} in ${second.ms.toFixed(0)} ms`);
    expectUnavailable(needsPostgres);
    expect(needsPostgres.ms).toBeLessThan(1500); // at once, not after the 2 s statement bound
    for (const r of [first, second]) {
      expectUnavailable(r);
      expect(r.ms).toBeLessThan(BOUND_MS);
    }
    for (const r of [homeAtOnce, homeLater]) {
      expect(r.ms).toBeLessThan(BOUND_MS);
      if (r.res.statusCode === 503) expectUnavailable(r);
      else {
        // Served from Redis: the feed and the cached statuses.
        expect(r.res.statusCode, r.res.body).toBe(200);
        expect(r.res.json().map((st: { content: string }) => st.content.replace(/<[^>]+>/g, ''))).toContain('before-hang');
      }
    }
    // The INSERT PostgreSQL had received before it stopped was never committed: its connection was closed, so it was
    // rolled back when PostgreSQL woke.
    await stoppedConnectionsSettled();
    expect(await bobsTexts()).not.toContain('during-hang');
    expect(await bobsTexts()).not.toContain('during-hang-2');

    // The client tries again with the same key: made now, once.
    const retry = await post('during-hang', 'hang-key-1');
    expect(retry.res.statusCode, retry.res.body).toBe(200);
    const again = await post('during-hang', 'hang-key-1');
    expect(again.res.json().id).toBe(retry.res.json().id);
    expect((await bobsTexts()).filter((t) => t === 'during-hang')).toHaveLength(1);

    // Back without a restart: posts are made and reach the follower's home.
    expect((await post('after-hang')).res.statusCode).toBe(200);
    await until(async () => (await home()).res.json().some((st: { content: string }) => st.content.includes('after-hang')), 5000, 'a new post reaches the home');
  }, 40_000);

  it('answers 503 for a COMMIT sent to a stopped PostgreSQL, and an Idempotency-Key retry returns the post it made', async () => {
    // Stopped between the INSERT and the COMMIT: the COMMIT is in flight (in the socket) when the deadline passes.
    const key = 'hang-key-commit';
    let statusId = '';
    let stopped = 0;
    const outcome = await thenResume(async () => {
      const p = transaction(s.ctx.db, async (tx) => {
        const made = await insertPost(tx, { accountId: bob.id, text: 'commit-in-flight', content: '<p>commit-in-flight</p>', spoilerText: '', sensitive: false, language: null, inReplyToId: null, inReplyToAccountId: null, applicationId: null }, { visibility: null, quotePolicy: null, idempotencyKey: key, mentionIds: [], tagIds: [], outbox: [] });
        statusId = made!.status.id;
        await pg.pause();
        stopped = performance.now();
        return made;
      }).then(() => 'committed', (err: unknown) => err);
      const result = await p;
      return { result, ms: performance.now() - stopped };
    });
    console.info(`postgres-hang: COMMIT in flight answered in ${outcome.ms.toFixed(0)} ms`);
    expect(outcome.result).toBeInstanceOf(DependencyUnavailable);
    expect(outcome.ms).toBeLessThan(BOUND_MS);
    // PostgreSQL read the COMMIT when it woke: the post exists, and the retry returns it rather than a second one.
    await until(async () => (await bobsTexts()).includes('commit-in-flight'), 5000, 'the in-flight commit applied');
    const retry = await post('commit-in-flight', key);
    expect(retry.res.statusCode, retry.res.body).toBe(200);
    expect(retry.res.json().id).toBe(statusId);
    expect((await bobsTexts()).filter((t) => t === 'commit-in-flight')).toHaveLength(1);
  }, 40_000);

  it('rolls back a transaction whose COMMIT was not sent when the deadline passed', async () => {
    let stopped = 0;
    const outcome = await thenResume(async () => {
      const result = await transaction(s.ctx.db, async (tx) => {
        await insertPost(tx, { accountId: bob.id, text: 'never-committed', content: '<p>never-committed</p>', spoilerText: '', sensitive: false, language: null, inReplyToId: null, inReplyToAccountId: null, applicationId: null }, { visibility: null, quotePolicy: null, idempotencyKey: null, mentionIds: [], tagIds: [], outbox: [] });
        await pg.pause();
        stopped = performance.now();
        // A second statement, sent to the stopped server: it never answers.
        await tx.query('SELECT 1');
        return 'committed';
      }).catch((err: unknown) => err);
      return { result, ms: performance.now() - stopped };
    });
    console.info(`postgres-hang: uncommitted transaction answered in ${outcome.ms.toFixed(0)} ms`);
    expect(outcome.result).toBeInstanceOf(Error);
    expect(outcome.ms).toBeLessThan(BOUND_MS);
    // Its connection was closed: rolled back when PostgreSQL woke.
    await stoppedConnectionsSettled();
    expect(await bobsTexts()).not.toContain('never-committed');
  }, 40_000);
});
