import { describe, expect, it, vi } from 'vitest';
import { TokenCache, publishTokenInvalidation } from '../../services/token-cache.ts';
import { SessionCache } from '../../services/session-cache.ts';
import type { RedisClient } from '../../storage/redis.ts';
import { hashSecret, type TokenOwner } from '../../storage/oauth.ts';
import type { Queryable } from '../../storage/db.ts';
import { parseNested } from '../../http/plugins/body.ts';

/** A stand-in for PostgreSQL: the tokens whose hashes are in `valid`, and how many times it was asked. */
function fakeDb(valid: Map<string, Partial<TokenOwner>>) {
  const db = {
    queries: 0,
    query: async (_sql: string, params: string[]) => {
      db.queries++;
      const owner = valid.get(params[0]!);
      return { rows: owner ? [{ ...owner }] : [] };
    },
  };
  return db;
}

describe('token cache', () => {
  it('finds a cached token by its raw value, and forgets it with its hash on every kind of invalidation', async () => {
    const valid = new Map<string, Partial<TokenOwner>>([
      [hashSecret('one'), { id: '1', user_id: '10', account_id: '100', scopes: 'read' }],
      [hashSecret('two'), { id: '2', user_id: '20', account_id: '200', scopes: 'read' }],
    ]);
    const db = fakeDb(valid);
    const cache = new TokenCache();
    const q = db as unknown as Queryable;
    expect(cache.hashOf('one')).toBe(hashSecret('one'));
    expect((await cache.lookup(q, 'one'))?.id).toBe('1');
    expect((await cache.lookup(q, 'one'))?.id).toBe('1');
    expect(db.queries).toBe(1);
    expect(cache.hashOf('one')).toBe(hashSecret('one'));
    expect(cache.cached('one')?.id).toBe('1');
    expect(cache.cached('two')).toBeUndefined();

    // Revoked (one token, by its hash): asked of PostgreSQL again, which no longer has it.
    valid.delete(hashSecret('one'));
    cache.forget(`token:${hashSecret('one')}`);
    expect(cache.cached('one')).toBeUndefined();
    expect(await cache.lookup(q, 'one')).toBeNull();
    expect(db.queries).toBe(2);
    expect(cache.hashOf('one')).toBe(hashSecret('one'));

    // By user, by account, and everything.
    for (const message of ['user:20', 'account:200', 'all']) {
      expect((await cache.lookup(q, 'two'))?.id).toBe('2');
      const before = db.queries;
      cache.forget(message);
      expect(cache.cached('two')).toBeUndefined();
      expect((await cache.lookup(q, 'two'))?.id).toBe('2');
      expect(db.queries).toBe(before + 1);
    }
    expect(await cache.lookup(q, 'unknown')).toBeNull();
    expect(await cache.lookup(q, 'unknown')).toBeNull();
  });

  it('does not serve a token past its time from memory', async () => {
    const valid = new Map<string, Partial<TokenOwner>>([[hashSecret('t'), { id: '1', user_id: '1', account_id: '1', scopes: 'read' }]]);
    const db = fakeDb(valid);
    const cache = new TokenCache({ ttlMs: 60_000 });
    let now = 1_000_000;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      await cache.lookup(db as unknown as Queryable, 't');
      now += 59_999;
      expect(cache.cached('t')?.id).toBe('1');
      now += 2;
      expect(cache.cached('t')).toBeUndefined();
      await cache.lookup(db as unknown as Queryable, 't');
      expect(db.queries).toBe(2);
    } finally {
      clock.mockRestore();
    }
  });

  it('drops the oldest token past its bound, raw value included', async () => {
    const valid = new Map<string, Partial<TokenOwner>>(['a', 'b', 'c'].map((t, i) => [hashSecret(t), { id: String(i), user_id: String(i), account_id: String(i), scopes: 'read' }]));
    const db = fakeDb(valid);
    const q = db as unknown as Queryable;
    const cache = new TokenCache({ max: 2 });
    for (const t of ['a', 'b', 'c']) await cache.lookup(q, t);
    expect(db.queries).toBe(3);
    await cache.lookup(q, 'c');
    await cache.lookup(q, 'b');
    expect(db.queries).toBe(3);
    await cache.lookup(q, 'a');
    expect(db.queries).toBe(4);
  });
});

describe('this process\'s own invalidations', () => {
  it('reach its token and session caches before publishing returns, whatever pub/sub does', async () => {
    const prefix = `fedi_test_local_${process.pid}_${Date.now()}:`;
    // A subscriber that never delivers a message, and a publisher that sends nothing: only the local path is left.
    const subscriber = { on: () => subscriber, once: () => subscriber, subscribe: async () => 1, status: 'ready' } as unknown as RedisClient;
    const silent = { publish: async () => 0 } as unknown as RedisClient;
    const tokens = new TokenCache();
    const sessions = new SessionCache<string>();
    await tokens.subscribe(subscriber, prefix);
    await sessions.subscribe(subscriber, prefix);
    const db = fakeDb(new Map([[hashSecret('one'), { id: '1', user_id: '10', account_id: '100', scopes: 'read' }]])) as unknown as Queryable;
    await tokens.lookup(db, 'one');
    await sessions.lookup('h1', async () => ({ userId: '10', accountId: '100', value: 'session of 10' }));
    await sessions.lookup('h2', async () => ({ userId: '20', accountId: '200', value: 'session of 20' }));
    expect(tokens.cached('one')?.id).toBe('1');

    await publishTokenInvalidation(silent, prefix, { userId: '10' });
    expect(tokens.cached('one')).toBeUndefined();
    expect(await sessions.lookup('h1', async () => null)).toBeNull();
    expect(await sessions.lookup('h2', async () => null)).toBe('session of 20');
    // Caches of another prefix (another server in this process) hear nothing of it.
    await publishTokenInvalidation(silent, `${prefix}other:`, { userId: '20' });
    expect(await sessions.lookup('h2', async () => null)).toBe('session of 20');
  });
});

describe('query strings', () => {
  it('read plain ones as Node\'s parser does, and leave the rest to the full parsers', () => {
    expect(parseNested('')).toEqual({});
    expect(parseNested('limit=20')).toEqual({ limit: '20' });
    expect(parseNested('limit=20&max_id=123&&')).toEqual({ limit: '20', max_id: '123' });
    expect(parseNested('a&b=&c==d')).toEqual({ a: '', b: '', c: '=d' });
    expect(parseNested('a=1&a=2')).toEqual({ a: ['1', '2'] });
    expect(parseNested('x=a+b%21')).toEqual({ x: 'a b!' });
    expect(parseNested('id[]=1&id[]=2')).toEqual({ id: ['1', '2'] });
    expect(parseNested('fields_attributes[0][name]=n')).toEqual({ fields_attributes: [{ name: 'n' }] });
    const proto = parseNested('__proto__=1&constructor=2');
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.hasOwn(proto, '__proto__')).toBe(true);
    expect(proto.constructor).toBe('2');
  });
});
