import type { Queryable } from './db.ts';

/** A row of user_roles (services/roles.ts says what its permission bits mean). */
export interface RoleRow {
  id: string;
  name: string;
  color: string;
  position: number;
  /** The stored bits as text (a bigint). */
  permissions: string;
  highlighted: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id::text, name, color, position, permissions::text, highlighted, created_at, updated_at`;

/** Every role, lowest position first (a server has a handful). */
export async function listRoles(db: Queryable): Promise<RoleRow[]> {
  const { rows } = await db.query<RoleRow>(`SELECT ${COLUMNS} FROM user_roles ORDER BY position, id LIMIT 1000`);
  return rows;
}

export async function findRoleByName(db: Queryable, name: string): Promise<RoleRow | null> {
  const { rows } = await db.query<RoleRow>(`SELECT ${COLUMNS} FROM user_roles WHERE lower(name) = lower($1)`, [name]);
  return rows[0] ?? null;
}

export async function insertRole(db: Queryable, r: { name: string; color?: string; position: number; permissions: number; highlighted: boolean }): Promise<RoleRow> {
  const { rows } = await db.query<RoleRow>(
    `INSERT INTO user_roles (name, color, position, permissions, highlighted) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [r.name, r.color ?? '', r.position, r.permissions, r.highlighted],
  );
  return rows[0]!;
}

/** Gives a user a role (null: none); returns whether the user exists. */
export async function setUserRole(db: Queryable, userId: string, roleId: string | null): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE users SET role_id = $2, updated_at = now() WHERE id = $1`, [userId, roleId]);
  return rowCount === 1;
}

/** Whether any user holds the role (so the first operator made by the CLI can be its Owner). */
export async function roleHasUsers(db: Queryable, roleId: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM users WHERE role_id = $1 LIMIT 1`, [roleId]);
  return (rowCount ?? 0) > 0;
}

export async function updateRole(db: Queryable, id: string, r: { name: string; color: string; position: number; permissions: number; highlighted: boolean }): Promise<RoleRow | null> {
  const { rows } = await db.query<RoleRow>(
    `UPDATE user_roles SET name = $2, color = $3, position = $4, permissions = $5, highlighted = $6, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, r.name, r.color, r.position, r.permissions, r.highlighted],
  );
  return rows[0] ?? null;
}

/** The users holding a role, with their accounts. */
export async function usersOfRole(db: Queryable, roleId: string): Promise<{ id: string; account_id: string }[]> {
  const { rows } = await db.query<{ id: string; account_id: string }>(`SELECT id::text, account_id::text FROM users WHERE role_id = $1 LIMIT 100000`, [roleId]);
  return rows;
}

export async function deleteRole(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM user_roles WHERE id = $1`, [id]);
  return (rowCount ?? 0) > 0;
}

export async function findRoleById(db: Queryable, id: string): Promise<RoleRow | null> {
  const { rows } = await db.query<RoleRow>(`SELECT ${COLUMNS} FROM user_roles WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** How many users hold each role (by role id). */
export async function roleHolderCounts(db: Queryable): Promise<Map<string, number>> {
  const { rows } = await db.query<{ role_id: string; n: number }>(`SELECT role_id::text, count(*)::int AS n FROM users WHERE role_id IS NOT NULL GROUP BY role_id LIMIT 1000`);
  return new Map(rows.map((r) => [r.role_id, r.n]));
}
