import type { Queryable } from '../../storage/db.ts';
import { dismissedAmong, reactionCounts, type AnnouncementRow } from '../../storage/announcements.ts';
import { enabledEmojisOf, type EmojiRow } from '../../storage/custom-emojis.ts';
import { shortcodesIn } from '../../services/custom-emojis.ts';
import { renderInline } from '../../text/render.ts';
import { renderEmoji } from './custom-emoji.ts';
import type { RenderContext } from './context.ts';

/** The operator's text as HTML: paragraphs at blank lines, line breaks kept, links linked, everything escaped. */
export function announcementHtml(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map((p) => `<p>${p.split('\n').map(renderInline).join('<br>')}</p>`)
    .join('');
}

/**
 * Mastodon's Announcement entities, as `viewerId` sees them (`read`, and `me` on each reaction), in two or three
 * queries for all of them. Mentions, statuses and tags are not linked from announcements here (empty).
 */
export async function renderAnnouncements(db: Queryable, ctx: RenderContext, rows: AnnouncementRow[], viewerId: string) {
  const ids = rows.map((r) => r.id);
  const [read, reactions] = await Promise.all([dismissedAmong(db, viewerId, ids), reactionCounts(db, ids, viewerId)]);
  const wanted = new Set([...shortcodesIn(rows.map((r) => r.text)), ...reactions.filter((r) => r.custom_emoji_id).map((r) => r.name)]);
  const emojis = new Map<string, EmojiRow>(
    (wanted.size > 0 ? await enabledEmojisOf(db, [...wanted].map((shortcode) => ({ shortcode, domain: null }))) : []).map((e) => [e.shortcode, e]),
  );
  return rows.map((a) => ({
    id: a.id,
    content: announcementHtml(a.text),
    starts_at: a.starts_at?.toISOString() ?? null,
    ends_at: a.ends_at?.toISOString() ?? null,
    all_day: a.all_day,
    published_at: (a.published_at ?? a.created_at).toISOString(),
    updated_at: a.updated_at.toISOString(),
    read: read.has(a.id),
    mentions: [],
    statuses: [],
    tags: [],
    emojis: shortcodesIn([a.text]).flatMap((c) => (emojis.has(c) ? [renderEmoji(ctx, emojis.get(c)!)] : [])),
    reactions: reactions.filter((r) => r.announcement_id === a.id).flatMap((r) => {
      if (!r.custom_emoji_id) return [{ name: r.name, count: r.count, me: r.me }];
      const emoji = emojis.get(r.name);
      // A custom emoji since disabled is left out, as Mastodon's reactions only keep enabled ones.
      if (!emoji) return [];
      const { url, static_url } = renderEmoji(ctx, emoji);
      return [{ name: r.name, count: r.count, me: r.me, url, static_url }];
    }),
  }));
}
