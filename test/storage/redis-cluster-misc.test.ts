import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { RedisCluster } from '../../cli/redis-cluster.ts';
import { connectRedis, createRedis, mastersOf, type RedisClient } from '../../storage/redis.ts';
import { hashTagOf, RATE_LIMIT_BUCKETS } from '../../storage/redis-keys.ts';
import { RateLimitCounters, rateLimitRedisKey, type Count } from '../../storage/rate-limit-counters.ts';
import { RedisKvStore } from '../../federation/kv.ts';
import { emailBlockErrors, emailDomainBlockHistories } from '../../services/admin-blocks.ts';
import { dimensions } from '../../services/admin-metrics.ts';

// The smaller Redis uses (storage/REDIS-CLUSTER.md §2.5, §2.8, §2.9, §2.1) on a real cluster of 3 masters + 3 replicas:
// their keys spread over every master, where a multi-key command, script or transaction must stay in one slot.
let cluster: RedisCluster;
let redis: RedisClient;
let other: RedisClient;
const run = randomBytes(4).toString('hex');

beforeAll(async () => {
  cluster = await RedisCluster.start();
  const target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
  redis = createRedis(target);
  other = createRedis(target);
  await connectRedis(redis, target);
  await connectRedis(other, target);
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  other?.disconnect();
  await cluster?.stop();
});

function hit(counters: RateLimitCounters, key: string, max = 1_000_000): Promise<Count> {
  return new Promise((resolve, reject) => counters.hit(key, 60_000, max, (err, count) => (err ? reject(err) : resolve(count!))));
}

function read(counters: RateLimitCounters, key: string): Promise<Count> {
  return new Promise((resolve, reject) => counters.read(key, (err, count) => (err ? reject(err) : resolve(count!))));
}

describe('rate-limit counters on a cluster', () => {
  it('flushes keys of every bucket, one script call per bucket, each key taking back its own count; two processes share them', async () => {
    const prefix = `fedi_rl_${run}:rate-limit:`;
    const keys = Array.from({ length: 64 }, (_, i) => `${prefix}token:${i}`);
    const tags = new Set(keys.map((k) => hashTagOf(rateLimitRedisKey(k))));
    expect(tags.size).toBe(RATE_LIMIT_BUCKETS);
    const masters = new Set(await Promise.all([...tags].map((tag) => cluster.masterOf(`{${tag}}`))));
    expect(masters.size).toBe(3);

    // Two processes: flushes only when asked, so each flush carries every key's pending hits.
    const a = new RateLimitCounters(redis, { flushMs: 3_600_000 });
    const b = new RateLimitCounters(other, { flushMs: 3_600_000 });
    const byA = (i: number) => i % 5 + 2;
    const byB = (i: number) => i % 3 + 2;
    // The first hit of each key goes to Redis at once; the others are counted in memory until a flush.
    for (const key of keys) await hit(a, key);
    for (const key of keys) await hit(b, key);
    for (const [i, key] of keys.entries()) for (let n = 1; n < byA(i); n++) await hit(a, key);
    for (const [i, key] of keys.entries()) for (let n = 1; n < byB(i); n++) await hit(b, key);

    const calls = vi.spyOn(redis, 'evalsha');
    await a.flush();
    expect(calls.mock.calls.length).toBe(RATE_LIMIT_BUCKETS);
    calls.mockRestore();
    // a's count of each key: its own hits and b's first, as Redis answered for that key.
    for (const [i, key] of keys.entries()) expect((await read(a, key)).current).toBe(byA(i) + 1);
    await b.flush();
    for (const [i, key] of keys.entries()) {
      expect((await read(b, key)).current).toBe(byA(i) + byB(i));
      expect(Number(await redis.get(rateLimitRedisKey(key)))).toBe(byA(i) + byB(i));
      expect(await redis.pttl(rateLimitRedisKey(key))).toBeGreaterThan(0);
    }
    await a.close();
    await b.close();
  });});

