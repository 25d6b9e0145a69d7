import { hash, timingSafeEqual } from 'node:crypto';
import type { Queryable } from './db.ts';

/** Tokens, codes and client secrets are random and long, so a fast hash is enough to keep them out of the database in clear. */
export function hashSecret(secret: string): string {
  return hash('sha256', secret);
}

/** Whether a presented secret matches a stored hash, in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface ApplicationRow {
  id: string;
  name: string;
  website: string | null;
  redirect_uris: string[];
  scopes: string;
  client_id: string;
  client_secret_hash: string;
  /** The user who made it in Settings, Development; null for an app registered through the API. */
  owner_user_id: string | null;
  created_at: Date;
}

export async function insertApplication(
  db: Queryable,
  a: { name: string; website: string | null; redirectUris: string[]; scopes: string; clientId: string; clientSecret: string; ownerUserId?: string | null },
): Promise<ApplicationRow> {
  const { rows } = await db.query<ApplicationRow>(
    `INSERT INTO oauth_applications (name, website, redirect_uris, scopes, client_id, client_secret_hash, owner_user_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [a.name, a.website, a.redirectUris, a.scopes, a.clientId, hashSecret(a.clientSecret), a.ownerUserId ?? null],
  );
  return rows[0]!;
}

/** The applications a user made (Settings, Development), newest first; bounded (see OWNED_APPLICATIONS_LIMIT). */
export async function ownedApplications(db: Queryable, userId: string, limit = 100): Promise<ApplicationRow[]> {
  const { rows } = await db.query<ApplicationRow>(`SELECT * FROM oauth_applications WHERE owner_user_id = $1 ORDER BY id DESC LIMIT $2`, [userId, limit]);
  return rows;
}

export async function countOwnedApplications(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM oauth_applications WHERE owner_user_id = $1`, [userId]);
  return rows[0]!.n;
}

