import type { StatusRow } from '../../storage/statuses.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';

export function statusUri(ctx: RenderContext, s: StatusRow, authorUsername: string): string {
  return s.uri ?? `${ctx.publicUrl}/users/${authorUsername}/statuses/${s.id}`;
}

/** Mastodon's Status entity. The internal deleted flag is never part of it. */
export function renderStatus(ctx: RenderContext, b: StatusBundle, s: StatusRow, options: { withSource?: boolean } = {}): Record<string, unknown> {
  const author = b.accounts.get(s.account_id)!;
  const original = s.reblog_of_id ? b.statuses.get(s.reblog_of_id) : undefined;
  const local = author.domain === null;
  const uri = statusUri(ctx, s, author.username);
  return {
    id: s.id,
    uri: original ? `${uri}/activity` : uri,
    url: original ? null : (local ? `${ctx.publicUrl}/@${author.username}/${s.id}` : (s.url ?? s.uri)),
    created_at: s.created_at.toISOString(),
    edited_at: s.edited_at?.toISOString() ?? null,
    account: renderAccount(ctx, author),
    content: s.content,
    visibility: s.visibility,
    sensitive: s.sensitive,
    spoiler_text: s.spoiler_text,
    language: s.language,
    in_reply_to_id: s.in_reply_to_id,
    in_reply_to_account_id: s.in_reply_to_account_id,
    reblog: original ? renderStatus(ctx, b, original) : null,
    application: null,
    media_attachments: [],
    mentions: (b.mentions.get(s.id) ?? []).map((id) => b.accounts.get(id)).filter((a) => !!a).map((a) => ({
      id: a.id,
      username: a.username,
      acct: a.domain === null ? a.username : `${a.username}@${a.domain}`,
      url: a.domain === null ? `${ctx.publicUrl}/@${a.username}` : (a.url ?? a.uri ?? ''),
    })),
    tags: (b.tags.get(s.id) ?? []).map((name) => ({ name: name.toLowerCase(), url: `${ctx.publicUrl}/tags/${encodeURIComponent(name.toLowerCase())}` })),
    emojis: [],
    card: null,
    poll: null,
    replies_count: s.replies_count,
    reblogs_count: s.reblogs_count,
    favourites_count: s.favourites_count,
    quotes_count: 0,
    filtered: [],
    ...(b.viewerId
      ? {
          favourited: b.favourited.has(s.id),
          reblogged: b.reblogged.has(s.id),
          muted: false,
          bookmarked: false,
          ...(s.account_id === b.viewerId && !original ? { pinned: false } : {}),
        }
      : {}),
    ...(options.withSource ? { text: s.text } : {}),
  };
}
