// A job that fails for the last time takes its outbox row with it (jobs/worker.ts): the sweeper never starts it
// over, and it stays in BullMQ's failed list. Real workers, a real queue: the job's payload names a poll id that
// PostgreSQL cannot read, so every attempt fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { eventually } from '../helpers/eventually.ts';
import { addToOutbox, pendingOutbox } from '../../storage/outbox.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.close());

const outboxRow = async (id: string) => (await s.ctx.db.query('SELECT 1 FROM outbox WHERE id = $1', [id])).rowCount;

async function failingJob(attempts: number) {
  const row = await addToOutbox(s.ctx.db, 'endPoll', { pollId: 'not-a-poll-id' });
  await s.ctx.jobs.fanout.add('endPoll', { kind: 'endPoll', pollId: 'not-a-poll-id', outboxId: row.id }, {
    jobId: `outbox-${row.id}`, attempts, backoff: { type: 'fixed', delay: 60_000 }, removeOnFail: 1000,
  });
  return row.id;
}

describe('a failing job and its outbox row', () => {
  it('keeps the row while attempts remain, and removes it with the last one', async () => {
    const retried = await failingJob(3);
    // The first attempt failed: the job waits for its retry, its row kept for the sweeper should Redis lose it.
    expect(await eventually(async () => (await s.ctx.jobs.fanout.getJob(`outbox-${retried}`))?.attemptsMade, 1, 10_000)).toBe(1);
    expect(await outboxRow(retried)).toBe(1);

    const last = await failingJob(1);
    expect(await eventually(async () => (await s.ctx.jobs.fanout.getJob(`outbox-${last}`))?.getState(), 'failed', 10_000)).toBe('failed');
    expect(await eventually(() => outboxRow(last), 0)).toBe(0);
    // The sweeper finds nothing of it to queue again, though the job's own record may be trimmed from the failed list.
    expect((await pendingOutbox(s.ctx.db, 0, 1000)).map((r) => r.id)).not.toContain(last);
    const job = (await s.ctx.jobs.fanout.getJob(`outbox-${last}`))!;
    expect(job.failedReason).toBeTruthy();
  });
});
