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
