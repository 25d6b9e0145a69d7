import type { AppContext } from '../context.ts';
import { transaction, type Queryable } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import {
  claimAnnualReport, commonlyInteractedWith, findAnnualReport, hasStatusesInYear, monthlyCounts, mostRebloggedAccounts,
  mostUsedApps, percentiles, storeAnnualReport, topHashtags, topStatuses, yearCounts, type YearCounts,
} from '../storage/annual-reports.ts';

/**
 * Annual reports ("Wrapstodon") as Mastodon 4.3+ has them. The report is computed by a job
 * (jobs/annual-reports.ts) from the account's own statuses and follows of the year and stored once; it is never
 * computed again.
 *
 * Which years may be asked for (`reportableYear`, the one place this rule lives): as on Mastodon, the current year
 * during its "campaign", from 10 December to the end of the year (UTC); unlike Mastodon, also any earlier year
 * (from 2016, the first Mastodon year). Either way the account must have posted in that year (Mastodon's sources
 * are all eligible for an account with statuses). A report generated stays available whatever the date.
 */

/** The data schema the reports follow: Mastodon's first (4.3), whose sections are all computed here. */
export const ANNUAL_REPORT_SCHEMA = 1;
/** A request whose job has not stored a report after this long (it failed every attempt) may be made again. */
const STALE_REQUEST_MS = 3_600_000;
const FIRST_YEAR = 2016;

/** Mastodon: average number of posts (replies and boosts included) by an active user in a year (2023). */
const AVERAGE_PER_YEAR = 113;
const SCORE_MULTIPLIER = 2;
const SCORE_REDUCER = 0.1;

export type AnnualReportState = 'available' | 'generating' | 'eligible' | 'ineligible';
export type Archetype = 'lurker' | 'booster' | 'pollster' | 'replier' | 'oracle';

let clock: () => Date = () => new Date();

/** For tests: the time the campaign rule reads (undefined: the real time again). */
export function setAnnualReportClock(now: (() => Date) | undefined): void {
  clock = now ?? (() => new Date());
}

/** Mastodon's current campaign: this year from 10 to 31 December (UTC), else none. */
export function currentCampaign(now: Date = clock()): number | null {
  return now.getUTCMonth() === 11 && now.getUTCDate() >= 10 ? now.getUTCFullYear() : null;
}

/** Whether a report of `year` may be asked for at `now` (before asking whether the account posted that year). */
export function reportableYear(year: number, now: Date = clock()): boolean {
  if (!Number.isInteger(year)) return false;
  return year === currentCampaign(now) || (year >= FIRST_YEAR && year < now.getUTCFullYear());
}

/** Mastodon's archetype rules, in its order. */
export function archetypeOf(c: Pick<YearCounts, 'reblogs' | 'replies' | 'standalone' | 'polls'>): Archetype {
  if (c.standalone + c.replies + c.reblogs < AVERAGE_PER_YEAR) return 'lurker';
  if (c.reblogs > c.standalone * SCORE_MULTIPLIER) return 'booster';
  if (c.polls > c.standalone * SCORE_REDUCER) return 'pollster'; // standalone posts include those with polls
  if (c.replies > c.standalone * SCORE_MULTIPLIER) return 'replier';
  return 'oracle';
}

async function eligible(db: Queryable, accountId: string, year: number): Promise<boolean> {
  return reportableYear(year) && (await hasStatusesInYear(db, accountId, year));
}

export async function annualReportState(db: Queryable, accountId: string, year: number): Promise<AnnualReportState> {
  const row = await findAnnualReport(db, accountId, year);
  if (row?.data) return 'available';
  if (row && Date.now() - row.requested_at.getTime() < STALE_REQUEST_MS) return 'generating';
  return (await eligible(db, accountId, year)) ? 'eligible' : 'ineligible';
}

/**
 * Asks for a report: records the request and queues its job (through the outbox, in the same transaction) when the
 * year is eligible and no report is there or being made. Answers the state after the call.
 */
export async function requestAnnualReport(ctx: AppContext, accountId: string, year: number): Promise<AnnualReportState> {
  const state = await annualReportState(ctx.db, accountId, year);
  if (state !== 'eligible') return state;
  const row = await transaction(ctx.db, async (tx) => {
    if (!(await claimAnnualReport(tx, accountId, year, STALE_REQUEST_MS))) return null;
    return addToOutbox(tx, 'generateAnnualReport', { accountId, year });
  });
  // Queued after the commit; if Redis is away now, the outbox sweeper queues it later.
  if (row) await ctx.jobs.enqueue(row).catch(() => {});
  return 'generating';
}

/** Computes the report's data (Mastodon's schema 1 sections). Ids are strings, as the API sends ids. */
export async function computeAnnualReport(db: Queryable, accountId: string, year: number): Promise<Record<string, unknown>> {
  const counts = await yearCounts(db, accountId, year);
  return {
    archetype: archetypeOf(counts),
    time_series: await monthlyCounts(db, accountId, year),
    top_hashtags: await topHashtags(db, accountId, year, 40),
    top_statuses: await topStatuses(db, accountId, year),
    most_used_apps: await mostUsedApps(db, accountId, year, 10),
    commonly_interacted_with_accounts: await commonlyInteractedWith(db, accountId, year, 40),
    most_reblogged_accounts: await mostRebloggedAccounts(db, accountId, year, 10),
    percentiles: await percentiles(db, accountId, year),
    type_distribution: { total: counts.total, reblogs: counts.reblogs, replies: counts.replies, standalone: counts.standalone },
  };
}

/** The job: computes and stores the report, unless it is there already (a job run twice stores it once). */
export async function generateAnnualReport(db: Queryable, accountId: string, year: number): Promise<void> {
  const row = await findAnnualReport(db, accountId, year);
  if (!row || row.data) return;
  const data = await computeAnnualReport(db, accountId, year);
  await storeAnnualReport(db, accountId, year, ANNUAL_REPORT_SCHEMA, data);
}

/** The accounts and statuses a report names, for the `accounts` and `statuses` of WrappedAnnualReports. */
export function namedInReport(data: Record<string, unknown> | null): { accountIds: string[]; statusIds: string[] } {
  if (!data) return { accountIds: [], statusIds: [] };
  const accounts = [data.commonly_interacted_with_accounts, data.most_reblogged_accounts]
    .flatMap((list) => (Array.isArray(list) ? list : []))
    .map((entry: { account_id?: unknown }) => entry.account_id)
    .filter((id): id is string => typeof id === 'string');
  const top = (data.top_statuses ?? {}) as Record<string, unknown>;
  const statuses = Object.values(top).filter((id): id is string => typeof id === 'string');
  return { accountIds: [...new Set(accounts)], statusIds: [...new Set(statuses)] };
}
