import type { Queryable } from './db.ts';

/** A security key of a user (WebAuthn). */
export interface WebauthnCredentialRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: Buffer;
  sign_count: string;
  transports: string[];
  nickname: string;
  created_at: Date;
  last_used_at: Date | null;
  /** A passkey (signs in alone), or a security key (a second factor). */
  passkey: boolean;
}

const COLUMNS = 'id, user_id, credential_id, public_key, sign_count, transports, nickname, created_at, last_used_at, passkey';
/** More than anyone carries; bounds every list. */
export const MAX_KEYS_PER_USER = 20;

export async function userWebauthnCredentials(db: Queryable, userId: string): Promise<WebauthnCredentialRow[]> {
  const { rows } = await db.query<WebauthnCredentialRow>(
    `SELECT ${COLUMNS} FROM webauthn_credentials WHERE user_id = $1 ORDER BY id LIMIT ${MAX_KEYS_PER_USER}`,
    [userId],
  );
  return rows;
}

/** A passkey by the id its authenticator gives (credentials are unique across users). */
export async function findPasskey(db: Queryable, credentialId: string): Promise<WebauthnCredentialRow | null> {
  const { rows } = await db.query<WebauthnCredentialRow>(`SELECT ${COLUMNS} FROM webauthn_credentials WHERE credential_id = $1 AND passkey`, [credentialId]);
  return rows[0] ?? null;
}

export async function countWebauthnCredentials(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webauthn_credentials WHERE user_id = $1`, [userId]);
  return rows[0]!.n;
}

/** False when the key or the name is already there (the unique constraints decide). */
export async function insertWebauthnCredential(db: Queryable, c: { userId: string; credentialId: string; publicKey: Uint8Array; signCount: number; transports: string[]; nickname: string; passkey?: boolean }): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO webauthn_credentials (user_id, credential_id, public_key, sign_count, transports, nickname, passkey)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [c.userId, c.credentialId, Buffer.from(c.publicKey), c.signCount, c.transports, c.nickname, c.passkey ?? false],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Records a use: the counter the key reported, if it moved forward (or both are 0: keys without a counter). False
 * when it did not: a cloned key, or a replay racing the real one.
 */
export async function useWebauthnCredential(db: Queryable, id: string, newCount: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webauthn_credentials SET sign_count = $2, last_used_at = now()
     WHERE id = $1 AND (sign_count < $2 OR (sign_count = 0 AND $2 = 0))`,
    [id, newCount],
  );
  return (rowCount ?? 0) > 0;
}

export async function deleteWebauthnCredential(db: Queryable, userId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM webauthn_credentials WHERE user_id = $1 AND id = $2`, [userId, id]);
  return (rowCount ?? 0) > 0;
}

/** A user's security keys go (two-factor turned off); their passkeys, which stand alone, stay. */
export async function deleteUserSecurityKeys(db: Queryable, userId: string): Promise<void> {
  await db.query(`DELETE FROM webauthn_credentials WHERE user_id = $1 AND NOT passkey`, [userId]);
}
