import { mastersOf, type RedisClient } from './redis.ts';

/**
 * Key names from before Redis Cluster support (storage/REDIS-CLUSTER.md §3): home and list feeds and their markers
 * (`feed:home:<id>`, never expiring) and cache versions (`ver:s:<id>`, `ver:epoch`), now under hash tags
 * (`feed:{fh17}:home:<id>`, `ver:{v5}:s:<id>`). Nothing reads the old ones; they would stay in Redis's memory for good.
 * Rate-limit counters expire by themselves.
 */
const LEGACY_PATTERNS = ['feed:home:*', 'feed:list:*', 'ver:[sarvf]:*', 'ver:epoch'];

/**
 * Removes the old keys once per Redis (a marker remembers it is done), scanning each master in steps of 500 keys,
 * so that Redis is never blocked. Two workers starting together may both scan: removing a key twice is harmless.
 * Processes of the version before must all be stopped for this upgrade (docs/operating.md, "Upgrades and migrations"): they would go on
 * writing the old names. Returns how many were removed.
 */
export async function removeLegacyKeys(redis: RedisClient, prefix: string): Promise<number> {
  const marker = `${prefix}legacy-keys-removed:v1`;
  // Marked done only once every master was scanned: a worker stopped half-way leaves the rest to the next start.
  if ((await redis.exists(marker)) === 1) return 0;
  let removed = 0;
  for (const node of mastersOf(redis)) {
    for (const pattern of LEGACY_PATTERNS) {
      const stream = node.scanStream({ match: `${prefix}${pattern}`, count: 500 });
      for await (const keys of stream as AsyncIterable<string[]>) {
        // One key per command: keys of a cluster node's many slots cannot share one.
        await Promise.all(keys.map((key) => redis.unlink(key)));
        removed += keys.length;
      }
    }
  }
  await redis.set(marker, String(Date.now()));
  return removed;
}
