// `statuses remove`: other servers' posts nobody here interacted with, removed now (as Mastodon's tootctl statuses
// remove), over services/status-retention.ts, which the hourly job uses with CONTENT_CACHE_RETENTION_DAYS.
import { parseArgs } from 'node:util';
import { removeStaleRemoteStatuses } from '../services/status-retention.ts';
import type { RetentionDeps } from '../services/status-retention.ts';

export const STATUSES_USAGE = `  statuses remove --days <n> [--dry-run]
      Removes other servers' posts older than n days that nobody here favourited, boosted, replied to, bookmarked,
      pinned, quoted, voted in or reported, that mention nobody here and answer, boost or quote no post of ours: their
      rows (with their attachments, mentions, tags, polls, edits and cards' links) and files are purged, 500 posts a
      transaction; home and list feeds drop them too (a running server's job queue takes that part). --dry-run only
      counts them.`;

export class StatusesUsageError extends Error {}

/** Batches one command takes at most (of RETENTION_BATCH posts each). */
const MAX_BATCHES = 100_000;

export async function statusesCommand(argv: string[], deps: RetentionDeps, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { days: { type: 'string' }, 'dry-run': { type: 'boolean', default: false } } });
  if (positionals[0] !== 'remove' || positionals.length !== 1) throw new StatusesUsageError(positionals[0] ? `unknown command: statuses ${positionals.join(' ')}` : 'statuses takes a command');
  if (!values.days || !/^\d{1,5}$/.test(values.days) || Number(values.days) < 1) throw new StatusesUsageError('statuses remove takes --days <n>, a whole number of days, 1 or more');
  const days = Number(values.days);
  const dryRun = values['dry-run'];
  // The job's bounded batches, one after another until none is left (each batch's query is bounded).
  const run = await removeStaleRemoteStatuses(deps, { days, dryRun, maxBatches: MAX_BATCHES });
  out(dryRun ? `${run.found} posts would be removed (dry run)` : `${run.removed} posts removed, ${run.files} files`);
}
