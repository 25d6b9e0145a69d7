import type { NotificationRow } from '../../storage/notifications.ts';
import type { AccountRow } from '../../storage/accounts.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';

/** Mastodon's Notification entity; `status` is the rendered status it concerns, if any, `report` the report of an admin.report, `collection` the collection of added_to_collection and collection_update (null once gone). */
export function renderNotification(ctx: RenderContext, n: NotificationRow, from: AccountRow, status: Record<string, unknown> | null, report: Record<string, unknown> | null = null, collection: Record<string, unknown> | null = null) {
  return {
    id: n.id,
    type: n.type,
    group_key: n.group_key ?? `ungrouped-${n.id}`,
    created_at: n.created_at.toISOString(),
    account: renderAccount(ctx, from),
    ...(n.status_id ? { status } : {}),
    ...(n.report_id && report ? { report } : {}),
    ...(n.type === 'added_to_collection' || n.type === 'collection_update' ? { collection } : {}),
  };
}
