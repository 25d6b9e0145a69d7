import type { Queryable } from './db.ts';

/** A user's role as read with the user. */
export interface UserRoleSummary {
  id: string;
  name: string;
  color: string;
  position: number;
  /** Permission bits as text (a bigint); services/roles.ts `can` reads them. */
  permissions: string;
  highlighted: boolean;
}

export interface UserRow {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  /** The user's role (storage/roles.ts), read with the user; null for none. */
  role: UserRoleSummary | null;
  approved: boolean;
  /** Sign-in refused and tokens refused, by a moderator. */
  disabled: boolean;
  locale: string | null;
  default_privacy: string;
  default_sensitive: boolean;
  default_language: string | null;
  /** Who may quote new posts ('public', 'followers', 'nobody'). Absent where a query does not read it. */
  default_quote_policy?: string;
  created_at: Date;
  /** Null until the address is confirmed; such a user cannot sign in (as in Mastodon). */
  confirmed_at: Date | null;
  /** A new address waiting for confirmation; `email` stays in use meanwhile. */
  unconfirmed_email: string | null;
  /** Base32 TOTP secret; two-factor sign-in is on when `otp_enabled_at` is set. */
  otp_secret: string | null;
  otp_enabled_at: Date | null;
  reason: string | null;
  /** How the pages look: 'system', 'light' or 'dark'; less motion; larger text. */
  theme: 'system' | 'light' | 'dark';
  reduce_motion: boolean;
  larger_text: boolean;
}

// The role as JSON (permissions as text: a bigint), so that every read of a user knows what it may do.
const ROLE = `(SELECT jsonb_build_object('id', r.id::text, 'name', r.name, 'color', r.color, 'position', r.position,
    'permissions', r.permissions::text, 'highlighted', r.highlighted) FROM user_roles r WHERE r.id = users.role_id) AS role`;

const COLUMNS = `id, account_id, email, password_hash, ${ROLE}, approved, disabled, locale,
  default_privacy, default_sensitive, default_language, default_quote_policy, created_at, confirmed_at, unconfirmed_email,
  otp_secret, otp_enabled_at, reason, theme, reduce_motion, larger_text`;

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1)`, [email]);
  return rows[0] ?? null;
}

export async function findUserById(db: Queryable, id: string): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE id = $1`, [id]);
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
  /** The name of the user's role (storage/roles.ts), if any. */
  role?: string | null;
  locale?: string | null;
  reason?: string | null;
  agreement: boolean;
  applicationId?: string | null;
  /** Whether the address counts as confirmed at once (mail is off, or an operator made the account). */
  confirmed: boolean;
}

export async function insertUser(db: Queryable, u: NewUser): Promise<UserRow> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (account_id, email, password_hash, approved, role_id, locale, reason, agreement_at, created_by_application_id, confirmed_at)
     VALUES ($1, $2, $3, $4, (SELECT id FROM user_roles WHERE lower(name) = lower($5::text)), $6, $7, CASE WHEN $8::boolean THEN now() END, $9, CASE WHEN $10::boolean THEN now() END)
     RETURNING ${COLUMNS}`,
    [u.accountId, u.email, u.passwordHash, u.approved, u.role ?? null, u.locale ?? null, u.reason ?? null, u.agreement, u.applicationId ?? null, u.confirmed],
  );
  return rows[0]!;
}

/**
 * Compatibility with the time before roles, when an operator was a boolean: true gives the Admin role, false takes
 * any role away (cli `accounts admin`, tests). New code uses storage/roles.ts setUserRole.
 */
export async function setAdmin(db: Queryable, userId: string, admin: boolean): Promise<void> {
  await db.query(
    `UPDATE users SET role_id = CASE WHEN $2::boolean THEN (SELECT id FROM user_roles WHERE name = 'Admin') END, updated_at = now() WHERE id = $1`,
    [userId, admin],
  );
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
  /** source[quote_policy]. */
  quote_policy?: string;
}

export async function updateSourceDefaults(db: Queryable, accountId: string, s: SourceDefaults): Promise<void> {
  await db.query(
    `UPDATE users SET default_privacy = coalesce($2, default_privacy),
                      default_sensitive = coalesce($3, default_sensitive),
                      default_language = CASE WHEN $5::boolean THEN $4 ELSE default_language END,
                      default_quote_policy = coalesce($6, default_quote_policy),
                      updated_at = now()
      WHERE account_id = $1`,
    [accountId, s.privacy ?? null, s.sensitive ?? null, s.language ?? null, s.language !== undefined, s.quote_policy ?? null],
  );
}

/** Single-use links sent by mail: the token is made when the mail is, and only its hash is kept. */
export type MailToken = 'confirmation' | 'reset_password';
const TOKEN_COLUMNS: Record<MailToken, { hash: string; sentAt: string }> = {
  confirmation: { hash: 'confirmation_token_hash', sentAt: 'confirmation_sent_at' },
  reset_password: { hash: 'reset_password_token_hash', sentAt: 'reset_password_sent_at' },
};

/**
 * Stores a new token's hash (replacing any earlier one, whose link stops working). A confirmation token also records
 * the address it was sent to: it confirms that address only, whatever the account asks for later.
 */
export async function setMailToken(db: Queryable, userId: string, kind: MailToken, tokenHash: string, sentTo?: string): Promise<void> {
  const c = TOKEN_COLUMNS[kind];
  if (kind === 'confirmation') {
    await db.query(`UPDATE users SET ${c.hash} = $2, ${c.sentAt} = now(), confirmation_sent_to = $3 WHERE id = $1`, [userId, tokenHash, sentTo ?? null]);
  } else {
    await db.query(`UPDATE users SET ${c.hash} = $2, ${c.sentAt} = now() WHERE id = $1`, [userId, tokenHash]);
  }
}

/**
 * Takes a token: the user it belongs to if it was sent less than `maxAgeSeconds` ago (and, for a confirmation, to
 * the address now waiting for it), and the token is cleared in the same statement so that it works once. Null for
 * an unknown, used, expired or superseded token.
 */
export async function takeMailToken(db: Queryable, kind: MailToken, tokenHash: string, maxAgeSeconds: number): Promise<UserRow | null> {
  const c = TOKEN_COLUMNS[kind];
  const sameAddress = kind === 'confirmation' ? `AND lower(coalesce(unconfirmed_email, email)) = lower(confirmation_sent_to)` : '';
  const { rows } = await db.query<UserRow>(
    `UPDATE users SET ${c.hash} = NULL, updated_at = now()
      WHERE ${c.hash} = $1 AND ${c.sentAt} > now() - make_interval(secs => $2) ${sameAddress}
      RETURNING ${COLUMNS}`,
    [tokenHash, maxAgeSeconds],
  );
  return rows[0] ?? null;
}

/** Marks the address confirmed; a waiting new address replaces the old one. */
export async function confirmEmail(db: Queryable, userId: string): Promise<void> {
  await db.query(
    `UPDATE users SET confirmed_at = coalesce(confirmed_at, now()), email = coalesce(unconfirmed_email, email),
                      unconfirmed_email = NULL, updated_at = now()
      WHERE id = $1`,
    [userId],
  );
}

/** Sets the address waiting for confirmation; any confirmation link sent before is void from now on. */
export async function setUnconfirmedEmail(db: Queryable, userId: string, email: string | null): Promise<void> {
  await db.query(`UPDATE users SET unconfirmed_email = $2, confirmation_token_hash = NULL, updated_at = now() WHERE id = $1`, [userId, email]);
}

/** Whether any user has an operator's role yet: start-up tells how to make the first one while none has. */
export async function anyOperator(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM users WHERE role_id IS NOT NULL) AS any`);
  return rows[0]?.any ?? false;
}

