import type { FileHost } from '../storage/filehost/index.ts';

/**
 * Where readers load media from: always this server. A file of ours (an upload, or a copy of another server's file)
 * from the file host; another server's file not copied yet (or pruned) from the media proxy, which copies it first
 * (http/media-proxy.ts). Never the other server's own URL: readers' addresses stay here.
 */
interface Where {
  publicUrl: string;
  fileHost: FileHost;
}

export function accountImageUrl(w: Where, a: { id: string; avatar_file: string | null; avatar_remote_url: string | null; header_file: string | null; header_remote_url: string | null }, kind: 'avatar' | 'header'): string {
  const file = kind === 'avatar' ? a.avatar_file : a.header_file;
  if (file) return w.fileHost.url(file);
  const remote = kind === 'avatar' ? a.avatar_remote_url : a.header_remote_url;
  if (remote) return `${w.publicUrl}/media_proxy/accounts/${a.id}/${kind}`;
  return `${w.publicUrl}/${kind}s/original/missing.png`;
}

/** An attachment's `url` and `preview_url` (null while an upload is processed). */
export function attachmentUrls(w: Where, m: { id: string; type: string; state: string; original_key: string | null; small_key: string | null; thumbnail_key: string | null; remote_url: string | null; thumbnail_remote_url?: string | null }): { url: string | null; preview: string | null } {
  const ready = m.state === 'ready';
  if (m.remote_url && !m.original_key) {
    // Another server's attachment not copied here: the proxy copies it at the first view. `unknown` ones (what we
    // cannot show, and everything from a server whose media is rejected) are links to their origin, as on Mastodon.
    if (m.type === 'unknown') return { url: m.remote_url, preview: null };
    // A video's or audio's preview image (PeerTube's thumbnail) is copied with it.
    const preview = m.type === 'image' || m.thumbnail_remote_url ? `${w.publicUrl}/media_proxy/${m.id}/small` : null;
    return { url: `${w.publicUrl}/media_proxy/${m.id}/original`, preview };
  }
  const url = ready && m.original_key ? w.fileHost.url(m.original_key) : null;
  const preview = m.thumbnail_key ? w.fileHost.url(m.thumbnail_key) : ready && m.small_key ? w.fileHost.url(m.small_key) : null;
  return { url, preview };
}
