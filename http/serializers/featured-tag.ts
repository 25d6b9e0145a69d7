import type { FeaturedTagRow } from '../../storage/featured-tags.ts';

/** Mastodon's FeaturedTag: the count as a string and the last use as a date, as its serializer gives them. */
export function renderFeaturedTag(publicUrl: string, username: string, t: FeaturedTagRow) {
  return {
    id: t.id,
    name: t.name,
    url: `${publicUrl}/@${username}/tagged/${encodeURIComponent(t.name.toLowerCase())}`,
    statuses_count: String(t.statuses_count),
    last_status_at: t.last_status_at ? t.last_status_at.toISOString().slice(0, 10) : null,
  };
}