/** Deletes an application its owner made, with its tokens and codes (by cascade); false when it is not theirs. */
export async function deleteOwnedApplication(db: Queryable, userId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM oauth_applications WHERE id = $1 AND owner_user_id = $2`, [id, userId]);
  return rowCount === 1;
}

export async function findApplicationByClientId(db: Queryable, clientId: string): Promise<ApplicationRow | null> {
  const { rows } = await db.query<ApplicationRow>(`SELECT * FROM oauth_applications WHERE client_id = $1`, [clientId]);
  return rows[0] ?? null;
}

/** What a status shows of the application it was posted from (Mastodon's Status entity `application`). */
export interface StatusApplication {
  name: string;
  website: string | null;
}

/** The name and website of these applications, by id (at most as many rows as ids asked). */
export async function statusApplicationsByIds(db: Queryable, ids: string[]): Promise<Map<string, StatusApplication>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<StatusApplication & { id: string }>(`SELECT id, name, website FROM oauth_applications WHERE id = ANY($1::bigint[])`, [ids]);
  return new Map(rows.map((r) => [r.id, { name: r.name, website: r.website }]));
}

export async function findApplicationById(db: Queryable, id: string): Promise<ApplicationRow | null> {
  const { rows } = await db.query<ApplicationRow>(`SELECT * FROM oauth_applications WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export interface AccessGrantRow {
  id: string;
  application_id: string;
  user_id: string;
  redirect_uri: string;
  scopes: string;
  code_challenge: string | null;
  code_challenge_method: string | null;
  expires_at: Date;
}

export async function insertAccessGrant(
  db: Queryable,
  g: { code: string; applicationId: string; userId: string; redirectUri: string; scopes: string; codeChallenge: string | null; codeChallengeMethod: string | null; expiresAt: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO oauth_access_grants (code_hash, application_id, user_id, redirect_uri, scopes, code_challenge, code_challenge_method, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [hashSecret(g.code), g.applicationId, g.userId, g.redirectUri, g.scopes, g.codeChallenge, g.codeChallengeMethod, g.expiresAt],
  );
}

export async function findActiveAccessGrant(db: Queryable, code: string): Promise<AccessGrantRow | null> {
  const { rows } = await db.query<AccessGrantRow>(
    `SELECT id, application_id, user_id, redirect_uri, scopes, code_challenge, code_challenge_method, expires_at
       FROM oauth_access_grants WHERE code_hash = $1 AND revoked_at IS NULL`,
    [hashSecret(code)],
  );
  return rows[0] ?? null;
}

/** Returns false when the grant was already used: a code is good for one token only, even under a race. */
export async function revokeAccessGrant(db: Queryable, grantId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE oauth_access_grants SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`,
    [grantId],
  );
  return rowCount === 1;
}

export interface AccessTokenRow {
  id: string;
  application_id: string;
  user_id: string | null;
  scopes: string;
  created_at: Date;
}

export async function insertAccessToken(
  db: Queryable,
  t: { token: string; applicationId: string; userId: string | null; scopes: string },
): Promise<AccessTokenRow> {
  const { rows } = await db.query<AccessTokenRow>(
    `INSERT INTO oauth_access_tokens (token_hash, application_id, user_id, scopes)
     VALUES ($1, $2, $3, $4) RETURNING id, application_id, user_id, scopes, created_at`,
    [hashSecret(t.token), t.applicationId, t.userId, t.scopes],
  );
  return rows[0]!;
}

export interface TokenOwner extends AccessTokenRow {
  account_id: string | null;
  approved: boolean | null;
  /** The user's e-mail address is confirmed (null for an app's own token). */
  confirmed: boolean | null;
  /** The permission bits of the user's role as text (a bigint), null without one (services/roles.ts `can`). */
  role_permissions: string | null;
  /** The account is suspended or its user disabled: the token is refused. */
  suspended: boolean;
  /** The account has moved: refused where a user is required, as Mastodon's `User#functional?`. */
  moved: boolean;
}

/** The token (by its hash) with its user's account, or null when it is unknown or revoked. */
export async function findActiveAccessTokenByHash(db: Queryable, tokenHash: string): Promise<TokenOwner | null> {
  const { rows } = await db.query<TokenOwner>(
    `SELECT t.id, t.application_id, t.user_id, t.scopes, t.created_at,
            u.account_id, u.approved, (u.confirmed_at IS NOT NULL) AS confirmed, r.permissions::text AS role_permissions, (a.suspended_at IS NOT NULL OR coalesce(u.disabled, false)) AS suspended,
            (a.moved_to_account_id IS NOT NULL) AS moved
       FROM oauth_access_tokens t
       LEFT JOIN users u ON u.id = t.user_id
       LEFT JOIN accounts a ON a.id = u.account_id
       LEFT JOIN user_roles r ON r.id = u.role_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
    [tokenHash],
  );
  return rows[0] ?? null;
}

/** Revokes a token only if it belongs to the given application, as RFC 7009 asks. */
export async function revokeAccessToken(db: Queryable, token: string, applicationId: string): Promise<void> {
  await db.query(
    `UPDATE oauth_access_tokens SET revoked_at = now()
      WHERE token_hash = $1 AND application_id = $2 AND revoked_at IS NULL`,
    [hashSecret(token), applicationId],
  );
}

/** Voids a user's authorization codes not yet exchanged (with a sign-out everywhere, a code must not outlive it). */
export async function revokeUserGrants(db: Queryable, userId: string): Promise<void> {
  await db.query(`UPDATE oauth_access_grants SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, [userId]);
}

/** Signs a user out of every app (after a password reset). */
export async function revokeUserTokens(db: Queryable, userId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE oauth_access_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`,
    [userId],
  );
  return rowCount ?? 0;
}

/** An app a user has let in: its name and site, the scopes of its live tokens, and when it was last let in. */
export interface AuthorizedApplication {
  id: string;
  name: string;
  website: string | null;
  scopes: string;
  authorized_at: Date;
  tokens: number;
}

/** The apps holding live tokens of a user (settings: authorized apps); bounded, a person has few. */
export async function authorizedApplications(db: Queryable, userId: string, limit = 200): Promise<AuthorizedApplication[]> {
  const { rows } = await db.query<AuthorizedApplication>(
    `SELECT a.id, a.name, a.website, string_agg(DISTINCT t.scopes, ' ') AS scopes, max(t.created_at) AS authorized_at, count(*)::int AS tokens
       FROM oauth_access_tokens t JOIN oauth_applications a ON a.id = t.application_id
      WHERE t.user_id = $1 AND t.revoked_at IS NULL
      GROUP BY a.id ORDER BY max(t.created_at) DESC LIMIT $2`,
    [userId, limit],
  );
  return rows;
}

/** Revokes every live token of one app for one user; the hashes are returned so caches can forget them. */
export async function revokeApplicationForUser(db: Queryable, userId: string, applicationId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE oauth_access_tokens SET revoked_at = now() WHERE user_id = $1 AND application_id = $2 AND revoked_at IS NULL`,
    [userId, applicationId],
  );
  await db.query(`UPDATE oauth_access_grants SET revoked_at = now() WHERE user_id = $1 AND application_id = $2 AND revoked_at IS NULL`, [userId, applicationId]);
  return rowCount ?? 0;
}
