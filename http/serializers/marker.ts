import type { MarkerRow } from '../../storage/markers.ts';

/** Mastodon's Marker entity. */
export function renderMarker(m: MarkerRow) {
  return { last_read_id: m.last_read_id, version: m.version, updated_at: m.updated_at.toISOString() };
}
