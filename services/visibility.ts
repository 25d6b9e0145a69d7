import type { Queryable } from '../storage/db.ts';
import { visibilityFacts, type StatusRow } from '../storage/statuses.ts';

/**
 * Who may see a status, as Mastodon decides: public and unlisted ones anyone; private ones the author,
 * followers and those mentioned; direct ones the author and those mentioned. Deleted ones nobody.
 */
export async function visibleTo(db: Queryable, viewerId: string | null, statuses: StatusRow[]): Promise<Set<string>> {
  const open = statuses.filter((s) => !s.deleted_at && (s.visibility === 'public' || s.visibility === 'unlisted'));
  const visible = new Set(open.map((s) => s.id));
  if (!viewerId) return visible;
  const closed = statuses.filter((s) => !s.deleted_at && !visible.has(s.id));
  if (closed.length === 0) return visible;
  const facts = await visibilityFacts(db, viewerId, closed);
  for (const s of closed) {
    if (s.account_id === viewerId || facts.mentioned.has(s.id) || (s.visibility === 'private' && facts.follows.has(s.account_id))) {
      visible.add(s.id);
    }
  }
  return visible;
}

export async function canSee(db: Queryable, viewerId: string | null, status: StatusRow): Promise<boolean> {
  return (await visibleTo(db, viewerId, [status])).has(status.id);
}
