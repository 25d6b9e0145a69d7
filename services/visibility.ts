import type { Queryable } from '../storage/db.ts';
import { visibilityFacts, type StatusRow } from '../storage/statuses.ts';
import { blockersAmong } from '../storage/blocks.ts';

/**
 * Who may see a status, as Mastodon decides: public and unlisted ones anyone; private ones the author,
 * followers and those mentioned; direct ones the author and those mentioned. Deleted ones nobody, nor anyone
 * its author blocks. `blockedBy`: who blocks the viewer, when the caller knows already (services/relations.ts).
 */
export async function visibleTo(db: Queryable, viewerId: string | null, statuses: StatusRow[], blockedBy?: ReadonlySet<string>): Promise<Set<string>> {
  let live = statuses.filter((s) => !s.deleted_at);
  if (viewerId && live.length > 0) {
    const blockers = blockedBy ?? (await blockersAmong(db, viewerId, [...new Set(live.map((s) => s.account_id))]));
    if (blockers.size > 0) live = live.filter((s) => !blockers.has(s.account_id));
  }
  const open = live.filter((s) => s.visibility === 'public' || s.visibility === 'unlisted');
  const visible = new Set(open.map((s) => s.id));
  if (!viewerId) return visible;
  const closed = live.filter((s) => !visible.has(s.id));
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
