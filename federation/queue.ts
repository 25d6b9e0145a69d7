import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { MessageQueue, MessageQueueDepth, MessageQueueEnqueueOptions, MessageQueueListenOptions } from '@fedify/fedify';
import { bullConnection } from '../jobs/queues.ts';

export const FEDERATION_QUEUE = 'federation';

/**
 * Fedify's message queue on BullMQ: outgoing deliveries (one job per inbox, signed when run) and incoming
 * activities are jobs in Redis, so a restart loses none. Fedify retries failed deliveries itself, with its
 * exponential backoff (outboxRetryPolicy), by enqueueing them again with a delay; so a job here runs once.
 */
export class BullMqMessageQueue implements MessageQueue {
  readonly nativeRetrial = false;
  readonly queue: Queue;
  private readonly redisUrl: string;
  private readonly prefix: string;
  private readonly connection: Redis;
  private readonly concurrency: number;

  constructor(redisUrl: string, prefix: string, options: { concurrency?: number } = {}) {
    this.redisUrl = redisUrl;
    this.prefix = `${prefix}bull`;
    this.connection = bullConnection(redisUrl);
    this.queue = new Queue(FEDERATION_QUEUE, { connection: this.connection, prefix: this.prefix });
    this.concurrency = options.concurrency ?? 16;
  }

  async enqueue(message: unknown, options?: MessageQueueEnqueueOptions): Promise<void> {
    const delay = options?.delay ? Math.max(0, Math.round(options.delay.total('millisecond'))) : 0;
    await this.queue.add('message', message, { delay, removeOnComplete: true, removeOnFail: 5000 });
  }

  async enqueueMany(messages: readonly unknown[], options?: MessageQueueEnqueueOptions): Promise<void> {
    const delay = options?.delay ? Math.max(0, Math.round(options.delay.total('millisecond'))) : 0;
    await this.queue.addBulk(messages.map((data) => ({ name: 'message', data, opts: { delay, removeOnComplete: true, removeOnFail: 5000 } })));
  }

  async getDepth(): Promise<MessageQueueDepth> {
    const counts = await this.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    const ready = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
    return { queued: ready + (counts.delayed ?? 0) + (counts.active ?? 0), ready, delayed: counts.delayed ?? 0 };
  }

  /** Runs until the signal aborts; only worker processes call this. */
  async listen(handler: (message: unknown) => Promise<void> | void, options?: MessageQueueListenOptions): Promise<void> {
    const worker = new Worker(FEDERATION_QUEUE, async (job) => handler(job.data), {
      connection: bullConnection(this.redisUrl),
      prefix: this.prefix,
      concurrency: this.concurrency,
    });
    worker.on('error', () => {}); // reconnects on its own
    await new Promise<void>((resolve) => {
      if (options?.signal?.aborted) return resolve();
      options?.signal?.addEventListener('abort', () => resolve(), { once: true });
    });
    await worker.close();
  }

  async close(): Promise<void> {
    await this.queue.close();
    this.connection.disconnect();
  }
}
