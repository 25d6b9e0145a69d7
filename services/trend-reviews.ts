// Link trends' details, and the operators' reviews that decide what the public trends show. Links trend only once an
// operator approved them (or their publisher), as with Mastodon's default (`trendable_by_default` off); tags and
// statuses trend without review, as they did here before reviews existed, unless an operator rejected them. What
// trends and how much is services/trends.ts (trend_scores); a review here updates those rows' `allowed` at once.
import type { AppContext } from '../context.ts';
import { HISTORY_DAYS } from './instance.ts';
import { setTrendsAllowed, tagDailyUse, tagNamesByIds, trendPage, trendRowIds } from '../storage/trends.ts';
import { groupsForCommand } from '../storage/redis-keys.ts';
import { isId } from '../storage/ids.ts';
import { findStatus } from '../storage/statuses.ts';
import {
  cardDailyUse, cardsByIds, findPublisher, publishersCovering, reviewPublisher, reviewsOf, setReview,
  type PublisherRow, type ReviewKind,
} from '../storage/trend-reviews.ts';

type Ctx = Pick<AppContext, 'db' | 'redis' | 'config'>;

/** How many trending links the operators' list shows, and how many approved ones count for a link's timeline. */
export const LINK_CANDIDATES = 100;
export const TRENDING_LINKS_KEPT = 40;
/** How many trending statuses and tags the operators' lists show. */
export const ADMIN_TRENDS_KEPT = 100;

export interface History {
  day: string;
  uses: string;
  accounts: string;
}

/** HISTORY_DAYS UTC days, today first, from per-day rows (days without use count 0), as Mastodon's `history`. */
export function histories(now: Date, use: { id: string; day: number; uses: number; accounts: number }[]): (id: string) => History[] {
  const today = Math.floor(now.getTime() / 86_400_000) * 86_400;
  const days = Array.from({ length: HISTORY_DAYS }, (_, i) => today - i * 86_400);
  const byDay = new Map(use.map((u) => [`${u.id}/${u.day}`, u]));
  return (id) => days.map((day) => {
    const u = byDay.get(`${id}/${day}`);
    return { day: String(day), uses: String(u?.uses ?? 0), accounts: String(u?.accounts ?? 0) };
  });
}

export const historyStart = (now: Date) => new Date((Math.floor(now.getTime() / 86_400_000) - (HISTORY_DAYS - 1)) * 86_400_000);

export function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase() || null;
  } catch {
    return null;
  }
}

export interface LinkCandidate {
  id: string;
  history: History[];
  /** Approved (the link, or its publisher when the link itself was not reviewed). */
  trendable: boolean;
  /** Neither the link nor its publisher has been reviewed. */
  requiresReview: boolean;
}

/**
 * The publisher that decides for a host: the most specific reviewed one among the host and the domains above it
 * (so that approving `news.example` covers `www.news.example`, which became a publisher of its own unreviewed).
 */
function publisherOf(host: string | null, publishers: PublisherRow[]): PublisherRow | null {
  if (!host) return null;
  let best: PublisherRow | null = null;
  for (const p of publishers) {
    if (p.reviewed_at === null || !(host === p.domain || host.endsWith(`.${p.domain}`))) continue;
    if (!best || p.domain.length > best.domain.length) best = p;
  }
  return best;
}

/** What the operators decided for these cards (by id → url), as Mastodon's PreviewCard#trendable? and #requires_review?. */
export async function linkStates(ctx: Pick<Ctx, 'db'>, cards: { id: string; url: string }[]): Promise<Map<string, { trendable: boolean; requiresReview: boolean }>> {
  const reviews = await reviewsOf(ctx.db, 'link', cards.map((c) => c.id));
  const hosts = cards.map((c) => hostOf(c.url));
  const publishers = await publishersCovering(ctx.db, hosts.filter((h): h is string => h !== null));
  return new Map(cards.map((c, i) => {
    const review = reviews.get(c.id);
    const publisher = publisherOf(hosts[i] ?? null, publishers);
    if (review) return [c.id, { trendable: review.trendable, requiresReview: false }];
    return [c.id, { trendable: publisher?.trendable ?? false, requiresReview: !publisher?.reviewed_at }];
  }));
}

/** The trending links (services/trends.ts), whatever their review, with their history and review state. */
export async function linkCandidates(ctx: Ctx, now = new Date()): Promise<LinkCandidate[]> {
  const ids = await trendPage(ctx.db, 'link', { allowedOnly: false, languages: [], offset: 0, limit: LINK_CANDIDATES });
  const cards = await cardsByIds(ctx.db, ids);
  return linkDetails(ctx, ids.filter((id) => cards.has(id)).map((id) => ({ id, url: cards.get(id)!.url })), now);
}

/** These cards' history and review state. */
export async function linkDetails(ctx: Pick<Ctx, 'db'>, cards: { id: string; url: string }[], now = new Date()): Promise<LinkCandidate[]> {
  const states = await linkStates(ctx, cards);
  const use = await cardDailyUse(ctx.db, cards.map((c) => c.id), historyStart(now));
  const history = histories(now, use.map((u) => ({ ...u, id: u.cardId })));
  return cards.map((c) => ({ id: c.id, history: history(c.id), ...states.get(c.id)! }));
}

/** The approved trending links, at most TRENDING_LINKS_KEPT, with their history (a link's timeline asks whether one trends). */
export async function trendingLinks(ctx: Ctx, now = new Date()): Promise<{ id: string; history: History[] }[]> {
  const ids = await trendPage(ctx.db, 'link', { allowedOnly: true, languages: [], offset: 0, limit: TRENDING_LINKS_KEPT });
  const use = await cardDailyUse(ctx.db, ids, historyStart(now));
  const history = histories(now, use.map((u) => ({ ...u, id: u.cardId })));
  return ids.map((id) => ({ id, history: history(id) }));
}

