// Trend scores, as Mastodon's Trends::Links, Trends::Statuses and Trends::Tags compute them, written to trend_scores
// by the refreshTrends job every five minutes (jobs/trends.ts) and read by the trends API in one bounded query.
//
// Links and tags: `observed` is the distinct accounts that shared the link or used the tag today (UTC), `expected`
// those of the day before (at least 1). Below THRESHOLD accounts, or under yesterday's level, the score is 0; else
// (observed - expected)² / expected. That is the item's peak while it is higher than the last one or the last one is
// older than the cooldown (two days); the shown score is the peak halved every half-life since it was reached (links
// 8 hours, tags 4), dropped below 1. Statuses: their boosts and favourites (at least THRESHOLD) against 1, halved
// every two hours since the post, dropped below 0.3; only eligible posts (public, not a reply, no content warning,
// not sensitive, author not silenced and not opted out of discovery).
import type { AppContext } from '../context.ts';
import { transaction } from '../storage/db.ts';
import {
  interactedStatusIds, linkUsage, replaceTrendScores, statusTrendFacts, tagDailyUse, tagNamesByIds, tagUsage, trendPage, trendScoreRows, viewerLocale,
  type TrendKind, type TrendScoreRow, type TrendUsage,
} from '../storage/trends.ts';
import { cardsByIds, ensurePublishers, reviewsOf } from '../storage/trend-reviews.ts';
import { histories, historyStart, hostOf, linkStates, type History } from './trend-reviews.ts';

type Ctx = Pick<AppContext, 'db' | 'redis' | 'config'>;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Mastodon's default options of each trend kind. */
export const TREND_OPTIONS = {
  link: { threshold: 5, maxScoreCooldown: 2 * DAY, halflife: 8 * HOUR, decayThreshold: 1 },
  tag: { threshold: 5, maxScoreCooldown: 2 * DAY, halflife: 4 * HOUR, decayThreshold: 1 },
  status: { threshold: 5, halflife: 2 * HOUR, decayThreshold: 0.3 },
} as const;

/** How far back a refresh looks for favourites and boosts of statuses (Mastodon keeps a day of used ids). */
const STATUS_USE_HOURS = 24;

/** The surge of `observed` over `expected`: 0 under the threshold or under the expected level. */
export function surgeScore(observed: number, expected: number, threshold: number): number {
  const base = expected > 0 ? expected : 1;
  if (base > observed || observed < threshold) return 0;
  return (observed - base) ** 2 / base;
}

interface Peak { maxScore: number; maxScoreAt: Date | null }

/**
 * The score shown for a link or tag and the peak it decays from: a new peak when the surge beats the last one or
 * the last one is older than the cooldown.
 */
export function decayedFromPeak(surge: number, previous: Peak | undefined, now: Date, o: { maxScoreCooldown: number; halflife: number; decayThreshold: number }): { score: number } & Peak {
  let maxScore = previous?.maxScore ?? 0;
  let maxScoreAt = previous?.maxScoreAt ?? null;
  if (maxScoreAt === null || maxScoreAt.getTime() < now.getTime() - o.maxScoreCooldown) maxScore = 0;
  if (surge > maxScore) {
    maxScore = surge;
    maxScoreAt = now;
  }
  const decayed = maxScore === 0 || maxScoreAt === null ? 0 : maxScore * 0.5 ** ((now.getTime() - maxScoreAt.getTime()) / o.halflife);
  return { score: decayed >= o.decayThreshold ? decayed : 0, maxScore, maxScoreAt };
}

const dayStart = (at: Date) => new Date(Math.floor(at.getTime() / DAY) * DAY);

/**
 * Rows of a link or tag refresh: every item used today and every row kept from before (scored 0 today if unused).
 * A row is kept while it trends or its peak is within the cooldown (so that a smaller burst does not start anew).
 */
function scoreByPeak(kind: 'link' | 'tag', usage: TrendUsage[], previous: TrendScoreRow[], now: Date, allowedOf: (id: string) => boolean): TrendScoreRow[] {
  const o = TREND_OPTIONS[kind];
  const before = new Map(previous.map((r) => [r.id, r]));
  const used = new Map(usage.map((u) => [u.id, u]));
  const out: TrendScoreRow[] = [];
  for (const id of new Set([...used.keys(), ...before.keys()])) {
    const u = used.get(id);
    const prev = before.get(id);
    const r = decayedFromPeak(surgeScore(u?.observed ?? 0, u?.expected ?? 0, o.threshold), prev, now, o);
    if (r.maxScore === 0 || r.maxScoreAt === null) continue;
    if (r.score === 0 && r.maxScoreAt.getTime() < now.getTime() - o.maxScoreCooldown) continue;
    out.push({ id, ...r, language: u?.language ?? prev?.language ?? null, allowed: allowedOf(id) });
  }
  return out;
}

async function refreshTags(ctx: Ctx, now: Date): Promise<void> {
  const today = dayStart(now);
  const usage = await tagUsage(ctx.db, new Date(today.getTime() - DAY), today);
  const previous = await trendScoreRows(ctx.db, 'tag');
  const ids = [...new Set([...usage.map((u) => u.id), ...previous.map((r) => r.id)])];
  // Tags trend unless an operator rejected them (services/trend-reviews.ts).
  const reviews = await reviewsOf(ctx.db, 'tag', ids);
  const rows = scoreByPeak('tag', usage, previous, now, (id) => reviews.get(id)?.trendable ?? true);
  await transaction(ctx.db, (c) => replaceTrendScores(c, 'tag', rows));
}

