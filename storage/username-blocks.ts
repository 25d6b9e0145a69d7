import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** A username nobody may sign up with, or only with approval (Mastodon's UsernameBlock). */
export interface UsernameBlockRow {
  id: string;
  username: string;
  /** Equal to the name (Mastodon's comparison `equals`), else contained in it (`contains`). */
  exact: boolean;
  /** A sign-up that matches waits for the operators' approval rather than being refused. */
  allow_with_approval: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface UsernameBlockFields {
  username: string;
  normalized: string;
  exact: boolean;
  allowWithApproval: boolean;
}

const COLUMNS = 'id::text, username, exact, allow_with_approval, created_at, updated_at';

export async function usernameBlocksPage(db: Queryable, p: PageParams): Promise<UsernameBlockRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<UsernameBlockRow>(`SELECT ${COLUMNS} FROM username_blocks WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values);
  return pageRows(rows, p);
}

export async function findUsernameBlock(db: Queryable, id: string): Promise<UsernameBlockRow | null> {
  const { rows } = await db.query<UsernameBlockRow>(`SELECT ${COLUMNS} FROM username_blocks WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Throws the unique violation (23505) when the name (in any case) is blocked already. */
export async function insertUsernameBlock(db: Queryable, f: UsernameBlockFields): Promise<UsernameBlockRow> {
  const { rows } = await db.query<UsernameBlockRow>(
    `INSERT INTO username_blocks (username, normalized_username, exact, allow_with_approval) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [f.username, f.normalized, f.exact, f.allowWithApproval],
  );
  return rows[0]!;
}

export async function updateUsernameBlock(db: Queryable, id: string, f: UsernameBlockFields): Promise<UsernameBlockRow | null> {
  const { rows } = await db.query<UsernameBlockRow>(
    `UPDATE username_blocks SET username = $2, normalized_username = $3, exact = $4, allow_with_approval = $5, updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, f.username, f.normalized, f.exact, f.allowWithApproval],
  );
  return rows[0] ?? null;
}

export async function deleteUsernameBlock(db: Queryable, id: string): Promise<UsernameBlockRow | null> {
  const { rows } = await db.query<UsernameBlockRow>(`DELETE FROM username_blocks WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
  return rows[0] ?? null;
}

/**
 * Which kinds of block a name (already normalised) meets: one that refuses it, one that holds it for approval.
 * A block of either comparison: equal to the name, or contained in it (`strpos`, so `_` and `%` are plain characters).
 */
export async function usernameBlocksMet(db: Queryable, normalized: string): Promise<{ refused: boolean; held: boolean }> {
  const { rows } = await db.query<{ refused: boolean; held: boolean }>(
    `SELECT coalesce(bool_or(NOT allow_with_approval), false) AS refused, coalesce(bool_or(allow_with_approval), false) AS held
       FROM username_blocks
      WHERE CASE WHEN exact THEN normalized_username = $1 ELSE strpos($1, normalized_username) > 0 END`,
    [normalized],
  );
  return rows[0] ?? { refused: false, held: false };
}
