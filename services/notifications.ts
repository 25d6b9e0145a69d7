import type { Queryable } from '../storage/db.ts';
import { afterCommit } from '../storage/db.ts';
import { notify, type NotificationType } from '../storage/notifications.ts';
import { notificationsBlocked } from '../storage/blocks.ts';
import { inMutedConversations } from '../storage/status-marks.ts';
import type { JobQueues } from '../jobs/queues.ts';
import { streamChannels, type StreamEvents } from './stream-events.ts';
import { queueWebPush } from './web-push.ts';
import { FILTERABLE_TYPES, policyVerdict } from './notification-policy.ts';
import { recordFiltered } from '../storage/notification-policy.ts';
import { queueNotificationMail } from './notification-emails.ts';

/**
 * Notifies a local account of what another did, in the transaction of the change, and tells its streaming sockets
 * once that transaction has committed (never of a change that was rolled back). Its Web Push subscriptions that take
 * the notification get a push, and its recipient a mail if they chose mail of its kind (services/notification-emails.ts),
 * both queued through the outbox of the same transaction. Nothing is made when either blocks
 * the other, or the recipient mutes the sender's notifications or blocks their server (Mastodon's NotifyService).
 * The recipient's notification policy then accepts it, drops it, or files it as filtered under a notification
 * request (told to no socket, pushed and mailed nowhere).
 */
export async function notifyAccount(deps: { events: StreamEvents; jobs: JobQueues }, tx: Queryable, accountId: string, fromAccountId: string, type: NotificationType, statusId: string | null = null, reportId: string | null = null, collectionId: string | null = null): Promise<void> {
  if (await notificationsBlocked(tx, accountId, fromAccountId, { limitedAccounts: !FILTERABLE_TYPES.has(type) })) return;
  // Nothing from a conversation the recipient muted (Mastodon's NotifyService#conversation_muted?).
  if (statusId && (await inMutedConversations(tx, accountId, [statusId])).size > 0) return;
  const verdict = await policyVerdict(tx, accountId, fromAccountId, type, statusId);
  if (verdict === 'drop') return;
  const row = await notify(tx, accountId, fromAccountId, type, statusId, verdict === 'filter', reportId, collectionId);
  if (row?.filtered) await recordFiltered(tx, accountId, fromAccountId, type === 'mention' ? statusId : null);
  else if (row) {
    afterCommit(tx, () => deps.events.publish(streamChannels.notifications(accountId), { event: 'notification', notificationId: row.id }));
    await queueWebPush(deps, tx, row);
    await queueNotificationMail(deps, tx, row);
  }
}
