import type { Queryable } from '../storage/db.ts';
import { afterCommit } from '../storage/db.ts';
import { notify, type NotificationType } from '../storage/notifications.ts';
import type { JobQueues } from '../jobs/queues.ts';
import { streamChannels, type StreamEvents } from './stream-events.ts';
import { queueWebPush } from './web-push.ts';

/**
 * Notifies a local account of what another did, in the transaction of the change, and tells its streaming sockets
 * once that transaction has committed (never of a change that was rolled back). Its Web Push subscriptions that take
 * the notification get a push, queued through the outbox of the same transaction.
 */
export async function notifyAccount(deps: { events: StreamEvents; jobs: JobQueues }, tx: Queryable, accountId: string, fromAccountId: string, type: NotificationType, statusId: string | null = null): Promise<void> {
  const row = await notify(tx, accountId, fromAccountId, type, statusId);
  if (row) {
    afterCommit(tx, () => deps.events.publish(streamChannels.notifications(accountId), { event: 'notification', notificationId: row.id }));
    await queueWebPush(deps, tx, row);
  }
}
