import { Queue } from './bullmq.ts';
import { redisConnection, type RedisClient, type RedisTarget } from '../storage/redis.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import type { Delivery } from '../services/deliveries.ts';
import type { Mail } from '../services/mail.ts';
import type { WebhookDeliveryJob } from './webhooks.ts';

/**
 * BullMQ's name for a queue: its readable name in braces. The braces are a Redis Cluster hash tag, so all of a
 * queue's keys (`<prefix>bull:{fanout}:…`) hash to one slot, which BullMQ's scripts need on a cluster; each queue its
 * own tag, so queues spread over the masters. The same names on a single Redis, where braces mean nothing.
 */
export const bullQueueName = (name: string): string => `{${name}}`;

/** A queue's readable name (metrics, admin pages, logs): BullMQ's name without the hash tag's braces. */
export const queueLabel = (bullName: string): string => bullName.replace(/^\{(.*)\}$/, '$1');

export const FANOUT_QUEUE = bullQueueName('fanout');
/**
 * Work that fetches from other sites and may wait on them (a link's preview card, a remote thread being filled in: up to 10 s a fetch), as on
 * Mastodon's `pull` queue: a queue of its own with few workers of its own, so that slow sites never hold the worker
 * slots that fan-out and deliveries need. On one queue with fan-out, a burst of posts linking to a page whose host
 * did not answer took all 16 slots for seconds, and every post's fan-out waited behind them.
 */
export const PULL_QUEUE = bullQueueName('pull');
/**
 * Transcodes (ffmpeg for video, audio and animated images, uploaded or other servers' that would not play
 * everywhere; heif-convert for HEIC photos): a queue of their own whose workers take MEDIA_TRANSCODE_CONCURRENCY at
 * once, so a minute of 4K video waits its turn there rather than holding a fan-out slot, and several never share the
 * cores that posting, reading and fan-out need.
 */
export const MEDIA_QUEUE = bullQueueName('media');

export type FanoutJob =
  /** `edit`: the status was edited; streams that had it are told (`status.update`), feeds stay as they are. */
  | { kind: 'fanOutStatus'; outboxId: string; statusId: string; edit?: boolean }
  | { kind: 'removeStatus'; outboxId: string; statusId: string; authorId: string; mentionedIds: string[] }
  /** A batch of other servers' posts purged past the retention period (status ids by author id), out of feeds and streams. */
  | { kind: 'removePurgedStatuses'; outboxId: string; byAuthor: Record<string, string[]> }
  | ({ kind: 'deliver'; outboxId: string } & Delivery)
  | { kind: 'processMedia'; outboxId: string; mediaId: string }
  /** The same processing for uploads that need ffmpeg or heif-convert (services/media.ts), on the media queue. */
  | { kind: 'transcodeMedia'; outboxId: string; mediaId: string }
  | { kind: 'webPush'; outboxId: string; subscriptionId: string; notificationId: string }
  | { kind: 'domainBlock'; outboxId: string; domain: string; createdAt: string }
  /** A poll's end (services/polls.ts), delayed until its `expires_at`. */
  | { kind: 'endPoll'; outboxId: string; pollId: string; runAt: string }
  /** An operator's announcement published at its `scheduled_at` (services/announcements.ts). */
  | { kind: 'publishAnnouncement'; outboxId: string; announcementId: string; scheduledAt: string; runAt: string }
  /** One mail (services/mail.ts, sent by jobs/mail.ts), retried as MAIL_RETRIES says. */
  | { kind: 'sendMail'; outboxId: string; mail: Mail }
  /** Publishes a scheduled status (jobs/scheduled-statuses.ts), delayed until its time; not from the outbox. */
  | { kind: 'publishScheduledStatus'; outboxId?: undefined; scheduledStatusId: string }
  | { kind: 'cleanMedia'; outboxId?: undefined }
  /** An activity about collections that our inbox took and verified (federation/collections.ts), handled off the request. */
  | { kind: 'receiveCollectionActivity'; outboxId: string; senderId: string; activity: Record<string, unknown> }
  /** Trend scores computed anew (jobs/trends.ts), every five minutes as Mastodon's RefreshScheduler. */
  | { kind: 'refreshTrends'; outboxId?: undefined }
  /** The daily notification digests due (services/notification-emails.ts), queued as mail; hourly. */
  | { kind: 'queueNotificationDigests'; outboxId?: undefined }
  /** A status's link preview card (jobs/link-cards.ts), queued with a status that has a link. */
  | { kind: 'fetchLinkCard'; outboxId: string; statusId: string }
  /** An account's profile links checked for rel="me" (jobs/profile-links.ts), queued when its fields are set. */
  | { kind: 'verifyAccountLinks'; outboxId: string; accountId: string }
  /** One account's annual report of one year (jobs/annual-reports.ts), queued with the request's row. */
  | { kind: 'generateAnnualReport'; outboxId: string; accountId: string; year: number }
  /** A remote quote's stamp checked again after it could not be fetched (jobs/quote-stamps.ts), delayed by `runAt`. */
  | { kind: 'verifyQuoteStamp'; outboxId: string; statusId: string; stampUri: string; attempt?: number; runAt?: string }
  /** An archive of one's posts and media (jobs/account-archive.ts), queued with the request's row. */
  | { kind: 'buildAccountArchive'; outboxId: string; archiveId: string }
  /** Removal of archives past their week (jobs/account-archive.ts), delayed until one's `expires_at`. */
  | { kind: 'expireAccountArchives'; outboxId: string; runAt: string }
  /** An account moved (jobs/account-move.ts): its Move sent (`deliver`), then its local followers a batch at a time. */
  | { kind: 'accountMove'; outboxId: string; accountId: string; targetId: string; after?: string }
  /** One run of an account's deletion (jobs/account-deletion.ts): a few batches, then it queues its next run. */
  | { kind: 'deleteAccount'; outboxId: string; accountId: string; step: string; after?: string; keepReports?: boolean }
  /** One run of a CSV import (jobs/imports.ts): a batch of its rows, queueing the next run while rows are left. */
  | { kind: 'processImport'; outboxId: string; importId: string }
  /** A remote thread's missing parents and replies (jobs/thread-backfill.ts), queued when someone opens it. */
  | { kind: 'fetchThread'; outboxId: string; statusId: string; refreshId: string }
  /** A remote status's attachments copied to our file host (services/remote-media.ts), queued when it arrives. */
  | { kind: 'cacheRemoteMedia'; outboxId: string; statusId: string }
  /**
   * Another server's video or audio, copied here, converted to play everywhere (services/remote-media.ts
   * convertAttachment), on the media queue; queued with the copy when it would not play everywhere as sent.
   */
  | { kind: 'transcodeRemoteMedia'; outboxId: string; mediaId: string }
  /** A remote account's avatar and header copied to our file host, queued when its actor is stored. */
  | { kind: 'cacheAccountImages'; outboxId: string; accountId: string }
  /** One event POSTed to one operators' webhook (jobs/webhooks.ts), queued in the transaction of the change. */
  | ({ kind: 'deliverWebhook'; outboxId: string } & WebhookDeliveryJob)
  /** Copies of remote media past MEDIA_CACHE_RETENTION_DAYS removed, hourly. */
  | { kind: 'pruneMediaCache'; outboxId?: undefined }
  /** Other servers' posts nobody here interacted with, past CONTENT_CACHE_RETENTION_DAYS, removed in batches, hourly. */
  | { kind: 'pruneRemoteStatuses'; outboxId?: undefined }
  /** File deletions held while a backup ran (storage/file-deletions.ts) carried out once none runs, every ten minutes. */
  | { kind: 'drainFileDeletions'; outboxId?: undefined }
  /** Old posts deleted by their authors' cleanup policies (services/statuses-cleanup.ts), every ten minutes. */
  | { kind: 'cleanStatuses'; outboxId?: undefined };