async function refreshLinks(ctx: Ctx, now: Date): Promise<void> {
  const today = dayStart(now);
  const usage = await linkUsage(ctx.db, new Date(today.getTime() - DAY), today);
  const previous = await trendScoreRows(ctx.db, 'link');
  const cards = await cardsByIds(ctx.db, [...new Set([...usage.map((u) => u.id), ...previous.map((r) => r.id)])]);
  const present = [...cards.values()].map((c) => ({ id: String(c.id), url: c.url }));
  const rows = scoreByPeak('link', usage.filter((u) => cards.has(u.id)), previous.filter((r) => cards.has(r.id)), now, () => false);
  const trendingIds = new Set(rows.filter((r) => r.score > 0).map((r) => r.id));
  const trending = present.filter((c) => trendingIds.has(c.id));
  // The hosts of trending links become publishers awaiting review (Mastodon's request_review), then links are
  // allowed by their own review or their publisher's.
  await ensurePublishers(ctx.db, [...new Set(trending.map((c) => hostOf(c.url)).filter((h): h is string => h !== null))]);
  const states = await linkStates(ctx, present);
  for (const r of rows) r.allowed = states.get(r.id)?.trendable ?? false;
  await transaction(ctx.db, (c) => replaceTrendScores(c, 'link', rows));
}

async function refreshStatuses(ctx: Ctx, now: Date): Promise<void> {
  const o = TREND_OPTIONS.status;
  const previous = await trendScoreRows(ctx.db, 'status');
  const used = await interactedStatusIds(ctx.db, new Date(now.getTime() - STATUS_USE_HOURS * HOUR));
  const facts = await statusTrendFacts(ctx.db, [...new Set([...used, ...previous.map((r) => r.id)])]);
  const reviews = await reviewsOf(ctx.db, 'status', facts.map((f) => f.id));
  const rows: TrendScoreRow[] = [];
  for (const f of facts) {
    const surge = surgeScore(f.interactions, 1, o.threshold);
    if (surge === 0 || !f.eligible) continue;
    const score = surge * 0.5 ** ((now.getTime() - f.createdAt.getTime()) / o.halflife);
    if (score < o.decayThreshold) continue;
    // Statuses trend unless an operator rejected them.
    rows.push({ id: f.id, score, maxScore: score, maxScoreAt: now, language: f.language, allowed: reviews.get(f.id)?.trendable ?? true });
  }
  await transaction(ctx.db, (c) => replaceTrendScores(c, 'status', rows));
}

/** Scores every kind of trend anew (the refreshTrends job; tests call it directly). */
export async function refreshTrends(ctx: Ctx, now = new Date()): Promise<void> {
  await refreshTags(ctx, now);
  await refreshLinks(ctx, now);
  await refreshStatuses(ctx, now);
}

/**
 * The languages a viewer's trends put first, as Mastodon's content locale: a signed-in viewer's interface locale,
 * else the request's Accept-Language (its preferred language), else English. Only the language part (`pt` of `pt-BR`).
 */
export async function preferredLanguages(ctx: Pick<Ctx, 'db'>, viewerId: string | null, acceptLanguage: string | undefined): Promise<string[]> {
  const locale = (viewerId ? await viewerLocale(ctx.db, viewerId) : null) ?? firstAcceptedLanguage(acceptLanguage) ?? 'en';
  return [locale.split(/[-_]/)[0]!.toLowerCase()];
}

/** The language with the highest q of an Accept-Language header (the first of equals), `*` left out. */
export function firstAcceptedLanguage(header: string | undefined): string | null {
  if (!header) return null;
  let best: { tag: string; q: number } | null = null;
  for (const part of header.slice(0, 500).split(',')) {
    const [tag, ...params] = part.trim().split(';');
    if (!tag || tag === '*' || !/^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(tag)) continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    if (!best || q > best.q) best = { tag, q };
  }
  return best?.tag ?? null;
}

const now = () => new Date();

export interface TagTrend {
  id: string;
  name: string;
  history: History[];
}

/** Tags with their history, in the order given. */
export async function tagsWithHistory(ctx: Pick<Ctx, 'db'>, ids: string[], at = now()): Promise<TagTrend[]> {
  if (ids.length === 0) return [];
  const names = await tagNamesByIds(ctx.db, ids);
  const use = await tagDailyUse(ctx.db, ids, historyStart(at));
  const history = histories(at, use.map((u) => ({ ...u, id: u.tagId })));
  return ids.filter((id) => names.has(id)).map((id) => ({ id, name: names.get(id)!, history: history(id) }));
}

export interface TrendPageParams {
  offset: number;
  limit: number;
  /** Languages put first (links and statuses; tags have none). */
  languages?: string[];
  /** Everything that trends, rejected and unreviewed included (the operators' lists). */
  all?: boolean;
}

/** One page of a kind's trends, ids by score. */
export function trendIds(ctx: Pick<Ctx, 'db'>, kind: TrendKind, p: TrendPageParams): Promise<string[]> {
  return trendPage(ctx.db, kind, { allowedOnly: !p.all, languages: p.languages ?? [], offset: p.offset, limit: p.limit });
}

/** One page of trending tags with their history. */
export async function tagTrends(ctx: Pick<Ctx, 'db'>, p: TrendPageParams): Promise<TagTrend[]> {
  return tagsWithHistory(ctx, await trendIds(ctx, 'tag', p));
}
