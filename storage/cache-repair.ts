import type { Queryable } from './db.ts';

/**
 * The accounts whose relation version must not be 0 ("none": services/relations.ts): they block or mute someone,
 * block a domain, are blocked, or have an exclusive list with members. Read when Redis lost its counters.
 */
export async function accountsWithRelations(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT account_id::text AS id FROM blocks UNION SELECT target_account_id::text FROM blocks
     UNION SELECT account_id::text FROM mutes UNION SELECT account_id::text FROM account_domain_blocks
     UNION SELECT l.account_id::text FROM lists l WHERE l.exclusive AND EXISTS (SELECT 1 FROM list_accounts m WHERE m.list_id = l.id)`,
  );
  return rows.map((r) => r.id);
}

/** The accounts whose filter version must not be 0 ("no filters": services/filters.ts). */
export async function accountsWithFilters(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(`SELECT DISTINCT account_id::text AS id FROM custom_filters`);
  return rows.map((r) => r.id);
}
