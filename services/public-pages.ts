import type { AccountRow } from '../storage/accounts.ts';
import type { Visibility } from '../storage/statuses.ts';

/**
 * What a stranger (no one signed in, a search engine, an RSS reader) is shown, as Mastodon shows it to a logged-out
 * visitor. The rule of who may see which post is services/visibility.ts's; these are the choices the public pages
 * and feeds add on top of it.
 */

/** A profile lists public and unlisted posts to anyone (unlisted only stays out of timelines and tag pages). */
export const PROFILE_VISIBILITIES: Visibility[] = ['public', 'unlisted'];

/**
 * Whether an account asks search engines to keep away from its pages (Mastodon's `noindex` setting); Mastodon marks
 * its profile and its posts' pages so.
 */
export function prefersNoindex(account: Pick<AccountRow, 'noindex'>): boolean {
  return account.noindex;
}

/**
 * A thread's replies in reading order: depth-first, oldest reply first at each level. A reply a stranger may not see
 * hides its subtree too (as Mastodon's context does), and at most `limit` are kept.
 */
export function threadReadingOrder(rootId: string, descendants: { id: string; parent: string }[], visible: { has(id: string): boolean }, limit: number): string[] {
  const children = new Map<string, string[]>();
  for (const d of descendants) {
    const list = children.get(d.parent);
    if (list) list.push(d.id);
    else children.set(d.parent, [d.id]);
  }
  const order: string[] = [];
  // An explicit stack, not recursion: a reply chain may be hundreds deep.
  const stack = [...(children.get(rootId) ?? [])].reverse();
  while (stack.length > 0 && order.length < limit) {
    const id = stack.pop()!;
    if (!visible.has(id)) continue;
    order.push(id);
    stack.push(...[...(children.get(id) ?? [])].reverse());
  }
  return order;
}