describe('Fedify key–value store on a cluster', () => {
  it('gets, sets, swaps and deletes', async () => {
    const kv = new RedisKvStore(redis, `fedi_kv_${run}:`);
    await kv.set(['a', 'b'], { n: 1 });
    expect(await kv.get(['a', 'b'])).toEqual({ n: 1 });
    expect(await kv.cas!(['c'], undefined, { state: 'closed' })).toBe(true);
    expect(await kv.cas!(['c'], { state: 'open' }, { state: 'half' })).toBe(false);
    expect(await kv.cas!(['c'], { state: 'closed' }, { state: 'open' })).toBe(true);
    expect(await kv.get(['c'])).toEqual({ state: 'open' });
    await kv.delete(['a', 'b']);
    expect(await kv.get(['a', 'b'])).toBeUndefined();
  });

  it('lists keys held by every master', async () => {
    const prefix = `fedi_kvlist_${run}:`;
    const kv = new RedisKvStore(redis, prefix);
    for (let i = 0; i < 60; i++) await kv.set(['list', `k${i}`], { i });
    await kv.set(['listing'], 'not a part of list');
    const perMaster = await Promise.all(mastersOf(redis).map((node) => node.keys(`${prefix}*`)));
    expect(perMaster).toHaveLength(3);
    for (const keys of perMaster) expect(keys.length).toBeGreaterThan(0);

    const listed = [];
    for await (const e of kv.list(['list'])) listed.push(e);
    expect(listed.map((e) => e.key.join('/')).sort()).toEqual(Array.from({ length: 60 }, (_, i) => `list/k${i}`).sort());
    for (const e of listed) expect(e.value).toEqual({ i: Number(e.key[1]!.slice(1)) });
    let all = 0;
    for await (const _ of kv.list()) all++;
    expect(all).toBe(61);
  });
});

describe('admin services on a cluster', () => {
  let pool: pg.Pool;
  const schema = `fedi_rc_${run}`;

  beforeAll(async () => {
    // Only the two tables the e-mail checks read, in a schema of this test's own.
    const admin = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres', max: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.email_domain_blocks (id bigint PRIMARY KEY, domain text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    await admin.query(`CREATE TABLE ${schema}.canonical_email_blocks (id bigint PRIMARY KEY, canonical_email_hash text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    await admin.end();
    pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres', max: 2, options: `-c search_path=${schema}` });
  });
  afterAll(async () => {
    await pool?.query(`DROP SCHEMA ${schema} CASCADE`);
    await pool?.end();
  });

  it('counts a sign-up refused by two blocks (a domain and its parent) on the nodes of both', async () => {
    const prefix = `fedi_edb_${run}:`;
    const key = (id: number) => `${prefix}email-domain-block:{${id}}:0:uses`;
    // Two blocks whose history keys live on different masters.
    const first = 1001;
    let second = first + 1;
    const firstMaster = await cluster.masterOf(key(first));
    while ((await cluster.masterOf(key(second))) === firstMaster) second++;
    await pool.query(`INSERT INTO email_domain_blocks (id, domain) VALUES ($1, 'example.com'), ($2, 'mail.example.com')`, [first, second]);

    const deps = { db: pool, redis, redisPrefix: prefix };
    expect((await emailBlockErrors(deps, 'someone@mail.example.com', '192.0.2.1')).map((e) => e.error)).toEqual(['ERR_BLOCKED']);
    await emailBlockErrors(deps, 'else@mail.example.com', '192.0.2.2');
    await emailBlockErrors(deps, 'again@mail.example.com', '192.0.2.2');
    await emailBlockErrors(deps, 'parent@example.com', '192.0.2.3');

    const histories = await emailDomainBlockHistories(redis, prefix, [String(first), String(second), '999']);
    expect(histories.get(String(first))![0]).toMatchObject({ uses: '4', accounts: '3' });
    expect(histories.get(String(second))![0]).toMatchObject({ uses: '3', accounts: '2' });
    expect(histories.get(String(second))!).toHaveLength(7);
    expect(histories.get(String(second))!.slice(1).every((d) => d.uses === '0' && d.accounts === '0')).toBe(true);
    expect(histories.get('999')![0]).toMatchObject({ uses: '0', accounts: '0' });
  });

  it('reports the memory of every master and a Redis version', async () => {
    const before = await Promise.all(mastersOf(redis).map(async (n) => Number(/^used_memory:(\d+)/m.exec(await n.info('memory'))![1])));
    const stack = { localDomain: 'example.test', softwareName: 'fedi', softwareVersion: '0.0.0' };
    const [space, versions] = await dimensions(pool, redis, stack, ['space_usage', 'software_versions'], null, 10, {});
    const memory = Number(space!.data.find((d) => d.key === 'redis')!.value);
    const sum = before.reduce((s, m) => s + m, 0);
    // Memory moves a little between two readings; one master's figure would be about a third of the sum.
    expect(memory).toBeGreaterThan(sum * 0.8);
    expect(memory).toBeLessThan(sum * 1.2);
    expect(versions!.data.find((d) => d.key === 'redis')!.value).toMatch(/^\d+\.\d+\.\d+/);
  });
});
