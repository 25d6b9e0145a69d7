import { createHash } from 'node:crypto';
import { Queue, Worker } from '../jobs/bullmq.ts';
import { onCluster, type RedisClient, type RedisTarget } from '../storage/redis.ts';
import type { MessageQueue, MessageQueueDepth, MessageQueueEnqueueOptions, MessageQueueListenOptions } from '@fedify/fedify';
import { bullConnection, bullQueueName, producerConnection, queueLabel } from '../jobs/queues.ts';

/** BullMQ's names (`{federation}`, `{federation-ordered-3}`): a hash tag each, so the 9 queues spread over a cluster's masters. */
export const FEDERATION_QUEUE = bullQueueName('federation');
/** Messages that must keep their order (Create, Update, Delete of one status) share one of these lanes by key. */
const ORDERED_LANES = 8;
const laneName = (i: number) => bullQueueName(`${queueLabel(FEDERATION_QUEUE)}-ordered-${i}`);
/** How often a worker looks for messages under the queues' names of before the hash tags (see `drainLegacy`). */
const LEGACY_CHECK_MS = 30_000;

/**
 * Fedify's message queue on BullMQ: outgoing deliveries (one job per inbox, signed when run) and incoming
 * activities are jobs in Redis, so a restart loses none. Fedify retries failed deliveries itself, with its
 * exponential backoff (outboxRetryPolicy), by enqueueing them again with a delay; so a job here runs once.
 * Messages with an ordering key go to one of a few lanes, each run one job at a time, so a Delete queued after its
 * Create is sent after it. (A Create that fails and waits for its retry can still be overtaken by its Delete.)
 */
export class BullMqMessageQueue implements MessageQueue {
  readonly nativeRetrial = false;
  readonly queue: Queue;
  readonly lanes: Queue[];
  private readonly target: string | RedisTarget;
  private readonly prefix: string;
  private readonly connection: RedisClient;
  private readonly concurrency: number;
  private readonly legacyCheckMs: number;

  constructor(target: string | RedisTarget, prefix: string, options: { concurrency?: number; legacyCheckMs?: number } = {}) {
    this.target = target;
    this.prefix = `${prefix}bull`;
    // Adds fail at once while Redis is away (listen() gives its workers connections of their own).
    this.connection = producerConnection(target);
    this.queue = new Queue(FEDERATION_QUEUE, { connection: this.connection, prefix: this.prefix });
    this.lanes = Array.from({ length: ORDERED_LANES }, (_, i) => new Queue(laneName(i), { connection: this.connection, prefix: this.prefix }));
    for (const q of [this.queue, ...this.lanes]) q.on('error', () => {}); // Redis away: adds fail; it reconnects
    this.concurrency = options.concurrency ?? 16;
    this.legacyCheckMs = options.legacyCheckMs ?? LEGACY_CHECK_MS;
  }

  private queueFor(options?: MessageQueueEnqueueOptions): Queue {
    if (!options?.orderingKey) return this.queue;
    const lane = createHash('sha1').update(options.orderingKey).digest().readUInt32BE(0) % ORDERED_LANES;
    return this.lanes[lane]!;
  }

  async enqueue(message: unknown, options?: MessageQueueEnqueueOptions): Promise<void> {
    const delay = options?.delay ? Math.max(0, Math.round(options.delay.total('millisecond'))) : 0;
    await this.queueFor(options).add('message', message, { delay, removeOnComplete: true, removeOnFail: 5000 });
  }

  async enqueueMany(messages: readonly unknown[], options?: MessageQueueEnqueueOptions): Promise<void> {
    const delay = options?.delay ? Math.max(0, Math.round(options.delay.total('millisecond'))) : 0;
    await this.queueFor(options).addBulk(messages.map((data) => ({ name: 'message', data, opts: { delay, removeOnComplete: true, removeOnFail: 5000 } })));
  }

  async getDepth(): Promise<MessageQueueDepth> {
    let ready = 0;
    let delayed = 0;
    let active = 0;
    for (const queue of [this.queue, ...this.lanes]) {
      const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
      ready += (counts.waiting ?? 0) + (counts.prioritized ?? 0);
      delayed += counts.delayed ?? 0;
      active += counts.active ?? 0;
    }
    return { queued: ready + delayed + active, ready, delayed };
  }

