import type { Queryable } from './db.ts';

// CSV imports (services/imports.ts) and their rows. A row applied is deleted; one that failed keeps its reason.

export type ImportType = 'following' | 'blocking' | 'muting' | 'domain_blocking' | 'bookmarks' | 'lists';
export type ImportState = 'scheduled' | 'in_progress' | 'finished';

export interface ImportRow {
  id: string;
  account_id: string;
  type: ImportType;
  overwrite: boolean;
  state: ImportState;
  original_filename: string;
  total_items: number;
  processed_items: number;
  imported_items: number;
  created_at: Date;
  finished_at: Date | null;
}

/** What one line of the file asks for (Mastodon's BulkImportRow data, by the same names). */
export interface ImportRowData {
  acct?: string;
  show_reblogs?: boolean | null;
  notify?: boolean | null;
  languages?: string[] | null;
  hide_notifications?: boolean | null;
  domain?: string;
  uri?: string;
  list_name?: string;
}

export interface PendingRow {
  id: string;
  data: ImportRowData;
}

const COLUMNS = `id::text, account_id::text, type, overwrite, state, original_filename, total_items, processed_items, imported_items, created_at, finished_at`;
/** Rows per INSERT: keeps each statement's parameters small whatever the file's size. */
const INSERT_CHUNK = 1000;

