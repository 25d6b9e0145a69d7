/** Mastodon's Tag entity: its name as used in URLs (lowercase), and its daily use, newest day first. */
export function renderTag(publicUrl: string, t: { id: string; name: string; history: { day: string; uses: string; accounts: string }[] }) {
  const name = t.name.toLowerCase();
  return { id: t.id, name, url: `${publicUrl}/tags/${encodeURIComponent(name)}`, history: t.history };
}
