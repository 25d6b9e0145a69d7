import type { Queryable } from './db.ts';

/** A user's id at a single sign-on provider (Mastodon's Identity). */
export interface IdentityRow {
  id: string;
  provider: string;
  uid: string;
  user_id: string;
  created_at: Date;
}

const COLUMNS = 'id, provider, uid, user_id, created_at';

export async function findIdentity(db: Queryable, provider: string, uid: string): Promise<IdentityRow | null> {
  const { rows } = await db.query<IdentityRow>(`SELECT ${COLUMNS} FROM user_identities WHERE provider = $1 AND uid = $2`, [provider, uid]);
  return rows[0] ?? null;
}

export async function findUserIdentity(db: Queryable, userId: string, provider: string): Promise<IdentityRow | null> {
  const { rows } = await db.query<IdentityRow>(`SELECT ${COLUMNS} FROM user_identities WHERE user_id = $1 AND provider = $2`, [userId, provider]);
  return rows[0] ?? null;
}

/** Links a provider's id to a user; false when either is already linked (the unique constraints decide races). */
export async function insertIdentity(db: Queryable, i: { provider: string; uid: string; userId: string }): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO user_identities (provider, uid, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [i.provider, i.uid, i.userId],
  );
  return (rowCount ?? 0) > 0;
}

/** Who signs in through providers, most recently linked first: their username and the provider's id for them. */
export async function listIdentities(db: Queryable, limit: number): Promise<(IdentityRow & { username: string })[]> {
  const { rows } = await db.query<IdentityRow & { username: string }>(
    `SELECT i.id, i.provider, i.uid, i.user_id, i.created_at, a.username
       FROM user_identities i JOIN users u ON u.id = i.user_id JOIN accounts a ON a.id = u.account_id
      ORDER BY i.created_at DESC, i.id DESC LIMIT $1`,
    [limit],
  );
  return rows;
}

/** A user's identities at providers (a handful at most: one a provider), for the operator's page of the account. */
export async function identitiesOfUser(db: Queryable, userId: string): Promise<IdentityRow[]> {
  const { rows } = await db.query<IdentityRow>(`SELECT ${COLUMNS} FROM user_identities WHERE user_id = $1 ORDER BY created_at, id LIMIT 20`, [userId]);
  return rows;
}

export async function deleteUserIdentity(db: Queryable, userId: string, provider: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM user_identities WHERE user_id = $1 AND provider = $2`, [userId, provider]);
  return (rowCount ?? 0) > 0;
}