/** A Redis connection (or Cluster client) of BullMQ's own (workers block on theirs). */
export function bullConnection(target: string | RedisTarget): RedisClient {
  return redisConnection(target, { maxRetriesPerRequest: null });
}

/**
 * A connection for adding jobs from requests: while Redis is away an add fails at once rather than waiting to run
 * after the client has gone (a job left out is queued again from its outbox row). Workers keep bullConnection.
 */
export function producerConnection(target: string | RedisTarget): RedisClient {
  // On a cluster, enableOfflineQueue applies to the Cluster client and the rest to each node's connection.
  return redisConnection(target, {
    enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, commandTimeout: 5000,
  });
}

/**
 * Mail is retried for longer than the rest: an SMTP server that is down or greylisting may take a while. 10 attempts,
 * 10 s doubling: the last one about 85 minutes after the first.
 */
export const MAIL_RETRIES = { attempts: 10, backoff: { type: 'exponential' as const, delay: 10_000 } };

/**
 * Webhook deliveries are retried for hours, as Mastodon's are (16 Sidekiq retries): a receiver being redeployed
 * or down for a while still gets its events. 15 attempts, 1 s doubling: the last one about four and a half hours
 * (16,383 s) after the first.
 */
export const WEBHOOK_RETRIES = { attempts: 15, backoff: { type: 'exponential' as const, delay: 1000 } };

/** The kinds of job that go on the pull queue (PULL_QUEUE) and the media queue (MEDIA_QUEUE); every other kind goes on the fan-out queue. */
const PULL_KINDS = new Set(['deliverWebhook', 'fetchLinkCard', 'verifyAccountLinks', 'fetchThread', 'cacheRemoteMedia', 'cacheAccountImages']);
const MEDIA_KINDS = new Set(['transcodeMedia', 'transcodeRemoteMedia']);
export const queueOfKind = (kind: string): 'fanout' | 'pull' | 'media' => (PULL_KINDS.has(kind) ? 'pull' : MEDIA_KINDS.has(kind) ? 'media' : 'fanout');

