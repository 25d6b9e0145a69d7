import type { AppContext } from '../../context.ts';
import type { PageGroup } from '../../services/notification-groups.ts';
import type { RequestRow } from '../../storage/notification-policy.ts';
import { findAccountsByIds, type AccountRow } from '../../storage/accounts.ts';
import { withAccountEmojis } from '../../services/custom-emojis.ts';
import { silencesNotificationsFrom } from '../../services/relations.ts';
import { renderAccount } from './account.ts';
import { renderStatus } from './status.ts';
import { loadForViewer, reportsOfNotifications } from './statuses.ts';
import { collectionsOfNotifications } from './collection.ts';

// Mastodon's GroupedNotificationsResults, NotificationGroup, PartialAccountWithAvatar and NotificationRequest.

/** A JSON number written exactly (Mastodon sends `most_recent_notification_id` as a number; ours exceed 2^53). */
const exactNumber = (digits: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(digits);

export type ExpandAccounts = 'full' | 'partial_avatars';

function renderPartialAccount(ctx: AppContext, a: AccountRow) {
  const full = renderAccount(ctx.render, a) as Record<string, unknown>;
  return { id: full.id, acct: full.acct, locked: full.locked, bot: full.bot, url: full.url, avatar: full.avatar, avatar_static: full.avatar_static, avatar_description: full.avatar_description ?? '' };
}

/**
 * Groups with the accounts and statuses they name, each once. A group whose status the viewer can no longer see (or
 * filtered out of notifications) is left out, and so are senders made silent since (blocked, muted, domain-blocked);
 * a group left with none is left out too. With `partial_avatars`, only each group's most recent sender is a full
 * account; the others are partial accounts.
 */
export async function renderGroupedNotifications(ctx: AppContext, viewerId: string, groups: PageGroup[], expand: ExpandAccounts = 'full') {
  const accounts = new Map((await withAccountEmojis(ctx.db, await findAccountsByIds(ctx.db, [...new Set(groups.flatMap((g) => g.sampleAccountIds))]))).map((a) => [a.id, a]));
  const statusIds = [...new Set(groups.map((g) => g.statusId).filter((id): id is string => !!id))];
  const reports = await reportsOfNotifications(ctx, groups.map((g) => g.reportId));
  const collections = await collectionsOfNotifications(ctx, viewerId, groups.map((g) => g.collectionId));
  const { rows: visible, bundle, relations } = await loadForViewer(ctx, viewerId, statusIds, 'notifications');
  const statuses = new Map(visible.map((s) => [s.id, s]));
  const shown = (id: string) => accounts.has(id) && !silencesNotificationsFrom(relations, accounts.get(id), id);

  const fullIds = new Set<string>();
  const partialIds = new Set<string>();
  const statusOrder = new Set<string>();
  const notificationGroups = [];
  for (const g of groups) {
    if (g.statusId && !statuses.has(g.statusId)) continue;
    const sample = g.sampleAccountIds.filter(shown);
    if (sample.length === 0) continue;
    sample.forEach((id, i) => (expand === 'full' || i === 0 ? fullIds : partialIds).add(id));
    if (g.statusId) statusOrder.add(g.statusId);
    notificationGroups.push({
      group_key: g.key,
      notifications_count: g.count,
      type: g.type,
      most_recent_notification_id: exactNumber(g.mostRecentId),
      ...(g.page ? { page_min_id: g.page.minId, page_max_id: g.page.maxId, latest_page_notification_at: g.page.latestAt.toISOString() } : {}),
      sample_account_ids: sample,
      ...(g.statusId ? { status_id: g.statusId } : {}),
      ...(g.reportId && reports.render(g.reportId) ? { report: reports.render(g.reportId) } : {}),
      // Mastodon 4.6 names the collection of these two types (null once it is gone).
      ...(g.type === 'added_to_collection' || g.type === 'collection_update' ? { collection: (g.collectionId && collections.get(g.collectionId)) || null } : {}),
    });
  }
  return {
    accounts: [...fullIds].map((id) => renderAccount(ctx.render, accounts.get(id)!)),
    ...(expand === 'partial_avatars' ? { partial_accounts: [...partialIds].filter((id) => !fullIds.has(id)).map((id) => renderPartialAccount(ctx, accounts.get(id)!)) } : {}),
    statuses: [...statusOrder].map((id) => renderStatus(ctx.render, bundle, statuses.get(id)!)),
    notification_groups: notificationGroups,
  };
}

/** Accounts in the order given, without those gone or made silent for the viewer. */
export async function renderGroupAccounts(ctx: AppContext, viewerId: string, ids: string[]) {
  const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set(ids)])).map((a) => [a.id, a]));
  const { relations } = await loadForViewer(ctx, viewerId, [], 'notifications');
  return ids.filter((id) => accounts.has(id) && !silencesNotificationsFrom(relations, accounts.get(id), id)).map((id) => renderAccount(ctx.render, accounts.get(id)!));
}

/** Notification requests with their senders and the last status a sender's filtered mentions concern (if the viewer may see it). */
export async function renderNotificationRequests(ctx: AppContext, viewerId: string, rows: RequestRow[]) {
  const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set(rows.map((r) => r.from_account_id))])).map((a) => [a.id, a]));
  const statusIds = [...new Set(rows.map((r) => r.last_status_id).filter((id): id is string => !!id))];
  const { rows: visible, bundle } = await loadForViewer(ctx, viewerId, statusIds, null);
  const statuses = new Map(visible.map((s) => [s.id, s]));
  return rows
    .filter((r) => accounts.has(r.from_account_id))
    .map((r) => {
      const last = r.last_status_id ? statuses.get(r.last_status_id) : undefined;
      return {
        id: r.id,
        created_at: r.created_at.toISOString(),
        updated_at: r.updated_at.toISOString(),
        notifications_count: String(r.notifications_count),
        account: renderAccount(ctx.render, accounts.get(r.from_account_id)!),
        last_status: last ? renderStatus(ctx.render, bundle, last) : null,
      };
    });
}
