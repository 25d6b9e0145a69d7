import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { findAccountById } from '../storage/accounts.ts';
import { deleteScheduledStatus, findScheduledStatusById } from '../storage/scheduled-statuses.ts';
import { publishParams } from '../services/scheduled-statuses.ts';

/** A job that fires before its row's time found the row moved later: that time's own job publishes it. */
const EARLY_MS = 250;

/**
 * Publishes a scheduled status through its author's actor, as a post of theirs (services/statuses.ts postStatus,
 * which deletes the row in the transaction that inserts the status: a retried or doubled job publishes nothing more).
 */
export async function publishScheduledStatus(ctx: Pick<AppContext, 'db' | 'actors'>, id: string): Promise<void> {
  const row = await findScheduledStatusById(ctx.db, id);
  if (!row || row.scheduled_at.getTime() > Date.now() + EARLY_MS) return;
  const account = await findAccountById(ctx.db, row.account_id);
  if (!account || account.suspended_at) {
    await deleteScheduledStatus(ctx.db, row.account_id, id);
    return;
  }
  try {
    await ctx.actors.ask(row.account_id, { type: 'postStatus', params: publishParams(row) });
  } catch (err) {
    // As Mastodon's PublishScheduledStatusWorker: a post that can no longer be made (its reply deleted, its media
    // gone) is dropped, not retried. Whatever else failed is retried by BullMQ, then by the sweeper.
    if (err instanceof ApiError && err.statusCode < 500) {
      await deleteScheduledStatus(ctx.db, row.account_id, id);
      return;
    }
    throw err;
  }
}
