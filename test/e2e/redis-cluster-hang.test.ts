// A server on a Redis Cluster one of whose masters hangs (SIGSTOP: it keeps its sockets and answers nothing) while
// one user posts and another reads home: every request is answered within the bound (200, or 503 with Retry-After),
// the server serves again once a replica has taken over, without a restart, and nothing answered 200 is lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCluster } from '../../cli/redis-cluster.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { feedTag } from '../../storage/redis-keys.ts';

/**
 * What the design bounds a request at when a cluster master hangs: the hang is found by a PING left unanswered
 * 1.5 s (probed every second: up to 2.5 s after it began), that node's connections are then cut off, and the
 * Cluster retries what was cut off every 100 ms for at most 1.7 s until a replica has taken over: about 4.2 s, with
 * room for a busy 2-core machine (5.1 s was seen once in CI). This is longer than the 2 s that a single Redis or PostgreSQL away is answered
 * within (docs/scaling.md, "Redis Cluster": not met for a hung master); a wait past it means a request hangs on the node.
 */
const BOUND_MS = 6000;
const RUN_MS = 10_000;
const PAUSE_AFTER_MS = 1000;

let cluster: RedisCluster;
let s: TestServer;
let ann: TestUser; // posts
let ben: TestUser; // follows ann, reads home
const paused: number[] = [];

interface Sample { what: 'post' | 'home'; at: number; status: number; ms: number; retryAfter?: string; text?: string }

async function timed(what: 'post' | 'home', at: number, text?: string): Promise<Sample> {
  const start = performance.now();
  const res = what === 'post'
    ? await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ann.token), payload: { status: text } })
    : await s.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(ben.token) });
  const ms = performance.now() - start;
  return { what, at, status: res.statusCode, ms, retryAfter: res.headers['retry-after'] as string | undefined, text: what === 'post' ? text : undefined };
}

/** Every status in ben's home, newest first (paged). */
async function bensHome(): Promise<string[]> {
  const texts: string[] = [];
  let maxId = '';
  for (;;) {
    const res = await s.app.inject({ method: 'GET', url: `/api/v1/timelines/home?limit=40${maxId ? `&max_id=${maxId}` : ''}`, headers: bearer(ben.token) });
    if (res.statusCode !== 200) throw new Error(`home: ${res.statusCode}`);
    const page = res.json() as { id: string; content: string }[];
    if (page.length === 0) return texts;
    texts.push(...page.map((st) => st.content.replace(/<[^>]+>/g, '')));
    maxId = page.at(-1)!.id;
  }
}

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const start = Date.now();
  while (!(await check().catch(() => false))) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - start;
}

describe('a Redis Cluster master that hangs', () => {
  beforeAll(async () => {
    cluster = await RedisCluster.start();
    s = await startTestServer({ REDIS_CLUSTER_NODES: cluster.seeds, RATE_LIMITS: 'false', DEPENDENCY_TIMEOUT_MS: '1500', DATABASE_QUERY_TIMEOUT_MS: '2000' });
    // Served once every master answers (the server may start before its probe has seen them all).
    await until(async () => (await s.app.inject({ method: 'GET', url: '/health' })).statusCode === 200, 10_000, 'healthy');
    [ann, ben] = await registerUsers(s.app, 'ann', 'ben');
    const follow = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${ann.id}/follow`, headers: bearer(ben.token) });
    expect(follow.statusCode, follow.body).toBe(200);
    const home = await s.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(ben.token) });
    expect(home.statusCode, home.body).toBe(200);
  }, 60_000);

  afterAll(async () => {
    for (const port of paused) cluster?.resume(port);
    await s?.close().catch(() => {});
    await cluster?.stop();
  }, 60_000);

  it('answers every request within the bound, serves again after the failover, and keeps every post answered 200', async () => {
    // The master of ben's home feed: his reads and ann's fanout both need it.
    const victim = await cluster.masterOf(`x${feedTag(ben.id)}`);
    const samples: Sample[] = [];
    const start = Date.now();
    let n = 0;
    while (Date.now() - start < RUN_MS) {
      if (paused.length === 0 && Date.now() - start >= PAUSE_AFTER_MS) {
        cluster.pause(victim);
        paused.push(victim);
      }
      const at = Date.now() - start;
      samples.push(await timed('post', at, `post ${n++}`));
      samples.push(await timed('home', Date.now() - start));
      await new Promise((r) => setTimeout(r, 50));
    }
    const slow = samples.filter((x) => x.ms > 300).map((x) => `${x.what}@${x.at}:${x.status}/${Math.round(x.ms)}ms`);
    const counts = samples.reduce<Record<string, number>>((acc, x) => ((acc[`${x.what} ${x.status}`] = (acc[`${x.what} ${x.status}`] ?? 0) + 1), acc), {});
    console.log(`paused ${victim}; ${samples.length} requests, max ${Math.round(Math.max(...samples.map((x) => x.ms)))} ms; ${JSON.stringify(counts)}; slow: ${slow.join(' ')}`);

    for (const x of samples) {
      expect([200, 503], `${x.what} at ${x.at} ms`).toContain(x.status);
      if (x.status === 503) expect(Number(x.retryAfter)).toBeGreaterThan(0);
      expect(x.ms, `${x.what} at ${x.at} ms: ${x.status}`).toBeLessThan(BOUND_MS);
    }

    // Served again (the replica took over) while the old master is still stopped: no restart.
    const back = await until(async () => {
      const p = await timed('post', 0, `after ${n}`);
      const h = await timed('home', 0);
      if (p.status === 200) samples.push(p);
      return p.status === 200 && h.status === 200;
    }, 20_000, 'posts and home answered 200 again');
    console.log(`served again ${back} ms after the loop`);

    const made = samples.filter((x) => x.what === 'post' && x.status === 200).map((x) => x.text!);
    expect(made.length).toBeGreaterThan(0);
    await until(async () => {
      const home = new Set(await bensHome());
      return made.every((t) => home.has(t));
    }, 20_000, 'every post answered 200 in ben\'s home');
  }, 90_000);
});
