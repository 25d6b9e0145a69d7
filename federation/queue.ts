import { createHash } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import type { RedisClient } from '../storage/redis.ts';
import type { MessageQueue, MessageQueueDepth, MessageQueueEnqueueOptions, MessageQueueListenOptions } from '@fedify/fedify';
import { bullConnection, producerConnection } from '../jobs/queues.ts';

export const FEDERATION_QUEUE = 'federation';
/** Messages that must keep their order (Create, Update, Delete of one status) share one of these lanes by key. */
const ORDERED_LANES = 8;

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
  private readonly redisUrl: string;
  private readonly prefix: string;
  private readonly connection: RedisClient;
  private readonly concurrency: number;

  constructor(redisUrl: string, prefix: string, options: { concurrency?: number } = {}) {
    this.redisUrl = redisUrl;
    this.prefix = `${prefix}bull`;
    // Adds fail at once while Redis is away (listen() gives its workers connections of their own).
    this.connection = producerConnection(redisUrl);
    this.queue = new Queue(FEDERATION_QUEUE, { connection: this.connection, prefix: this.prefix });
    this.lanes = Array.from({ length: ORDERED_LANES }, (_, i) => new Queue(`${FEDERATION_QUEUE}-ordered-${i}`, { connection: this.connection, prefix: this.prefix }));
    for (const q of [this.queue, ...this.lanes]) q.on('error', () => {}); // Redis away: adds fail; it reconnects
    this.concurrency = options.concurrency ?? 16;
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
      for (const job of await queue.getFailed(0, limit - 1)) out.push({ queue: queue.name, id: job.id, failedReason: job.failedReason, finishedOn: job.finishedOn });
    }
    return out.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0)).slice(0, limit);
  }

  /** Told of every job that ends, whichever lane ran it (the metrics count them). */
  onJobFinished?: (outcome: 'completed' | 'failed') => void;

  /** Runs until the signal aborts; only worker processes call this. */
  async listen(handler: (message: unknown) => Promise<void> | void, options?: MessageQueueListenOptions): Promise<void> {
    const connection = bullConnection(this.redisUrl);
    const workers = [
      new Worker(FEDERATION_QUEUE, async (job) => handler(job.data), { connection, prefix: this.prefix, concurrency: this.concurrency }),
      ...this.lanes.map((lane) => new Worker(lane.name, async (job) => handler(job.data), { connection, prefix: this.prefix, concurrency: 1 })),
    ];
    for (const worker of workers) {
      worker.on('error', () => {}); // reconnects on its own
      worker.on('completed', () => this.onJobFinished?.('completed'));
      worker.on('failed', () => this.onJobFinished?.('failed'));
    }
    await new Promise<void>((resolve) => {
      if (options?.signal?.aborted) return resolve();
      options?.signal?.addEventListener('abort', () => resolve(), { once: true });
    });
    await Promise.all(workers.map((w) => w.close()));
    connection.disconnect();
  }

  async close(): Promise<void> {
    await Promise.all([this.queue, ...this.lanes].map((q) => q.close()));
    this.connection.disconnect();
  }
}
