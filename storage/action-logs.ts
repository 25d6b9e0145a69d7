import type { Queryable } from './db.ts';

/** One thing an operator did (Mastodon's Admin::ActionLog). */
export interface ActionLogRow {
  id: string;
  /** The operator's account; null for the command line without --as, or once their account is gone. */
  account_id: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  human_identifier: string;
  created_at: Date;
}

export interface NewActionLog {
  accountId: string | null;
  action: string;
  targetType: string;
  targetId: string | null;
  humanIdentifier: string;
}

const COLUMNS = 'id::text, account_id::text, action, target_type, target_id::text, human_identifier, created_at';

export async function insertActionLog(db: Queryable, e: NewActionLog): Promise<void> {
  await db.query(
    `INSERT INTO admin_action_logs (account_id, action, target_type, target_id, human_identifier) VALUES ($1, $2, $3, $4, $5)`,
    [e.accountId, e.action, e.targetType, e.targetId, e.humanIdentifier.slice(0, 500)],
  );
}

export interface ActionLogFilters {
  accountId?: string | undefined;
  action?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
}

/** Newest first, below `maxId`; each filter walks its own index. */
export async function actionLogsPage(db: Queryable, f: ActionLogFilters, p: { maxId?: string | undefined; limit: number }): Promise<ActionLogRow[]> {
  const values: unknown[] = [];
  const where: string[] = [];
  const add = (column: string, value: string | undefined) => {
    if (value === undefined) return;
    values.push(value);
    where.push(`${column} = $${values.length}`);
  };
  add('account_id', f.accountId);
  add('action', f.action);
  add('target_type', f.targetType);
  add('target_id', f.targetId);
  if (p.maxId !== undefined) {
    values.push(p.maxId);
    where.push(`id < $${values.length}`);
  }
  values.push(p.limit);
  const { rows } = await db.query<ActionLogRow>(
    `SELECT ${COLUMNS} FROM admin_action_logs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${values.length}`,
    values,
  );
  return rows;
}
