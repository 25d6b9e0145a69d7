import type { Queryable } from './db.ts';
import type { StatusRow } from './statuses.ts';

/**
 * Whether a remote server already holds a non-public status by right: it hosts an account mentioned in it, or (for
 * followers-only posts) a follower of its author. Such a server was sent the status, so it may also fetch it.
 */
export async function serverHoldsStatus(db: Queryable, status: Pick<StatusRow, 'id' | 'account_id' | 'visibility'>, domain: string): Promise<boolean> {
  const { rows } = await db.query<{ holds: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM mentions m JOIN accounts a ON a.id = m.account_id
                     WHERE m.status_id = $1 AND lower(a.domain) = lower($3) AND a.suspended_at IS NULL)
         OR ($4 AND EXISTS (SELECT 1 FROM accounts a JOIN follows f ON f.account_id = a.id AND f.target_account_id = $2
                     WHERE lower(a.domain) = lower($3) AND a.suspended_at IS NULL)) AS holds`,
    [status.id, status.account_id, domain, status.visibility === 'private'],
  );
  return rows[0]!.holds;
}