/** An outbox row's job: named after its kind, with the row's id as job id (see `enqueue`). */
function outboxJob(row: OutboxRow) {
  const data = { ...row.payload, kind: row.kind, outboxId: row.id } as FanoutJob;
  const runAt = typeof row.payload.runAt === 'string' ? Date.parse(row.payload.runAt) : NaN;
  return {
    name: row.kind,
    data,
    opts: {
      jobId: `outbox-${row.id}`,
      ...(Number.isFinite(runAt) && runAt > Date.now() ? { delay: runAt - Date.now() } : {}),
      ...(row.kind === 'sendMail' ? MAIL_RETRIES : row.kind === 'deliverWebhook' ? WEBHOOK_RETRIES : { attempts: 10, backoff: { type: 'exponential' as const, delay: 1000 } }),
      removeOnComplete: true,
      removeOnFail: 1000,
    },
  };
}

/** The queues this process puts work on. Job payloads carry ids, never rows. */
export class JobQueues {
  readonly fanout: Queue;
  /** Fetches from other sites (PULL_QUEUE). */
  readonly pull: Queue;
  /** Transcodes (MEDIA_QUEUE). */
  readonly media: Queue;
  /**
   * The connection jobs are added on. Redis counts as back only once it is ready too (server.ts): a post answered as
   * made while it still reconnects would leave its job to the outbox sweeper's next pass, half a minute on.
   */
  readonly connection: RedisClient;

  constructor(target: string | RedisTarget, prefix: string) {
    this.connection = producerConnection(target);
    this.fanout = new Queue(FANOUT_QUEUE, { connection: this.connection, prefix: `${prefix}bull` });
    this.pull = new Queue(PULL_QUEUE, { connection: this.connection, prefix: `${prefix}bull` });
    this.media = new Queue(MEDIA_QUEUE, { connection: this.connection, prefix: `${prefix}bull` });
    // Redis away: adds fail (and are swept again from the outbox); it reconnects
    for (const queue of [this.fanout, this.pull, this.media]) queue.on('error', () => {});
  }

  /**
   * Queues an outbox row's job; its id is the outbox row's, so queueing twice (sweeper and poster) runs it once.
   * A payload's `runAt` (an ISO date, storage/outbox.ts) makes it a delayed job, kept in Redis until then: one
   * whose time passed while no worker ran is run when one starts.
   */
  async enqueue(row: OutboxRow): Promise<void> {
    const job = outboxJob(row);
    await this[queueOfKind(row.kind)].add(job.name, job.data, job.opts);
  }

  /** Queues several outbox rows' jobs, each queue's in one round trip (a post's fan-out, delivery and link card). */
  async enqueueMany(rows: OutboxRow[]): Promise<void> {
    if (rows.length <= 1) return rows[0] ? this.enqueue(rows[0]) : undefined;
    const pull = rows.filter((r) => queueOfKind(r.kind) === 'pull');
    const media = rows.filter((r) => queueOfKind(r.kind) === 'media');
    const fanout = pull.length === 0 && media.length === 0 ? rows : rows.filter((r) => queueOfKind(r.kind) === 'fanout');
    // One job is added alone: addBulk wraps even one in MULTI/EXEC.
    const add = (queue: Queue, some: OutboxRow[]) => (some.length === 1 ? this.enqueue(some[0]!) : some.length > 1 ? queue.addBulk(some.map(outboxJob)) : null);
    await Promise.all([add(this.fanout, fanout), add(this.pull, pull), add(this.media, media)]);
  }

  /** The repeating jobs: the clean-up of abandoned uploads, of old copies of remote media and of old remote posts, and the notification digests due, hourly; trend scores, every five minutes; posts past their authors' cleanup policies and file deletions held for a backup, every ten minutes. One schedule, however many processes ask. */
  async scheduleRepeating(): Promise<void> {
    await this.fanout.upsertJobScheduler('clean-media', { every: 3_600_000 }, { name: 'cleanMedia', data: { kind: 'cleanMedia' } });
    await this.fanout.upsertJobScheduler('refresh-trends', { every: 300_000 }, { name: 'refreshTrends', data: { kind: 'refreshTrends' } });
    await this.fanout.upsertJobScheduler('prune-media-cache', { every: 3_600_000 }, { name: 'pruneMediaCache', data: { kind: 'pruneMediaCache' } });
    await this.fanout.upsertJobScheduler('prune-remote-statuses', { every: 3_600_000 }, { name: 'pruneRemoteStatuses', data: { kind: 'pruneRemoteStatuses' } });
    await this.fanout.upsertJobScheduler('notification-digests', { every: 3_600_000 }, { name: 'queueNotificationDigests', data: { kind: 'queueNotificationDigests' } });
    await this.fanout.upsertJobScheduler('clean-statuses', { every: 600_000 }, { name: 'cleanStatuses', data: { kind: 'cleanStatuses' } });
    await this.fanout.upsertJobScheduler('drain-file-deletions', { every: 600_000 }, { name: 'drainFileDeletions', data: { kind: 'drainFileDeletions' } });
  }

  async close(): Promise<void> {
    await Promise.all([this.fanout.close(), this.pull.close(), this.media.close()]);
    this.connection.disconnect();
  }
}
