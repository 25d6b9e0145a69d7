import type { AppContext } from '../../context.ts';
import type { NotificationRow } from '../../storage/notifications.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { renderStatus, renderStatusListJson } from './status.ts';
import { renderNotification } from './notification.ts';

// Loading and rendering together, so that routes share one path instead of importing each other.

/** A timeline page as JSON text, in the order given, without what the viewer may not see. */
export async function renderTimeline(ctx: AppContext, viewerId: string | null, ids: string[]): Promise<Buffer> {
  const { rows, bundle } = await ctx.statusLoader.load(viewerId, ids);
  return renderStatusListJson(ctx.render, bundle, rows);
}

/** Renders statuses in the order given, dropping what the viewer may not see. */
export async function renderStatuses(ctx: AppContext, viewerId: string | null, ids: string[]) {
  const { rows, bundle } = await ctx.statusLoader.load(viewerId, ids);
  return rows.map((s) => renderStatus(ctx.render, bundle, s));
}

/** Notifications with their accounts and statuses; one whose status the viewer can no longer see is left out. */
export async function renderNotifications(ctx: AppContext, viewerId: string, rows: NotificationRow[]) {
  const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set(rows.map((n) => n.from_account_id))])).map((a) => [a.id, a]));
  const statusIds = rows.map((n) => n.status_id).filter((id): id is string => !!id);
  const { rows: visible, bundle } = await ctx.statusLoader.load(viewerId, statusIds);
  const rendered = new Map(visible.map((s) => [s.id, renderStatus(ctx.render, bundle, s)]));
  return rows
    .filter((n) => accounts.has(n.from_account_id) && (!n.status_id || rendered.has(n.status_id)))
    .map((n) => renderNotification(ctx.render, n, accounts.get(n.from_account_id)!, n.status_id ? rendered.get(n.status_id)! : null));
}
