import { onSubscriptionLapse, type RedisClient } from '../storage/redis.ts';
import type { WebSessionRow } from '../storage/web-sessions.ts';
import type { UserRow } from '../storage/users.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { invalidationChannel, listenLocally, publishTokenInvalidation } from './token-cache.ts';

/** A web session as the pages read it: the row, its user and account, and whether they may only see their strikes. */
export interface ResolvedSession {
  session: WebSessionRow;
  user: UserRow;
  account: AccountRow;
  restricted: boolean;
}

/** What a cached web session resolves to: whose it is (for invalidations by user or account) and the answer itself. */
export interface CachedSession<T> {
  userId: string;
  accountId: string;
  value: T;
}

/**
 * Every signed-in page resolves its session cookie to a session, its user and its account: three PostgreSQL reads
 * that cost more than the rest of a cached timeline page. Resolved sessions are kept in memory for a minute, as the
 * API's tokens are (services/token-cache.ts), and forgotten at once in every process over the same Redis channel:
 * a session ended (`session:<hash>`), anything about its user (`user:<id>`: a password change, a suspension, a role)
 * or its account (`account:<id>`: a profile edit, a move). Any other message forgets them all.
 */
export class SessionCache<T> {
  private readonly entries = new Map<string, CachedSession<T> & { expires: number }>();
  /** Counts invalidations, so that a lookup that was under way when one came does not keep what it read. */
  private epoch = 0;
  private readonly ttlMs: number;
  private readonly max: number;

  constructor(options: { ttlMs?: number; max?: number } = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.max = options.max ?? 20_000;
  }

  /**
   * The session of a token's hash: from memory while fresh, else from `load` (null: no such session, or not one to
   * keep), kept for the next request unless an invalidation came while it was read.
   */
  async lookup(tokenHash: string, load: () => Promise<CachedSession<T> | null>): Promise<T | null> {
    const hit = this.entries.get(tokenHash);
    if (hit && hit.expires > Date.now()) return hit.value;
    const epoch = this.epoch;
    const found = await load();
    this.entries.delete(tokenHash);
    if (found && epoch === this.epoch) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(tokenHash, { ...found, expires: Date.now() + this.ttlMs });
    }
    return found?.value ?? null;
  }

  /** Forgets one session here (this process ended it); other processes hear of it over Redis. */
  drop(tokenHash: string): void {
    this.epoch++;
    this.entries.delete(tokenHash);
  }

  clear(): void {
    this.epoch++;
    this.entries.clear();
  }

  forget(message: string): void {
    this.epoch++;
    if (message.startsWith('session:')) {
      this.entries.delete(message.slice('session:'.length));
    } else if (message.startsWith('user:')) {
      const userId = message.slice('user:'.length);
      for (const [hash, e] of this.entries) if (e.userId === userId) this.entries.delete(hash);
    } else if (message.startsWith('account:')) {
      const accountId = message.slice('account:'.length);
      for (const [hash, e] of this.entries) if (e.accountId === accountId) this.entries.delete(hash);
    } else if (!message.startsWith('token:')) {
      // An OAuth token revoked says nothing about sessions; anything else unknown forgets all.
      this.entries.clear();
    }
  }

  /** Listens for invalidations on the token cache's channel (its subscribed connection may carry others). */
  async subscribe(subscriber: RedisClient, redisPrefix: string): Promise<void> {
    listenLocally(redisPrefix, this);
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === invalidationChannel(redisPrefix)) this.forget(message);
    });
    // Entries may have missed an invalidation while the subscription was down.
    onSubscriptionLapse(subscriber, () => this.clear());
    await subscriber.subscribe(invalidationChannel(redisPrefix));
  }
}

/**
 * Something about a person that their pages show changed (their profile, defaults, appearance, second factor): their
 * cached sessions go at once here (publishTokenInvalidation tells this process's caches before Redis), and in every
 * other process over Redis. Call after the change has committed.
 */
export async function personChanged(
  ctx: { redis: RedisClient; config: { redisPrefix: string } }, what: { userId: string } | { accountId: string },
): Promise<void> {
  await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, what);
}
