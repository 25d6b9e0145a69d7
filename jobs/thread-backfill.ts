import type { AppContext } from '../context.ts';
import { findStatus } from '../storage/statuses.ts';
import { countAsyncRefreshResults, finishAsyncRefresh } from '../storage/async-refreshes.ts';

/**
 * The fetchThread job (services/thread-backfill.ts queues it when someone opens a remote post's thread): the
 * thread's missing parents and replies fetched (federation/thread-backfill.ts), each new post counted in the refresh
 * the client polls, which is finished when the run ends, whatever it found.
 */
export async function fetchThreadJob(ctx: AppContext, data: { statusId: string; refreshId: string }): Promise<void> {
  const prefix = ctx.config.redisPrefix;
  try {
    const status = await findStatus(ctx.db, data.statusId);
    if (!status || status.deleted_at || status.uri === null) return;
    const { backfillThread } = await import('../federation/thread-backfill.ts');
    const fed = ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx);
    await backfillThread(fed, status, (count) => countAsyncRefreshResults(ctx.redis, prefix, data.refreshId, count));
  } finally {
    await finishAsyncRefresh(ctx.redis, prefix, data.refreshId);
  }
}
