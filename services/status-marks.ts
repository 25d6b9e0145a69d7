import { transaction } from '../storage/db.ts';
import type { StatusRow } from '../storage/statuses.ts';
import * as marks from '../storage/status-marks.ts';
import { unprocessable } from '../errors.ts';
import { queueDelivery } from './deliveries.ts';
import type { StatusDeps } from './statuses.ts';

// Bookmarks, pins and muted conversations, applied by the account's actor (actors/account.ts). Each changes what the
// account sees on Status entities (bookmarked, pinned, muted), so each bumps the account's viewer version.

/** Mastodon's MAX_PINNED (StatusPinValidator). */
export const MAX_PINS = 5;

export async function bookmark(deps: StatusDeps, accountId: string, status: StatusRow): Promise<void> {
  if (await marks.insertBookmark(deps.db, accountId, status.id)) await deps.versions.bump({ viewers: [accountId] });
}

export async function unbookmark(deps: StatusDeps, accountId: string, status: StatusRow): Promise<void> {
  if (await marks.deleteBookmark(deps.db, accountId, status.id)) await deps.versions.bump({ viewers: [accountId] });
}

/** Mastodon's StatusPinValidator, with its messages: followers-only posts may be pinned (shown to followers), direct ones not. */
function pinProblem(accountId: string, status: StatusRow): string | null {
  if (status.reblog_of_id) return 'A boost cannot be pinned';
  if (status.account_id !== accountId) return "Someone else's post cannot be pinned";
  if (status.visibility === 'direct') return 'Posts that are only visible to mentioned users cannot be pinned';
  return null;
}

/** Pins one of the account's own statuses that is not direct (again: no change), and tells followers' servers (Add). */
export async function pin(deps: StatusDeps, accountId: string, status: StatusRow): Promise<void> {
  const problem = pinProblem(accountId, status);
  if (problem) throw unprocessable(`Validation failed: ${problem}`);
  const delivery = await transaction(deps.db, async (tx) => {
    await marks.lockAccount(tx, accountId);
    if (await marks.isPinned(tx, accountId, status.id)) return null;
    if ((await marks.countPins(tx, accountId)) >= MAX_PINS) throw unprocessable('Validation failed: You have already pinned the maximum number of posts');
    await marks.insertPin(tx, accountId, status.id);
    return queueDelivery(tx, { activity: 'AddPin', accountId, statusId: status.id });
  });
  if (!delivery) return;
  await deps.versions.bump({ viewers: [accountId] });
  await deps.jobs.enqueue(delivery).catch(() => {}); // the outbox sweeper sends it otherwise
}

export async function unpin(deps: StatusDeps, accountId: string, status: StatusRow): Promise<void> {
  const delivery = await transaction(deps.db, async (tx) => {
    if (!(await marks.deletePin(tx, accountId, status.id))) return null;
    return queueDelivery(tx, { activity: 'RemovePin', accountId, statusId: status.id });
  });
  if (!delivery) return;
  await deps.versions.bump({ viewers: [accountId] });
  await deps.jobs.enqueue(delivery).catch(() => {});
}

/** Mutes the conversation (the thread, from its root) a status is in: nothing in it notifies the account any more. */
export async function muteConversation(deps: StatusDeps, accountId: string, status: StatusRow): Promise<void> {
  const root = await marks.threadRootOf(deps.db, status.id);
  if (await marks.insertConversationMute(deps.db, accountId, root)) await deps.versions.bump({ viewers: [accountId] });
}

/** Unmutes it: the mute whose root is this status's thread's, or any of its ancestors' (a thread known better later). */
export async function unmuteConversation(deps: StatusDeps, accountId: string, status: StatusRow): Promise<void> {
  if (await marks.deleteConversationMutesOver(deps.db, accountId, status.id)) await deps.versions.bump({ viewers: [accountId] });
}
