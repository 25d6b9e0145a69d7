import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { OwnPostgres, OwnRedis } from '../helpers/own-services.ts';
import { Dependencies } from '../../storage/dependencies.ts';
import { createRedis } from '../../storage/redis.ts';
import { homeShardOf } from '../../services/stream-events.ts';

// One server on a PostgreSQL and a Redis of this file's own, each stopped and started again under it: requests are
// answered 503 (with Retry-After) quickly, nothing answered 503 is made then or later, nothing made is lost or
// doubled, and the server comes back by itself.
let pg: OwnPostgres;
let redis: OwnRedis;
let s: TestServer & { url: string };
let alice: TestUser; // follows bob, reads her home and stream
let bob: TestUser; // posts
let eve: TestUser; // followed and muted by alice: her posts stay out of alice's home, before and after
const logged: { level: string; msg: string }[] = [];
let watcher: Dependencies;
let watcherRedis: ReturnType<typeof createRedis>;

/** An answer with how long it took. */
async function timed(method: string, url: string, token: string, payload?: object) {
  const start = performance.now();
  const res = await s.app.inject({ method: method as 'GET', url, headers: bearer(token), ...(payload ? { payload } : {}) });
  return { res, ms: performance.now() - start };
}

const post = (text: string) => timed('POST', '/api/v1/statuses', bob.token, { status: text });

function expectUnavailable(r: Awaited<ReturnType<typeof timed>>) {
  expect(r.res.statusCode, r.res.body).toBe(503);
  expect(r.res.json()).toEqual({ error: expect.any(String) });
  expect(Number(r.res.headers['retry-after'])).toBeGreaterThan(0);
  // About 2 s of waiting for the dependency at most; well under 5 s however busy the machine.
  expect(r.ms).toBeLessThan(4500);
}

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const healthy = async () => (await s.app.inject({ method: 'GET', url: '/health' })).statusCode === 200;

/**
 * Waits until the job worker is not behind (services/job-backlog.ts): a post would otherwise wait its turn first, and
 * the bounds below are those of the outage alone.
 */
const workerCaughtUp = () => until(async () => !s.ctx.jobBacklog.behind, 10_000, 'the job worker has caught up');

/** The texts of every page of a timeline, as alice reads it. */
async function texts(path: string): Promise<string[]> {
  const out: string[] = [];
  let maxId = '';
  for (;;) {
    const res = await s.app.inject({ method: 'GET', url: `${path}?limit=40${maxId ? `&max_id=${maxId}` : ''}`, headers: bearer(alice.token) });
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json() as { id: string; content: string }[];
    if (page.length === 0) return out;
    out.push(...page.map((st) => st.content.replace(/<[^>]+>/g, '')));
    maxId = page.at(-1)!.id;
  }
}

/** Bob's statuses as PostgreSQL has them (an account's statuses are read from it). */
const bobsTexts = () => texts(`/api/v1/accounts/${bob.id}/statuses`);
const homeTexts = () => texts('/api/v1/timelines/home');

/**
 * Posts in four loops until `stop` settles, each text unique; records in `answers` (in the order they come) what each
 * was answered, and returns it once `stop` has resolved. Only 200 (made) and 503 (not made) are acceptable answers.
 */
async function postWhile(prefix: string, answers: Map<string, number>, stop: Promise<unknown>): Promise<Map<string, number>> {
  let done = false;
  void stop.then(() => (done = true), () => (done = true));
  let n = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (!done) {
      const text = `${prefix}-${n++}`;
      const r = await post(text);
      answers.set(text, r.res.statusCode);
      expect([200, 503], `${text}: ${r.res.body}`).toContain(r.res.statusCode);
      expect(r.ms).toBeLessThan(4500);
      await new Promise((resolve) => setTimeout(resolve, r.res.statusCode === 503 ? 50 : 100));
    }
  }));
  await stop;
  return answers;
}

/**
 * While `postWhile` posts into `answers`: waits until a write has waited out its bound with the dependency away (a
 * 503), starts it again (`restart`), waits until the server sees it back and a write sent since has been made (a 200).
 */
async function outageThenBack(answers: Map<string, number>, restart: () => Promise<void>, what: string): Promise<void> {
  await until(async () => [...answers.values()].includes(503), 10_000, `a write is refused while ${what} is away`);
  await restart();
  await until(healthy, 10_000, `the server sees ${what} again`);
  const seen = answers.size;
  await until(async () => [...answers.values()].slice(seen).includes(200), 10_000, `a write is made once ${what} is back`);
}

/**
 * Waits until nothing the server took on is still under way: no transaction open on its database but this one, and
 * the outbox empty (every job of what was made has run). Whatever a refused write might have left to run late has run.
 */
