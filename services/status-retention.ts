// Removal of other servers' posts nobody here interacted with, after the content cache retention period (Mastodon's
// content_cache_retention_period and `tootctl statuses remove`): each goes through the same deletion as a remote
// Delete (services/statuses.ts deleteStatus), so home and list feeds, streams and caches drop it alike.
import { ApiError } from '../errors.ts';
import { staleRemoteStatuses } from '../storage/status-retention.ts';
import { deleteStatus, type DeleteStatusDeps } from './statuses.ts';

/** One batch's size, and how many batches one run takes at most (the next run goes on). */
export const RETENTION_BATCH = 500;
export const RETENTION_MAX_BATCHES = 20;

export interface RetentionRun {
  /** Posts found that may go (with `dryRun`, what would be removed). */
  found: number;
  removed: number;
}

export async function removeStaleRemoteStatuses(
  deps: DeleteStatusDeps, o: { days: number; dryRun: boolean; now?: Date; batch?: number; maxBatches?: number },
): Promise<RetentionRun> {
  if (!Number.isInteger(o.days) || o.days < 1) throw new RangeError('days is a whole number, 1 or more');
  const before = new Date((o.now ?? new Date()).getTime() - o.days * 86_400_000);
  const batch = o.batch ?? RETENTION_BATCH;
  const run: RetentionRun = { found: 0, removed: 0 };
  let after = '0';
  for (let i = 0; i < (o.maxBatches ?? RETENTION_MAX_BATCHES); i++) {
    const rows = await staleRemoteStatuses(deps.db, before, after, batch);
    run.found += rows.length;
    if (!o.dryRun) {
      for (const r of rows) {
        // One deleted meanwhile (its author's Delete came first) is no longer there to remove.
        try {
          await deleteStatus(deps, r.account_id, r.id);
          run.removed++;
        } catch (err) {
          if (!(err instanceof ApiError && err.statusCode === 404)) throw err;
        }
      }
    }
    if (rows.length < batch) break;
    after = rows[rows.length - 1]!.id;
  }
  return run;
}
