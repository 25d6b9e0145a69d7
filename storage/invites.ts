import type { Queryable } from './db.ts';

/** An invite (Mastodon's Invite). */
export interface InviteRow {
  id: string;
  account_id: string;
  code: string;
  max_uses: number | null;
  uses: number;
  expires_at: Date | null;
  autofollow: boolean;
  created_at: Date;
}

const COLUMNS = `id::text, account_id::text, code, max_uses, uses, expires_at, autofollow, created_at`;
/** A person's list of invites, newest first, is bounded. */
const LIST_LIMIT = 100;

export async function insertInvite(db: Queryable, i: { accountId: string; code: string; maxUses: number | null; expiresAt: Date | null; autofollow: boolean }): Promise<InviteRow> {
  const { rows } = await db.query<InviteRow>(
    `INSERT INTO invites (account_id, code, max_uses, expires_at, autofollow) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [i.accountId, i.code, i.maxUses, i.expiresAt, i.autofollow],
  );
  return rows[0]!;
}

export async function invitesOf(db: Queryable, accountId: string): Promise<InviteRow[]> {
  const { rows } = await db.query<InviteRow>(`SELECT ${COLUMNS} FROM invites WHERE account_id = $1 ORDER BY id DESC LIMIT ${LIST_LIMIT}`, [accountId]);
  return rows;
}

export async function findInviteByCode(db: Queryable, code: string): Promise<InviteRow | null> {
  const { rows } = await db.query<InviteRow>(`SELECT ${COLUMNS} FROM invites WHERE code = $1`, [code]);
  return rows[0] ?? null;
}

/** Counts one use of the invite if it is still good (not expired, not used up): null when it is not. */
export async function useInvite(db: Queryable, id: string): Promise<InviteRow | null> {
  const { rows } = await db.query<InviteRow>(
    `UPDATE invites SET uses = uses + 1
      WHERE id = $1 AND (max_uses IS NULL OR uses < max_uses) AND (expires_at IS NULL OR expires_at > now())
      RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0] ?? null;
}

/** Ends an invite of this account now (Mastodon's "expire"); false when it has none of that id. */
export async function expireInvite(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE invites SET expires_at = least(coalesce(expires_at, now()), now()) WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return (rowCount ?? 0) > 0;
}

export async function setUserInvite(db: Queryable, userId: string, inviteId: string): Promise<void> {
  await db.query(`UPDATE users SET invite_id = $2 WHERE id = $1`, [userId, inviteId]);
}
