import type { Cluster, Redis } from 'ioredis';

/**
 * Hash tags for keys that scripts, transactions and multi-key commands touch together (storage/REDIS-CLUSTER.md §3).
 * On a Redis Cluster only the part of a key inside its first `{…}` decides its slot, so keys used together carry the
 * same tag. The tag names a *bucket of ids*, not one id: a fan-out to 1,000 followers then costs one script call per
 * bucket rather than per follower, while the buckets still spread over every master. The same key names are used
 * on a single Redis, where the braces mean nothing: single-node tests exercise the cluster's layout.
 *
 * Changing a count only renames keys: feeds rebuild, versions reset through their per-bucket epochs, rate limits
 * start again.
 */
export const FEED_BUCKETS = 64;
export const VERSION_BUCKETS = 16;
export const RATE_LIMIT_BUCKETS = 16;

/** 32-bit FNV-1a of a string: cheap, stable across processes and versions. */
export function fnv1a(value: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) {
    hash ^= value.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export function bucketOf(id: string, buckets: number): number {
  return fnv1a(id) % buckets;
}

/** `{fh17}`: the tag of a home or list feed's bucket. */
export const feedTag = (id: string): string => `{fh${bucketOf(id, FEED_BUCKETS)}}`;
/** `{v5}`: the tag of a cache version's bucket. */
export const versionTag = (id: string): string => `{v${bucketOf(id, VERSION_BUCKETS)}}`;
export const versionTagOfBucket = (bucket: number): string => `{v${bucket}}`;
/** `{r3}`: the tag of a rate-limit counter's bucket. */
export const rateLimitTag = (key: string): string => `{r${bucketOf(key, RATE_LIMIT_BUCKETS)}}`;

/** The hash tag a key carries (what Redis Cluster hashes), or the whole key when it has none. */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

/** `host:port` of one node's connection, as a cluster names its nodes. */
export function nodeKeyOf(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

export function isCluster(client: Redis | Cluster): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/**
 * Items grouped so that each group's keys may go in one command or script: one group holding everything on a single
 * Redis (one round trip, as before clustering), one group per hash tag on a cluster.
 */
export function groupsForCommand<T>(client: Redis | Cluster, items: readonly T[], keyOf: (item: T) => string): T[][] {
  if (items.length === 0) return [];
  if (!isCluster(client)) return [items.slice()];
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const tag = hashTagOf(keyOf(item));
    const group = groups.get(tag);
    if (group) group.push(item);
    else groups.set(tag, [item]);
  }
  return [...groups.values()];
}
