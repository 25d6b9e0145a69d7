import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';
import type { Visibility } from './statuses.ts';
import type { MediaRow } from './media.ts';

/** What the author asked for when scheduling: the post's parameters, published as they were given. */
export interface ScheduledParams {
  text: string;
  spoilerText: string;
  sensitive: boolean;
  visibility: Visibility;
  language: string | null;
  inReplyToId: string | null;
  mediaIds: string[];
  applicationId: string | null;
  /** Absent in rows scheduled before polls could be. */
  poll?: { options: string[]; expiresIn: number; multiple: boolean; hideTotals: boolean } | null;
  /** The status it quotes, and who may quote it (absent in rows scheduled before quotes were kept). */
  quotedStatusId?: string | null;
  quotePolicy?: string | null;
}

export interface ScheduledStatusRow {
  id: string;
  account_id: string;
  scheduled_at: Date;
  params: ScheduledParams;
}

/** Mastodon's ScheduledStatus limits: how many one account may have waiting, and for one (UTC) day. */
export const SCHEDULED_TOTAL_LIMIT = 300;
export const SCHEDULED_DAILY_LIMIT = 25;

const COLUMNS = `id::text, account_id::text, scheduled_at, params`;

export type ScheduleProblem = 'total' | 'daily' | null;

/** Counts taken under a lock on the account row, so two requests cannot both take the last place. */
async function limitProblem(db: Queryable, accountId: string, at: Date, exceptId: string | null): Promise<ScheduleProblem> {
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
  const { rows } = await db.query<{ total: number; daily: number }>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE (scheduled_at AT TIME ZONE 'UTC')::date = ($2::timestamptz AT TIME ZONE 'UTC')::date)::int AS daily
       FROM scheduled_statuses WHERE account_id = $1 AND id <> coalesce($3::bigint, 0)`,
    [accountId, at, exceptId],
  );
  if (rows[0]!.total >= SCHEDULED_TOTAL_LIMIT) return 'total';
  if (rows[0]!.daily >= SCHEDULED_DAILY_LIMIT) return 'daily';
  return null;
}

/** Inserts a scheduled status and takes hold of its media (all of them or nothing: `media` false). */
export async function insertScheduledStatus(db: Queryable, accountId: string, at: Date, params: ScheduledParams): Promise<{ row: ScheduledStatusRow | null; problem: ScheduleProblem; media: boolean }> {
  const problem = await limitProblem(db, accountId, at, null);
  if (problem) return { row: null, problem, media: true };
  const { rows } = await db.query<ScheduledStatusRow>(
    `INSERT INTO scheduled_statuses (account_id, scheduled_at, params) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
    [accountId, at, JSON.stringify(params)],
  );
  const row = rows[0]!;
  if (params.mediaIds.length > 0) {
    const { rowCount } = await db.query(
      `UPDATE media_attachments m SET scheduled_status_id = $1, position = o.position, updated_at = now()
         FROM unnest($3::bigint[]) WITH ORDINALITY AS o(id, position)
        WHERE m.id = o.id AND m.account_id = $2 AND m.status_id IS NULL AND m.scheduled_status_id IS NULL AND m.state = 'ready'`,
      [row.id, accountId, params.mediaIds],
    );
    if (rowCount !== params.mediaIds.length) return { row: null, problem: null, media: false };
  }
  return { row, problem: null, media: true };
}

/** Moves a scheduled status (under the same limits); null when it is not the account's (or was just published). */
export async function rescheduleStatus(db: Queryable, accountId: string, id: string, at: Date): Promise<{ row: ScheduledStatusRow | null; problem: ScheduleProblem }> {
  const problem = await limitProblem(db, accountId, at, id);
  if (problem) return { row: null, problem };
  const { rows } = await db.query<ScheduledStatusRow>(
    `UPDATE scheduled_statuses SET scheduled_at = $3 WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`, [id, accountId, at],
  );
  return { row: rows[0] ?? null, problem: null };
}

export async function findScheduledStatus(db: Queryable, accountId: string, id: string): Promise<ScheduledStatusRow | null> {
  const { rows } = await db.query<ScheduledStatusRow>(`SELECT ${COLUMNS} FROM scheduled_statuses WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rows[0] ?? null;
}

export async function findScheduledStatusById(db: Queryable, id: string): Promise<ScheduledStatusRow | null> {
  const { rows } = await db.query<ScheduledStatusRow>(`SELECT ${COLUMNS} FROM scheduled_statuses WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** An account's scheduled statuses, paged by id, newest first (as Mastodon lists them). */
export async function scheduledStatusesOf(db: Queryable, accountId: string, p: PageParams): Promise<ScheduledStatusRow[]> {
  const values: unknown[] = [accountId];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<ScheduledStatusRow>(
    `SELECT ${COLUMNS} FROM scheduled_statuses WHERE account_id = $1 AND ${c.where} ORDER BY ${c.order} ${c.limit}`, values,
  );
  return pageRows(rows, p);
}

/** Cancels one; its media are let go (ON DELETE SET NULL), to be attached elsewhere or cleaned up later. */
export async function deleteScheduledStatus(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM scheduled_statuses WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}

/**
 * Publishing takes the row in the transaction that inserts the status: of two publishers racing (a retried job, the
 * sweeper), one deletes it and the other finds nothing, so a post is published once. Called after the media are
 * attached (deleting the row lets go of any media left).
 */
export async function claimScheduledStatus(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM scheduled_statuses WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}

/** Scheduled statuses due by now, oldest first (the sweeper's work list). */
export async function dueScheduledStatuses(db: Queryable, limit: number): Promise<{ id: string; scheduled_at: Date }[]> {
  const { rows } = await db.query<{ id: string; scheduled_at: Date }>(
    `SELECT id::text, scheduled_at FROM scheduled_statuses WHERE scheduled_at <= now() ORDER BY scheduled_at LIMIT $1`, [limit],
  );
  return rows;
}

/** The media held by scheduled statuses, in their order, by scheduled status. */
export async function mediaOfScheduled(db: Queryable, ids: string[]): Promise<Map<string, MediaRow[]>> {
  const out = new Map<string, MediaRow[]>();
  if (ids.length === 0) return out;
  const { rows } = await db.query<MediaRow & { scheduled_status_id: string }>(
    `SELECT * FROM media_attachments WHERE scheduled_status_id = ANY($1::bigint[]) ORDER BY scheduled_status_id, position, id LIMIT 2000`, [ids],
  );
  for (const r of rows) out.set(r.scheduled_status_id, [...(out.get(r.scheduled_status_id) ?? []), r]);
  return out;
}
