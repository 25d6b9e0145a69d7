import type { AppContext } from '../context.ts';
import { refreshTrends } from '../services/trends.ts';

/**
 * The repeating refreshTrends job (jobs/queues.ts, every five minutes): scores of links, statuses and tags computed
 * anew into trend_scores. A run missed (no worker) only leaves the last scores a little longer.
 */
export async function refreshTrendsJob(ctx: AppContext): Promise<void> {
  await refreshTrends(ctx);
}
