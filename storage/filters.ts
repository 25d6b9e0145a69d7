import type { Queryable } from './db.ts';

export type FilterContext = 'home' | 'notifications' | 'public' | 'thread' | 'account';
export type FilterAction = 'warn' | 'hide' | 'blur';

export interface FilterKeywordRow {
  id: string;
  custom_filter_id: string;
  keyword: string;
  whole_word: boolean;
}

export interface FilterStatusRow {
  id: string;
  custom_filter_id: string;
  status_id: string;
}

export interface FilterRow {
  id: string;
  account_id: string;
  title: string;
  context: FilterContext[];
  action: FilterAction;
  expires_at: Date | null;
  keywords: FilterKeywordRow[];
  statuses: FilterStatusRow[];
}

/** How much one account may keep: every listing is bounded by these. */
export const FILTER_LIMITS = { filters: 100, keywordsPerFilter: 100, statusesPerFilter: 200 } as const;

/** An account's filters with their keywords and statuses, oldest first (expired ones too: the API lists them). */
export async function filtersOf(db: Queryable, accountId: string, onlyId?: string): Promise<FilterRow[]> {
  const { rows } = await db.query<Omit<FilterRow, 'keywords' | 'statuses'>>(
    `SELECT id, account_id, title, context, action, expires_at FROM custom_filters
      WHERE account_id = $1 AND ($2::bigint IS NULL OR id = $2) ORDER BY id LIMIT ${FILTER_LIMITS.filters}`,
    [accountId, onlyId ?? null],
  );
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [keywords, statuses] = await Promise.all([
    db.query<FilterKeywordRow>(`SELECT id, custom_filter_id, keyword, whole_word FROM custom_filter_keywords WHERE custom_filter_id = ANY($1::bigint[]) ORDER BY id`, [ids]),
    db.query<FilterStatusRow>(`SELECT id, custom_filter_id, status_id FROM custom_filter_statuses WHERE custom_filter_id = ANY($1::bigint[]) ORDER BY id`, [ids]),
  ]);
  return rows.map((r) => ({
    ...r,
    keywords: keywords.rows.filter((k) => k.custom_filter_id === r.id),
    statuses: statuses.rows.filter((s) => s.custom_filter_id === r.id),
  }));
}

export async function findFilter(db: Queryable, accountId: string, id: string): Promise<FilterRow | null> {
  return (await filtersOf(db, accountId, id))[0] ?? null;
}

export async function countFilters(db: Queryable, accountId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM custom_filters WHERE account_id = $1`, [accountId]);
  return Number(rows[0]!.n);
}

export interface FilterFields {
  title: string;
  context: FilterContext[];
  action: FilterAction;
  expiresAt: Date | null;
}

export async function insertFilter(db: Queryable, accountId: string, f: FilterFields): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO custom_filters (account_id, title, context, action, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [accountId, f.title, f.context, f.action, f.expiresAt],
  );
  return rows[0]!.id;
}

export async function updateFilter(db: Queryable, accountId: string, id: string, f: Partial<FilterFields>): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE custom_filters SET title = coalesce($3, title), context = coalesce($4, context), action = coalesce($5, action),
            expires_at = CASE WHEN $6 THEN $7 ELSE expires_at END, updated_at = now()
      WHERE id = $1 AND account_id = $2`,
    [id, accountId, f.title ?? null, f.context ?? null, f.action ?? null, f.expiresAt !== undefined, f.expiresAt ?? null],
  );
  return rowCount === 1;
}

export async function deleteFilter(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM custom_filters WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}

export async function insertKeyword(db: Queryable, filterId: string, keyword: string, wholeWord: boolean): Promise<FilterKeywordRow> {
  const { rows } = await db.query<FilterKeywordRow>(
    `INSERT INTO custom_filter_keywords (custom_filter_id, keyword, whole_word) VALUES ($1, $2, $3) RETURNING id, custom_filter_id, keyword, whole_word`,
    [filterId, keyword, wholeWord],
  );
  return rows[0]!;
}

/** A keyword of one of the account's filters. */
export async function findKeyword(db: Queryable, accountId: string, id: string): Promise<FilterKeywordRow | null> {
  const { rows } = await db.query<FilterKeywordRow>(
    `SELECT k.id, k.custom_filter_id, k.keyword, k.whole_word FROM custom_filter_keywords k JOIN custom_filters f ON f.id = k.custom_filter_id
      WHERE k.id = $1 AND f.account_id = $2`,
    [id, accountId],
  );
  return rows[0] ?? null;
}

export async function updateKeyword(db: Queryable, id: string, keyword: string | undefined, wholeWord: boolean | undefined): Promise<FilterKeywordRow | null> {
  const { rows } = await db.query<FilterKeywordRow>(
    `UPDATE custom_filter_keywords SET keyword = coalesce($2, keyword), whole_word = coalesce($3, whole_word) WHERE id = $1
     RETURNING id, custom_filter_id, keyword, whole_word`,
    [id, keyword ?? null, wholeWord ?? null],
  );
  return rows[0] ?? null;
}

export async function deleteKeyword(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM custom_filter_keywords WHERE id = $1`, [id]);
}

export async function countKeywords(db: Queryable, filterId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM custom_filter_keywords WHERE custom_filter_id = $1`, [filterId]);
  return Number(rows[0]!.n);
}

export async function insertFilterStatus(db: Queryable, filterId: string, statusId: string): Promise<FilterStatusRow> {
  const { rows } = await db.query<FilterStatusRow>(
    `INSERT INTO custom_filter_statuses (custom_filter_id, status_id) VALUES ($1, $2)
     ON CONFLICT (custom_filter_id, status_id) DO UPDATE SET status_id = EXCLUDED.status_id
     RETURNING id, custom_filter_id, status_id`,
    [filterId, statusId],
  );
  return rows[0]!;
}

export async function findFilterStatus(db: Queryable, accountId: string, id: string): Promise<FilterStatusRow | null> {
  const { rows } = await db.query<FilterStatusRow>(
    `SELECT s.id, s.custom_filter_id, s.status_id FROM custom_filter_statuses s JOIN custom_filters f ON f.id = s.custom_filter_id
      WHERE s.id = $1 AND f.account_id = $2`,
    [id, accountId],
  );
  return rows[0] ?? null;
}

export async function deleteFilterStatus(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM custom_filter_statuses WHERE id = $1`, [id]);
}

export async function countFilterStatuses(db: Queryable, filterId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM custom_filter_statuses WHERE custom_filter_id = $1`, [filterId]);
  return Number(rows[0]!.n);
}
