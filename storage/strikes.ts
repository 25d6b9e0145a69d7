import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** What a strike records (Mastodon's AccountWarning actions). */
export type StrikeAction = 'none' | 'disable' | 'mark_statuses_as_sensitive' | 'delete_statuses' | 'sensitive' | 'silence' | 'suspend';

export interface StrikeRow {
  id: string;
  /** The moderator who acted; null once their account is gone. */
  account_id: string | null;
  target_account_id: string;
  action: StrikeAction;
  text: string;
  status_ids: string[];
  report_id: string | null;
  overruled_at: Date | null;
  created_at: Date;
}

export interface AppealRow {
  id: string;
  account_id: string;
  account_warning_id: string;
  text: string;
  approved_at: Date | null;
  approved_by_account_id: string | null;
  rejected_at: Date | null;
  rejected_by_account_id: string | null;
  created_at: Date;
}

const STRIKE = `id::text, account_id::text, target_account_id::text, action, text, status_ids::text[] AS status_ids,
  report_id::text, overruled_at, created_at`;
const APPEAL = `id::text, account_id::text, account_warning_id::text, text, approved_at, approved_by_account_id::text,
  rejected_at, rejected_by_account_id::text, created_at`;

export interface NewStrike {
  moderatorId: string | null;
  targetAccountId: string;
  action: StrikeAction;
  text: string;
  statusIds: string[];
  reportId: string | null;
}

export async function insertStrike(db: Queryable, s: NewStrike): Promise<StrikeRow> {
  const { rows } = await db.query<StrikeRow>(
    `INSERT INTO account_warnings (account_id, target_account_id, action, text, status_ids, report_id)
     VALUES ($1, $2, $3, $4, $5::bigint[], $6) RETURNING ${STRIKE}`,
    [s.moderatorId, s.targetAccountId, s.action, s.text, s.statusIds, s.reportId],
  );
  return rows[0]!;
}

export async function findStrike(db: Queryable, id: string): Promise<StrikeRow | null> {
  const { rows } = await db.query<StrikeRow>(`SELECT ${STRIKE} FROM account_warnings WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** An account's strikes, newest first, paged by id. */
export async function strikesOf(db: Queryable, accountId: string, p: PageParams): Promise<StrikeRow[]> {
  const values: unknown[] = [accountId];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<StrikeRow>(
    `SELECT ${STRIKE} FROM account_warnings WHERE target_account_id = $1 AND ${c.where} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p);
}

/** Marks a strike overruled (an approved appeal); false when it already was. */
export async function overruleStrike(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE account_warnings SET overruled_at = now(), updated_at = now() WHERE id = $1 AND overruled_at IS NULL`, [id]);
  return rowCount === 1;
}

/** The appeal of a strike; null when there is none, or when one already exists (the unique strike). */
export async function insertAppeal(db: Queryable, a: { accountId: string; strikeId: string; text: string }): Promise<AppealRow | null> {
  const { rows } = await db.query<AppealRow>(
    `INSERT INTO appeals (account_id, account_warning_id, text) VALUES ($1, $2, $3)
     ON CONFLICT (account_warning_id) DO NOTHING RETURNING ${APPEAL}`,
    [a.accountId, a.strikeId, a.text],
  );
  return rows[0] ?? null;
}

export async function findAppeal(db: Queryable, id: string): Promise<AppealRow | null> {
  const { rows } = await db.query<AppealRow>(`SELECT ${APPEAL} FROM appeals WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function appealsOfStrikes(db: Queryable, strikeIds: string[]): Promise<Map<string, AppealRow>> {
  if (strikeIds.length === 0) return new Map();
  const { rows } = await db.query<AppealRow>(`SELECT ${APPEAL} FROM appeals WHERE account_warning_id = ANY($1::bigint[])`, [strikeIds]);
  return new Map(rows.map((a) => [a.account_warning_id, a]));
}

/** Appeals waiting for an operator, oldest first (the order they are handled in), after `afterId`, at most `limit`. */
export async function pendingAppeals(db: Queryable, p: { afterId?: string | undefined; limit: number }): Promise<AppealRow[]> {
  const { rows } = await db.query<AppealRow>(
    `SELECT ${APPEAL} FROM appeals WHERE approved_at IS NULL AND rejected_at IS NULL AND id > $1 ORDER BY id LIMIT $2`,
    [p.afterId ?? '0', p.limit],
  );
  return rows;
}

/**
 * Decides a pending appeal, locking it: the appeal as it was, or null when it was decided meanwhile (two operators
 * at once decide it once).
 */
export async function decideAppeal(db: Queryable, id: string, decision: 'approved' | 'rejected', byAccountId: string | null): Promise<AppealRow | null> {
  const { rows } = await db.query<AppealRow>(
    `UPDATE appeals SET ${decision}_at = now(), ${decision}_by_account_id = $2, updated_at = now()
      WHERE id = $1 AND approved_at IS NULL AND rejected_at IS NULL RETURNING ${APPEAL}`,
    [id, byAccountId],
  );
  return rows[0] ?? null;
}
