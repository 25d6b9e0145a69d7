import type { Queryable } from './db.ts';

/** What account moves (services/account-migration.ts and jobs/account-move.ts) read and write. */

/** Records a local account's move (Mastodon's account_migrations); the cooldown is counted from these. */
export async function recordMigration(db: Queryable, m: { accountId: string; targetId: string; acct: string; followersCount: number }): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO account_migrations (account_id, target_account_id, acct, followers_count) VALUES ($1, $2, $3, $4) RETURNING id::text`,
    [m.accountId, m.targetId, m.acct, m.followersCount],
  );
  return rows[0]!.id;
}

/** The newest move an account made since `since`, if any. */
export async function migrationSince(db: Queryable, accountId: string, since: Date): Promise<{ created_at: Date } | null> {
  const { rows } = await db.query<{ created_at: Date }>(
    `SELECT created_at FROM account_migrations WHERE account_id = $1 AND created_at >= $2 ORDER BY created_at DESC LIMIT 1`,
    [accountId, since],
  );
  return rows[0] ?? null;
}

/** A local follower of the moved account and how they followed it (what their new follow keeps). */
export interface MovingFollow {
  followId: string;
  accountId: string;
  showReblogs: boolean;
  notify: boolean;
  languages: string[] | null;
  /** The follower's lists holding the moved account. */
  listIds: string[];
}

/** Local followers of an account, a batch at a time in follow order (keyset on the follow's id). */
export async function localFollowsBatch(db: Queryable, accountId: string, afterFollowId: string, limit: number): Promise<MovingFollow[]> {
  const { rows } = await db.query<{ id: string; account_id: string; show_reblogs: boolean; notify: boolean; languages: string[] | null; list_ids: string[] }>(
    `SELECT f.id::text, f.account_id::text, f.show_reblogs, f.notify, f.languages,
            coalesce((SELECT array_agg(la.list_id::text) FROM list_accounts la WHERE la.follow_id = f.id), '{}') AS list_ids
       FROM follows f JOIN accounts a ON a.id = f.account_id
      WHERE f.target_account_id = $1 AND f.id > $2 AND a.domain IS NULL ORDER BY f.id LIMIT $3`,
    [accountId, afterFollowId, limit],
  );
  return rows.map((r) => ({ followId: r.id, accountId: r.account_id, showReblogs: r.show_reblogs, notify: r.notify, languages: r.languages, listIds: r.list_ids }));
}

/**
 * Local accounts that block or mute the moved account, a batch at a time, leaving out those that already block or
 * mute the new one or follow it (Mastodon's MoveWorker skips them). `after` pages by the block's or mute's id.
 */
export async function blocksAndMutesToCarry(db: Queryable, kind: 'block' | 'mute', accountId: string, targetId: string, after: string, limit: number): Promise<{ id: string; accountId: string; notifications: boolean; expiresAt: Date | null }[]> {
  const table = kind === 'block' ? 'blocks' : 'mutes';
  const options = kind === 'block' ? 'true AS notifications, NULL::timestamptz AS expires_at' : 'r.hide_notifications AS notifications, r.expires_at';
  const { rows } = await db.query<{ id: string; account_id: string; notifications: boolean; expires_at: Date | null }>(
    `SELECT r.id::text, r.account_id::text, ${options} FROM ${table} r JOIN accounts a ON a.id = r.account_id AND a.domain IS NULL
      WHERE r.target_account_id = $1 AND r.id > $3
        ${kind === 'mute' ? 'AND (r.expires_at IS NULL OR r.expires_at > now())' : ''}
        AND NOT EXISTS (SELECT 1 FROM ${table} x WHERE x.account_id = r.account_id AND x.target_account_id = $2)
        AND NOT EXISTS (SELECT 1 FROM follows f WHERE f.account_id = r.account_id AND f.target_account_id = $2)
      ORDER BY r.id LIMIT $4`,
    [accountId, targetId, after, limit],
  );
  return rows.map((r) => ({ id: r.id, accountId: r.account_id, notifications: r.notifications, expiresAt: r.expires_at }));
}
