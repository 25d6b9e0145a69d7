import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { ConfigError } from '../config.ts';
import { KeyTracking } from './key-tracking.ts';
import { isCluster, nodeKeyOf } from './redis-keys.ts';

/** A single Redis or a Redis Cluster: both take the same commands (storage/REDIS-CLUSTER.md says what differs). */
export type RedisClient = Redis | Cluster;

/** Where Redis is: REDIS_URL alone, or a cluster's seed nodes reached with REDIS_URL's credentials and TLS. */
export interface RedisTarget {
  redisUrl: string;
  redisClusterNodes?: readonly string[];
}

const targetOf = (t: string | RedisTarget): RedisTarget => (typeof t === 'string' ? { redisUrl: t } : t);

export function onCluster(t: string | RedisTarget): boolean {
  return (targetOf(t).redisClusterNodes?.length ?? 0) > 0;
}

/** Reconnecting every half second at most: a Redis that is back is used again within that. */
export const reconnectSoon = (attempt: number): number => Math.min(attempt * 50, 500);

/** What each node of a cluster is reached with: REDIS_URL's user, password, database-free TLS. */
function nodeOptionsOf(redisUrl: string): RedisOptions {
  const url = new URL(redisUrl);
  return {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * One connection (or, on a cluster, one client holding a connection per node) with the given options. On a cluster,
 * a command whose node went away is sent again after 100 ms for at most 16 redirections (about 1.7 s, inside the
 * 2 s every request is bounded by), which covers a replica taking over from a failed master with
 * `cluster-node-timeout` 1 s; `redisOptions` apply to each node's connection.
 */
export function redisConnection(t: string | RedisTarget, redisOptions: RedisOptions, clusterOptions: ClusterOptions = {}): RedisClient {
  const target = targetOf(t);
  const client: RedisClient = onCluster(target)
    ? new Cluster([...target.redisClusterNodes!], {
      lazyConnect: redisOptions.lazyConnect ?? false,
      enableOfflineQueue: redisOptions.enableOfflineQueue ?? true,
      enableAutoPipelining: redisOptions.enableAutoPipelining ?? false,
      scaleReads: 'master',
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      maxRedirections: 16,
      slotsRefreshTimeout: 1000,
      // Besides the refreshes a redirection or a lost node starts: a client sending nothing learns the topology too.
      slotsRefreshInterval: 5000,
      clusterRetryStrategy: reconnectSoon,
      ...clusterOptions,
      redisOptions: { ...nodeOptionsOf(target.redisUrl), ...redisOptions, lazyConnect: false },
    })
    : new Redis(target.redisUrl, { retryStrategy: reconnectSoon, ...redisOptions });
  client.on('error', () => {}); // reconnects on its own; storage/dependencies.ts logs and /health reports
  // ioredis's Cluster#connect() never settles when its first ready check fails (CLUSTER INFO sent, with the offline
  // queue off, to a node not connected yet): the cluster reconnects by itself and becomes ready, saying so only with
  // 'ready'. Without this, connectRedis failed its 5 s wait and KeyTracking.start hung a starting process.
  if (isCluster(client)) {
    const connect = client.connect.bind(client);
    client.connect = () => Promise.race([connect(), new Promise<void>((resolve) => client.once('ready', () => resolve()))]);
  }
  return client;
}

/**
 * The connection requests use. While Redis is away its commands fail at once (no offline queue) and commands in
 * flight when it went are failed, not sent again after it is back (maxRetriesPerRequest 0): a request answered
 * 503 must not have its writes run later. A Redis that keeps the connection but does not answer has it cut off by
 * storage/dependencies.ts (a commandTimeout would be a timer per command: about a third of the client's throughput).
 */
export function createRedis(t: string | RedisTarget, connectionName?: string): RedisClient {
  // Auto-pipelining sends the commands of concurrent requests issued in one tick as one write: each write to
  // Redis costs a system call and loopback TCP work in this process, the largest cost of a timeline read.
  return redisConnection(t, {
    lazyConnect: true, enableAutoPipelining: true, connectionName,
    enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false,
  });
}

/**
 * A subscriber connection: its SUBSCRIBEs wait for a connection and are made again after every reconnection
 * (ioredis's autoResubscribe); subscribed, it sends nothing else. On a cluster, plain pub/sub reaches every node, so
 * the client subscribes on any one node and moves to another when that one goes.
 */
export function createSubscriber(t: string | RedisTarget, connectionName?: string): RedisClient {
  return redisConnection(t, { lazyConnect: true, maxRetriesPerRequest: null, connectionName });
}

/**
 * Connections of its own for client tracking: one whose reads are tracked, one that hears of changes. On a cluster,
 * a reader Cluster and one listener per node (made by KeyTracking as the reader adds each node's connection).
 */
export function createKeyTracking(t: string | RedisTarget, name = 'fedi'): KeyTracking {
  const target = targetOf(t);
  // The listener fails its commands at once while it is down (its PINGs decide whether memory can be trusted),
  // and subscribes itself again after learning its new client id.
  const listenerOptions: RedisOptions = {
    connectionName: `${name}:tracking-listener`, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, autoResubscribe: false, autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectSoon,
  };
  if (onCluster(target)) {
    const reader = createRedis(target, `${name}:tracking-reader`) as Cluster;
    return new KeyTracking(reader, (node) => {
      const listener = new Redis({ ...nodeOptionsOf(target.redisUrl), ...listenerOptions, host: node.options.host, port: node.options.port });
      listener.on('error', () => {});
      return listener;
    });
  }
  const reader = createRedis(target.redisUrl, `${name}:tracking-reader`) as Redis;
  const listener = new Redis(target.redisUrl, listenerOptions);
  listener.on('error', () => {});
  return new KeyTracking(reader, listener);
}

/**
 * Calls `onChange` when a cluster's masters change: a master's connection lost, or a slots refresh finding other
 * masters (a replica promoted). Replication is asynchronous, so what the old master acknowledged last may be missing
 * on the new one: whoever holds what Redis said (cached versions, pages, the read-your-writes positions) forgets it.
 * Nothing to watch on a single Redis (one that comes back empty is caught by the versions' epoch).
 */
export function watchMasters(client: RedisClient, onChange: () => void): void {
  if (!isCluster(client)) return;
  const known = () => new Set(client.nodes('master').map(nodeKeyOf));
  // Usually called once the client is ready (connectRedis), when 'ready' has already been told.
  let masters = client.status === 'ready' ? known() : new Set<string>();
  // Masters whose loss was told since the masters last changed: ioredis makes a dead node's connection again and
  // again until its slots move, and each loss is told once.
  const told = new Set<string>();
  client.on('ready', () => (masters = known()));
  client.on('refresh', () => {
    const now = known();
    if (now.size === masters.size && [...now].every((key) => masters.has(key))) return;
    masters = now;
    told.clear();
    onChange();
  });
  client.on('-node', (node: Redis) => {
    const key = nodeKeyOf(node);
    if (!masters.has(key) || told.has(key)) return;
    told.add(key);
    onChange();
  });
}

/**
 * Calls `onLapse` whenever a subscriber may have missed what was published to it: its connection ended, or it
 * connected again (and subscribes again). On a single Redis that is its 'ready'. A cluster's subscriber is one
 * connection of its own to a random node, never reconnected but replaced by another when it ends or its node leaves,
 * and the Cluster says nothing of that: that connection is watched (each one is new, so its 'end' and its 'ready'
 * are the lapse), and besides a node lost or found, or a slot map that really changed (a replica promoted, slots
 * moved), is a lapse too, since a publish on another node reaches this one over a cluster bus then in flux. The
 * refreshes the client makes every few seconds are not: they usually find the same map.
 */
export function onSubscriptionLapse(subscriber: RedisClient, onLapse: () => void): void {
  subscriber.on('ready', onLapse);
  if (!isCluster(subscriber)) return;
  subscriber.on('-node', onLapse);
  subscriber.on('+node', onLapse);
  let slotMap = slotMapOf(subscriber);
  subscriber.on('refresh', () => {
    const now = slotMapOf(subscriber);
    if (now === slotMap) return;
    slotMap = now;
    onLapse();
  });
  // ioredis's ClusterSubscriber (cluster/ClusterSubscriber.js) keeps its connection to itself: it is replaced when it
  // ends (its own 'end' listener, which runs before the one added here) or when the Cluster loses or finds a node
  // (after the Cluster's '-node' / '+node'): looked at again after each of these.
  let watched: Redis | null = null;
  const watch = () => {
    const connection = (subscriber as unknown as { subscriber?: { getInstance(): Redis | null } }).subscriber?.getInstance() ?? null;
    if (!connection || connection === watched) return;
    watched = connection;
    connection.on('ready', onLapse);
    connection.once('end', () => {
      onLapse();
      watch();
    });
  };
  for (const event of ['ready', '-node', '+node', 'refresh']) subscriber.on(event, () => process.nextTick(watch));
}

/** Who serves each slot, in ranges: compared after each slots refresh. */
function slotMapOf(cluster: Cluster): string {
  const ranges: string[] = [];
  let from = 0;
  for (let slot = 1; slot <= cluster.slots.length; slot++) {
    const owners = cluster.slots[slot]?.join(',');
    if (slot < cluster.slots.length && owners === cluster.slots[from]?.join(',')) continue;
    ranges.push(`${from}-${slot - 1}:${cluster.slots[from]?.join(',') ?? ''}`);
    from = slot;
  }
  return ranges.join(' ');
}

/** Cuts off the connections of nodes that stopped answering (storage/dependencies.ts): what waits on them fails now. */
export function cutOffNodes(client: RedisClient, nodes: readonly string[] | undefined): void {
  // A single Redis reconnects by itself (its retry strategy); a cluster's node connections are made again by the
  // cluster client.
  if (!isCluster(client)) return destroyNode(client, true);
  if (!nodes) return void client.disconnect(true);
  for (const node of client.nodes()) if (nodes.includes(nodeKeyOf(node))) destroyNode(node);
}

function destroyNode(node: Redis, reconnect = false): void {
  node.disconnect(reconnect);
  // disconnect() only ends the socket, and a hung node never closes its side: ioredis would destroy it after its
  // disconnectTimeout (2 s), all that time holding what waits on it. Closed now.
  (node as unknown as { stream?: { destroy(): void } }).stream?.destroy();
}

/** The masters of a cluster (each node connection), or the one Redis. */
export function mastersOf(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

export async function connectRedis(redis: RedisClient, t: string | RedisTarget): Promise<void> {
  const target = targetOf(t);
  const where = onCluster(target) ? target.redisClusterNodes!.join(',') : new URL(target.redisUrl).host;
  const setting = onCluster(target) ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
  // ioredis rejects connect() with a bare "Connection is closed."; the reason arrives as an 'error' event.
  let lastError: { code?: string; message?: string } | undefined;
  const remember = (err: { code?: string; message?: string }) => (lastError = err);
  redis.on('error', remember);
  try {
    // Every master answers (within the same 5 s: a hung one fails start-up), or the server does not start half-served.
    await Promise.race([
      redis.connect().then(() => Promise.all(mastersOf(redis).map((node) => node.ping()))),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 5 s')), 5000).unref()),
    ]);
  } catch (err) {
    redis.disconnect();
    const e = lastError?.code ? lastError : (err as { code?: string; message?: string });
    const why = e.code === 'ECONNREFUSED' ? 'connection refused' : (e.message ?? String(err));
    throw new ConfigError(setting, `cannot connect to ${where}: ${why}`);
  } finally {
    redis.off('error', remember);
  }
}

/** Removes every key under a prefix (used when a test install is torn down), without blocking Redis with KEYS. */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  // A cluster has no SCAN of its own: each master is scanned, and its keys (of many slots) unlinked one by one.
  for (const node of mastersOf(redis)) {
    const stream = node.scanStream({ match: `${prefix}*`, count: 500 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length === 0) continue;
      if (isCluster(redis)) await Promise.all(keys.map((key) => redis.unlink(key)));
      else await redis.unlink(...keys);
    }
  }
}

/** A Lua script run by its digest (`runScript`). */
export interface RedisScript {
  source: string;
  sha1: string;
}

export function redisScript(source: string): RedisScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * Runs a script by its digest, sending it whole once Redis does not know it (a restart, SCRIPT FLUSH). Not an
 * ioredis defineCommand: a command defined while an auto-pipeline is being filled is missing from it, and ioredis
 * then throws outside any promise, ending the process.
 */
export async function runScript(redis: RedisClient, script: RedisScript, keys: string[], args: (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha1, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(script.source, keys.length, ...keys, ...args);
  }
}
