import type { Queryable } from './db.ts';

/**
 * Work that must follow a commit (fan-out of a new status, its removal): the row is written in the same
 * transaction as the change, the job is queued after the commit, and the row is deleted when the job is done.
 * Rows left by a crash between commit and queueing are found by `pendingOutbox` and queued again.
 * A payload may carry `runAt` (an ISO date): its job is delayed until then (jobs/queues.ts), and the sweeper leaves
 * the row alone until a minute before, so that rows waiting for weeks do not fill its every pass.
 */
export interface OutboxRow {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
}

export async function addToOutbox(db: Queryable, kind: string, payload: Record<string, unknown>): Promise<OutboxRow> {
  const { rows } = await db.query<OutboxRow>(
    `INSERT INTO outbox (kind, payload) VALUES ($1, $2) RETURNING id, kind, payload`, [kind, JSON.stringify(payload)],
  );
  return rows[0]!;
}

export async function pendingOutbox(db: Queryable, olderThanMs: number, limit: number): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `SELECT id, kind, payload FROM outbox WHERE created_at < now() - make_interval(secs => $1)
        AND (NOT (payload ? 'runAt') OR (payload->>'runAt')::timestamptz < now() + interval '1 minute') ORDER BY id LIMIT $2`,
    [olderThanMs / 1000, limit],
  );
  return rows;
}

export async function removeFromOutbox(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM outbox WHERE id = $1`, [id]);
}

/**
 * Removes the rows of finished jobs, those finishing together in one statement (one commit for many, rather than
 * one each). Each caller's promise settles when its row is gone, so a job still ends only after its row does.
 */
export class OutboxRemover {
  private readonly db: Queryable;
  private pending: { id: string; done: () => void; failed: (err: unknown) => void }[] = [];
  private flushing = false;

  constructor(db: Queryable) {
    this.db = db;
  }

  remove(id: string): Promise<void> {
    return new Promise((done, failed) => {
      this.pending.push({ id, done, failed });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    // Rows of jobs ending in this turn wait for each other; while a batch is being deleted the next one gathers.
    await new Promise((r) => setImmediate(r));
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, 1000);
      try {
        await this.db.query({ name: 'outbox-remove-done', text: `DELETE FROM outbox WHERE id = ANY($1::bigint[])`, values: [batch.map((b) => b.id)] });
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.failed(err);
      }
    }
    this.flushing = false;
  }
}
