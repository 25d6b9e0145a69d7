// Automated post deletion (Mastodon's account statuses cleanup policy): a person chooses how old a post must be and
// which posts to keep; a repeating job deletes the rest, a bounded batch per account per run, through the same
// deletion as by hand (the account's actor), so followers' servers receive the Delete.
import type { AppContext } from '../context.ts';
import { findCleanupPolicy, saveCleanupPolicy, statusesToClean, takeDueCleanupPolicies, type CleanupPolicy } from '../storage/statuses-cleanup.ts';
import type { Queryable } from '../storage/db.ts';

const DAY = 86_400;
/** Mastodon's choices of age (1.month is Ruby's 30.436875 days). */
export const MIN_STATUS_AGES: [number, string][] = [
  [7 * DAY, '1 week'], [14 * DAY, '2 weeks'], [2_629_746, '1 month'], [5_259_492, '2 months'], [7_889_238, '3 months'],
  [15_778_476, '6 months'], [31_556_952, '1 year'], [63_113_904, '2 years'],
];

export const DEFAULT_POLICY: CleanupPolicy = {
  enabled: false, min_status_age: 14 * DAY, keep_direct: true, keep_pinned: true, keep_polls: false, keep_media: false,
  keep_self_fav: true, keep_self_bookmark: true, min_favs: null, min_reblogs: null,
};

/** A person's policy, Mastodon's defaults where they have none yet. */
export async function cleanupPolicyOf(db: Queryable, accountId: string): Promise<CleanupPolicy> {
  const row = await findCleanupPolicy(db, accountId);
  if (!row) return { ...DEFAULT_POLICY };
  const { account_id: _, ...policy } = row;
  return policy;
}

export class CleanupPolicyRefused extends Error {}

/** Checks and stores a policy; refuses an age not among Mastodon's choices, or a threshold that is not a whole number ≥ 1. */
export async function setCleanupPolicy(db: Queryable, accountId: string, policy: CleanupPolicy): Promise<void> {
  if (!MIN_STATUS_AGES.some(([s]) => s === policy.min_status_age)) throw new CleanupPolicyRefused('Choose an age from the list.');
  for (const n of [policy.min_favs, policy.min_reblogs]) {
    if (n !== null && (!Number.isInteger(n) || n < 1 || n > 1_000_000_000)) throw new CleanupPolicyRefused('Thresholds are whole numbers from 1, or empty.');
  }
  await saveCleanupPolicy(db, accountId, policy);
}

/** Accounts one run visits, and the posts it deletes of each: a run stays short however many posts wait. */
export const CLEANUP_ACCOUNTS_PER_RUN = 50;
export const CLEANUP_STATUSES_PER_ACCOUNT = 50;

/** One run of the repeating job: returns how many posts it deleted. */
export async function runStatusesCleanup(ctx: Pick<AppContext, 'db' | 'actors'>): Promise<number> {
  let deleted = 0;
  for (const policy of await takeDueCleanupPolicies(ctx.db, CLEANUP_ACCOUNTS_PER_RUN)) {
    for (const statusId of await statusesToClean(ctx.db, policy, CLEANUP_STATUSES_PER_ACCOUNT)) {
      try {
        await ctx.actors.ask(policy.account_id, { type: 'deleteStatus', statusId });
        deleted += 1;
      } catch (err) {
        // Deleted meanwhile by hand: nothing left to do for it.
        if ((err as { statusCode?: number }).statusCode !== 404) throw err;
      }
    }
  }
  return deleted;
}
