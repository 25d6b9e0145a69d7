import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';

const likePrefix = (text: string) => `${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Accounts whose username starts with `prefix` (of `domain` when given), approved and not suspended; exact matches first. */
export async function searchAccounts(db: Queryable, prefix: string, domain: string | null, limit: number, offset: number): Promise<AccountRow[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM accounts a LEFT JOIN users u ON u.account_id = a.id
      WHERE lower(a.username) LIKE $1 AND a.suspended_at IS NULL AND (a.domain IS NOT NULL OR u.approved)
        AND ($2::text IS NULL OR lower(a.domain) = lower($2))
      ORDER BY (lower(a.username) = lower($3)) DESC, a.followers_count DESC, a.id
      LIMIT $4 OFFSET $5`,
    [likePrefix(prefix), domain, prefix, limit, offset],
  );
  const byId = new Map((await findAccountsByIds(db, rows.map((r) => r.id))).map((a) => [a.id, a]));
  return rows.map((r) => byId.get(r.id)).filter((a): a is AccountRow => a !== undefined);
}

export async function searchTags(db: Queryable, prefix: string, limit: number, offset: number): Promise<{ id: string; name: string }[]> {
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id, name FROM tags WHERE lower(name) LIKE $1 ORDER BY length(name), name LIMIT $2 OFFSET $3`,
    [likePrefix(prefix), limit, offset],
  );
  return rows;
}

/** A status by its ActivityPub id or its public page. */
export async function statusIdByLink(db: Queryable, link: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM statuses WHERE (uri = $1 OR url = $1) AND deleted_at IS NULL LIMIT 1`, [link]);
  return rows[0]?.id ?? null;
}