/**
 * Operators who approve sign-ups and handle reports: every user whose role has one of these permission bits
 * (services/roles.ts OPERATOR_MAIL_BITS) and whose login works (bounded: a server has few).
 */
export async function operatorEmails(db: Queryable, permissionBits: number, limit = 100): Promise<{ id: string; account_id: string; email: string; locale: string | null }[]> {
  const { rows } = await db.query<{ id: string; account_id: string; email: string; locale: string | null }>(
    `SELECT u.id, u.account_id, u.email, u.locale FROM users u JOIN accounts a ON a.id = u.account_id
       JOIN user_roles r ON r.id = u.role_id
      WHERE r.permissions & $2 <> 0 AND NOT u.disabled AND u.confirmed_at IS NOT NULL AND a.suspended_at IS NULL ORDER BY u.id LIMIT $1`,
    [limit, permissionBits],
  );
  return rows;
}

export async function setOtp(db: Queryable, userId: string, otp: { secret: string | null; enabled: boolean; backupCodeHashes: string[] }): Promise<void> {
  await db.query(
    `UPDATE users SET otp_secret = $2, otp_enabled_at = CASE WHEN $3::boolean THEN coalesce(otp_enabled_at, now()) END,
                      otp_backup_code_hashes = $4, otp_last_step = NULL, updated_at = now()
      WHERE id = $1`,
    [userId, otp.secret, otp.enabled, otp.backupCodeHashes],
  );
}

/** Records a TOTP time step as used, unless it (or a later one) was used already: a code works once. */
export async function useOtpStep(db: Queryable, userId: string, step: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE users SET otp_last_step = $2 WHERE id = $1 AND (otp_last_step IS NULL OR otp_last_step < $2)`,
    [userId, step],
  );
  return (rowCount ?? 0) > 0;
}

/** Uses one recovery code (by its hash): true if it was there, and it is gone afterwards. */
export async function useOtpBackupCode(db: Queryable, userId: string, codeHash: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE users SET otp_backup_code_hashes = array_remove(otp_backup_code_hashes, $2)
      WHERE id = $1 AND $2 = ANY(otp_backup_code_hashes)`,
    [userId, codeHash],
  );
  return (rowCount ?? 0) > 0;
}

export async function otpBackupCodesLeft(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT cardinality(otp_backup_code_hashes) AS n FROM users WHERE id = $1`, [userId]);
  return rows[0]?.n ?? 0;
}

export async function recordSignIn(db: Queryable, userId: string, ip: string | null): Promise<void> {
  await db.query(`UPDATE users SET last_sign_in_at = now(), last_sign_in_ip = $2 WHERE id = $1`, [userId, ip]);
}

/** The pages' look and the interface's language of a user (Settings, Appearance). */
export async function updateAppearance(db: Queryable, userId: string, a: { locale: string | null; theme: UserRow['theme']; reduceMotion: boolean; largerText: boolean }): Promise<void> {
  await db.query(
    `UPDATE users SET locale = $2, theme = $3, reduce_motion = $4, larger_text = $5 WHERE id = $1`,
    [userId, a.locale, a.theme, a.reduceMotion, a.largerText],
  );
}
