import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';

export interface DirectoryQuery {
  order: 'active' | 'new';
  local: boolean;
  offset: number;
  limit: number;
}

/**
 * A page of the profile directory: discoverable accounts, not suspended, local ones only if they are approved and
 * confirmed; ordered by latest post or newest first (indexes accounts_directory_*). Offset paging as Mastodon's, bounded
 * by the route (offset and limit).
 */
export async function directoryPage(db: Queryable, q: DirectoryQuery): Promise<AccountRow[]> {
  const order = q.order === 'active' ? 'a.last_status_at DESC NULLS LAST, a.id DESC' : 'a.id DESC';
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id::text FROM accounts a
      WHERE a.discoverable AND a.suspended_at IS NULL AND ($1::boolean = false OR a.domain IS NULL)
        AND (a.domain IS NOT NULL OR EXISTS (SELECT 1 FROM users u WHERE u.account_id = a.id AND u.approved AND u.confirmed_at IS NOT NULL AND NOT u.disabled))
      ORDER BY ${order} OFFSET $2 LIMIT $3`,
    [q.local, q.offset, q.limit],
  );
  const byId = new Map((await findAccountsByIds(db, rows.map((r) => r.id))).map((a) => [a.id, a]));
  return rows.map((r) => byId.get(r.id)).filter((a): a is AccountRow => a !== undefined);
}