async function settled(): Promise<void> {
  await until(async () => {
    const { rows } = await s.ctx.db.query<{ open: number; outbox: number }>(`SELECT
      (SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
        AND pid <> pg_backend_pid() AND xact_start IS NOT NULL) AS open,
      (SELECT count(*)::int FROM outbox) AS outbox`);
    return rows[0]!.open === 0 && rows[0]!.outbox === 0;
  }, 10_000, 'the server has nothing under way');
}

/** Every post answered 200 is there once, none answered 503 is there (now, and a moment later). */
async function expectExactly(answers: Map<string, number>, texts: () => Promise<string[]>) {
  const made = [...answers].filter(([, code]) => code === 200).map(([t]) => t);
  const refused = [...answers].filter(([, code]) => code === 503).map(([t]) => t);
  const seen = (await texts()).filter((t) => answers.has(t));
  expect(seen.length, 'no post twice').toBe(new Set(seen).size);
  expect(new Set(seen)).toEqual(new Set(made));
  for (const t of refused) expect(seen).not.toContain(t);
}

beforeAll(async () => {
  [pg, redis] = await Promise.all([OwnPostgres.start(), OwnRedis.start()]);
  s = await startListeningServer({ DATABASE_URL: pg.url('fedi_outages'), REDIS_URL: redis.url, DEPENDENCY_TIMEOUT_MS: '1500', DATABASE_QUERY_TIMEOUT_MS: '2000' });
  [alice, bob, eve] = await registerUsers(s.app, 'alice', 'bob', 'eve');
  for (const [who, action] of [[bob, 'follow'], [eve, 'follow'], [eve, 'mute']] as const) {
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${who.id}/${action}`, headers: bearer(alice.token) })).statusCode).toBe(200);
  }
  expect((await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(eve.token), payload: { status: 'from-eve' } })).statusCode).toBe(200);
  await homeTexts();
  // A second watcher on the same dependencies, whose log lines this file reads.
  watcherRedis = createRedis(redis.url);
  await watcherRedis.connect();
  const log = (level: string) => (_obj: object, msg: string) => void logged.push({ level, msg });
  watcher = new Dependencies({ databaseUrl: pg.url('fedi_outages'), redis: watcherRedis, log: { info: log('info'), warn: log('warn'), error: log('error') }, everyMs: 500 });
  watcher.start();
}, 60_000);

afterAll(async () => {
  watcher?.stop();
  watcherRedis?.disconnect();
  await s?.close().catch(() => {});
  await Promise.all([pg?.remove(), redis?.remove()]);
}, 30_000);

describe('when Redis goes away', () => {
  it('answers 503 with Retry-After quickly, applies no refused write, and comes back by itself', async () => {
    expect((await post('before-redis')).res.statusCode).toBe(200);
    await until(async () => (await homeTexts()).includes('before-redis'), 5000, 'the post reaches the follower');
    expect(await homeTexts()).not.toContain('from-eve');
    // A socket on alice's home stream, open across the outage.
    const events: string[] = [];
    let closed: { code: number; reason: string } | null = null;
    const ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/v1/streaming?stream=user&access_token=${alice.token}`);
    await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
    ws.onmessage = (m) => events.push(String(m.data));
    ws.onclose = (e) => (closed = { code: e.code, reason: e.reason });
    // Subscribed: Redis has the socket's channels (alice's home and its shard).
    const channels = [`timeline:${alice.id}`, `timeline:homes:${homeShardOf(alice.id)}`];
    await until(async () => {
      const subscribed = (await watcherRedis.pubsub('CHANNELS', '*')) as string[];
      return channels.every((c) => subscribed.some((x) => x.endsWith(c)));
    }, 5000, 'the stream is subscribed');

    await workerCaughtUp();
    await redis.stop();
    // A post sent in the instant Redis goes, before the server has seen it go, is made and answered 200 (as in the
    // test after this one); once it is seen (at once, by the connection closing), writes are refused.
    await until(async () => !(await healthy()), 2000, 'the server sees Redis gone');
    // Each on its own, sent together: a post, a read, the health checks, a new stream.
    const sseAt = async () => {
      const start = performance.now();
      // A new stream waits for Redis a bounded time, then is refused.
      const sse = await fetch(`${s.url}/api/v1/streaming/public?access_token=${alice.token}`);
      return { sse, ms: performance.now() - start };
    };
    const [during, home, health, streamingHealth, { sse, ms: sseMs }] = await Promise.all([
      post('during-redis'),
      timed('GET', '/api/v1/timelines/home', alice.token),
      s.app.inject({ method: 'GET', url: '/health' }),
      fetch(`${s.url}/api/v1/streaming/health`),
      sseAt(),
    ]);
    expectUnavailable(during);
    expect([200, 503]).toContain(home.res.statusCode);
    expect(home.ms).toBeLessThan(4500);
    expect(health.statusCode).toBe(503);
    expect(health.json()).toEqual({ status: 'unavailable', postgres: 'ok', redis: 'unavailable' });
    expect(streamingHealth.status).toBe(503);
    expect(sse.status).toBe(503);
    expect(sse.headers.get('retry-after')).toBeTruthy();
    expect(sseMs).toBeLessThan(4500);

    // Writers keep posting while Redis is started again: each is answered 200 or 503, within the bound.
    const answers = new Map<string, number>();
    await postWhile('redis', answers, outageThenBack(answers, () => redis.start(), 'Redis'));
    expect([...answers.values()]).toContain(503);
    expect([...answers.values()]).toContain(200);

    expect((await post('after-redis')).res.statusCode).toBe(200);
    expect((await fetch(`${s.url}/api/v1/streaming/health`)).status).toBe(200);
    // Redis came back empty: alice's feed is rebuilt from PostgreSQL, the fan-out of what was made reaches it.
    await until(async () => (await homeTexts()).includes('after-redis'), 5000, 'the post after reaches the follower');
    await settled(); // anything refused that would run late
    for (const texts of [bobsTexts, homeTexts]) {
      await expectExactly(answers, texts);
      const all = await texts();
      expect(all.filter((t) => t === 'before-redis')).toHaveLength(1);
      expect(all.filter((t) => t === 'after-redis')).toHaveLength(1);
      expect(all).not.toContain('during-redis');
    }
    // Redis came back empty: what alice mutes is still muted (PostgreSQL has it; Redis only said whom to ask about).
    expect(await homeTexts()).not.toContain('from-eve');
    // The socket stayed open (or said why it closed) and hears events again: its subscription was made again.
    if (closed) expect((closed as { reason: string }).reason).not.toBe('');
    else await until(async () => events.some((e) => e.includes('after-redis')), 5000, 'the stream hears the post after');
    ws.close();
  }, 30_000);
});

