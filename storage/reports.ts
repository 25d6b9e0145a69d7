import type { Queryable } from './db.ts';
import type { StatusRow } from './statuses.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

export type ReportCategory = 'spam' | 'legal' | 'violation' | 'other';

/** A report of an account (and some of its statuses) to this server's moderators. */
export interface ReportRow {
  id: string;
  account_id: string;
  target_account_id: string;
  status_ids: string[];
  rule_ids: string[];
  comment: string;
  category: ReportCategory;
  forwarded: boolean;
  uri: string | null;
  assigned_account_id: string | null;
  action_taken_at: Date | null;
  action_taken_by_account_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id::text, account_id::text, target_account_id::text, status_ids::text[], rule_ids::text[], comment, category,
  forwarded, uri, assigned_account_id::text, action_taken_at, action_taken_by_account_id::text, created_at, updated_at`;

export interface NewReport {
  accountId: string;
  targetAccountId: string;
  statusIds: string[];
  ruleIds: string[];
  comment: string;
  category: ReportCategory;
  forwarded: boolean;
  /** The received Flag's id: the same Flag twice makes one report. */
  uri?: string | null;
}

/** Null when a report with this uri exists already. */
export async function insertReport(db: Queryable, r: NewReport): Promise<ReportRow | null> {
  const { rows } = await db.query<ReportRow>(
    `INSERT INTO reports (account_id, target_account_id, status_ids, rule_ids, comment, category, forwarded, uri)
     VALUES ($1, $2, $3::bigint[], $4::bigint[], $5, $6, $7, $8)
     ON CONFLICT (uri) WHERE uri IS NOT NULL DO NOTHING
     RETURNING ${COLUMNS}`,
    [r.accountId, r.targetAccountId, r.statusIds, r.ruleIds, r.comment, r.category, r.forwarded, r.uri ?? null],
  );
  return rows[0] ?? null;
}

export async function setReportUri(db: Queryable, id: string, uri: string): Promise<void> {
  await db.query(`UPDATE reports SET uri = $2 WHERE id = $1`, [id, uri]);
}

export async function findReport(db: Queryable, id: string): Promise<ReportRow | null> {
  const { rows } = await db.query<ReportRow>(`SELECT ${COLUMNS} FROM reports WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export interface ReportFilters {
  /** true: resolved reports only; otherwise unresolved ones only (Mastodon's ReportFilter). */
  resolved?: boolean | undefined;
  accountId?: string | undefined;
  targetAccountId?: string | undefined;
}

/** A page of reports, newest first, by the partial indexes on resolution or the account indexes. */
export async function reportsPage(db: Queryable, f: ReportFilters, p: PageParams): Promise<ReportRow[]> {
  const values: unknown[] = [];
  const where = [f.resolved ? 'action_taken_at IS NOT NULL' : 'action_taken_at IS NULL'];
  if (f.accountId) {
    values.push(f.accountId);
    where.push(`account_id = $${values.length}`);
  }
  if (f.targetAccountId) {
    values.push(f.targetAccountId);
    where.push(`target_account_id = $${values.length}`);
  }
  const c = pageClause('id', p, values);
  const { rows } = await db.query<ReportRow>(
    `SELECT ${COLUMNS} FROM reports WHERE ${where.join(' AND ')} AND ${c.where} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p);
}

export async function assignReport(db: Queryable, id: string, accountId: string | null): Promise<ReportRow | null> {
  const { rows } = await db.query<ReportRow>(
    `UPDATE reports SET assigned_account_id = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, accountId],
  );
  return rows[0] ?? null;
}

/** Resolves a report (by a moderator's account, null from the CLI); a resolved one keeps its first resolution. */
export async function resolveReport(db: Queryable, id: string, byAccountId: string | null): Promise<ReportRow | null> {
  const { rows } = await db.query<ReportRow>(
    `UPDATE reports SET action_taken_at = coalesce(action_taken_at, now()),
                        action_taken_by_account_id = CASE WHEN action_taken_at IS NULL THEN $2 ELSE action_taken_by_account_id END,
                        updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, byAccountId],
  );
  return rows[0] ?? null;
}

export async function reopenReport(db: Queryable, id: string): Promise<ReportRow | null> {
  const { rows } = await db.query<ReportRow>(
    `UPDATE reports SET action_taken_at = NULL, action_taken_by_account_id = NULL, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0] ?? null;
}

/** Resolves every open report about an account (a moderator acted on it); returns their ids. */
export async function resolveReportsAbout(db: Queryable, targetAccountId: string, byAccountId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE reports SET action_taken_at = now(), action_taken_by_account_id = $2, updated_at = now()
      WHERE target_account_id = $1 AND action_taken_at IS NULL RETURNING id::text`,
    [targetAccountId, byAccountId],
  );
  return rows.map((r) => r.id);
}

/** Of these statuses, those written by the account (deleted ones included: a report may name a post since removed). */
export async function statusIdsOfAccount(db: Queryable, accountId: string, statusIds: string[]): Promise<Set<string>> {
  if (statusIds.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text FROM statuses WHERE id = ANY($1::bigint[]) AND account_id = $2`,
    [statusIds, accountId],
  );
  return new Set(rows.map((r) => r.id));
}

/** Statuses named by a report, as stored (deleted ones too): for moderators and for the Flag that forwards it. */
export async function reportedStatusUris(db: Queryable, statusIds: string[]): Promise<{ id: string; uri: string | null }[]> {
  if (statusIds.length === 0) return [];
  const { rows } = await db.query<{ id: string; uri: string | null }>(
    `SELECT id::text, uri FROM statuses WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [statusIds],
  );
  return rows;
}

const STATUS_COLUMNS = `id, account_id, uri, url, text, content, spoiler_text, sensitive, visibility, language,
  in_reply_to_id, in_reply_to_account_id, reblog_of_id, application_id, replies_count, reblogs_count,
  favourites_count, deleted_at, edited_at, created_at`;

/** The statuses a report names, deleted ones too (moderators see what was reported), oldest first. */
export async function reportedStatuses(db: Queryable, statusIds: string[]): Promise<StatusRow[]> {
  if (statusIds.length === 0) return [];
  const { rows } = await db.query<StatusRow>(
    `SELECT ${STATUS_COLUMNS} FROM statuses WHERE id = ANY($1::bigint[]) ORDER BY id LIMIT 100`,
    [statusIds],
  );
  return rows;
}

/** A moderator's change of category or rules; naming rules makes a report a `violation`, as Mastodon has it. */
export async function updateReport(db: Queryable, id: string, u: { category?: ReportCategory | undefined; ruleIds?: string[] | undefined }): Promise<ReportRow | null> {
  const category = u.ruleIds && u.ruleIds.length > 0 ? 'violation' : u.category;
  const { rows } = await db.query<ReportRow>(
    `UPDATE reports SET category = coalesce($2, category), rule_ids = coalesce($3::bigint[], rule_ids), updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, category ?? null, u.ruleIds ?? null],
  );
  return rows[0] ?? null;
}
