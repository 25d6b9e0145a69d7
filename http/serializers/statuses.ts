import type { AppContext } from '../../context.ts';
import type { NotificationRow } from '../../storage/notifications.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { renderStatus, renderStatusListJson } from './status.ts';
import { renderNotification } from './notification.ts';
import { withAccountEmojis } from '../../services/custom-emojis.ts';
import type { FilterContext } from '../../storage/filters.ts';
import { applyFilters } from '../../services/filters.ts';
import { applyRelations, silencesNotificationsFrom } from '../../services/relations.ts';
import { findReport } from '../../storage/reports.ts';
import { renderReport } from './report.ts';
import { collectionsOfNotifications } from './collection.ts';

// Loading and rendering together, so that routes share one path instead of importing each other.

/**
 * Statuses loaded for a viewer (what they may not see left out), without what their blocks and mutes leave out of
 * `context` (services/relations.ts), with their filters of `context` applied: what a `hide` filter matches left
 * out too, what others match carrying the results. `notAfter`: when a filter or a timed mute that applied ends (a
 * rendering kept must not outlive it).
 */
export async function loadForViewer(ctx: AppContext, viewerId: string | null, ids: string[], context: FilterContext | 'search' | 'list' | null) {
  const loaded = await ctx.statusLoader.load(viewerId, ids);
  if (!viewerId || !context) return { ...loaded, notAfter: undefined };
  const rows = applyRelations(loaded.relations, context, viewerId, loaded.rows, loaded.bundle);
  if (context === 'search') return { ...loaded, rows, notAfter: loaded.relations.notAfter };
  const filters = await ctx.filters.forViewer(viewerId, loaded.versions.f.get(viewerId));
  const notAfter = [filters.notAfter, loaded.relations.notAfter].reduce<number | undefined>((min, t) => (t !== undefined && (min === undefined || t < min) ? t : min), undefined);
  // A list is read with the viewer's home filters, as on Mastodon.
  return { ...loaded, ...applyFilters(filters, context === 'list' ? 'home' : context, viewerId, rows, loaded.bundle), notAfter };
}

/** A timeline page as JSON text, in the order given, without what the viewer may not see or has filtered out. */
export async function renderTimeline(ctx: AppContext, viewerId: string | null, ids: string[], context: FilterContext | null): Promise<Buffer> {
  const { rows, bundle } = await loadForViewer(ctx, viewerId, ids, context);
  return renderStatusListJson(ctx.render, bundle, rows);
}

/** Renders statuses in the order given, dropping what the viewer may not see (or has filtered out in `context`). */
export async function renderStatuses(ctx: AppContext, viewerId: string | null, ids: string[], context: FilterContext | 'search' | 'list' | null = null) {
  const { rows, bundle } = await loadForViewer(ctx, viewerId, ids, context);
  return rows.map((s) => renderStatus(ctx.render, bundle, s));
}

/** The reports admin.report notifications carry (few: only operators get them), rendered as Report entities. */
export async function reportsOfNotifications(ctx: AppContext, ids: (string | null | undefined)[]) {
  const reportIds = [...new Set(ids.filter((id): id is string => !!id))];
  const reports = new Map((await Promise.all(reportIds.map((id) => findReport(ctx.db, id)))).filter((r) => r !== null).map((r) => [r.id, r]));
  const targets = new Map((await findAccountsByIds(ctx.db, [...new Set([...reports.values()].map((r) => r.target_account_id))])).map((a) => [a.id, a]));
  return {
    accounts: targets,
    render: (id: string | null | undefined) => {
      const report = id ? reports.get(id) : undefined;
      const target = report ? targets.get(report.target_account_id) : undefined;
      return report && target ? renderReport(ctx.render, report, target) : null;
    },
  };
}

/**
 * Notifications with their accounts and statuses; one whose status the viewer can no longer see, or has filtered
 * out of notifications, is left out.
 */
export async function renderNotifications(ctx: AppContext, viewerId: string, rows: NotificationRow[]) {
  const { accounts: reportTargets, render: renderedReport } = await reportsOfNotifications(ctx, rows.map((n) => n.report_id));
  const from = await withAccountEmojis(ctx.db, await findAccountsByIds(ctx.db, [...new Set(rows.map((n) => n.from_account_id))]));
  const accounts = new Map([...reportTargets, ...from.map((a) => [a.id, a] as const)]);
  const statusIds = rows.map((n) => n.status_id).filter((id): id is string => !!id);
  const { rows: visible, bundle, relations } = await loadForViewer(ctx, viewerId, statusIds, 'notifications');
  const rendered = new Map(visible.map((s) => [s.id, renderStatus(ctx.render, bundle, s)]));
  const collections = await collectionsOfNotifications(ctx, viewerId, rows.map((n) => n.collection_id));
  // Those made before a block, a domain block or a mute of notifications are shown no more.
  const silenced = (id: string) => silencesNotificationsFrom(relations, accounts.get(id), id);
  return rows
    .filter((n) => accounts.has(n.from_account_id) && !silenced(n.from_account_id) && (!n.status_id || rendered.has(n.status_id)))
    .map((n) => renderNotification(ctx.render, n, accounts.get(n.from_account_id)!, n.status_id ? rendered.get(n.status_id)! : null, renderedReport(n.report_id), n.collection_id ? collections.get(n.collection_id) ?? null : null));
}
