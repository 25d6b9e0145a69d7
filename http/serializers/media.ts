import type { MediaRow } from '../../storage/media.ts';
import type { RenderContext } from './context.ts';

/** Mastodon's MediaAttachment entity: no URLs until processing is done. */
export function renderMedia(ctx: RenderContext, m: MediaRow) {
  const ready = m.state === 'ready';
  const focus = { x: m.focus_x, y: m.focus_y };
  return {
    id: m.id,
    type: m.type,
    url: ready && m.original_key ? ctx.fileHost.url(m.original_key) : (m.remote_url ?? null),
    // A remote image is its own preview until remote media is copied here.
    preview_url: m.thumbnail_key ? ctx.fileHost.url(m.thumbnail_key)
      : ready && m.small_key ? ctx.fileHost.url(m.small_key)
      : (m.remote_url && m.type === 'image' ? m.remote_url : null),
    remote_url: m.remote_url,
    preview_remote_url: null,
    text_url: null,
    meta: ready ? { ...m.meta, focus } : { focus },
    description: m.description === '' ? null : m.description,
    blurhash: m.blurhash,
  };
}
