import pg from 'pg';
import { transaction, type Db, type Queryable } from './db.ts';

/**
 * Files deleted while a backup runs are deferred (cli/backup.ts, storage/filehost/index.ts). `backup` dumps
 * PostgreSQL and then copies the file host's files; a file whose row went after the dump began (media pruned, an old
 * remote post removed, an avatar replaced) would otherwise be gone before the copy, and the backup would name a file
 * it lacks. The backup holds an exclusive advisory lock on its own connection from before the dump until the copy
 * ends; a deletion first takes the same lock shared, for its statement only, and when it cannot, the key is listed in
 * `deferred_file_deletions` instead. The lock goes with the backup's connection, so a backup that dies releases it.
 *
 * Why that suffices: every caller deletes a file after the commit that stopped naming it. A deletion that found no
 * backup had that commit before the backup took its lock, so before its dump's snapshot: the dump does not name the
 * file. One that found a backup waits for it.
 */
export const BACKUP_LOCK = '7436100214150211';

/** Whether no backup runs now (the lock taken shared for this statement alone). */
export async function deletionsAllowed(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock_shared($1::bigint) AS ok`, [BACKUP_LOCK]);
  return rows[0]!.ok;
}

export async function deferDeletions(db: Queryable, keys: string[]): Promise<void> {
  if (keys.length > 0) await db.query(`INSERT INTO deferred_file_deletions (key) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [keys]);
}

/** A key written again (a deterministic key, such as a copy of a remote avatar) is no longer to be deleted. */
export async function undeferDeletion(db: Queryable, key: string): Promise<void> {
  await db.query(`DELETE FROM deferred_file_deletions WHERE key = $1`, [key]);
}

export async function deferredDeletions(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deferred_file_deletions`);
  return rows[0]!.n;
}

/**
 * Deletes deferred files a batch at a time through `remove`, while no backup runs: each batch in a transaction that
 * holds the lock shared (a backup starting meanwhile waits for it). Returns how many were removed.
 */
export async function drainDeferredDeletions(db: Db, remove: (key: string) => Promise<void>, batch = 500): Promise<number> {
  let removed = 0;
  for (;;) {
    const n = await transaction(db, async (tx) => {
      if (!(await deletionsAllowed(tx))) return 0;
      const { rows } = await tx.query<{ key: string }>(
        `DELETE FROM deferred_file_deletions WHERE key IN (SELECT key FROM deferred_file_deletions ORDER BY deferred_at LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING key`,
        [batch],
      );
      for (const r of rows) await remove(r.key);
      return rows.length;
    });
    removed += n;
    if (n < batch) return removed;
  }
}

/**
 * The backup's hold on file deletions: the lock taken exclusive on a connection of its own (to DATABASE_DIRECT_URL,
 * as a pooler cannot keep a session's lock), waiting up to `waitMs` for deletions under way and for another backup.
 * Resolves to the release; rejects with `BackupRunning` when the wait ran out.
 */
export async function holdFileDeletions(url: string, waitMs = 60_000): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(waitMs))}`);
    await client.query(`SELECT pg_advisory_lock($1::bigint)`, [BACKUP_LOCK]);
  } catch (err) {
    await client.end().catch(() => {});
    if ((err as { code?: string }).code === '55P03') throw new BackupRunning();
    throw err;
  }
  return async () => {
    await client.query(`SELECT pg_advisory_unlock($1::bigint)`, [BACKUP_LOCK]).catch(() => {});
    await client.end().catch(() => {});
  };
}

export class BackupRunning extends Error {
  constructor() {
    super('another backup is running (file deletions are already held for it)');
  }
}
