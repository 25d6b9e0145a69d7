import type { ListRow } from '../../storage/lists.ts';

/** Mastodon's List entity. */
export function renderList(l: ListRow) {
  return { id: l.id, title: l.title, replies_policy: l.replies_policy, exclusive: l.exclusive };
}