export async function insertImport(
  db: Queryable, i: { accountId: string; type: ImportType; overwrite: boolean; filename: string; rows: { target: string; data: ImportRowData }[] },
): Promise<ImportRow> {
  const { rows } = await db.query<ImportRow>(
    `INSERT INTO imports (account_id, type, overwrite, original_filename, total_items) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [i.accountId, i.type, i.overwrite, i.filename, i.rows.length],
  );
  const created = rows[0]!;
  for (let at = 0; at < i.rows.length; at += INSERT_CHUNK) {
    const chunk = i.rows.slice(at, at + INSERT_CHUNK);
    await db.query(
      `INSERT INTO import_rows (import_id, target, data) SELECT $1, t, d FROM unnest($2::text[], $3::jsonb[]) WITH ORDINALITY AS x(t, d, n) ORDER BY n`,
      [created.id, chunk.map((r) => r.target), chunk.map((r) => JSON.stringify(r.data))],
    );
  }
  return created;
}

export async function findImport(db: Queryable, id: string): Promise<ImportRow | null> {
  const { rows } = await db.query<ImportRow>(`SELECT ${COLUMNS} FROM imports WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function findAccountImport(db: Queryable, accountId: string, id: string): Promise<ImportRow | null> {
  if (!/^\d{1,19}$/.test(id)) return null;
  const { rows } = await db.query<ImportRow>(`SELECT ${COLUMNS} FROM imports WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rows[0] ?? null;
}

export async function recentImports(db: Queryable, accountId: string, limit: number): Promise<ImportRow[]> {
  const { rows } = await db.query<ImportRow>(`SELECT ${COLUMNS} FROM imports WHERE account_id = $1 ORDER BY id DESC LIMIT $2`, [accountId, limit]);
  return rows;
}

export async function pendingRows(db: Queryable, importId: string, limit: number): Promise<PendingRow[]> {
  const { rows } = await db.query<PendingRow>(
    `SELECT id::text, data FROM import_rows WHERE import_id = $1 AND failure IS NULL ORDER BY id LIMIT $2`, [importId, limit],
  );
  return rows;
}

export async function failedRows(db: Queryable, importId: string, limit: number): Promise<{ data: ImportRowData; failure: string }[]> {
  const { rows } = await db.query<{ data: ImportRowData; failure: string }>(
    `SELECT data, failure FROM import_rows WHERE import_id = $1 AND failure IS NOT NULL ORDER BY id LIMIT $2`, [importId, limit],
  );
  return rows;
}

export async function countFailedRows(db: Queryable, importId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM import_rows WHERE import_id = $1 AND failure IS NOT NULL`, [importId]);
  return rows[0]!.n;
}

/**
 * Records a batch's outcome: rows applied are deleted, rows that failed keep their reason; the counters move by
 * what was done. Returns whether rows are left to try.
 */
export async function recordBatch(db: Queryable, importId: string, done: string[], failed: { id: string; failure: string }[]): Promise<boolean> {
  if (done.length > 0) await db.query(`DELETE FROM import_rows WHERE import_id = $1 AND id = ANY($2::bigint[])`, [importId, done]);
  if (failed.length > 0) {
    await db.query(
      `UPDATE import_rows r SET failure = f.failure FROM unnest($2::bigint[], $3::text[]) AS f(id, failure) WHERE r.import_id = $1 AND r.id = f.id`,
      [importId, failed.map((f) => f.id), failed.map((f) => f.failure.slice(0, 500))],
    );
  }
  await db.query(
    `UPDATE imports SET processed_items = least(total_items, processed_items + $2), imported_items = least(total_items, imported_items + $3), state = 'in_progress'
      WHERE id = $1`,
    [importId, done.length + failed.length, done.length],
  );
  const { rows } = await db.query(`SELECT 1 FROM import_rows WHERE import_id = $1 AND failure IS NULL LIMIT 1`, [importId]);
  return rows.length > 0;
}

export async function setImportState(db: Queryable, importId: string, state: ImportState): Promise<void> {
  await db.query(
    `UPDATE imports SET state = $2, finished_at = CASE WHEN $2 = 'finished' THEN now() ELSE finished_at END WHERE id = $1`, [importId, state],
  );
}

// Overwrite: what the account has that the file does not list, in batches (keyset by the relation's id).

/** An account's address as rows store it: `user` for ours, `user@domain` for others, lowercased. */
const ACCT = `lower(a.username || coalesce('@' || a.domain, ''))`;

export async function relationsNotListed(
  db: Queryable, table: 'follows' | 'blocks' | 'mutes', accountId: string, importId: string, afterId: string, limit: number,
): Promise<{ id: string; targetId: string }[]> {
  const { rows } = await db.query<{ id: string; targetId: string }>(
    `SELECT r.id::text, r.target_account_id::text AS "targetId" FROM ${table} r JOIN accounts a ON a.id = r.target_account_id
      WHERE r.account_id = $1 AND r.id > $3
        AND NOT EXISTS (SELECT 1 FROM import_rows i WHERE i.import_id = $2 AND i.target = ${ACCT})
      ORDER BY r.id LIMIT $4`,
    [accountId, importId, afterId, limit],
  );
  return rows;
}

export async function domainBlocksNotListed(db: Queryable, accountId: string, importId: string, afterId: string, limit: number): Promise<{ id: string; domain: string }[]> {
  const { rows } = await db.query<{ id: string; domain: string }>(
    `SELECT b.id::text, b.domain FROM account_domain_blocks b
      WHERE b.account_id = $1 AND b.id > $3 AND NOT EXISTS (SELECT 1 FROM import_rows i WHERE i.import_id = $2 AND i.target = b.domain)
      ORDER BY b.id LIMIT $4`,
    [accountId, importId, afterId, limit],
  );
  return rows;
}

/** Bookmarks whose post's URI (ours are built as services/uris.ts builds them) the file does not list. */
export async function bookmarksNotListed(
  db: Queryable, accountId: string, importId: string, publicUrl: string, afterId: string, limit: number,
): Promise<{ id: string; statusId: string }[]> {
  const { rows } = await db.query<{ id: string; statusId: string }>(
    `SELECT b.id::text, b.status_id::text AS "statusId" FROM bookmarks b JOIN statuses s ON s.id = b.status_id JOIN accounts a ON a.id = s.account_id
      WHERE b.account_id = $1 AND b.id > $4
        AND NOT EXISTS (SELECT 1 FROM import_rows i WHERE i.import_id = $2
                         AND i.target = coalesce(s.uri, $3 || '/users/' || a.username || '/statuses/' || s.id))
      ORDER BY b.id LIMIT $5`,
    [accountId, importId, publicUrl, afterId, limit],
  );
  return rows;
}

/** The account's lists whose titles the file does not name (at most LISTS_PER_ACCOUNT exist). */
export async function listsNotListed(db: Queryable, accountId: string, importId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT l.id::text FROM lists l WHERE l.account_id = $1
        AND NOT EXISTS (SELECT 1 FROM import_rows i WHERE i.import_id = $2 AND i.data->>'list_name' = l.title)`,
    [accountId, importId],
  );
  return rows.map((r) => r.id);
}

export async function listMembersBatch(db: Queryable, listId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(`SELECT account_id::text FROM list_accounts WHERE list_id = $1 ORDER BY id LIMIT $2`, [listId, limit]);
  return rows.map((r) => r.account_id);
}
