// Synthetic data for benchmarks only: bulk rows straight into the tables, far faster than the API for 10,000 accounts.
import type { Db } from '../storage/db.ts';

/** Creates `count` local accounts (no users, no keys) following `targetId`; returns their ids. */
export async function seedFollowers(db: Db, targetId: string, count: number, prefix: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO accounts (username) SELECT $1 || g FROM generate_series(1, $2) g RETURNING id`, [prefix, count],
  );
  const ids = rows.map((r) => r.id);
  await db.query(
    `INSERT INTO follows (account_id, target_account_id) SELECT unnest($1::bigint[]), $2`, [ids, targetId],
  );
  await db.query(`UPDATE accounts SET followers_count = followers_count + $2 WHERE id = $1`, [targetId, count]);
  return ids;
}
