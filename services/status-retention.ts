// Removal of other servers' posts nobody here interacted with, after the content cache retention period (Mastodon's
// content_cache_retention_period, Vacuum::StatusesVacuum, and `tootctl statuses remove`): their rows are purged, a
// bounded batch per transaction, with what hangs off them (storage/status-retention.ts), then their files; home and
// list feeds drop them through the fan-out queue, and cached renderings through the statuses' cache versions.
import { transaction, type Db } from '../storage/db.ts';
import type { FileHost } from '../storage/filehost/index.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import { purgeStatuses, staleRemoteStatuses } from '../storage/status-retention.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import type { JobQueues } from '../jobs/queues.ts';

/** One batch's size, and how many batches one run takes at most (the next run goes on). */
export const RETENTION_BATCH = 500;
export const RETENTION_MAX_BATCHES = 20;
/**
 * The hourly job's pause after a batch, as a share of the time the batch took: 1 leaves the cores to the site at least
 * half the time while a run lasts. The job needs no speed (10,000 posts an hour at most); reads and posting do.
 */
export const RETENTION_PACE = 1;

export interface RetentionDeps {
  db: Db;
  versions: Pick<CacheVersions, 'bump'>;
  /** Null in the command line: a running server's outbox sweeper queues the feeds' part. */
  jobs: Pick<JobQueues, 'enqueueMany'> | null;
  fileHost: Pick<FileHost, 'delete'>;
}

export interface RetentionRun {
  /** Posts found that may go (with `dryRun`, what would be removed). */
  found: number;
  /** Posts removed (boosts of them by other servers' accounts, which go with them, not counted). */
  removed: number;
  /** Files of their attachments removed (or held, while a backup runs: storage/file-deletions.ts). */
  files: number;
}

export async function removeStaleRemoteStatuses(
  deps: RetentionDeps, o: { days: number; dryRun: boolean; now?: Date; batch?: number; maxBatches?: number; pace?: number },
): Promise<RetentionRun> {
  if (!Number.isInteger(o.days) || o.days < 1) throw new RangeError('days is a whole number, 1 or more');
  const before = new Date((o.now ?? new Date()).getTime() - o.days * 86_400_000);
  const batch = o.batch ?? RETENTION_BATCH;
  const run: RetentionRun = { found: 0, removed: 0, files: 0 };
  let after = '0';
  for (let i = 0; i < (o.maxBatches ?? RETENTION_MAX_BATCHES); i++) {
    const started = performance.now();
    const rows = await staleRemoteStatuses(deps.db, before, after, batch);
    run.found += rows.length;
    if (!o.dryRun && rows.length > 0) {
      const purged = await purgeBatch(deps, rows.map((r) => r.id), before);
      run.removed += purged.removed;
      run.files += purged.files;
    }
    if (rows.length < batch) break;
    if (o.pace) await new Promise((resolve) => setTimeout(resolve, o.pace! * (performance.now() - started)));
    after = rows[rows.length - 1]!.id;
  }
  return run;
}

/** One batch in one transaction; then the caches, the feeds' jobs and the files. */
async function purgeBatch(deps: RetentionDeps, ids: string[], before: Date): Promise<{ removed: number; files: number }> {
  const { purged, outbox } = await transaction(deps.db, async (tx) => {
    const purged = await purgeStatuses(tx, ids, before);
    // Feeds and streams, one job for the batch. Nobody here is mentioned in them (such posts are kept), so only the
    // authors' local followers have them in their home feeds.
    const byAuthor: Record<string, string[]> = {};
    for (const s of purged.statuses) (byAuthor[s.account_id] ??= []).push(s.id);
    const outbox: OutboxRow[] = purged.statuses.length === 0 ? [] : [await addToOutbox(tx, 'removePurgedStatuses', { byAuthor })];
    return { purged, outbox };
  });
  await deps.versions.bump({ statuses: [...purged.statuses.map((s) => s.id), ...purged.touchedStatuses], accounts: purged.touchedAccounts });
  // Queued after the commit; if that fails, the outbox sweeper queues it.
  if (deps.jobs && outbox.length > 0) await deps.jobs.enqueueMany(outbox).catch(() => {});
  // After the commit that stopped naming them (a crash before leaves files nobody names, never a row without its file).
  for (const key of purged.fileKeys) await deps.fileHost.delete(key).catch(() => {});
  const removedIds = new Set(ids);
  return { removed: purged.statuses.filter((s) => removedIds.has(s.id)).length, files: purged.fileKeys.length };
}
