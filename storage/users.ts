import type { Queryable } from './db.ts';

export interface UserRow {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  admin: boolean;
  approved: boolean;
  /** Sign-in refused and tokens refused, by a moderator. */
  disabled: boolean;
  locale: string | null;
  default_privacy: string;
  default_sensitive: boolean;
  default_language: string | null;
  created_at: Date;
}

const COLUMNS = `id, account_id, email, password_hash, admin, approved, disabled, locale,
  default_privacy, default_sensitive, default_language, created_at`;

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1)`, [email]);
  return rows[0] ?? null;
}

export async function findUserByAccountId(db: Queryable, accountId: string): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE account_id = $1`, [accountId]);
  return rows[0] ?? null;
}

/** Of these accounts, the local ones whose user still waits for an operator's approval (Mastodon answers 404 for them). */
export async function pendingAccountIds(db: Queryable, accountIds: string[]): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT account_id::text FROM users WHERE account_id = ANY($1::bigint[]) AND NOT approved`,
    [accountIds],
  );
  return new Set(rows.map((r) => r.account_id));
}

export async function emailTaken(db: Queryable, email: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM users WHERE lower(email) = lower($1)`, [email]);
  return (rowCount ?? 0) > 0;
}

export interface NewUser {
  accountId: string;
  email: string;
  passwordHash: string;
  approved: boolean;
  admin?: boolean;
  locale?: string | null;
  reason?: string | null;
  agreement: boolean;
  applicationId?: string | null;
}

export async function insertUser(db: Queryable, u: NewUser): Promise<UserRow> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (account_id, email, password_hash, approved, admin, locale, reason, agreement_at, created_by_application_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $8::boolean THEN now() END, $9)
     RETURNING ${COLUMNS}`,
    [u.accountId, u.email, u.passwordHash, u.approved, u.admin ?? false, u.locale ?? null, u.reason ?? null, u.agreement, u.applicationId ?? null],
  );
  return rows[0]!;
}

export async function setAdmin(db: Queryable, userId: string, admin: boolean): Promise<void> {
  await db.query(`UPDATE users SET admin = $2, updated_at = now() WHERE id = $1`, [userId, admin]);
}

export async function setApproved(db: Queryable, userId: string, approved: boolean): Promise<void> {
  await db.query(`UPDATE users SET approved = $2, updated_at = now() WHERE id = $1`, [userId, approved]);
}

export async function setPasswordHash(db: Queryable, userId: string, passwordHash: string): Promise<void> {
  await db.query(`UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1`, [userId, passwordHash]);
}

export interface SourceDefaults {
  privacy?: string;
  sensitive?: boolean;
  language?: string | null;
}

export async function updateSourceDefaults(db: Queryable, accountId: string, s: SourceDefaults): Promise<void> {
  await db.query(
    `UPDATE users SET default_privacy = coalesce($2, default_privacy),
                      default_sensitive = coalesce($3, default_sensitive),
                      default_language = CASE WHEN $5::boolean THEN $4 ELSE default_language END,
                      updated_at = now()
      WHERE account_id = $1`,
    [accountId, s.privacy ?? null, s.sensitive ?? null, s.language ?? null, s.language !== undefined],
  );
}
