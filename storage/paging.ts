/** Mastodon's id paging: newest first; min_id pages forward from an id (still returned newest first). */
export interface PageParams {
  maxId?: string | undefined;
  sinceId?: string | undefined;
  minId?: string | undefined;
  limit: number;
}

/**
 * SQL fragments for paging on `column`, with parameters appended to `values`.
 * With min_id the rows are fetched oldest first (the ones right after min_id) and must be reversed: see `pageRows`.
 */
export function pageClause(column: string, p: PageParams, values: unknown[]): { where: string; order: string; limit: string } {
  const conds: string[] = [];
  if (p.maxId !== undefined) {
    values.push(p.maxId);
    conds.push(`${column} < $${values.length}`);
  }
  if (p.sinceId !== undefined) {
    values.push(p.sinceId);
    conds.push(`${column} > $${values.length}`);
  }
  if (p.minId !== undefined) {
    values.push(p.minId);
    conds.push(`${column} > $${values.length}`);
  }
  values.push(p.limit);
  return {
    where: conds.length ? conds.join(' AND ') : 'TRUE',
    order: p.minId !== undefined ? `${column} ASC` : `${column} DESC`,
    limit: `LIMIT $${values.length}`,
  };
}

export function pageRows<T>(rows: T[], p: PageParams): T[] {
  return p.minId !== undefined ? rows.reverse() : rows;
}
