import { mastersOf, type RedisClient } from '../storage/redis.ts';
import { groupsForCommand } from '../storage/redis-keys.ts';
import type { KvKey, KvStore, KvStoreListEntry, KvStoreSetOptions } from '@fedify/fedify';

/**
 * Fedify's key–value store (its caches, inbox idempotence, key lookups) in our Redis, under our prefix.
 * Values are JSON; a key is its parts joined by a separator that Fedify's own key parts never contain.
 */
export class RedisKvStore implements KvStore {
  private readonly redis: RedisClient;
  private readonly prefix: string;

  constructor(redis: RedisClient, prefix: string) {
    this.redis = redis;
    this.prefix = `${prefix}fedify:`;
  }

  private key(key: KvKey): string {
    return this.prefix + key.map(encodeURIComponent).join('::');
  }

  private unkey(redisKey: string): KvKey {
    return redisKey.slice(this.prefix.length).split('::').map(decodeURIComponent) as unknown as KvKey;
  }

  async get<T = unknown>(key: KvKey): Promise<T | undefined> {
    const raw = await this.redis.get(this.key(key));
    return raw === null ? undefined : (JSON.parse(raw) as T);
  }

  async set(key: KvKey, value: unknown, options?: KvStoreSetOptions): Promise<void> {
    const raw = JSON.stringify(value);
    const ms = options?.ttl ? Math.max(1, Math.round(options.ttl.total('millisecond'))) : 0;
    if (ms > 0) await this.redis.set(this.key(key), raw, 'PX', ms);
    else await this.redis.set(this.key(key), raw);
  }

  async delete(key: KvKey): Promise<void> {
    await this.redis.del(this.key(key));
  }

  /**
   * Compare-and-swap in one script, so two processes never both win. Values are compared as decoded JSON (Fedify
   * passes back what it parsed, which need not be the stored text byte for byte); a new value of undefined deletes.
   */
  cas = async (key: KvKey, expectedValue: unknown, newValue: unknown, options?: KvStoreSetOptions): Promise<boolean> => {
    const ms = options?.ttl ? Math.max(1, Math.round(options.ttl.total('millisecond'))) : 0;
    const result = await this.redis.eval(
      CAS_SCRIPT, 1, this.key(key),
      expectedValue === undefined ? '' : JSON.stringify(expectedValue),
      newValue === undefined ? '' : JSON.stringify(newValue),
      ms,
    );
    return result === 1;
  };

  /**
   * Every master is scanned, each with its own cursor (a cluster's SCAN sees one node). Values are read with one
   * MGET per batch on a single Redis, one per slot on a cluster (keys here carry no tag: one per key, auto-pipelined).
   */
  async *list(prefix?: KvKey): AsyncIterable<KvStoreListEntry> {
    const pattern = prefix ? `${this.key(prefix).replace(/[*?[\]\\]/g, '\\$&')}*` : `${this.prefix}*`;
    for (const node of mastersOf(this.redis)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 200);
        cursor = next;
        if (keys.length === 0) continue;
        const groups = groupsForCommand(this.redis, keys, (k) => k);
        const values = await Promise.all(groups.map((group) => this.redis.mget(group)));
        for (const [g, group] of groups.entries()) {
          for (const [i, k] of group.entries()) {
            const raw = values[g]![i];
            // A prefix match must be on whole key parts: ['a'] lists ['a', 'b'], not ['ab'].
            if (raw == null || (prefix && k !== this.key(prefix) && !k.startsWith(`${this.key(prefix)}::`))) continue;
            yield { key: this.unkey(k), value: JSON.parse(raw) };
          }
        }
      } while (cursor !== '0');
    }
  }
}

// KEYS[1]; ARGV: the expected JSON ('' for absent), the new JSON ('' to delete), the TTL in ms (0: none).
const CAS_SCRIPT = `
local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= 'table' then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if current then return 0 end
elseif not current or not same(cjson.decode(current), cjson.decode(ARGV[1])) then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
elseif tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`;