  /** For operators: jobs that failed for good (Fedify gave up, or a job threw), newest first. */
  async recentFailures(limit: number): Promise<{ queue: string; id: string | undefined; failedReason: string; finishedOn: number | undefined }[]> {
    const out = [];
    for (const queue of [this.queue, ...this.lanes]) {
      for (const job of await queue.getFailed(0, limit - 1)) out.push({ queue: queueLabel(queue.name), id: job.id, failedReason: job.failedReason, finishedOn: job.finishedOn });
    }
    return out.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0)).slice(0, limit);
  }

  /** Told of every job that ends, whichever lane ran it (the metrics count them). */
  onJobFinished?: (outcome: 'completed' | 'failed') => void;

  /** Runs until the signal aborts; only worker processes call this. */
  async listen(handler: (message: unknown) => Promise<void> | void, options?: MessageQueueListenOptions): Promise<void> {
    const connection = bullConnection(this.target);
    const worker = (name: string, concurrency: number) => {
      const w = new Worker(name, async (job) => handler(job.data), { connection, prefix: this.prefix, concurrency });
      w.on('error', () => {}); // reconnects on its own
      w.on('completed', () => this.onJobFinished?.('completed'));
      w.on('failed', () => this.onJobFinished?.('failed'));
      return w;
    };
    const workers = [worker(FEDERATION_QUEUE, this.concurrency), ...this.lanes.map((lane) => worker(lane.name, 1))];
    const stopped = new Promise<void>((resolve) => {
      if (options?.signal?.aborted) return resolve();
      options?.signal?.addEventListener('abort', () => resolve(), { once: true });
    });
    // A drain that fails (Redis away at that moment) is tried again by the next worker to start; it must not end this one.
    const legacy = onCluster(this.target) ? Promise.resolve() : this.drainLegacy(worker, stopped).catch(() => {});
    await stopped;
    await Promise.all([legacy, ...workers.map((w) => w.close())]);
    connection.disconnect();
  }

  /**
   * For one release: messages queued under the queues' names of before the hash tags (`federation`,
   * `federation-ordered-<i>`; keys `<prefix>bull:federation:…`) by an earlier version, or by one still running during
   * a rolling upgrade, are run too. Every `legacyCheckMs` each old queue that holds jobs (waiting, delayed, active)
   * gets a worker of its own, closed once it is empty again. Fedify's retries of those messages go to the new queues.
   * Only on a single Redis: a cluster never held the old names (their keys would not even share a slot).
   */
  private async drainLegacy(worker: (name: string, concurrency: number) => Worker, stopped: Promise<void>): Promise<void> {
    const names = [queueLabel(FEDERATION_QUEUE), ...this.lanes.map((lane) => queueLabel(lane.name))];
    // Counted on the producer connection: while Redis is away a check fails at once and waits for the next round.
    const queues = names.map((name) => new Queue(name, { connection: this.connection, prefix: this.prefix }));
    for (const q of queues) q.on('error', () => {});
    const draining = new Map<string, Worker>();
    let done = false;
    void stopped.then(() => (done = true));
    while (!done) {
      await Promise.all(queues.map(async (q, i) => {
        const counts = await q.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'waiting-children').catch(() => null);
        if (!counts || done) return;
        const left = Object.values(counts).reduce((a, b) => a + b, 0);
        const w = draining.get(q.name);
        if (left > 0 && !w) draining.set(q.name, worker(q.name, i === 0 ? this.concurrency : 1));
        else if (left === 0 && w) {
          draining.delete(q.name);
          await w.close();
        }
      }));
      await Promise.race([stopped, new Promise((r) => setTimeout(r, this.legacyCheckMs).unref())]);
    }
    await Promise.all([...draining.values()].map((w) => w.close()));
    await Promise.all(queues.map((q) => q.close()));
  }

  async close(): Promise<void> {
    await Promise.all([this.queue, ...this.lanes].map((q) => q.close()));
    this.connection.disconnect();
  }
}
