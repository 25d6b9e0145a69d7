import type { AppContext } from '../context.ts';
import type { Config } from '../config.ts';
import type { StatusRow } from '../storage/statuses.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { claimReplyFetch, repliesFetchedAt } from '../storage/thread-backfill.ts';
import { newAsyncRefreshId, runningContextRefresh, startContextRefresh, type AsyncRefresh } from '../storage/async-refreshes.ts';

/**
 * Threads of other servers have holes: replies reach us only from servers whose accounts someone here follows, and
 * a reply may come before its parent. When someone signed in opens a remote post's thread, its missing parents and
 * replies are fetched in the background (jobs/thread-backfill.ts, federation/thread-backfill.ts) and the client is
 * told it may look again (`Mastodon-Async-Refresh`), as Mastodon 4.4+ does in Api::V1::Statuses::ContextsController.
 */

/**
 * Whether a status's replies may be fetched now, apart from its cooldown (which `claimReplyFetch` decides as it
 * records the fetch): Mastodon's Status#should_fetch_replies?. Remote (a local thread is all here), public or
 * unlisted (Mastodon's `distributable?`), live, not a reblog, and older than FETCH_REPLIES_INITIAL_WAIT_MINUTES (a
 * post just made has few replies to find).
 */
export function shouldFetchReplies(config: Pick<Config, 'fetchReplies'>, status: StatusRow, now = Date.now()): boolean {
  const settings = config.fetchReplies;
  return settings.enabled && status.uri !== null && !status.deleted_at && status.reblog_of_id === null
    && (status.visibility === 'public' || status.visibility === 'unlisted')
    && status.created_at.getTime() <= now - settings.initialWaitMinutes * 60_000;
}

/**
 * The refresh a client opening this status's thread is told about: the one running, or a new one with its job
 * queued when the viewer is signed in, the status may have its replies fetched, and they were not fetched within
 * FETCH_REPLIES_COOLDOWN_MINUTES. The cooldown is taken with the job's outbox row in one transaction, so of many
 * readers at once one starts it, and a crash before the job is queued loses nothing (the sweeper queues it).
 */
export async function refreshForContext(ctx: AppContext, viewerId: string | null, status: StatusRow): Promise<AsyncRefresh | null> {
  const prefix = ctx.config.redisPrefix;
  const running = await runningContextRefresh(ctx.redis, prefix, status.id);
  if (running) return running;
  if (viewerId === null || !shouldFetchReplies(ctx.config, status)) return null;
  // Read first: a popular thread opened again and again in its cooldown costs a read, not a write transaction.
  const fetchedAt = await repliesFetchedAt(ctx.db, status.id);
  if (fetchedAt && fetchedAt.getTime() > Date.now() - ctx.config.fetchReplies.cooldownMinutes * 60_000) return null;
  const refreshId = newAsyncRefreshId();
  const job = await transaction(ctx.db, async (tx) => {
    if (!(await claimReplyFetch(tx, status.id, ctx.config.fetchReplies.cooldownMinutes))) return null;
    return addToOutbox(tx, 'fetchThread', { statusId: status.id, refreshId });
  });
  if (!job) return null;
  const refresh = await startContextRefresh(ctx.redis, prefix, status.id, refreshId);
  await ctx.jobs.enqueue(job).catch(() => {}); // the outbox sweeper queues it otherwise
  return refresh;
}
