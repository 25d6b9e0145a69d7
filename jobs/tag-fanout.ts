import type { StatusRow } from '../storage/statuses.ts';
import { findAccountById } from '../storage/accounts.ts';
import { accountLimited } from '../storage/blocks.ts';
import { tagFollowersBatch, tagIdsOfStatus } from '../storage/tag-follows.ts';
import type { FanOutDeps } from './fanout.ts';

const BATCH = 1000;

/**
 * Puts a public status into the home feeds of local accounts following one of its hashtags (Mastodon's
 * FanOutOnWriteService#deliver_to_hashtag_followers!), local or remote, a thousand follows per query, through each
 * follower's actor, as follows do. The author's followers have it already; blocks and mutes are applied when feeds
 * are read. Not reblogs, not from silenced accounts (which Mastodon keeps off public streams too).
 */
export async function fanOutToTagFollowers({ db, feeds, actors, events }: FanOutDeps, status: StatusRow, known?: { tagIds: string[]; authorHidden: boolean }): Promise<number> {
  if (status.visibility !== 'public' || status.reblog_of_id) return 0;
  // `known`: what the caller read with the status (storage/statuses.ts findStatusForFanOut), not asked for again.
  const tagIds = known?.tagIds ?? (await tagIdsOfStatus(db, status.id));
  if (tagIds.length === 0) return 0;
  if (known ? known.authorHidden : await authorHidden(db, status.account_id)) return 0;
  // One follower of two of its tags is reached once.
  const seen = new Set<string>();
  let delivered = 0;
  let after = '0';
  for (;;) {
    const batch = await tagFollowersBatch(db, tagIds, status.account_id, after, BATCH);
    if (batch.length === 0) break;
    after = batch.at(-1)!.followId;
    const targets = [...new Set(batch.map((f) => f.accountId))].filter((id) => !seen.has(id));
    for (const id of targets) seen.add(id);
    const accepting = await feeds.acceptingAmong(targets);
    if (accepting.length > 0) {
      await events.publishToHomes(accepting, { event: 'update', statusId: status.id });
      await actors.addToHomeFeeds(accepting, status.id);
    }
    delivered += accepting.length;
    if (batch.length < BATCH) break;
  }
  return delivered;
}

/** Silenced (or of a silenced server) or suspended: their posts reach no tag followers. */
async function authorHidden(db: FanOutDeps['db'], accountId: string): Promise<boolean> {
  const author = await findAccountById(db, accountId);
  return !author || author.silenced_at !== null || author.suspended_at !== null || (await accountLimited(db, accountId));
}
