import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Temporal } from '@js-temporal/polyfill';
import { RedisCluster } from '../../cli/redis-cluster.ts';
import { connectRedis, createRedis, deleteKeysWithPrefix, type RedisClient, type RedisTarget } from '../../storage/redis.ts';
import { FANOUT_QUEUE, JobQueues, PULL_QUEUE, bullConnection, type FanoutJob } from '../../jobs/queues.ts';
import { BullMqMessageQueue } from '../../federation/queue.ts';
import { eventually } from '../helpers/eventually.ts';

// BullMQ (the fan-out queue) and Fedify's delivery queue on a real cluster of 3 masters + 3 replicas
// (storage/REDIS-CLUSTER.md §2.7): each queue's name carries a hash tag, so its keys share a slot and its scripts run;
// the queues spread over the masters. And, on the single Redis, messages left under the old untagged names are run.
let cluster: RedisCluster;
let target: RedisTarget;
let redis: RedisClient;
const run = randomBytes(4).toString('hex');

beforeAll(async () => {
  cluster = await RedisCluster.start();
  target = { redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: cluster.seeds.split(',') };
  redis = createRedis(target);
  await connectRedis(redis, target);
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

describe('the fan-out and pull queues on a cluster', () => {
  it('runs an added job, a bulk add over both queues, a delayed job and the repeating jobs; each queue\'s keys share one slot', async () => {
    const prefix = `fedi-test-${run}-fanout:`;
    const jobs = new JobQueues(target, prefix);
    const connection = bullConnection(target);
    const seen: (FanoutJob & { delayed: boolean })[] = [];
    const worker = new Worker<FanoutJob>(FANOUT_QUEUE, async (job: Job<FanoutJob>) => { seen.push({ ...job.data, delayed: (job.opts.delay ?? 0) > 0 }); }, { connection, prefix: `${prefix}bull`, concurrency: 4 });
    const pulled: FanoutJob[] = [];
    const pullWorker = new Worker<FanoutJob>(PULL_QUEUE, async (job: Job<FanoutJob>) => { pulled.push(job.data); }, { connection, prefix: `${prefix}bull`, concurrency: 2 });
    for (const w of [worker, pullWorker]) w.on('error', () => {});
    try {
      await jobs.enqueue({ id: '1', kind: 'fanOutStatus', payload: { statusId: 's1' } });
      await jobs.enqueueMany([
        { id: '2', kind: 'processMedia', payload: { mediaId: 'm2' } },
        { id: '3', kind: 'fetchLinkCard', payload: { statusId: 's3' } },
        // Delayed by its runAt.
        { id: '4', kind: 'endPoll', payload: { pollId: 'p4', runAt: new Date(Date.now() + 2000).toISOString() } },
      ]);
      await jobs.scheduleRepeating();
      expect((await jobs.fanout.getJobScheduler('refresh-trends'))?.every).toBe(300_000);

      const kinds = () => Promise.resolve(seen.map((j) => j.kind).sort().join(','));
      expect(await eventually(kinds, 'cleanMedia,cleanStatuses,drainFileDeletions,endPoll,fanOutStatus,processMedia,pruneMediaCache,pruneRemoteStatuses,queueNotificationDigests,refreshTrends', 20_000))
        .toBe('cleanMedia,cleanStatuses,drainFileDeletions,endPoll,fanOutStatus,processMedia,pruneMediaCache,pruneRemoteStatuses,queueNotificationDigests,refreshTrends');
      // The link card went on the pull queue, to its own worker.
      expect(await eventually(async () => pulled.map((j) => j.kind).join(','), 'fetchLinkCard', 5_000)).toBe('fetchLinkCard');
      expect(pulled[0]).toMatchObject({ outboxId: '3', statusId: 's3' });
      expect(seen.find((j) => j.kind === 'endPoll')).toMatchObject({ outboxId: '4', pollId: 'p4', delayed: true });
      expect(seen.filter((j) => j.outboxId && j.delayed).map((j) => j.kind)).toEqual(['endPoll']);

      for (const queue of ['fanout', 'pull']) {
        const meta = `${prefix}bull:{${queue}}:meta`;
        expect(await redis.exists(meta)).toBe(1);
        expect(await cluster.masterOf(meta)).toBe(await cluster.masterOf(`${prefix}bull:{${queue}}:wait`));
      }
    } finally {
      await Promise.all([worker.close(), pullWorker.close()]);
      connection.disconnect();
      await jobs.close();
    }
  }, 60_000);
});

describe("Fedify's queue on a cluster", () => {
  it('delivers enqueue and enqueueMany, in order by ordering key and delayed, to a listener; the 9 queues spread over the masters', async () => {
    const prefix = `fedi-test-${run}-fed:`;
    const queue = new BullMqMessageQueue(target, prefix);
    const got: string[] = [];
    const stop = new AbortController();
    const listening = queue.listen(async (message) => {
      const m = message as { key?: string; n: number; fail?: boolean };
      if (m.fail) throw new Error('refused by the test');
      got.push(`${m.key ?? '-'}:${m.n}`);
    }, { signal: stop.signal });
    try {
      await queue.enqueue({ n: 0 });
      await queue.enqueue({ n: 1, key: 'late' }, { delay: Temporal.Duration.from({ milliseconds: 400 }) });
      await queue.enqueueMany([1, 2, 3, 4, 5].map((n) => ({ n, key: 'a' })), { orderingKey: 'https://a.example/notes/1' });
      await queue.enqueue({ n: 6, key: 'a' }, { orderingKey: 'https://a.example/notes/1' });
      await queue.enqueueMany([1, 2, 3].map((n) => ({ n, key: 'b' })), { orderingKey: 'https://b.example/notes/2' });
      await queue.enqueueMany([{ n: 7 }, { n: 8 }]);
      await queue.enqueue({ n: 9, fail: true });

      expect(await eventually(async () => got.length, 13, 10_000)).toBe(13);
      const of = (key: string) => got.filter((g) => g.startsWith(`${key}:`));
      expect(of('a')).toEqual(['a:1', 'a:2', 'a:3', 'a:4', 'a:5', 'a:6']);
      expect(of('b')).toEqual(['b:1', 'b:2', 'b:3']);
      expect(of('late')).toEqual(['late:1']);
      expect(of('-').sort()).toEqual(['-:0', '-:7', '-:8']);
      expect(await eventually(async () => (await queue.getDepth()).queued, 0, 5_000)).toBe(0);
      // Failures are listed under the queue's readable name.
      const failures = await eventually(async () => (await queue.recentFailures(10)).length, 1, 5_000);
      expect(failures).toBe(1);
      expect((await queue.recentFailures(10))[0]).toMatchObject({ queue: 'federation', failedReason: 'refused by the test' });

      const names = ['{federation}', ...Array.from({ length: 8 }, (_, i) => `{federation-ordered-${i}}`)];
      expect(names).toEqual([queue.queue.name, ...queue.lanes.map((l) => l.name)]);
      const masters = new Set(await Promise.all([`${prefix}bull:{fanout}:meta`, ...names.map((n) => `${prefix}bull:${n}:meta`)].map((k) => cluster.masterOf(k))));
      expect(masters.size).toBeGreaterThan(1);
      expect(await redis.exists(`${prefix}bull:{federation}:meta`)).toBe(1);
    } finally {
      stop.abort();
      await listening;
      await queue.close();
    }
  }, 60_000);
});

describe("Fedify's queue on a single Redis, after the queues' names changed", () => {
  it('runs the messages left under the old untagged names, and stops watching an old queue once it is empty', async () => {
    const single = 'redis://127.0.0.1:6379';
    const prefix = `fedi-test-${run}-legacy:`;
    const plain = createRedis(single);
    await connectRedis(plain, single);
    const oldConnection = bullConnection(single);
    const old = new Queue('federation', { connection: oldConnection, prefix: `${prefix}bull` });
    const oldLane = new Queue('federation-ordered-3', { connection: oldConnection, prefix: `${prefix}bull` });
    const queue = new BullMqMessageQueue(single, prefix, { legacyCheckMs: 100 });
    const got: number[] = [];
    const stop = new AbortController();
    let listening: Promise<void> | undefined;
    try {
      await old.add('message', { n: 1 });
      await oldLane.addBulk([2, 3].map((n) => ({ name: 'message', data: { n } })));
      await old.add('message', { n: 4 }, { delay: 500 });
      listening = queue.listen(async (message) => { got.push((message as { n: number }).n); }, { signal: stop.signal });
      await queue.enqueue({ n: 5 });
      expect(await eventually(async () => got.length, 5, 10_000)).toBe(5);
      expect(got.filter((n) => n === 2 || n === 3)).toEqual([2, 3]);
      expect([...got].sort()).toEqual([1, 2, 3, 4, 5]);
      // The old queues' workers close once they are empty (workers are seen through their named connections).
      expect(await eventually(async () => (await old.getWorkersCount()) + (await oldLane.getWorkersCount()), 0, 5_000)).toBe(0);
      expect(await queue.queue.getWorkersCount()).toBeGreaterThan(0);
    } finally {
      stop.abort();
      await listening;
      await queue.close();
      await old.close();
      await oldLane.close();
      oldConnection.disconnect();
      await deleteKeysWithPrefix(plain, prefix);
      plain.disconnect();
    }
  }, 60_000);
});
