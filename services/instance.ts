// What the instance endpoints show beyond settings: peers, weekly activity, trends and the about page, each
// computed by a bounded query and kept in Redis for a few minutes so that every process shares one computation.
import { createHash } from 'node:crypto';
import type { AppContext } from '../context.ts';
import { peerDomains, settingUpdatedAt, weeklyActivity } from '../storage/instance.ts';
import { tagDailyUse, trendingStatusIds, trendingTags } from '../storage/trends.ts';
import { findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { pendingAccountIds } from '../storage/users.ts';
import { escapeHtml, sanitizeRemoteHtml } from '../text/render.ts';

type Ctx = Pick<AppContext, 'db' | 'redis' | 'config'>;

export const PEERS_TTL_SECONDS = 300;
export const ACTIVITY_TTL_SECONDS = 900;
export const TRENDS_TTL_SECONDS = 300;
/** Tags rank by use over this period; their history covers HISTORY_DAYS. */
export const TREND_TAG_HOURS = 48;
export const HISTORY_DAYS = 7;
/** Statuses trend by favourites and reblogs received within a day of being posted. */
export const TREND_STATUS_HOURS = 24;
/** How many trending tags and statuses are kept (the API pages through them with offset and limit). */
export const TRENDING_TAGS_KEPT = 40;
export const TRENDING_STATUSES_KEPT = 80;
export const ACTIVITY_WEEKS = 12;

const inFlight = new Map<string, Promise<unknown>>();

/** A value from Redis, or computed once (per process at a time), stored for `ttl` seconds and returned. */
export async function cached<T>(ctx: Ctx, name: string, ttl: number, compute: () => Promise<T>): Promise<T> {
  const key = `${ctx.config.redisPrefix}instance:${name}`;
  const hit = await ctx.redis.get(key);
  if (hit !== null) return JSON.parse(hit) as T;
  const running = inFlight.get(key);
  if (running) return running as Promise<T>;
  const work = (async () => {
    const value = await compute();
    await ctx.redis.set(key, JSON.stringify(value), 'EX', ttl);
    return value;
  })();
  inFlight.set(key, work);
  try {
    return await work;
  } finally {
    inFlight.delete(key);
  }
}

/** The cache keys this module writes, for tests and operators that want fresh figures at once. */
export const instanceCacheKeys = (redisPrefix: string) =>
  ['peers', 'activity', 'trends:tags', 'trends:statuses', 'trends:links'].map((name) => `${redisPrefix}instance:${name}`);

export function peers(ctx: Ctx): Promise<string[]> {
  return cached(ctx, 'peers', PEERS_TTL_SECONDS, () => peerDomains(ctx.db));
}

export interface ActivityWeek {
  week: string;
  statuses: string;
  logins: string;
  registrations: string;
}

/** Monday 00:00 UTC of the week `at` falls in (Mastodon's weeks are ISO weeks). */
export function weekStart(at: Date): Date {
  const day = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * 86_400_000);
}

/** The last twelve weeks, this one first, as Mastodon's /api/v1/instance/activity has them (numbers as strings). */
export function activity(ctx: Ctx, now = new Date()): Promise<ActivityWeek[]> {
  return cached(ctx, 'activity', ACTIVITY_TTL_SECONDS, async () => {
    const thisWeek = weekStart(now);
    const since = new Date(thisWeek.getTime() - (ACTIVITY_WEEKS - 1) * 7 * 86_400_000);
    const counts = await weeklyActivity(ctx.db, since);
    return Array.from({ length: ACTIVITY_WEEKS }, (_, i) => {
      const index = ACTIVITY_WEEKS - 1 - i;
      const start = new Date(since.getTime() + index * 7 * 86_400_000);
      return {
        week: String(start.getTime() / 1000),
        statuses: String(counts.statuses.get(index) ?? 0),
        logins: String(counts.logins.get(index) ?? 0),
        registrations: String(counts.registrations.get(index) ?? 0),
      };
    });
  });
}

export interface TrendingTag {
  id: string;
  name: string;
  /** HISTORY_DAYS days, today (UTC) first, as Mastodon's Tag history. */
  history: { day: string; uses: string; accounts: string }[];
}

export function trendingTagsWithHistory(ctx: Ctx, now = new Date()): Promise<TrendingTag[]> {
  return cached(ctx, 'trends:tags', TRENDS_TTL_SECONDS, async () => {
    const tags = await trendingTags(ctx.db, new Date(now.getTime() - TREND_TAG_HOURS * 3_600_000), TRENDING_TAGS_KEPT);
    const today = Math.floor(now.getTime() / 86_400_000) * 86_400;
    const days = Array.from({ length: HISTORY_DAYS }, (_, i) => today - i * 86_400);
    const use = await tagDailyUse(ctx.db, tags.map((t) => t.id), new Date(days.at(-1)! * 1000));
    const byTagDay = new Map(use.map((u) => [`${u.tagId}/${u.day}`, u]));
    return tags.map((t) => ({
      id: t.id,
      name: t.name,
      history: days.map((day) => {
        const u = byTagDay.get(`${t.id}/${day}`);
        return { day: String(day), uses: String(u?.uses ?? 0), accounts: String(u?.accounts ?? 0) };
      }),
    }));
  });
}

export function trendingStatuses(ctx: Ctx, now = new Date()): Promise<string[]> {
  return cached(ctx, 'trends:statuses', TRENDS_TTL_SECONDS, () =>
    trendingStatusIds(ctx.db, new Date(now.getTime() - TREND_STATUS_HOURS * 3_600_000), TRENDING_STATUSES_KEPT));
}

/** The instance's contact account, unless it is missing or still waits for approval (shown to nobody then). */
export async function contactAccount(ctx: Pick<AppContext, 'db' | 'config'>): Promise<AccountRow | null> {
  if (!ctx.config.contactUsername) return null;
  const account = await findAccountByUsername(ctx.db, ctx.config.contactUsername, null);
  if (!account || (await pendingAccountIds(ctx.db, [account.id])).has(account.id)) return null;
  return account;
}

/** HTML an operator wrote in a setting, reduced to what Mastodon keeps of remote HTML (no scripts, styles, images). */
export const operatorHtml = (html: string): string => sanitizeRemoteHtml(html);

/** The about page: INSTANCE_EXTENDED_DESCRIPTION, or the description as one paragraph. */
export function extendedDescriptionContent(config: AppContext['config']): string {
  return config.instanceExtendedDescription
    ? operatorHtml(config.instanceExtendedDescription)
    : `<p>${escapeHtml(config.instanceDescription)}</p>`;
}

const describedAt = new WeakMap<object, Map<string, Promise<Date>>>();

/** The about page and when its text last changed (recorded in PostgreSQL, so every process agrees). */
export async function extendedDescription(ctx: Pick<AppContext, 'db' | 'config'>): Promise<{ content: string; updatedAt: Date }> {
  const content = extendedDescriptionContent(ctx.config);
  const digest = createHash('sha256').update(content).digest('hex');
  let byText = describedAt.get(ctx.db);
  if (!byText) describedAt.set(ctx.db, (byText = new Map()));
  let updatedAt = byText.get(digest);
  if (!updatedAt) {
    if (byText.size > 100) byText.clear();
    updatedAt = settingUpdatedAt(ctx.db, 'extended_description', digest);
    byText.set(digest, updatedAt);
    updatedAt.catch(() => byText.delete(digest));
  }
  return { content, updatedAt: await updatedAt };
}
