import type { Queryable } from './db.ts';
import type { ListRow } from './lists.ts';

/** Ids of local accounts that read a home feed (not deleted), after `afterId`, a page of `limit` in id order. */
export async function localAccountIdsAfter(db: Queryable, afterId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text FROM accounts WHERE domain IS NULL AND deleted_at IS NULL AND id > $1 ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
  return rows.map((r) => r.id);
}

/** Lists (of any owner) after `afterId`, a page of `limit` in id order. */
export async function listsAfter(db: Queryable, afterId: string, limit: number): Promise<ListRow[]> {
  const { rows } = await db.query<ListRow>(
    `SELECT id::text, account_id::text, title, replies_policy, exclusive FROM lists WHERE id > $1 ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
  return rows;
}

/** Whether the database holds any table of its own (anything in schema public): a restore goes into an empty one. */
export async function hasTables(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`);
  return rows[0]!.n > 0;
}

/** Empties the database: its public schema dropped and made again (a restore with --force). */
export async function emptyDatabase(db: Queryable): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS public CASCADE`);
  await db.query(`CREATE SCHEMA public`);
}
