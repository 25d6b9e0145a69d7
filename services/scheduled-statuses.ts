import type { JobQueues } from '../jobs/queues.ts';
import { transaction } from '../storage/db.ts';
import * as scheduled from '../storage/scheduled-statuses.ts';
import { findStatus, type Visibility } from '../storage/statuses.ts';
import { findUserByAccountId } from '../storage/users.ts';
import { notFound, unprocessable } from '../errors.ts';
import { canSee } from './visibility.ts';
import { checkContent, type PostParams, type StatusDeps } from './statuses.ts';
import { checkAttachable } from './attachments.ts';

// Scheduled posts (Mastodon's ScheduledStatus), applied by the author's actor (actors/account.ts). The row in
// PostgreSQL is the truth; a BullMQ delayed job publishes it at its time through the author's actor (`postStatus`
// with `scheduledStatusId`), and the worker's sweeper queues any due row whose job was lost.

/** `scheduled_at` as sent: null when empty (post now); a 422 when it is not a date. */
export function parseScheduledAt(value: unknown): Date | null {
  if (value === undefined || value === null || value === '') return null;
  const at = typeof value === 'string' && value.length <= 64 ? new Date(value) : new Date(NaN);
  if (Number.isNaN(at.getTime())) throw unprocessable('Validation failed: Scheduled at is not a valid date');
  return at;
}

const tooSoon = () => unprocessable('Validation failed: Scheduled at The scheduled date must be in the future');

function checkLead(deps: StatusDeps, at: Date): void {
  if (at.getTime() < Date.now() + deps.config.scheduledStatusMinDelaySeconds * 1000) throw tooSoon();
}

function limitError(problem: scheduled.ScheduleProblem) {
  return problem === 'total'
    ? unprocessable(`Validation failed: You have exceeded the limit of ${scheduled.SCHEDULED_TOTAL_LIMIT} scheduled posts`)
    : unprocessable(`Validation failed: You have exceeded the limit of ${scheduled.SCHEDULED_DAILY_LIMIT} scheduled posts for today`);
}

/** The job that publishes a scheduled status: one per (status, time), so moving it makes another and the old one finds nothing due. */
export function publishJobId(id: string, at: Date): string {
  return `scheduled-${id}-${at.getTime()}`;
}

/** Queues the delayed publishing job. Queueing the same (status, time) twice (scheduling and the sweeper) runs it once. */
export async function queuePublish(jobs: JobQueues, id: string, at: Date): Promise<void> {
  await jobs.fanout.add('publishScheduledStatus', { kind: 'publishScheduledStatus', scheduledStatusId: id }, {
    jobId: publishJobId(id, at),
    delay: Math.max(0, at.getTime() - Date.now()),
    attempts: 10,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: true,
    // A job that failed for good is forgotten, so the sweeper may queue the still-due row again.
    removeOnFail: true,
  });
}

async function cancelPublish(jobs: JobQueues, id: string, at: Date): Promise<void> {
  // An active job cannot be removed: it finds the row moved or gone and does nothing.
  await jobs.fanout.remove(publishJobId(id, at)).catch(() => 0);
}

/**
 * Schedules a post (inside the author's actor). It is checked now as it would be when posted (text, length,
 * reply, media), so that what the author scheduled is what gets published; its media are held for it.
 */
export async function scheduleStatus(deps: StatusDeps, accountId: string, p: PostParams, at: Date): Promise<scheduled.ScheduledStatusRow> {
  const { db, config } = deps;
  checkLead(deps, at);
  const mediaIds = [...new Set(p.mediaIds)];
  // The checks of posting, the poll's included (it is made when the post is, and lasts from then).
  checkContent(config, p, mediaIds);
  await checkAttachable(db, accountId, mediaIds);
  if (p.inReplyToId) {
    const parent = await findStatus(db, p.inReplyToId);
    if (!parent || parent.reblog_of_id || !(await canSee(db, accountId, parent))) throw notFound();
  }
  const visibility = p.visibility ?? ((await findUserByAccountId(db, accountId))?.default_privacy as Visibility | undefined) ?? 'public';
  const params: scheduled.ScheduledParams = {
    text: p.text, spoilerText: p.spoilerText, sensitive: p.sensitive, visibility, language: p.language,
    inReplyToId: p.inReplyToId, mediaIds, applicationId: p.applicationId, poll: p.poll ?? null,
    quotedStatusId: p.quotedStatusId ?? null, quotePolicy: p.quotePolicy ?? null,
  };
  const { row, problem, media } = await transaction(db, async (tx) => {
    const result = await scheduled.insertScheduledStatus(tx, accountId, at, params);
    // Media taken by another post meanwhile fail this one, whole.
    if (!result.media) throw unprocessable('Validation failed: media_ids names media already attached to a status');
    return result;
  });
  if (problem || !media || !row) throw limitError(problem);
  // If Redis fails us here the row stays, and the sweeper publishes it when it is due.
  await queuePublish(deps.jobs, row.id, row.scheduled_at).catch(() => {});
  return row;
}

/** PUT /api/v1/scheduled_statuses/:id: moves it, and its job with it. */
export async function rescheduleStatus(deps: StatusDeps, accountId: string, id: string, at: Date): Promise<scheduled.ScheduledStatusRow> {
  const before = await scheduled.findScheduledStatus(deps.db, accountId, id);
  if (!before) throw notFound();
  checkLead(deps, at);
  const { row, problem } = await transaction(deps.db, (tx) => scheduled.rescheduleStatus(tx, accountId, id, at));
  if (problem) throw limitError(problem);
  if (!row) throw notFound();
  await queuePublish(deps.jobs, row.id, row.scheduled_at).catch(() => {});
  if (before.scheduled_at.getTime() !== row.scheduled_at.getTime()) await cancelPublish(deps.jobs, id, before.scheduled_at);
  return row;
}

/** DELETE /api/v1/scheduled_statuses/:id: the row goes, its media are let go, its job is removed. */
export async function unscheduleStatus(deps: StatusDeps, accountId: string, id: string): Promise<void> {
  const before = await scheduled.findScheduledStatus(deps.db, accountId, id);
  if (!before || !(await scheduled.deleteScheduledStatus(deps.db, accountId, id))) throw notFound();
  await cancelPublish(deps.jobs, id, before.scheduled_at);
}

/** Post parameters that publish a scheduled status (through `postStatus`, which takes the row in its transaction). */
export function publishParams(row: scheduled.ScheduledStatusRow): PostParams {
  const p = row.params;
  return {
    text: p.text, spoilerText: p.spoilerText, sensitive: p.sensitive, visibility: p.visibility, language: p.language,
    inReplyToId: p.inReplyToId, mediaIds: p.mediaIds, idempotencyKey: null, applicationId: p.applicationId,
    scheduledStatusId: row.id, poll: p.poll ?? null, quotedStatusId: p.quotedStatusId ?? null, quotePolicy: p.quotePolicy ?? null,
  };
}

/** The worker's sweep: due rows are (re)queued; a job still waiting under the same id makes this a no-op. */
export async function sweepDueScheduledStatuses(deps: Pick<StatusDeps, 'db' | 'jobs'>): Promise<number> {
  const due = await scheduled.dueScheduledStatuses(deps.db, 500);
  for (const r of due) await queuePublish(deps.jobs, r.id, r.scheduled_at);
  return due.length;
}
