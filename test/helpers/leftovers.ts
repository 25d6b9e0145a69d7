import type { Queryable } from '../../storage/db.ts';

/**
 * What Mastodon keeps on purpose when it deletes an account but keeps its row (DeleteAccountService with
 * `reserve_username`: one's own deletion and an operator's), for the moderators: reports it filed and reports about
 * it (`reports`/`targeted_reports` are destroyed only with the account record), and the statuses named by unresolved
 * reports about it (`reported_status_ids`), with their files, edits and poll. A remote actor's own Delete keeps none.
 * Pass it to `rowsNaming` for a local account's deletion; every other column must still come out empty.
 */
export const KEPT_FOR_MODERATION: readonly string[] = [
  'reports.account_id',
  'reports.target_account_id',
  'statuses.account_id',
  'media_attachments.account_id',
  'status_edits.account_id',
  'polls.account_id',
];

/**
 * Rows still naming an account, by `table.column`: every column with a foreign key to accounts(id), and every
 * column named like `*account_id` (a table added later is covered without being listed here). With `userId`, the
 * columns with a foreign key to users(id) too. Columns in `allowed` are not looked at. Only non-zero counts are returned.
 */
export async function rowsNaming(
  db: Queryable, accountId: string, userId?: string | null, allowed: readonly string[] = [],
): Promise<Record<string, number>> {
  const { rows: columns } = await db.query<{ table_name: string; column_name: string; ref: string }>(
    `SELECT DISTINCT kcu.table_name, kcu.column_name, ccu.table_name AS ref
       FROM information_schema.table_constraints tc
       JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
       JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name AND ccu.table_schema = tc.table_schema
      WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = 'public' AND ccu.table_name IN ('accounts', 'users')
     UNION
     SELECT table_name, column_name, 'accounts' FROM information_schema.columns
      WHERE table_schema = 'public' AND column_name LIKE '%account_id' AND data_type = 'bigint'`,
  );
  const left: Record<string, number> = {};
  for (const c of columns) {
    const id = c.ref === 'users' ? userId : accountId;
    if (!id || allowed.includes(`${c.table_name}.${c.column_name}`)) continue;
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${c.table_name}" WHERE "${c.column_name}" = $1`, [id]);
    if (rows[0]!.n > 0) left[`${c.table_name}.${c.column_name}`] = rows[0]!.n;
  }
  return left;
}

/** How many columns `rowsNaming` looks at: a test that it sees the tables at all. */
export async function namingColumnCount(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'public' AND column_name LIKE '%account_id'`,
  );
  return rows[0]!.n;
}
