import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, JOB_QUERY_TIMEOUT_MS, QUERY_TIMEOUT_MS, transaction, withStatementTimeout, type Db } from '../../storage/db.ts';
import { PG_BASE } from '../helpers/server.ts';

// A request's statements give up after 2 s (a hung PostgreSQL is answered 503 in time); a job's may run longer
// (a deletion's batch or a trend scoring on a large instance), through the same pool.
let db: Db;
beforeAll(() => {
  db = createPool(`${PG_BASE}/postgres`, 2);
});
afterAll(async () => db?.end());

describe.concurrent('statement bounds', () => {
  it('ends a statement of a request at 2 s, and lets a job\'s run past it, on the same connections', async () => {
    expect(QUERY_TIMEOUT_MS).toBe(2000);
    expect(JOB_QUERY_TIMEOUT_MS).toBeGreaterThan(QUERY_TIMEOUT_MS);
    // The pool's two connections at once: a request's statement on one, a job's on the other.
    const [request, slow] = await Promise.allSettled([
      db.query('SELECT pg_sleep(2.3)'),
      withStatementTimeout(10_000, () => db.query<{ done: number; pid: number }>('SELECT pg_sleep(2.3), 1 AS done, pg_backend_pid() AS pid')),
    ]);
    expect(request.status).toBe('rejected');
    expect((request as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringMatching(/timeout/i) });
    expect(slow.status, String((slow as PromiseRejectedResult).reason)).toBe('fulfilled');
    const job = (slow as PromiseFulfilledResult<{ rows: { done: number; pid: number }[] }>).value.rows[0]!;
    expect(job.done).toBe(1);
    // A connection a job used is bounded by 2 s again when a request takes it (the idle one, taken first), while a
    // job's transaction runs past 2 s on the pool's other connection.
    let requestPid = 0;
    db.once('acquire', (c: { processID: number }) => (requestPid = c.processID));
    const again = db.query('SELECT pg_sleep(2.3)');
    const inTransaction = withStatementTimeout(10_000, () => transaction(db, (tx) => tx.query('SELECT pg_sleep(2.3), 2 AS done')));
    await expect(again).rejects.toThrow(/timeout/i);
    expect(requestPid).toBe(job.pid);
    expect((await inTransaction).rows[0].done).toBe(2);
  }, 30_000);

  it('takes another bound for requests from DATABASE_QUERY_TIMEOUT_MS (createPool), a job\'s staying its own', async () => {
    const short = createPool(`${PG_BASE}/postgres`, 1, 300);
    try {
      await expect(short.query('SELECT pg_sleep(0.6)')).rejects.toThrow(/timeout/i);
      const slow = await withStatementTimeout(5_000, () => short.query('SELECT pg_sleep(0.6), 1 AS done'));
      expect(slow.rows[0].done).toBe(1);
      await expect(short.query('SELECT pg_sleep(0.6)')).rejects.toThrow(/timeout/i);
    } finally {
      await short.end();
    }
  });
});
