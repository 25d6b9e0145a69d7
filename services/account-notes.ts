import type { Queryable } from '../storage/db.ts';
import { NOTE_LIMIT, setAccountNote } from '../storage/account-notes.ts';
import { unprocessable } from '../errors.ts';

/**
 * Writes the viewer's private note on an account (POST /api/v1/accounts/:id/note and the profile page's form):
 * at most NOTE_LIMIT characters, an empty one removes it. Only the writer ever reads it (the Relationship's `note`).
 */
export async function writeAccountNote(db: Queryable, viewerId: string, targetId: string, comment: string): Promise<void> {
  if (comment.length > NOTE_LIMIT) throw unprocessable(`Validation failed: Comment is too long (maximum is ${NOTE_LIMIT} characters)`);
  await setAccountNote(db, viewerId, targetId, comment);
}
