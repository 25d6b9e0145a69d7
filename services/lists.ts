import { transaction } from '../storage/db.ts';
import * as lists from '../storage/lists.ts';
import { accountStatusIds } from '../storage/statuses.ts';
import { FEED_SIZE } from '../storage/feeds.ts';
import { ApiError, notFound, unprocessable } from '../errors.ts';
import type { StatusDeps } from './statuses.ts';

// Lists and their feeds, applied by the owner's actor (actors/account.ts): a list and its feed are the owner's.

export interface ListChanges {
  title?: string | undefined;
  repliesPolicy?: lists.RepliesPolicy | undefined;
  exclusive?: boolean | undefined;
}

function checkTitle(title: string | undefined, required: boolean): string | undefined {
  const t = title?.trim();
  if ((required || title !== undefined) && !t) throw unprocessable("Validation failed: Title can't be blank");
  return t;
}

export async function createList(deps: StatusDeps, ownerId: string, c: ListChanges): Promise<lists.ListRow> {
  const title = checkTitle(c.title, true)!;
  const list = await transaction(deps.db, (tx) => lists.insertList(tx, ownerId, { title, repliesPolicy: c.repliesPolicy ?? 'list', exclusive: c.exclusive ?? false }));
  if (!list) throw unprocessable(`Validation failed: You cannot have more than ${lists.LISTS_PER_ACCOUNT} lists`);
  return list;
}

export async function updateList(deps: StatusDeps, ownerId: string, listId: string, c: ListChanges): Promise<lists.ListRow> {
  const before = await lists.findList(deps.db, ownerId, listId);
  if (!before) throw notFound();
  const list = await lists.updateList(deps.db, ownerId, listId, { ...c, title: checkTitle(c.title, false) });
  if (!list) throw notFound();
  // Another replies policy makes another feed: it is built again when next read.
  if (list.replies_policy !== before.replies_policy) await deps.listFeeds.drop(list.id);
  if (list.exclusive !== before.exclusive) await deps.versions.bump({ relations: [ownerId] });
  return list;
}

export async function deleteList(deps: StatusDeps, ownerId: string, listId: string): Promise<void> {
  const list = await lists.findList(deps.db, ownerId, listId);
  if (!list || !(await lists.deleteList(deps.db, ownerId, listId))) throw notFound();
  await deps.listFeeds.drop(listId);
  if (list.exclusive) await deps.versions.bump({ relations: [ownerId] });
}

/** Adds followed accounts to a list (a 404 names one not followed, as Mastodon's find on the owner's follows does). */
export async function addMembers(deps: StatusDeps, ownerId: string, listId: string, accountIds: string[]): Promise<void> {
  const list = await lists.findList(deps.db, ownerId, listId);
  if (!list) throw notFound();
  const result = await transaction(deps.db, (tx) => lists.addListMembers(tx, list, accountIds));
  if (result.notFollowed.length > 0) throw notFound();
  if (result.full) throw unprocessable(`Validation failed: A list holds at most ${lists.MEMBERS_PER_LIST} accounts`);
  if (list.exclusive) await deps.versions.bump({ relations: [ownerId] });
  if (await deps.listFeeds.accepts(list.id)) {
    // Their recent posts join the feed now, as follows do with home (later ones arrive by fan-out).
    for (const id of accountIds) await deps.listFeeds.add(list.id, await accountStatusIds(deps.db, id, { visibilities: ['public', 'unlisted', 'private'], excludeReplies: true }, { limit: 40 }));
  }
}

export async function removeMembers(deps: StatusDeps, ownerId: string, listId: string, accountIds: string[]): Promise<void> {
  const list = await lists.findList(deps.db, ownerId, listId);
  if (!list) throw notFound();
  const removed = await lists.removeListMembers(deps.db, list.id, accountIds);
  if (removed.length === 0) return;
  if (list.exclusive) await deps.versions.bump({ relations: [ownerId] });
  for (const id of removed) await deps.listFeeds.remove([list.id], await accountStatusIds(deps.db, id, { visibilities: ['public', 'unlisted', 'private', 'direct'] }, { limit: FEED_SIZE }));
}

/** Builds a list feed that is missing (never read, or lost with Redis) from PostgreSQL. */
export async function rebuildListFeed(deps: StatusDeps, ownerId: string, listId: string): Promise<void> {
  const list = await lists.findList(deps.db, ownerId, listId);
  if (!list) throw new ApiError(404, 'Record not found');
  if (!(await deps.listFeeds.isReady(list.id))) await deps.listFeeds.rebuild(list.id, () => lists.listFeedSourceIds(deps.db, list, FEED_SIZE));
}
