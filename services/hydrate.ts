import type { Queryable } from '../storage/db.ts';
import { findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import { findStatusesByIds, mentionsOf, tagsOf, viewerFlags, type StatusRow } from '../storage/statuses.ts';
import { visibleTo } from './visibility.ts';

/** Everything needed to render a set of statuses, loaded in a fixed number of batched queries. */
export interface StatusBundle {
  statuses: Map<string, StatusRow>;
  accounts: Map<string, AccountRow>;
  mentions: Map<string, string[]>;
  tags: Map<string, string[]>;
  favourited: Set<string>;
  reblogged: Set<string>;
  viewerId: string | null;
}

/**
 * Loads statuses (and what reblogs point at) by id, keeping the order asked and dropping what is deleted
 * or not visible to the viewer. Returns the visible rows in order and the bundle to render them with.
 */
export async function loadStatuses(db: Queryable, viewerId: string | null, ids: string[], preloaded: StatusRow[] = []): Promise<{ rows: StatusRow[]; bundle: StatusBundle }> {
  const have = new Map(preloaded.map((s) => [s.id, s]));
  const missing = ids.filter((id) => !have.has(id));
  for (const s of await findStatusesByIds(db, missing)) have.set(s.id, s);
  const originalsNeeded = [...have.values()].map((s) => s.reblog_of_id).filter((id): id is string => !!id && !have.has(id));
  for (const s of await findStatusesByIds(db, originalsNeeded)) have.set(s.id, s);

  const all = [...have.values()];
  const visible = await visibleTo(db, viewerId, all);
  const rows = ids
    .map((id) => have.get(id))
    .filter((s): s is StatusRow => !!s && visible.has(s.id) && (!s.reblog_of_id || visible.has(s.reblog_of_id)));

  const renderedIds = [...new Set(rows.flatMap((s) => (s.reblog_of_id ? [s.id, s.reblog_of_id] : [s.id])))];
  const [mentions, tags, flags] = await Promise.all([
    mentionsOf(db, renderedIds),
    tagsOf(db, renderedIds),
    viewerId ? viewerFlags(db, viewerId, renderedIds) : Promise.resolve({ favourited: new Set<string>(), reblogged: new Set<string>() }),
  ]);
  const accountIds = new Set<string>();
  for (const id of renderedIds) {
    accountIds.add(have.get(id)!.account_id);
    for (const m of mentions.get(id) ?? []) accountIds.add(m);
  }
  const accounts = new Map((await findAccountsByIds(db, [...accountIds])).map((a) => [a.id, a]));
  return { rows, bundle: { statuses: have, accounts, mentions, tags, favourited: flags.favourited, reblogged: flags.reblogged, viewerId } };
}
