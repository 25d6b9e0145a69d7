import { onSubscriptionLapse, type RedisClient } from '../storage/redis.ts';
import type { Queryable } from '../storage/db.ts';
import { findActiveAccessTokenByHash, hashSecret, type TokenOwner } from '../storage/oauth.ts';

/**
 * What may change a cached token's answer: one token revoked, anything about a user (approval, password reset), or
 * about an account (a move). A web session ended (its token's hash) concerns no token: streams it opened close.
 */
export type TokenInvalidation = { token: string } | { userId: string } | { accountId: string } | { sessionHash: string };

export function invalidationChannel(redisPrefix: string): string {
  return `${redisPrefix}auth:invalidate`;
}

/** This process's caches of tokens and sessions, by the Redis prefix whose invalidations they listen to. */
const localCaches = new Map<string, WeakRef<{ forget(message: string): void }>[]>();

/** Lets a cache hear this process's own invalidations as they are published (`subscribe` of each cache). */
export function listenLocally(redisPrefix: string, cache: { forget(message: string): void }): void {
  const caches = (localCaches.get(redisPrefix) ?? []).filter((c) => c.deref() !== undefined);
  caches.push(new WeakRef(cache));
  localCaches.set(redisPrefix, caches);
}

/**
 * Tells every process to forget cached tokens; call after the change has committed. This process's cache forgets
 * them before the answer goes out, so that the next request here sees the change (its own message, coming back over
 * pub/sub, could arrive after that request).
 */
export async function publishTokenInvalidation(redis: RedisClient, redisPrefix: string, what: TokenInvalidation): Promise<void> {
  const message = 'token' in what ? `token:${hashSecret(what.token)}` : 'userId' in what ? `user:${what.userId}`
    : 'sessionHash' in what ? `session:${what.sessionHash}` : `account:${what.accountId}`;
  for (const cache of localCaches.get(redisPrefix) ?? []) cache.deref()?.forget(message);
  await redis.publish(invalidationChannel(redisPrefix), message);
}

/**
 * Every API request presents a token; looking it up in PostgreSQL each time costs more than the rest of a
 * cached timeline read. Valid tokens are kept in memory for a minute. Revocations reach every process at once
 * over Redis pub/sub, so a revoked token stops working everywhere, not a minute later.
 *
 * Cached tokens are also found by the raw token (the header's value), so that a cached token's request does not
 * hash it again (SHA-256, for this lookup and for the rate limiter's key: `hashOf`). The raw token is kept only
 * while its entry is, and goes with it whichever way it goes (expiry, eviction, invalidation).
 */
export class TokenCache {
  /** By the token's hash (invalidations name hashes). */
  private readonly entries = new Map<string, { owner: TokenOwner; expires: number; raw: string }>();
  /** The hash of each cached entry's raw token. */
  private readonly hashes = new Map<string, string>();
  private readonly ttlMs: number;
  private readonly max: number;

  constructor(options: { ttlMs?: number; max?: number } = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.max = options.max ?? 20_000;
  }

  /** The token's SHA-256 (storage/oauth.ts's hashSecret), without hashing again for a cached token. */
  hashOf(rawToken: string): string {
    return this.hashes.get(rawToken) ?? hashSecret(rawToken);
  }

  /** The token if it is cached and fresh, found by its raw value without hashing; else undefined (ask `lookup`). */
  cached(rawToken: string): TokenOwner | undefined {
    const hash = this.hashes.get(rawToken);
    const hit = hash === undefined ? undefined : this.entries.get(hash);
    return hit && hit.expires > Date.now() ? hit.owner : undefined;
  }

  async lookup(db: Queryable, rawToken: string): Promise<TokenOwner | null> {
    const hash = this.hashOf(rawToken);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > Date.now()) return hit.owner;
    const owner = await findActiveAccessTokenByHash(db, hash);
    if (owner) {
      this.drop(hash);
      if (this.entries.size >= this.max) this.drop(this.entries.keys().next().value!);
      this.entries.set(hash, { owner, expires: Date.now() + this.ttlMs, raw: rawToken });
      this.hashes.set(rawToken, hash);
    } else {
      this.drop(hash);
    }
    return owner;
  }

  private drop(hash: string): void {
    const e = this.entries.get(hash);
    if (!e) return;
    this.entries.delete(hash);
    this.hashes.delete(e.raw);
  }

  private clear(): void {
    this.entries.clear();
    this.hashes.clear();
  }

  forget(message: string): void {
    if (message.startsWith('token:')) {
      this.drop(message.slice('token:'.length));
    } else if (message.startsWith('user:')) {
      const userId = message.slice('user:'.length);
      for (const [hash, e] of this.entries) if (e.owner.user_id === userId) this.drop(hash);
    } else if (message.startsWith('account:')) {
      const accountId = message.slice('account:'.length);
      for (const [hash, e] of this.entries) if (e.owner.account_id === accountId) this.drop(hash);
    } else if (!message.startsWith('session:')) {
      this.clear();
    }
  }

  /** Listens for invalidations on a connection of its own (a subscribed Redis connection can do nothing else). */
  async subscribe(subscriber: RedisClient, redisPrefix: string): Promise<void> {
    listenLocally(redisPrefix, this);
    // The connection carries other channels too (services/server-settings.ts).
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === invalidationChannel(redisPrefix)) this.forget(message);
    });
    // Entries may have missed an invalidation while the subscription was down: forget them all when it lapses (its
    // connection lost or made again; on a cluster, also its node's topology changing). Not on a cluster's routine
    // slots refreshes (every 5 s), which emptied this minute-long cache every 5 s and sent every request to
    // PostgreSQL, so reads failed during a PostgreSQL failover that the cache would have carried.
    onSubscriptionLapse(subscriber, () => this.clear());
    await subscriber.subscribe(invalidationChannel(redisPrefix));
  }
}
