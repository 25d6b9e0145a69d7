import { UnrecoverableError, Worker, type Job } from './bullmq.ts';
import { countJobOutcomes } from '../services/metrics.ts';
import { pino } from 'pino';
import type { AppContext } from '../context.ts';
import { FANOUT_QUEUE, MEDIA_QUEUE, PULL_QUEUE, bullConnection, queueLabel, type FanoutJob } from './queues.ts';
import { fanOutStatus, removePurgedFromFeeds, removeStatusFromFeeds } from './fanout.ts';
import { pendingOutbox, OutboxRemover, removeFromOutbox } from '../storage/outbox.ts';
import { JOB_QUERY_TIMEOUT_MS, withStatementTimeout } from '../storage/db.ts';
import { processMedia, removeAbandonedMedia } from '../services/media.ts';
import { applyDomainBlock } from './domain-blocks.ts';
import { refusedDelivery } from '../federation/domain-policy.ts';
import { publishScheduledStatus } from './scheduled-statuses.ts';
import { sweepDueScheduledStatuses } from '../services/scheduled-statuses.ts';
import { endPoll } from '../services/polls.ts';
import { publishAnnouncement } from '../services/announcements.ts';
import { removeLegacyKeys } from '../storage/legacy-keys.ts';
import { closeMailTransport, sendMailJob } from './mail.ts';

/** Jobs this process runs at once. */
const CONCURRENCY = 16;
/** Fetches from other sites (the pull queue, jobs/queues.ts) this process runs at once, beside those. */
export const PULL_CONCURRENCY = 8;
/** The longest a pull job waits for fan-out to catch up before it runs anyway. */
const PULL_DEFER_MS = 30_000;
/** How often, and after how long, outbox rows whose job never got queued (a crash after commit) are queued again. */
const SWEEP_EVERY_MS = 30_000;
const SWEEP_AFTER_MS = 10_000;

export interface Workers {
  close(): Promise<void>;
  /** Queues every outbox row older than `olderThanMs` again (also run at start). */
  sweep(olderThanMs?: number): Promise<number>;
}

/**
 * A worker that dies mid-job (SIGKILL, a lost machine) holds its jobs' locks until they expire: 5 s locks, renewed
 * every 2.5 s while a job runs, and a check for expired ones every 2 s bring such a job back within ~7 s rather
 * than BullMQ's default of up to a minute. A job stalled twice (killed twice) fails and is kept for inspection.
 */
const WORKER_OPTIONS = (ctx: AppContext) => ({
  prefix: `${ctx.config.redisPrefix}bull`, lockDuration: 5_000, stalledInterval: 2_000, maxStalledCount: 2,
});

