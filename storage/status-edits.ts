import type { Queryable } from './db.ts';

/** One version of an edited status (Mastodon's StatusEdit row). */
export interface StatusEditRow {
  id: string;
  status_id: string;
  account_id: string;
  text: string;
  content: string;
  spoiler_text: string;
  sensitive: boolean;
  media_ids: string[];
  media_descriptions: string[];
  poll_options: string[] | null;
  created_at: Date;
}

export interface NewStatusEdit {
  statusId: string;
  accountId: string;
  text: string;
  content: string;
  spoilerText: string;
  sensitive: boolean;
  media: { id: string; description: string }[];
  pollOptions: string[] | null;
  createdAt: Date;
}

export async function insertStatusEdit(db: Queryable, e: NewStatusEdit): Promise<void> {
  await db.query(
    `INSERT INTO status_edits (status_id, account_id, text, content, spoiler_text, sensitive, media_ids, media_descriptions, poll_options, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [e.statusId, e.accountId, e.text, e.content, e.spoilerText, e.sensitive, e.media.map((m) => m.id), e.media.map((m) => m.description), e.pollOptions, e.createdAt],
  );
}

export async function hasEdits(db: Queryable, statusId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM status_edits WHERE status_id = $1 LIMIT 1`, [statusId]);
  return rows.length > 0;
}

/** A status's versions, oldest first (at most the latest 200 edits, as a bound). */
export async function editsOf(db: Queryable, statusId: string): Promise<StatusEditRow[]> {
  const { rows } = await db.query<StatusEditRow>(
    `SELECT * FROM (SELECT id, status_id, account_id, text, content, spoiler_text, sensitive, media_ids, media_descriptions, poll_options, created_at
                      FROM status_edits WHERE status_id = $1 ORDER BY id DESC LIMIT 200) e ORDER BY id`,
    [statusId],
  );
  return rows;
}
