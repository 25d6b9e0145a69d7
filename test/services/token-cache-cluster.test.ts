import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { Cluster } from 'ioredis';
import { RedisCluster, redisCli } from '../../cli/redis-cluster.ts';
import { TokenCache, publishTokenInvalidation } from '../../services/token-cache.ts';
import { connectRedis, createRedis, createSubscriber, type RedisClient, type RedisTarget } from '../../storage/redis.ts';
import { hashSecret, type TokenOwner } from '../../storage/oauth.ts';
import type { Queryable } from '../../storage/db.ts';
import { until } from '../helpers/instances.ts';

/** PostgreSQL's answer for the one token it knows, and how many times it was asked (the cache is what is tested). */
function countingDb(token: string) {
  const db = {
    queries: 0,
    query: async (_sql: string, params: string[]) => {
      db.queries++;
      return { rows: params[0] === hashSecret(token) ? [{ id: '1', user_id: '10', account_id: '100', scopes: 'read' } as Partial<TokenOwner>] : [] };
    },
  };
  return db;
}

/** Until the cluster client has refreshed its slots `times` times more (what it does by itself every 5 s). */
async function refreshSlots(client: Cluster, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    await new Promise<void>((resolve, reject) => {
      client.once('refresh', () => resolve());
      client.refreshSlotsCache((err) => err && reject(err));
    });
  }
}

// The token cache's invalidation subscriber on a real Redis Cluster (3 masters, 3 replicas).
describe('token cache on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let target: RedisTarget;
  let subscriber: Cluster;
  let publisher: RedisClient;
  let prefix: string;

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
    prefix = `token_cache_cluster_${randomBytes(4).toString('hex')}:`;
    publisher = createRedis(target);
    await connectRedis(publisher, target);
  }, 120_000);

  afterAll(async () => {
    subscriber?.disconnect();
    publisher?.disconnect();
    await cluster?.stop();
  });

  it('keeps tokens over slots refreshes, forgets them all when the subscription lapses or the slots move, and hears invalidations after', async () => {
    const token = 'cluster-token';
    const db = countingDb(token);
    const q = db as unknown as Queryable;
    const cache = new TokenCache();
    subscriber = createSubscriber(target, 'token-cache-test') as Cluster;
    await cache.subscribe(subscriber, prefix);
    // Heard: an invalidation of another token reaches the cache (it then has nothing to forget).
    const heard = () => new Promise<void>((resolve) => subscriber.once('message', () => resolve()));

    // The client's own topology events: on a loaded machine it may really reconnect just after connecting (its
    // refreshes are bounded by 1 s), which empties the cache as it should; the refreshes are then tried again.
    let topologyEvents = 0;
    for (const event of ['ready', '-node', '+node']) subscriber.on(event, () => topologyEvents++);
    for (let attempt = 1; ; attempt++) {
      const before = topologyEvents;
      const queries = db.queries;
      expect((await cache.lookup(q, token))?.id).toBe('1');
      await refreshSlots(subscriber, 3);
      if (cache.cached(token)?.id === '1') {
        expect((await cache.lookup(q, token))?.id).toBe('1');
        expect(db.queries).toBe(queries + 1);
        break;
      }
      expect(topologyEvents, 'emptied by slots refreshes alone').toBeGreaterThan(before);
      if (attempt >= 5) throw new Error('the cluster client kept reconnecting');
    }

    // The subscriber's connection cut (its node's pub/sub clients killed): the Cluster picks another connection,
    // with no event of its own; what was published meanwhile is lost, so the cache is emptied.
    let got = heard();
    await publishTokenInvalidation(publisher, prefix, { token: 'another' });
    await got;
    const killed = await Promise.all(cluster.nodes.map((n) => redisCli(n.port, 'client', 'kill', 'type', 'pubsub')));
    // At least the subscriber's connection; after the refreshes above, the connection it left may not be closed yet
    // on a loaded machine (seen once: 2).
    expect(killed.map(Number).reduce((a, b) => a + b)).toBeGreaterThanOrEqual(1);
    await until(async () => cache.cached(token), (owner) => owner === undefined, 'the cache emptied after the subscriber reconnected', 5000);
    let queries = db.queries;
    expect((await cache.lookup(q, token))?.id).toBe('1');
    expect(db.queries).toBe(queries + 1);

    // The new subscription hears invalidations: a revocation is forgotten at once.
    await until(async () => {
      got = heard();
      await publishTokenInvalidation(publisher, prefix, { token: 'another' });
      return Promise.race([got.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 200))]);
    }, (yes) => yes, 'the subscriber subscribed again', 5000);
    // Looked up again once the subscription is back (its reconnection may have emptied the cache after the lookup
    // above, as it should): from here, slot refreshes must keep it.
    expect((await cache.lookup(q, token))?.id).toBe('1');
    await refreshSlots(subscriber, 2);
    expect(cache.cached(token)?.id).toBe('1');
    got = heard();
    await publishTokenInvalidation(publisher, prefix, { token });
    await got;
    expect(cache.cached(token)).toBeUndefined();

    // A replica taking over a master (the slot map changes): emptied at the refresh that finds it.
    queries = db.queries;
    expect((await cache.lookup(q, token))?.id).toBe('1');
    expect(db.queries).toBe(queries + 1);
    const masters = await cluster.masters();
    const replica = cluster.nodes.find((n) => !masters.includes(n.port))!;
    await redisCli(replica.port, 'cluster', 'failover');
    await until(async () => cluster.masters(), (now) => now.includes(replica.port), 'the replica promoted', 10_000);
    await until(async () => {
      await refreshSlots(subscriber, 1);
      return cache.cached(token);
    }, (owner) => owner === undefined, 'the cache emptied after the slot map changed', 10_000);
  }, 60_000);
});