/**
 * Applies the publishers' reviews to the trending links (after a publisher was approved or rejected): each link's
 * `allowed` from its own review, else its publisher's. The old Redis caches of trends are dropped too.
 */
export async function applyPublisherReviews(ctx: Ctx): Promise<void> {
  const ids = await trendRowIds(ctx.db, 'link');
  const cards = await cardsByIds(ctx.db, ids);
  const states = await linkStates(ctx, [...cards.values()].map((c) => ({ id: String(c.id), url: c.url })));
  const allowed = [...states].filter(([, st]) => st.trendable).map(([id]) => id);
  const refused = [...states].filter(([, st]) => !st.trendable).map(([id]) => id);
  await setTrendsAllowed(ctx.db, 'link', allowed, true);
  await setTrendsAllowed(ctx.db, 'link', refused, false);
  // One DEL on a single Redis; one per key on a cluster, where the keys (untagged, as services/instance.ts names
  // them) are in different slots.
  const keys = ['trends:tags', 'trends:statuses', 'trends:links'].map((n) => `${ctx.config.redisPrefix}instance:${n}`);
  await Promise.all(groupsForCommand(ctx.redis, keys, (k) => k).map((group) => ctx.redis.del(...group)));
}

/** Records an operator's approval or rejection; the item's trend row follows at once (a link's own review decides). */
export async function review(ctx: Ctx, kind: ReviewKind, id: string, trendable: boolean): Promise<void> {
  await setReview(ctx.db, kind, id, trendable);
  await setTrendsAllowed(ctx.db, kind, [id], trendable);
}

export interface AdminTagTrend {
  id: string;
  name: string;
  history: History[];
  trendable: boolean;
  requiresReview: boolean;
}

/** Tags with their history and review: the given ones, or (none given) the trending ones, rejected included. */
export async function adminTagTrends(ctx: Ctx, now = new Date(), only?: { id: string; name: string }[]): Promise<AdminTagTrend[]> {
  const tags = only ?? await trendingTagRows(ctx);
  const ids = tags.map((t) => t.id);
  const reviews = await reviewsOf(ctx.db, 'tag', ids);
  const use = await tagDailyUse(ctx.db, ids, historyStart(now));
  const history = histories(now, use.map((u) => ({ ...u, id: u.tagId })));
  return tags.map((t) => ({
    id: t.id, name: t.name, history: history(t.id),
    trendable: reviews.get(t.id)?.trendable ?? true, requiresReview: !reviews.has(t.id),
  }));
}

async function trendingTagRows(ctx: Ctx): Promise<{ id: string; name: string }[]> {
  const ids = await trendPage(ctx.db, 'tag', { allowedOnly: false, languages: [], offset: 0, limit: ADMIN_TRENDS_KEPT });
  const names = await tagNamesByIds(ctx.db, ids);
  return ids.filter((id) => names.has(id)).map((id) => ({ id, name: names.get(id)! }));
}

/** The trending statuses, rejected included, each with whether it may trend and whether it still awaits review. */
export async function adminStatusTrends(ctx: Ctx): Promise<{ id: string; trendable: boolean; requiresReview: boolean }[]> {
  const ids = await trendPage(ctx.db, 'status', { allowedOnly: false, languages: [], offset: 0, limit: ADMIN_TRENDS_KEPT });
  const reviews = await reviewsOf(ctx.db, 'status', ids);
  return ids.map((id) => ({ id, trendable: reviews.get(id)?.trendable ?? true, requiresReview: !reviews.has(id) }));
}

// An operator's approval or rejection of one link, status, tag or publisher, as the admin API and the operators'
// page take it: by id (a publisher also by its domain); null (false) when there is no such thing.

/** A link by its card's id; the link as it now stands. */
export async function reviewLink(ctx: Ctx, id: string, trendable: boolean): Promise<LinkCandidate | null> {
  const card = isId(id) ? (await cardsByIds(ctx.db, [id])).get(id) : undefined;
  if (!card) return null;
  await review(ctx, 'link', id, trendable);
  return (await linkDetails(ctx, [{ id, url: card.url }]))[0] ?? null;
}

/** A status that is not deleted. */
export async function reviewStatus(ctx: Ctx, id: string, trendable: boolean): Promise<boolean> {
  if (!isId(id) || !(await findStatus(ctx.db, id))) return false;
  await review(ctx, 'status', id, trendable);
  return true;
}

/** A tag by id; the tag as it now stands. */
export async function reviewTag(ctx: Ctx, id: string, trendable: boolean, now = new Date()): Promise<AdminTagTrend | null> {
  const name = isId(id) ? (await tagNamesByIds(ctx.db, [id])).get(id) : undefined;
  if (name === undefined) return null;
  await review(ctx, 'tag', id, trendable);
  return (await adminTagTrends(ctx, now, [{ id, name }]))[0] ?? null;
}

/**
 * A publisher by id or by domain; a domain nobody linked yet may be decided in advance. Every trending link's
 * standing follows at once.
 */
export async function reviewPublisherOf(ctx: Ctx, idOrDomain: string, trendable: boolean): Promise<PublisherRow | null> {
  const key = idOrDomain.trim().toLowerCase();
  const existing = await findPublisher(ctx.db, key);
  if (!existing && !/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(key)) return null;
  const row = await reviewPublisher(ctx.db, existing?.domain ?? key, trendable);
  await applyPublisherReviews(ctx);
  return row;
}
