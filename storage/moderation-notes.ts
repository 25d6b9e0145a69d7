import type { Queryable } from './db.ts';

/** An operator's note about an account or a report (Mastodon's AccountModerationNote and ReportNote). */
export interface ModerationNoteRow {
  id: string;
  /** The note's author; null once their account is gone. */
  account_id: string | null;
  /** The account or report it is about. */
  subject_id: string;
  content: string;
  created_at: Date;
}

export type NoteSubject = 'account' | 'report';

const TABLE: Record<NoteSubject, { table: string; subject: string }> = {
  account: { table: 'account_moderation_notes', subject: 'target_account_id' },
  report: { table: 'report_notes', subject: 'report_id' },
};

export async function insertNote(db: Queryable, kind: NoteSubject, authorId: string | null, subjectId: string, content: string): Promise<ModerationNoteRow> {
  const t = TABLE[kind];
  const { rows } = await db.query<ModerationNoteRow>(
    `INSERT INTO ${t.table} (account_id, ${t.subject}, content) VALUES ($1, $2, $3)
     RETURNING id::text, account_id::text, ${t.subject}::text AS subject_id, content, created_at`,
    [authorId, subjectId, content],
  );
  return rows[0]!;
}

/** The notes about one account or report, oldest first (as a conversation reads), at most `limit`. */
export async function notesAbout(db: Queryable, kind: NoteSubject, subjectId: string, limit = 200): Promise<ModerationNoteRow[]> {
  const t = TABLE[kind];
  const { rows } = await db.query<ModerationNoteRow>(
    `SELECT id::text, account_id::text, ${t.subject}::text AS subject_id, content, created_at FROM ${t.table}
      WHERE ${t.subject} = $1 ORDER BY id LIMIT $2`,
    [subjectId, limit],
  );
  return rows;
}

export async function findNote(db: Queryable, kind: NoteSubject, id: string): Promise<ModerationNoteRow | null> {
  const t = TABLE[kind];
  const { rows } = await db.query<ModerationNoteRow>(
    `SELECT id::text, account_id::text, ${t.subject}::text AS subject_id, content, created_at FROM ${t.table} WHERE id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

export async function deleteNote(db: Queryable, kind: NoteSubject, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM ${TABLE[kind].table} WHERE id = $1`, [id]);
  return rowCount === 1;
}
