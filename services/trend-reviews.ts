// Link trends, and the operators' reviews that decide what the public trends show. Links trend only once an operator
// approved them (or their publisher), as with Mastodon's default (`trendable_by_default` off); tags and statuses
// trend without review, as they did here before reviews existed, unless an operator rejected them.
import type { AppContext } from '../context.ts';
import { cached, HISTORY_DAYS, TREND_STATUS_HOURS, TREND_TAG_HOURS, TRENDING_STATUSES_KEPT, TRENDING_TAGS_KEPT, TRENDS_TTL_SECONDS } from './instance.ts';
import { tagDailyUse, trendingStatusIds, trendingTags } from '../storage/trends.ts';
import {
  cardDailyUse, cardsByIds, ensurePublishers, publishersCovering, reviewsOf, setReview, trendingLinkCards,
  type PublisherRow, type ReviewKind,
} from '../storage/trend-reviews.ts';

type Ctx = Pick<AppContext, 'db' | 'redis' | 'config'>;

/** Links rank by the accounts that shared them over this period (as tags). */
export const TREND_LINK_HOURS = 48;
/** How many links are ranked (the admin's list), and how many approved ones the public list keeps. */
export const LINK_CANDIDATES = 100;
export const TRENDING_LINKS_KEPT = 40;

export interface History {
  day: string;
  uses: string;
  accounts: string;
}

/** HISTORY_DAYS UTC days, today first, from per-day rows (days without use count 0), as Mastodon's `history`. */
function histories(now: Date, use: { id: string; day: number; uses: number; accounts: number }[]): (id: string) => History[] {
  const today = Math.floor(now.getTime() / 86_400_000) * 86_400;
  const days = Array.from({ length: HISTORY_DAYS }, (_, i) => today - i * 86_400);
  const byDay = new Map(use.map((u) => [`${u.id}/${u.day}`, u]));
  return (id) => days.map((day) => {
    const u = byDay.get(`${id}/${day}`);
    return { day: String(day), uses: String(u?.uses ?? 0), accounts: String(u?.accounts ?? 0) };
  });
}

const historyStart = (now: Date) => new Date((Math.floor(now.getTime() / 86_400_000) - (HISTORY_DAYS - 1)) * 86_400_000);

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

/** The links shared most in the last TREND_LINK_HOURS, whatever their review, with their history; their hosts become publishers. */
export async function linkCandidates(ctx: Ctx, now = new Date()): Promise<LinkCandidate[]> {
  const ranked = await trendingLinkCards(ctx.db, new Date(now.getTime() - TREND_LINK_HOURS * 3_600_000), LINK_CANDIDATES);
  if (ranked.length === 0) return [];
  const cards = await cardsByIds(ctx.db, ranked.map((r) => r.id));
  const present = ranked.filter((r) => cards.has(r.id)).map((r) => ({ id: r.id, url: cards.get(r.id)!.url }));
  await ensurePublishers(ctx.db, [...new Set(present.map((c) => hostOf(c.url)).filter((h): h is string => h !== null))]);
  return linkDetails(ctx, present, now);
}

/** These cards' history and review state. */
export async function linkDetails(ctx: Pick<Ctx, 'db'>, cards: { id: string; url: string }[], now = new Date()): Promise<LinkCandidate[]> {
  const states = await linkStates(ctx, cards);
  const use = await cardDailyUse(ctx.db, cards.map((c) => c.id), historyStart(now));
  const history = histories(now, use.map((u) => ({ ...u, id: u.cardId })));
  return cards.map((c) => ({ id: c.id, history: history(c.id), ...states.get(c.id)! }));
}

/** The public link trends: approved candidates, at most TRENDING_LINKS_KEPT, shared through Redis as the other trends. */
export function trendingLinks(ctx: Ctx, now = new Date()): Promise<{ id: string; history: History[] }[]> {
  return cached(ctx, 'trends:links', TRENDS_TTL_SECONDS, async () =>
    (await linkCandidates(ctx, now)).filter((c) => c.trendable).slice(0, TRENDING_LINKS_KEPT).map(({ id, history }) => ({ id, history })));
}

/** Drops the cached public trends, so that a review shows at once in every process. */
export async function forgetTrends(ctx: Ctx): Promise<void> {
  await ctx.redis.del(...['trends:tags', 'trends:statuses', 'trends:links'].map((n) => `${ctx.config.redisPrefix}instance:${n}`));
}

/** Records an operator's approval or rejection and refreshes the public trends. */
export async function review(ctx: Ctx, kind: ReviewKind, id: string, trendable: boolean): Promise<void> {
  await setReview(ctx.db, kind, id, trendable);
  await forgetTrends(ctx);
}

export interface AdminTagTrend {
  id: string;
  name: string;
  history: History[];
  trendable: boolean;
  requiresReview: boolean;
}

/** Tags with their history and review, for the given ids or (none given) the trending ones, rejected included. */
export async function adminTagTrends(ctx: Ctx, now = new Date(), only?: { id: string; name: string }[]): Promise<AdminTagTrend[]> {
  const tags = only ?? await trendingTags(ctx.db, new Date(now.getTime() - TREND_TAG_HOURS * 3_600_000), TRENDING_TAGS_KEPT, true);
  const ids = tags.map((t) => t.id);
  const reviews = await reviewsOf(ctx.db, 'tag', ids);
  const use = await tagDailyUse(ctx.db, ids, historyStart(now));
  const history = histories(now, use.map((u) => ({ ...u, id: u.tagId })));
  return tags.map((t) => ({
    id: t.id, name: t.name, history: history(t.id),
    trendable: reviews.get(t.id)?.trendable ?? true, requiresReview: !reviews.has(t.id),
  }));
}

/** The trending statuses, rejected included, each with whether it still awaits review. */
export async function adminStatusTrends(ctx: Ctx, now = new Date()): Promise<{ id: string; requiresReview: boolean }[]> {
  const ids = await trendingStatusIds(ctx.db, new Date(now.getTime() - TREND_STATUS_HOURS * 3_600_000), TRENDING_STATUSES_KEPT, true);
  const reviews = await reviewsOf(ctx.db, 'status', ids);
  return ids.map((id) => ({ id, requiresReview: !reviews.has(id) }));
}
