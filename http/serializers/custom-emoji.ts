import type { EmojiRow } from '../../storage/custom-emojis.ts';
import { emojiImageUrls } from '../../services/custom-emojis.ts';
import type { RenderContext } from './context.ts';

/**
 * Mastodon's CustomEmoji entity as statuses, accounts and polls carry it (Mastodon adds `category` only where it is
 * loaded: the list of this server's emoji).
 */
export function renderEmoji(ctx: RenderContext, e: EmojiRow): { shortcode: string; url: string; static_url: string; visible_in_picker: boolean } {
  const { url, staticUrl } = emojiImageUrls(ctx, e);
  return { shortcode: e.shortcode, url, static_url: staticUrl, visible_in_picker: e.visible_in_picker };
}

/** GET /api/v1/custom_emojis: this server's emoji with their category. */
export function renderEmojiList(ctx: RenderContext, rows: EmojiRow[]): Record<string, unknown>[] {
  return rows.map((e) => ({ ...renderEmoji(ctx, e), category: e.category }));
}
