import type { PreviewCardRow, ShownPreviewCard } from '../../storage/preview-cards.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';

/**
 * Mastodon's PreviewCard entity (REST::PreviewCardSerializer). Mastodon sends "" for URLs the page did not give, which
 * its own schema (required, format uri) refuses: a missing provider URL is the page's site, a missing author or embed
 * URL is about:blank, the empty document (as the instance entity's missing source URL, http/serializers/instance.ts).
 */
export function renderPreviewCard(ctx: RenderContext, c: PreviewCardRow | ShownPreviewCard): Record<string, unknown> {
  // An account suspended or deleted since the card was made is left out rather than shown.
  const author = 'author_account' in c ? c.author_account : null;
  const authorAccount = author && !author.suspended_at && !author.deleted_at ? author : null;
  return {
    url: c.url,
    title: c.title,
    description: c.description,
    language: c.language ?? null,
    type: c.type,
    author_name: c.author_name,
    author_url: c.author_url || NO_URL,
    provider_name: c.provider_name,
    provider_url: c.provider_url || siteOf(c.url),
    html: c.html,
    width: c.width,
    height: c.height,
    image: c.image_key ? ctx.fileHost.url(c.image_key) : null,
    image_description: c.image_description ?? '',
    embed_url: c.embed_url || NO_URL,
    blurhash: c.image_key ? c.blurhash : null,
    published_at: c.published_at?.toISOString() ?? null,
    // Mastodon 4.3's PreviewCard#authors: one author, the card's, with its fediverse account when it has one (the
    // account is loaded with the statuses' cards; elsewhere, as in trends, it is left out).
    authors: [{ name: c.author_name, url: c.author_url || NO_URL, account: authorAccount ? renderAccount(ctx, authorAccount) : null }],
  };
}

const NO_URL = 'about:blank';

function siteOf(url: string): string {
  try {
    return `${new URL(url).origin}/`;
  } catch {
    return NO_URL;
  }
}
