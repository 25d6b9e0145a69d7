import type { RedisClient } from '../storage/redis.ts';
import type { Queryable } from '../storage/db.ts';
import { findActiveAccessTokenByHash, hashSecret, type TokenOwner } from '../storage/oauth.ts';

/**
 * What may change a cached token's answer: one token revoked, anything about a user (approval, password reset), or
 * about an account (a move, issue 30).
 */
export type TokenInvalidation = { token: string } | { userId: string } | { accountId: string };

export function invalidationChannel(redisPrefix: string): string {
  return `${redisPrefix}auth:invalidate`;
}

/** Tells every process to forget cached tokens; call after the change has committed. */
export async function publishTokenInvalidation(redis: RedisClient, redisPrefix: string, what: TokenInvalidation): Promise<void> {
  const message = 'token' in what ? `token:${hashSecret(what.token)}` : 'userId' in what ? `user:${what.userId}` : `account:${what.accountId}`;
  await redis.publish(invalidationChannel(redisPrefix), message);
}

/**
 * Every API request presents a token; looking it up in PostgreSQL each time costs more than the rest of a
 * cached timeline read. Valid tokens are kept in memory for a minute. Revocations reach every process at once
 * over Redis pub/sub, so a revoked token stops working everywhere, not a minute later.
 */
export class TokenCache {
  private readonly entries = new Map<string, { owner: TokenOwner; expires: number }>();
  private readonly ttlMs: number;
  private readonly max: number;

  constructor(options: { ttlMs?: number; max?: number } = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.max = options.max ?? 20_000;
  }

  async lookup(db: Queryable, rawToken: string): Promise<TokenOwner | null> {
    const hash = hashSecret(rawToken);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > Date.now()) return hit.owner;
    const owner = await findActiveAccessTokenByHash(db, hash);
    if (owner) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(hash, { owner, expires: Date.now() + this.ttlMs });
    } else {
      this.entries.delete(hash);
    }
    return owner;
  }

  forget(message: string): void {
    if (message.startsWith('token:')) {
      this.entries.delete(message.slice('token:'.length));
    } else if (message.startsWith('user:')) {
      const userId = message.slice('user:'.length);
      for (const [hash, e] of this.entries) if (e.owner.user_id === userId) this.entries.delete(hash);
    } else if (message.startsWith('account:')) {
      const accountId = message.slice('account:'.length);
      for (const [hash, e] of this.entries) if (e.owner.account_id === accountId) this.entries.delete(hash);
    } else {
      this.entries.clear();
    }
  }

  /** Listens for invalidations on a connection of its own (a subscribed Redis connection can do nothing else). */
  async subscribe(subscriber: RedisClient, redisPrefix: string): Promise<void> {
    subscriber.on('message', (_channel: string, message: string) => this.forget(message));
    // If the subscription drops, entries may have missed an invalidation: forget them all on reconnect. A cluster's
    // subscriber moves to another node when its node goes, with no 'ready' of the cluster, and what was published
    // meanwhile is lost: its topology changes clear them too (rare: a node lost, found, or the slots refreshed).
    const clear = () => this.entries.clear();
    for (const event of ['ready', '-node', '+node', 'refresh']) subscriber.on(event, clear);
    await subscriber.subscribe(invalidationChannel(redisPrefix));
  }
}
