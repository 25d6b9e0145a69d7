import type { Queryable } from './db.ts';

/**
 * Archives of one's own posts and media (storage/migrations/1766610000000_account_archives.sql), and the pages of the
 * account's statuses and media the archive job walks (keyset pages on the (account_id, id) and (status_id, id)
 * indexes).
 */

export interface AccountArchiveRow {
  id: string;
  account_id: string;
  key_prefix: string | null;
  parts: number;
  size_bytes: string;
  created_at: Date;
  ready_at: Date | null;
  expires_at: Date | null;
}

const COLUMNS = 'id, account_id, key_prefix, parts, size_bytes, created_at, ready_at, expires_at';

/** The account's archives, newest first (a handful: one a week, each removed a week after it is made). */
export async function accountArchives(db: Queryable, accountId: string, limit = 20): Promise<AccountArchiveRow[]> {
  const { rows } = await db.query<AccountArchiveRow>(
    `SELECT ${COLUMNS} FROM account_archives WHERE account_id = $1 ORDER BY id DESC LIMIT $2`, [accountId, limit],
  );
  return rows;
}

export async function findAccountArchive(db: Queryable, id: string): Promise<AccountArchiveRow | null> {
  const { rows } = await db.query<AccountArchiveRow>(`SELECT ${COLUMNS} FROM account_archives WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/**
 * Records a request unless the account asked less than `minIntervalMs` ago. The account's user row is locked for the
 * transaction, so two requests at once cannot both pass the check. Call inside a transaction.
 */
export async function claimAccountArchive(tx: Queryable, accountId: string, minIntervalMs: number): Promise<AccountArchiveRow | null> {
  await tx.query(`SELECT 1 FROM users WHERE account_id = $1 FOR UPDATE`, [accountId]);
  const { rows } = await tx.query<AccountArchiveRow>(
    `INSERT INTO account_archives (account_id)
     SELECT $1 WHERE NOT EXISTS (
       SELECT 1 FROM account_archives WHERE account_id = $1 AND created_at > now() - make_interval(secs => $2))
     RETURNING ${COLUMNS}`,
    [accountId, minIntervalMs / 1000],
  );
  return rows[0] ?? null;
}

/** When the account may ask again (null: now). */
export async function nextArchiveAllowedAt(db: Queryable, accountId: string, minIntervalMs: number): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date }>(
    `SELECT max(created_at) + make_interval(secs => $2) AS at FROM account_archives WHERE account_id = $1`,
    [accountId, minIntervalMs / 1000],
  );
  const at = rows[0]?.at ?? null;
  return at && at.getTime() > Date.now() ? at : null;
}

/** Where an attempt writes its parts: set before the first part, so that a later attempt can remove them. */
export async function startArchiveAttempt(db: Queryable, id: string, keyPrefix: string): Promise<void> {
  await db.query(`UPDATE account_archives SET key_prefix = $2, parts = 0, size_bytes = 0 WHERE id = $1 AND ready_at IS NULL`, [id, keyPrefix]);
}

/** Counts a part as stored (before it is written, so that a crash mid-write still leaves it known). */
export async function countArchivePart(db: Queryable, id: string, parts: number): Promise<void> {
  await db.query(`UPDATE account_archives SET parts = $2 WHERE id = $1`, [id, parts]);
}

export async function markArchiveReady(db: Queryable, id: string, parts: number, sizeBytes: number, keepMs: number): Promise<AccountArchiveRow | null> {
  const { rows } = await db.query<AccountArchiveRow>(
    `UPDATE account_archives SET parts = $2, size_bytes = $3, ready_at = now(), expires_at = now() + make_interval(secs => $4)
      WHERE id = $1 AND ready_at IS NULL RETURNING ${COLUMNS}`,
    [id, parts, sizeBytes, keepMs / 1000],
  );
  return rows[0] ?? null;
}

/**
 * Archives past their time (of any account): those offered for their week, and those never made (their job gave up)
 * once their request is `abandonedAfterMs` old.
 */
export async function expiredAccountArchives(db: Queryable, abandonedAfterMs: number, limit: number): Promise<AccountArchiveRow[]> {
  const { rows } = await db.query<AccountArchiveRow>(
    `(SELECT ${COLUMNS} FROM account_archives WHERE expires_at <= now() LIMIT $2)
     UNION ALL
     (SELECT ${COLUMNS} FROM account_archives WHERE ready_at IS NULL AND created_at < now() - make_interval(secs => $1) LIMIT $2)
     LIMIT $2`,
    [abandonedAfterMs / 1000, limit],
  );
  return rows;
}

export async function deleteAccountArchive(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM account_archives WHERE id = $1`, [id]);
}

/** The account's own statuses, reblogs included, newest first (Mastodon's outbox order). */
export async function ownStatusIdsPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM statuses WHERE account_id = $1 AND deleted_at IS NULL AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows.map((r) => r.id);
}

/** The stored files of media attached to these statuses (their originals, as Mastodon archives `file`). */
export async function mediaFilesOfStatuses(db: Queryable, statusIds: string[]): Promise<{ id: string; original_key: string }[]> {
  if (statusIds.length === 0) return [];
  const { rows } = await db.query<{ id: string; original_key: string }>(
    `SELECT id, original_key FROM media_attachments WHERE status_id = ANY($1::bigint[]) AND original_key IS NOT NULL ORDER BY status_id DESC, position, id`,
    [statusIds],
  );
  return rows;
}
