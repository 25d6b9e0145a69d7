import type { MediaRow } from '../../storage/media.ts';
import { mediaOfScheduled, type ScheduledStatusRow } from '../../storage/scheduled-statuses.ts';
import type { AppContext } from '../../context.ts';
import type { RenderContext } from './context.ts';
import { renderMedia } from './media.ts';

/**
 * Mastodon's ScheduledStatus entity: the post's parameters as Mastodon keeps them (`scheduled_at` and `idempotency`
 * null inside, `with_rate_limit` false), and the media held for it. `in_reply_to_id` is a string, as every id here
 * (Mastodon writes its integer); `application_id`, deprecated, a number as Mastodon's.
 */
export function renderScheduledStatus(ctx: RenderContext, row: ScheduledStatusRow, media: MediaRow[]) {
  const p = row.params;
  return {
    id: row.id,
    scheduled_at: row.scheduled_at.toISOString(),
    params: {
      text: p.text,
      poll: p.poll ? { options: p.poll.options, expires_in: p.poll.expiresIn, multiple: p.poll.multiple, hide_totals: p.poll.hideTotals } : null,
      media_ids: p.mediaIds.length > 0 ? p.mediaIds : null,
      sensitive: p.sensitive,
      spoiler_text: p.spoilerText,
      visibility: p.visibility,
      in_reply_to_id: p.inReplyToId,
      language: p.language,
      application_id: p.applicationId === null ? 0 : Number(p.applicationId),
      scheduled_at: null,
      idempotency: null,
      with_rate_limit: false,
    },
    media_attachments: media.map((m) => renderMedia(ctx, m)),
  };
}

/** Scheduled statuses with the media held for them, rendered (loading and rendering together, as statuses.ts does). */
export async function renderScheduledStatuses(ctx: AppContext, rows: ScheduledStatusRow[]) {
  const media = await mediaOfScheduled(ctx.db, rows.map((r) => r.id));
  return rows.map((r) => renderScheduledStatus(ctx.render, r, media.get(r.id) ?? []));
}
