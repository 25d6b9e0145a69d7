import type { Queryable } from '../storage/db.ts';
import { findStatus, visibilityFacts, type StatusRow, type Visibility } from '../storage/statuses.ts';
import { relationships } from '../storage/follows.ts';
import { isId } from '../storage/ids.ts';
import { notFound } from '../errors.ts';
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

/** A live status the viewer may see (reblogs are acted on through their original with `followReblog`), or a 404. */
export async function visibleStatus(db: Queryable, viewerId: string | null, id: string, followReblog = false): Promise<StatusRow> {
  let status = isId(id) ? await findStatus(db, id) : null;
  if (status && followReblog && status.reblog_of_id) status = await findStatus(db, status.reblog_of_id);
  if (!status || !(await canSee(db, viewerId, status))) throw notFound();
  return status;
}

/**
 * Which of an account's posts its profile lists for a viewer: all of them to the account itself, followers-only ones
 * too to its followers, public and unlisted ones to anyone else (direct ones that mention the viewer are the
 * caller's `mentionedViewerId`).
 */
export async function profileVisibilities(db: Queryable, viewerId: string | null, accountId: string): Promise<Visibility[]> {
  if (viewerId === accountId) return ['public', 'unlisted', 'private', 'direct'];
  if (viewerId && (await relationships(db, viewerId, [accountId])).get(accountId)?.following) return ['public', 'unlisted', 'private'];
  return ['public', 'unlisted'];
}
