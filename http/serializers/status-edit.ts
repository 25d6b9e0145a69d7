import type { StatusRow } from '../../storage/statuses.ts';
import type { StatusEditRow } from '../../storage/status-edits.ts';
import type { MediaRow } from '../../storage/media.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';
import { renderMedia } from './media.ts';
import { renderEmoji } from './custom-emoji.ts';
import { emojisUsed } from '../../services/custom-emojis.ts';

/**
 * A status's history as Mastodon's StatusEdit entities, oldest first. A status never edited has one version, as it
 * is now (Mastodon answers so too). `media`: every attachment the versions name, each shown with its description
 * at that version.
 */
export function renderStatusEdits(ctx: RenderContext, b: StatusBundle, s: StatusRow, edits: StatusEditRow[], media: Map<string, MediaRow>): Record<string, unknown>[] {
  const account = renderAccount(ctx, b.accounts.get(s.account_id)!);
  // Each version's emoji, among those the status uses now (one used only in an older version is not looked up).
  const known = b.emojis?.get(s.id) ?? [];
  const emojisOf = (texts: (string | null)[]) => emojisUsed(known, texts).map((e) => renderEmoji(ctx, e));
  if (edits.length === 0) {
    const poll = b.polls?.get(s.id);
    return [{
      content: s.content, spoiler_text: s.spoiler_text, sensitive: s.sensitive, created_at: s.created_at.toISOString(), account,
      poll: poll ? { options: poll.options.map((title) => ({ title })) } : null,
      media_attachments: (b.media.get(s.id) ?? []).map((m) => renderMedia(ctx, m)), emojis: emojisOf([s.spoiler_text, s.content, ...(poll?.options ?? [])]),
    }];
  }
  return edits.map((e) => ({
    content: e.content,
    spoiler_text: e.spoiler_text,
    sensitive: e.sensitive,
    created_at: e.created_at.toISOString(),
    account,
    poll: e.poll_options ? { options: e.poll_options.map((title) => ({ title })) } : null,
    media_attachments: e.media_ids.flatMap((id, i) => {
      const m = media.get(id);
      return m ? [renderMedia(ctx, { ...m, description: e.media_descriptions[i] ?? m.description })] : [];
    }),
    emojis: emojisOf([e.spoiler_text, e.content, ...(e.poll_options ?? [])]),
  }));
}