describe('when Redis goes away just after a post is committed', () => {
  it('answers the post as made (it is), and it reaches the follower once Redis is back', async () => {
    // Redis stops between the post's commit and the Redis work that follows it.
    const versions = s.ctx.versions;
    const bump = versions.bump;
    versions.bump = async (...args) => {
      versions.bump = bump;
      await redis.stop();
      return bump.apply(versions, args);
    };
    const made = await post('just-before-redis');
    versions.bump = bump;
    expect(made.res.statusCode, made.res.body).toBe(200);
    expect(made.res.json().content).toContain('just-before-redis');
    await redis.start();
    await until(healthy, 10_000, 'the server sees Redis again');
    // Its fan-out job, lost with Redis, is queued again from the outbox.
    await until(async () => (await homeTexts()).includes('just-before-redis'), 10_000, 'the post reaches the follower');
    for (const texts of [bobsTexts, homeTexts]) expect((await texts()).filter((t) => t === 'just-before-redis')).toHaveLength(1);
  }, 30_000);
});

describe('when Redis stops answering but keeps its connections', () => {
  it('answers within the bound, takes no write while it hangs, and comes back when it answers again', async () => {
    await workerCaughtUp();
    redis.pause();
    try {
      // The first request's Redis commands wait until a probe's PING goes unanswered for 1.5 s (probes are a second
      // apart) and the connections are cut off (about 2–2.5 s in all); the post, committed first, is answered as made.
      const first = await post('while-redis-hangs-1');
      expect([200, 503]).toContain(first.res.statusCode);
      expect(first.ms).toBeLessThan(4500);
      await until(async () => (await s.app.inject({ method: 'GET', url: '/health' })).statusCode === 503, 5000, 'health says so');
      const [second, home] = await Promise.all([post('while-redis-hangs-2'), timed('GET', '/api/v1/timelines/home', alice.token)]);
      expectUnavailable(second);
      expect([200, 503]).toContain(home.res.statusCode);
      expect(home.ms).toBeLessThan(4500);
    } finally {
      redis.resume();
    }
    await until(healthy, 10_000, 'the server sees Redis again');
    expect((await post('after-redis-hung')).res.statusCode).toBe(200);
    const texts = await bobsTexts();
    expect(texts).not.toContain('while-redis-hangs-2');
    expect(texts.filter((t) => t === 'after-redis-hung')).toHaveLength(1);
    expect(texts.filter((t) => t === 'while-redis-hangs-1')).toHaveLength(1);
  }, 30_000);
});

