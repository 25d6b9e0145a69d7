import type { MediaRow } from '../../storage/media.ts';
import type { RenderContext } from './context.ts';
import { attachmentUrls } from '../../services/media-urls.ts';

/** Mastodon's MediaAttachment entity: no URLs until processing is done. */
export function renderMedia(ctx: RenderContext, m: MediaRow) {
  const ready = m.state === 'ready';
  const focus = { x: m.focus_x, y: m.focus_y };
  const { url, preview } = attachmentUrls(ctx, m);
  return {
    id: m.id,
    type: m.type,
    url,
    preview_url: preview,
    remote_url: m.remote_url,
    preview_remote_url: m.thumbnail_remote_url,
    text_url: null,
    meta: ready ? { ...m.meta, focus } : { focus },
    description: m.description === '' ? null : m.description,
    blurhash: m.blurhash,
  };
}
