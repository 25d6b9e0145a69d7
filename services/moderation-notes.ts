import { transaction, type Db } from '../storage/db.ts';
import { deleteNote, findNote, insertNote, type ModerationNoteRow, type NoteSubject } from '../storage/moderation-notes.ts';
import { usersOfAccounts } from '../storage/moderation.ts';
import { forbidden, notFound, unprocessable } from '../errors.ts';
import { logAction, type Actor } from './action-log.ts';

/**
 * Operators' notes about an account or a report (Mastodon's AccountModerationNote and ReportNote): any operator who
 * may see the account or report may add one; a note is removed by its author, or by an operator whose role is above
 * the author's (Mastodon's AccountModerationNotePolicy#destroy?). Each change is in the audit log.
 */
export const NOTE_MAX = 2000;

const TARGET_TYPE = { account: 'AccountModerationNote', report: 'ReportNote' } as const;

export async function addNote(db: Db, by: string, kind: NoteSubject, subjectId: string, content: string, subjectName: string): Promise<ModerationNoteRow> {
  const text = content.trim();
  if (text === '') throw unprocessable("Validation failed: Content can't be blank");
  if ([...text].length > NOTE_MAX) throw unprocessable(`Validation failed: Content is too long (maximum is ${NOTE_MAX} characters)`);
  return transaction(db, async (tx) => {
    const note = await insertNote(tx, kind, by, subjectId, text);
    await logAction(tx, by, 'create', { type: TARGET_TYPE[kind], id: note.id, name: subjectName });
    return note;
  });
}

/** 404 for a note that is not (or no longer) about this subject; 403 for one that is not the operator's to remove. */
export async function removeNote(db: Db, by: Actor, kind: NoteSubject, subjectId: string, noteId: string, subjectName: string): Promise<void> {
  const note = await findNote(db, kind, noteId);
  if (!note || note.subject_id !== subjectId) throw notFound();
  if (by !== null && note.account_id !== null && note.account_id !== by) {
    const users = await usersOfAccounts(db, [by, note.account_id]);
    const own = users.get(by)?.role;
    const author = users.get(note.account_id)?.role;
    if (author && (!own || own.position <= author.position)) throw forbidden();
  }
  await transaction(db, async (tx) => {
    if (await deleteNote(tx, kind, noteId)) await logAction(tx, by, 'destroy', { type: TARGET_TYPE[kind], id: null, name: subjectName });
  });
}
