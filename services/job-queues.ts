import type { AppContext } from '../context.ts';
import type { Queue } from '../jobs/bullmq.ts';
import { queueLabel } from '../jobs/queues.ts';
import { transaction } from '../storage/db.ts';
import { removeFromOutbox } from '../storage/outbox.ts';
import { isId } from '../storage/ids.ts';
import { logAction, type Actor } from './action-log.ts';

/**
 * The job queues as operators see them (Mastodon's Sidekiq pages): each BullMQ queue's counts, the jobs that failed
 * for good with why, and a failed job retried or removed, each written to the audit log.
 */

type Ctx = Pick<AppContext, 'db' | 'jobs' | 'federationQueue'>;

export interface QueueCounts {
  /** The queue's readable name (`fanout`, `pull`, `media`, `federation`, `federation-ordered-0`…). */
  name: string;
  /** Waiting to run, prioritised ones included. */
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  completed: number;
}

export interface FailedJob {
  queue: string;
  id: string;
  /** The job's kind (`fanOutStatus`, `sendMail`…; Fedify's messages are `message`, with their type). */
  name: string;
  reason: string;
  attemptsMade: number;
  attempts: number;
  failedAt: Date | null;
}

/** Every queue this server's workers take jobs from: fan-out, fetches, transcodes, and Fedify's deliveries and lanes. */
function queues(ctx: Ctx): Queue[] {
  return [ctx.jobs.fanout, ctx.jobs.pull, ctx.jobs.media, ctx.federationQueue.queue, ...ctx.federationQueue.lanes];
}

const queueNamed = (ctx: Ctx, name: string) => queues(ctx).find((q) => queueLabel(q.name) === name) ?? null;

export async function queueCounts(ctx: Ctx): Promise<QueueCounts[]> {
  return Promise.all(queues(ctx).map(async (q) => {
    const c = await q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed', 'completed');
    return {
      name: queueLabel(q.name), waiting: (c.waiting ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0,
      delayed: c.delayed ?? 0, failed: c.failed ?? 0, completed: c.completed ?? 0,
    };
  }));
}

type AnyJob = NonNullable<Awaited<ReturnType<Queue['getJob']>>>;

function describe(queue: string, job: AnyJob): FailedJob {
  const type = (job.data as { type?: unknown } | null)?.type;
  return {
    queue,
    id: job.id ?? '',
    name: job.name === 'message' && typeof type === 'string' ? `message (${type})` : job.name,
    reason: job.failedReason ?? '',
    attemptsMade: job.attemptsMade,
    attempts: job.opts.attempts ?? 1,
    failedAt: job.finishedOn ? new Date(job.finishedOn) : null,
  };
}

/** The jobs that failed for good, newest first, at most `limit` of all queues together. */
export async function recentFailedJobs(ctx: Ctx, limit: number): Promise<FailedJob[]> {
  const each = await Promise.all(queues(ctx).map(async (q) => (await q.getFailed(0, limit - 1)).map((job) => describe(queueLabel(q.name), job))));
  return each.flat().sort((a, b) => (b.failedAt?.getTime() ?? 0) - (a.failedAt?.getTime() ?? 0)).slice(0, limit);
}

/** A failed job of a queue by its name; null when there is no such queue, job, or it is not (or no longer) failed. */
async function failedJob(ctx: Ctx, queueName: string, id: string): Promise<AnyJob | null> {
  const queue = queueNamed(ctx, queueName);
  const job = queue && id !== '' ? await queue.getJob(id) : undefined;
  return job && (await job.isFailed()) ? job : null;
}

const jobTarget = (queue: string, job: AnyJob) => ({ type: 'Job' as const, id: null, name: `${queue} ${job.id} (${job.name})` });

/**
 * Runs a failed job again, with all its attempts (as Sidekiq's retry). The audit log's entry is written in a
 * transaction that commits only once BullMQ has taken the job back. False when there is no such failed job.
 */
export async function retryFailedJob(ctx: Ctx, queueName: string, id: string, by: Actor): Promise<boolean> {
  const job = await failedJob(ctx, queueName, id);
  if (!job) return false;
  await transaction(ctx.db, async (tx) => {
    await logAction(tx, by, 'retry', jobTarget(queueName, job));
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
  });
  return true;
}

/**
 * Removes a failed job for good. One queued from the outbox loses its outbox row in the same transaction as the
 * audit log's entry (else the sweeper would queue it again); the job is removed from Redis before that commits, so a
 * failure to remove it leaves both. False when there is no such failed job.
 */
export async function removeFailedJob(ctx: Ctx, queueName: string, id: string, by: Actor): Promise<boolean> {
  const job = await failedJob(ctx, queueName, id);
  if (!job) return false;
  const outboxId = (job.data as { outboxId?: unknown } | null)?.outboxId;
  await transaction(ctx.db, async (tx) => {
    await logAction(tx, by, 'destroy', jobTarget(queueName, job));
    if (typeof outboxId === 'string' && isId(outboxId)) await removeFromOutbox(tx, outboxId);
    await job.remove();
  });
  return true;
}
