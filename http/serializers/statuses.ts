import type { AppContext } from '../../context.ts';
import { renderStatus, renderStatusListJson } from './status.ts';

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
