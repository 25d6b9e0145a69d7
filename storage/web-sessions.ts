import type { Queryable } from './db.ts';

/** A browser's signed-in session; the cookie holds the token, this row only its hash. */
export interface WebSessionRow {
  id: string;
  user_id: string;
  ip: string | null;
  user_agent: string | null;
  created_at: Date;
  last_active_at: Date;
}

const COLUMNS = `id, user_id, host(ip) AS ip, user_agent, created_at, last_active_at`;

export async function insertWebSession(db: Queryable, s: { tokenHash: string; userId: string; ip: string | null; userAgent: string | null }): Promise<WebSessionRow> {
  const { rows } = await db.query<WebSessionRow>(
    `INSERT INTO web_sessions (token_hash, user_id, ip, user_agent) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [s.tokenHash, s.userId, s.ip, s.userAgent?.slice(0, 500) ?? null],
  );
  return rows[0]!;
}

/** The session of a token hash, if it is still valid (younger than `maxAgeSeconds` since last use). */
export async function findWebSession(db: Queryable, tokenHash: string, maxAgeSeconds: number): Promise<WebSessionRow | null> {
  const { rows } = await db.query<WebSessionRow>(
    `SELECT ${COLUMNS} FROM web_sessions WHERE token_hash = $1 AND last_active_at > now() - make_interval(secs => $2)`,
    [tokenHash, maxAgeSeconds],
  );
  return rows[0] ?? null;
}

/** Marks a session used now (called at most once an hour per session: a write per page view is not needed). */
export async function touchWebSession(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE web_sessions SET last_active_at = now() WHERE id = $1`, [id]);
}

export async function deleteWebSession(db: Queryable, tokenHash: string): Promise<void> {
  await db.query(`DELETE FROM web_sessions WHERE token_hash = $1`, [tokenHash]);
}

/** Signs a user out of every browser (password change or reset, "sign out everywhere"). */
export async function deleteUserWebSessions(db: Queryable, userId: string): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM web_sessions WHERE user_id = $1`, [userId]);
  return rowCount ?? 0;
}

/** A user's sessions, newest first (a person has few; bounded all the same). */
export async function userWebSessions(db: Queryable, userId: string, limit = 100): Promise<WebSessionRow[]> {
  const { rows } = await db.query<WebSessionRow>(
    `SELECT ${COLUMNS} FROM web_sessions WHERE user_id = $1 ORDER BY id DESC LIMIT $2`, [userId, limit],
  );
  return rows;
}

/** Signs one of a user's sessions out (a lost phone): its token's hash, or null when it is not theirs or already gone. */
export async function deleteUserWebSession(db: Queryable, userId: string, id: string): Promise<string | null> {
  const { rows } = await db.query<{ token_hash: string }>(`DELETE FROM web_sessions WHERE user_id = $1 AND id = $2 RETURNING token_hash`, [userId, id]);
  return rows[0]?.token_hash ?? null;
}
