import type { PreviewCardRow } from '../../storage/preview-cards.ts';
import type { RenderContext } from './context.ts';

/**
 * Mastodon's PreviewCard entity (REST::PreviewCardSerializer). Mastodon sends "" for URLs the page did not give, which
 * its own schema (required, format uri) refuses: a missing provider URL is the page's site, a missing author or embed
 * URL is about:blank, the empty document (as the instance entity's missing source URL, http/serializers/instance.ts).
 */
export function renderPreviewCard(ctx: RenderContext, c: PreviewCardRow): Record<string, unknown> {
  return {
    url: c.url,
    title: c.title,
    description: c.description,
    language: null,
    type: c.type,
    author_name: c.author_name,
    author_url: c.author_url || NO_URL,
    provider_name: c.provider_name,
    provider_url: c.provider_url || siteOf(c.url),
    html: c.html,
    width: c.width,
    height: c.height,
    image: c.image_key ? ctx.fileHost.url(c.image_key) : null,
    image_description: '',
    embed_url: c.embed_url || NO_URL,
    blurhash: c.image_key ? c.blurhash : null,
    published_at: c.published_at?.toISOString() ?? null,
    authors: [],
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