describe('when the connection jobs are added on drops for a moment', () => {
  it('answers a post sent meanwhile as made, and its job runs once that connection is back, not at the sweeper\'s next pass', async () => {
    await workerCaughtUp();
    // Redis itself stays: only the server's connection for adding jobs is cut, and it reconnects at once.
    const id = await s.ctx.jobs.connection.client('ID');
    await watcherRedis.client('KILL', 'ID', String(id));
    // Made, or refused whole (503) when the connection went while it was being made, and then sent again as an app does.
    let made = await post('while-jobs-reconnect');
    for (let tries = 1; made.res.statusCode === 503 && tries < 20; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      made = await post('while-jobs-reconnect');
    }
    expect(made.res.statusCode, made.res.body).toBe(200);
    // Alice's home in Redis (not rebuilt: Redis kept it) gets the post only from its fan-out job; the sweeper takes
    // up rows 10 s old, so this is the job queued as the post was made or as the connection came back.
    await until(async () => (await homeTexts()).includes('while-jobs-reconnect'), 5000, 'the post reaches the follower');
    await settled();
    expect((await bobsTexts()).filter((t) => t === 'while-jobs-reconnect')).toHaveLength(1);
  }, 30_000);
});

describe('when PostgreSQL goes away', () => {
  it('answers 503 with Retry-After quickly, applies no refused write, and comes back by itself', async () => {
    expect((await post('before-pg')).res.statusCode).toBe(200);
    await workerCaughtUp();
    await pg.stop('fast');
    await until(async () => !(await healthy()), 2000, 'the server sees PostgreSQL gone');
    // An app that sends an Idempotency-Key and retries after the 503 posts once.
    const keyed = () => s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: { ...bearer(bob.token), 'idempotency-key': 'retry-me' }, payload: { status: 'keyed-pg' } });
    // Each on its own, sent together: two posts, a read, the health check.
    const [during, keyedDuring, home, health] = await Promise.all([
      post('during-pg'),
      keyed(),
      timed('GET', '/api/v1/timelines/home', alice.token),
      s.app.inject({ method: 'GET', url: '/health' }),
    ]);
    expectUnavailable(during);
    expect(keyedDuring.statusCode).toBe(503);
    expect([200, 503]).toContain(home.res.statusCode);
    expect(home.ms).toBeLessThan(4500);
    expect(health.statusCode).toBe(503);
    expect(health.json()).toEqual({ status: 'unavailable', postgres: 'unavailable', redis: 'ok' });

    const answers = new Map<string, number>();
    await postWhile('pg', answers, outageThenBack(answers, () => pg.start(), 'PostgreSQL'));
    expect([...answers.values()]).toContain(503);
    expect([...answers.values()]).toContain(200);

    expect((await post('after-pg')).res.statusCode).toBe(200);
    const [retry, again] = [await keyed(), await keyed()];
    expect(retry.statusCode, retry.body).toBe(200);
    expect(again.json().id).toBe(retry.json().id);
    expect((await bobsTexts()).filter((t) => t === 'keyed-pg')).toHaveLength(1);
    await until(async () => (await homeTexts()).includes('after-pg'), 10_000, 'the post after reaches the follower');
    // Fan-out of the posts made before and after the outage ran (workers paused and resumed), each once.
    await until(async () => {
      const home = await homeTexts();
      return [...answers].every(([t, code]) => code !== 200 || home.includes(t));
    }, 10_000, 'every post made reaches the follower');
    for (const texts of [bobsTexts, homeTexts]) {
      await expectExactly(answers, texts);
      const all = await texts();
      for (const t of ['before-pg', 'after-pg']) expect(all.filter((x) => x === t)).toHaveLength(1);
      expect(all).not.toContain('during-pg');
    }
  }, 30_000);

  it('says once that each dependency went away and once that it came back', async () => {
    const lines = (re: RegExp) => logged.filter((l) => re.test(l.msg));
    // The last comeback is logged when the watcher's probe next answers, which may be a moment after the server's
    // first answers: waited for (bounded), then every line counted exactly.
    await until(async () => lines(/^postgres is back/).length >= 1 && lines(/^redis is back/).length >= 3, 5_000, 'each comeback logged');
    // Three outages of Redis (stopped, stopped just after a commit, hung), one of PostgreSQL.
    expect(lines(/^redis is unavailable/)).toHaveLength(3);
    expect(lines(/^redis is back/)).toHaveLength(3);
    expect(lines(/^postgres is unavailable/)).toHaveLength(1);
    expect(lines(/^postgres is back/)).toHaveLength(1);
  });
});