/** Starts this process's job workers and the outbox sweeper. */
export function startWorkers(ctx: AppContext): Workers {
  // Fan-out jobs queued under the queue's name before it carried a hash tag (`fanout`) are left there: each comes back
  // from its outbox row (the sweeper below) or its scheduled status (sweepDueScheduledStatuses), and draining the old
  // queue as well would run those twice.
  const connection = bullConnection(ctx.config);
  const outboxRemover = new OutboxRemover(ctx.db);
  const worker = new Worker<FanoutJob>(
    FANOUT_QUEUE,
    async (job: Job<FanoutJob>) => {
      // A retry after its backoff, a delayed job or a repeating one waited on purpose, as did a link-card job queued
      // here with a priority before they had the pull queue (one may be left after an upgrade): only jobs meant to run
      // at once say how far behind the worker is.
      ctx.jobBacklog.started(job.timestamp, job.attemptsMade === 0 && !job.opts.delay && !job.repeatJobKey && !job.opts.priority);
      try {
        await withStatementTimeout(JOB_QUERY_TIMEOUT_MS, () => runJob(job));
      } finally {
        ctx.jobBacklog.finished();
      }
    },
    { connection, concurrency: CONCURRENCY, ...WORKER_OPTIONS(ctx) },
  );
  // The pull queue's jobs wait on other sites: their own few slots, and they say nothing of how far behind fan-out is.
  // While fan-out is behind, a taken one waits (up to PULL_DEFER_MS) for it to catch up, its slot its own.
  const pullWorker = new Worker<FanoutJob>(
    PULL_QUEUE,
    async (job: Job<FanoutJob>) => {
      await ctx.jobBacklog.caughtUp(PULL_DEFER_MS);
      await withStatementTimeout(JOB_QUERY_TIMEOUT_MS, () => runJob(job));
    },
    // A killed worker's fetch comes back within BullMQ's default minute: checking every 2 s, as fan-out does, is
    // work (and memory) an idle process need not do for a link card.
    { connection, concurrency: PULL_CONCURRENCY, ...WORKER_OPTIONS(ctx), lockDuration: 30_000, stalledInterval: 30_000 },
  );
  // Transcodes: MEDIA_TRANSCODE_CONCURRENCY at once in this process, each a child process (services/media-tools.ts)
  // that leaves this event loop free to renew the job's lock while it runs for minutes.
  const mediaWorker = new Worker<FanoutJob>(
    MEDIA_QUEUE,
    async (job: Job<FanoutJob>) => withStatementTimeout(JOB_QUERY_TIMEOUT_MS, () => runJob(job)),
    { connection, concurrency: ctx.config.mediaTranscodeConcurrency, ...WORKER_OPTIONS(ctx), lockDuration: 30_000, stalledInterval: 30_000 },
  );
  const workers = [worker, pullWorker, mediaWorker];
  ctx.jobBacklog.setWorking(true);
  /**
   * A job's last attempt failing, or a failure for good (UnrecoverableError), takes its outbox row with it: the
   * sweeper would otherwise queue it again once BullMQ has trimmed it from the failed list, and start it over for
   * ever; and rows that can never finish would fill the sweeper's every pass. The failed job stays listed for an
   * operator to look at and retry (/admin/jobs).
   */
  async function runJob(job: Job<FanoutJob>): Promise<void> {
    try {
      await runJobOfKind(job);
    } catch (err) {
      const last = err instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      if (last && job.data.outboxId) await removeFromOutbox(ctx.db, job.data.outboxId).catch(() => {});
      throw err;
    }
  }
  async function runJobOfKind(job: Job<FanoutJob>): Promise<void> {
    const data = job.data;
    if (data.kind === 'fanOutStatus') await fanOutStatus(ctx, data.statusId, data.edit === true);
    else if (data.kind === 'removeStatus') await removeStatusFromFeeds(ctx, [data.statusId], data.authorId, data.mentionedIds);
    else if (data.kind === 'removePurgedStatuses') await removePurgedFromFeeds(ctx, data.byAuthor);
    // Deliveries and Web Push load what they need (Fedify, the push library) at their first job, not at start.
    else if (data.kind === 'deliver') await (await import('../federation/outbound.ts')).deliverActivity(ctx, data);
    else if (data.kind === 'processMedia' || data.kind === 'transcodeMedia') await processMedia(ctx, data.mediaId);
    else if (data.kind === 'cleanMedia') await removeAbandonedMedia(ctx);
    else if (data.kind === 'receiveCollectionActivity') await (await import('../federation/collections.ts')).receiveCollectionActivityJob(ctx, data.senderId, data.activity);
    else if (data.kind === 'queueNotificationDigests') await (await import('../services/notification-emails.ts')).queueDigests(ctx);
    else if (data.kind === 'refreshTrends') await (await import('./trends.ts')).refreshTrendsJob(ctx);
    else if (data.kind === 'webPush') await (await import('./web-push.ts')).deliverWebPush(ctx, data, log);
    else if (data.kind === 'domainBlock') await applyDomainBlock(ctx, data.domain, data.createdAt);
    else if (data.kind === 'publishScheduledStatus') await publishScheduledStatus(ctx, data.scheduledStatusId);
    else if (data.kind === 'endPoll') await endPoll(ctx.actors.deps, data.pollId);
    else if (data.kind === 'publishAnnouncement') await publishAnnouncement({ db: ctx.db, events: ctx.events, jobs: null }, data.announcementId, new Date(data.scheduledAt));
    else if (data.kind === 'sendMail') await sendMailJob(ctx, data, job, log);
    else if (data.kind === 'fetchLinkCard') await (await import('./link-cards.ts')).fetchLinkCard(ctx, data.statusId, log);
    else if (data.kind === 'verifyAccountLinks') await (await import('./profile-links.ts')).verifyAccountLinks(ctx, data.accountId, log);
    else if (data.kind === 'fetchThread') await (await import('./thread-backfill.ts')).fetchThreadJob(ctx, data);
    else if (data.kind === 'processImport') await (await import('./imports.ts')).processImportJob(ctx, data.importId);
    else if (data.kind === 'deleteAccount') await (await import('./account-deletion.ts')).deleteAccountJob(ctx, data);
    else if (data.kind === 'accountMove') await (await import('./account-move.ts')).runAccountMove(ctx, data);
    else if (data.kind === 'generateAnnualReport') await (await import('./annual-reports.ts')).generateAnnualReportJob(ctx, data.accountId, data.year);
    else if (data.kind === 'verifyQuoteStamp') await (await import('./quote-stamps.ts')).verifyQuoteStampJob(ctx, data);
    else if (data.kind === 'buildAccountArchive') await (await import('./account-archive.ts')).buildAccountArchive(ctx, data.archiveId);
    else if (data.kind === 'expireAccountArchives') await (await import('./account-archive.ts')).expireAccountArchives(ctx);
    else if (data.kind === 'cacheRemoteMedia') await (await import('../services/remote-media.ts')).copyStatusMedia(ctx, data.statusId, log, job.timestamp);
    else if (data.kind === 'transcodeRemoteMedia') await (await import('../services/remote-media.ts')).convertAttachment(ctx, data.mediaId, log);
    else if (data.kind === 'cacheAccountImages') await (await import('../services/remote-media.ts')).copyAccountImages(ctx, data.accountId, log, job.timestamp);
    else if (data.kind === 'deliverWebhook') await (await import('./webhooks.ts')).deliverWebhookJob(ctx, data, job);
    else if (data.kind === 'cleanStatuses') await (await import('../services/statuses-cleanup.ts')).runStatusesCleanup(ctx);
    else if (data.kind === 'pruneMediaCache') await (await import('../services/remote-media.ts')).pruneExpiredMedia(ctx);
    else if (data.kind === 'pruneRemoteStatuses' && ctx.config.contentCacheRetentionDays > 0) {
      const retention = await import('../services/status-retention.ts');
      await retention.removeStaleRemoteStatuses(ctx, { days: ctx.config.contentCacheRetentionDays, dryRun: false, pace: retention.RETENTION_PACE });
    } else if (data.kind === 'drainFileDeletions') {
      const { BackupAwareFileHost } = await import('../storage/filehost/index.ts');
      if (ctx.fileHost instanceof BackupAwareFileHost) await ctx.fileHost.drainDeferred();
    }
    if (data.outboxId) await outboxRemover.remove(data.outboxId);
  }
  const log = pino({ level: ctx.config.logLevel }).child({ role: 'worker' });
  // Connection trouble: BullMQ reconnects, and the outage is logged once by storage/dependencies.ts, not here on
  // every attempt. Failed jobs are retried with backoff and kept for inspection.
  for (const w of workers) {
    w.on('error', (err) => {
      if (!ctx.dependencies.explains(err)) log.warn({ err }, 'job worker error');
    });
    w.on('failed', (job, err) => {
      if (!ctx.dependencies.explains(err)) log.warn({ err, job: job?.name, id: job?.id, attempts: job?.attemptsMade }, 'job failed');
    });
  }
  // While PostgreSQL or Redis is away no job is taken (each would fail and spend one of its attempts); the jobs
  // running finish or fail and are retried. Once both are back, outbox rows whose jobs Redis may have lost (it
  // came back empty) are queued again: a job still queued keeps its id, so none runs twice.
  const onDependency = () => {
    if (worker.closing) return stopWatching();
    ctx.jobBacklog.setWorking(ctx.dependencies.allUp);
    if (ctx.dependencies.allUp) {
      for (const w of workers) w.resume();
      void sweep(0).catch(() => {});
      // A Redis back empty lost the schedule of repeating jobs too.
      void ctx.jobs.scheduleRepeating().catch(() => {});
    } else {
      for (const w of workers) void w.pause(true).catch(() => {});
    }
  };
  const stopWatching = ctx.dependencies.onChange(onDependency);

  const sweep = async (olderThanMs = SWEEP_AFTER_MS) => {
    if (!ctx.dependencies.allUp) return 0;
    const rows = await pendingOutbox(ctx.db, olderThanMs, 1000);
    for (const row of rows) await ctx.jobs.enqueue(row);
    // Scheduled statuses due whose delayed job was lost (Redis emptied, or queueing failed after the commit).
    await sweepDueScheduledStatuses(ctx).catch(() => 0);
    return rows.length;
  };
  void sweep(0).catch(() => {});
  // Keys under the names used before hash tags, which nothing reads any more (once per Redis).
  void removeLegacyKeys(ctx.redis, ctx.config.redisPrefix).then((n) => n > 0 && log.info({ removed: n }, 'removed Redis keys of the old names'), () => {});
  void ctx.jobs.scheduleRepeating().catch((err: unknown) => log.warn({ err }, 'could not schedule repeating jobs'));
  // Fedify's queue: signed deliveries to other servers and received activities, with its own retries. Listened to
  // here rather than through startQueue, which runs once per Federation object and could not start again.
  const federationStop = new AbortController();
  void ctx.federationQueue
    .listen(async (message) => {
      // A delivery queued before its server was suspended is dropped (federation/domain-policy.ts).
      if (await refusedDelivery(ctx, message)) return;
      await ctx.federation.processQueuedTask(ctx, message as Parameters<typeof ctx.federation.processQueuedTask>[1]);
    }, { signal: federationStop.signal })
    .catch((err: unknown) => log.error({ err }, 'federation queue stopped'));
  // Outcomes of the fan-out and pull queues' jobs, for GET /metrics (the federation queue counts its own).
  countJobOutcomes(ctx, worker, queueLabel(FANOUT_QUEUE));
  countJobOutcomes(ctx, pullWorker, queueLabel(PULL_QUEUE));
  countJobOutcomes(ctx, mediaWorker, queueLabel(MEDIA_QUEUE));
  const timer = setInterval(() => void sweep().catch(() => {}), SWEEP_EVERY_MS);
  timer.unref();

  return {
    sweep,
    async close() {
      clearInterval(timer);
      federationStop.abort();
      ctx.jobBacklog.setWorking(false);
      await Promise.all(workers.map((w) => w.close()));
      await closeMailTransport(ctx);
      connection.disconnect();
    },
  };
}
