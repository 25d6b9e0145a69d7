import type { Counter, Gauge, Registry } from 'prom-client';
import { contextSlot, type AppContext } from '../context.ts';

/** How often a process adds its event counts to the shared totals in Redis. */
const FLUSH_EVERY_MS = 5_000;

/**
 * Events counted across every process (web and worker alike): each process adds its counts to one Redis hash every
 * few seconds, and `/metrics` shows the totals, so a worker process, which serves no HTTP, is still seen.
 */
const EVENTS = {
  deliveries: { name: 'fedi_deliveries_total', help: 'Deliveries to other servers\' inboxes, by outcome (delivered, failed: an attempt that will be retried, abandoned)', labels: ['outcome'] },
  inbound: { name: 'fedi_inbound_activities_total', help: 'Activities received from other servers, by type and outcome (processed, dropped, unverified, failed)', labels: ['type', 'outcome'] },
  drops: { name: 'fedi_inbound_dropped_total', help: 'Inbound activities dropped, by reason', labels: ['reason'] },
  fetches: { name: 'fedi_remote_fetches_total', help: 'GETs of other servers\' documents (actors, posts, keys), by outcome', labels: ['outcome'] },
  jobs: { name: 'fedi_jobs_total', help: 'Finished jobs, by queue and outcome (completed, failed)', labels: ['queue', 'outcome'] },
} as const;
export type EventKind = keyof typeof EVENTS;

/** Activity types that get a label of their own; anything else a server sends is counted as `other`. */
const KNOWN_TYPES = new Set(['Follow', 'Accept', 'Reject', 'Undo', 'Create', 'Update', 'Delete', 'Like', 'Announce', 'Block', 'Flag', 'Add', 'Remove', 'Move', 'EmojiReact']);
export const activityLabel = (type: string | null | undefined): string => (type && KNOWN_TYPES.has(type) ? type : 'other');

/** What a scrape reads: prom-client's registry and the metrics in it, made at the first scrape. */
interface Scrape {
  registry: Registry;
  events: Map<EventKind, Counter<string>>;
  depth: Gauge<'queue' | 'state'>;
}

/**
 * Prometheus metrics of one server context (prom-client): its own registry, so test servers in one process never mix.
 * Counting is plain additions to maps; prom-client (~1 MB resident) is loaded, and the registry made, at the first
 * scrape of `/metrics`, which a server without a scraper never gets.
 */
export class Metrics {
  private readonly app: AppContext;
  /** Requests and their seconds by `method route status`: plain additions per request, read into prom-client when scraped. */
  private readonly requests = new Map<string, { method: string; route: string; status: string; count: number; seconds: number }>();
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private scrape: Promise<Scrape> | null = null;

  constructor(app: AppContext) {
    this.app = app;
    this.timer = setInterval(() => void this.flush().catch(() => {}), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  private async makeScrape(): Promise<Scrape> {
    const { Counter, Gauge, Registry, collectDefaultMetrics } = await import('prom-client');
    const registry = new Registry();
    const registers = [registry];
    const requests = this.requests;
    new Counter({
      name: 'fedi_http_requests_total', help: 'HTTP requests answered by this process, by route and status', labelNames: ['method', 'route', 'status'], registers,
      collect() { this.reset(); for (const r of requests.values()) this.inc({ method: r.method, route: r.route, status: r.status }, r.count); },
    });
    // A sum rather than a histogram: rate(seconds) / rate(requests) is the mean time per route, at a fraction of the
    // cost per request.
    new Counter({
      name: 'fedi_http_request_seconds_total', help: 'Time spent answering HTTP requests in this process, by route and status', labelNames: ['method', 'route', 'status'], registers,
      collect() { this.reset(); for (const r of requests.values()) this.inc({ method: r.method, route: r.route, status: r.status }, r.seconds); },
    });
    const events = new Map<EventKind, Counter<string>>();
    for (const [kind, e] of Object.entries(EVENTS) as [EventKind, (typeof EVENTS)[EventKind]][]) {
      events.set(kind, new Counter({ name: e.name, help: e.help, labelNames: [...e.labels], registers }));
    }
    const pages = () => this.app.homePages;
    new Counter({
      name: 'fedi_home_page_cache_requests_total', help: 'Home timeline pages in this process, served from the page cache (hit) or rendered (miss)', labelNames: ['result'], registers,
      collect() { this.reset(); this.inc({ result: 'hit' }, pages().hits); this.inc({ result: 'miss' }, pages().misses); },
    });
    new Counter({
      name: 'fedi_home_page_cache_tracked_hits_total', help: 'Of the home timeline pages served from this process\'s page cache, those served without reading Redis (tracked: dropped as soon as what they were made from changes); the other hits were checked by a feed read', registers,
      collect() { this.reset(); this.inc(pages().trackedHits); },
    });
    new Gauge({
      name: 'fedi_home_page_cache_hit_ratio', help: 'Share of home timeline pages served from this process\'s page cache since it started', registers,
      collect() { const { hits, misses } = pages(); this.set(hits + misses === 0 ? 0 : hits / (hits + misses)); },
    });
    const depth = new Gauge({ name: 'fedi_queue_jobs', help: 'Jobs in each BullMQ queue, by state', labelNames: ['queue', 'state'], registers });
    collectDefaultMetrics({ register: registry, prefix: 'fedi_' });
    return { registry, events, depth };
  }

  /** One answered HTTP request: two additions in memory (no Redis, no I/O, no label hashing). */
  request(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    const r = this.requests.get(key);
    if (r) {
      r.count++;
      r.seconds += seconds;
    } else {
      this.requests.set(key, { method, route, status: String(status), count: 1, seconds });
    }
  }

  /** One event of a kind counted across processes, with its labels in the order the kind declares them. */
  count(kind: EventKind, ...labels: string[]): void {
    const key = `${kind}\u0000${labels.join('\u0000')}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
  }

  private get hashKey(): string {
    return `${this.app.config.redisPrefix}metrics:events`;
  }

  /** Adds this process's counts to the shared totals (one pipeline). */
  async flush(): Promise<void> {
    // A closed context's connection: nothing more will be counted here.
    if (this.app.redis.status === 'end') return clearInterval(this.timer);
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const pipeline = this.app.redis.pipeline();
    for (const [field, n] of batch) pipeline.hincrby(this.hashKey, field, n);
    try {
      await pipeline.exec();
    } catch (err) {
      // Redis away: the counts wait for the next flush (a partial pipeline may count some twice; they are counters).
      for (const [field, n] of batch) this.pending.set(field, (this.pending.get(field) ?? 0) + n);
      throw err;
    }
  }

  /** The text Prometheus scrapes: totals read once from Redis, queue depths asked of BullMQ. */
  async render(): Promise<{ contentType: string; body: string }> {
    this.scrape ??= this.makeScrape();
    const { registry, events, depth } = await this.scrape;
    await this.flush().catch(() => {});
    const totals = await this.app.redis.hgetall(this.hashKey);
    for (const [kind, counter] of events) {
      counter.reset();
      for (const [field, n] of Object.entries(totals)) {
        const [k, ...labels] = field.split('\u0000');
        if (k !== kind) continue;
        const names = EVENTS[kind].labels;
        counter.inc(Object.fromEntries(names.map((name, i) => [name, labels[i] ?? ''])), Number(n));
      }
    }
    await this.queueDepths(depth);
    return { contentType: registry.contentType, body: await registry.metrics() };
  }

  private async queueDepths(gauge: Gauge<'queue' | 'state'>): Promise<void> {
    gauge.reset();
    const [fanout, pull, media, federation] = await Promise.all([
      this.app.jobs.fanout.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized'),
      this.app.jobs.pull.getJobCounts('waiting', 'active', 'delayed', 'failed'),
      this.app.jobs.media.getJobCounts('waiting', 'active', 'delayed', 'failed'),
      this.app.federationQueue.getDepth(),
    ]);
    for (const [state, n] of Object.entries(fanout)) gauge.set({ queue: 'fanout', state }, n);
    for (const [state, n] of Object.entries(pull)) gauge.set({ queue: 'pull', state }, n);
    for (const [state, n] of Object.entries(media)) gauge.set({ queue: 'media', state }, n);
    gauge.set({ queue: 'federation', state: 'ready' }, federation.ready ?? 0);
    gauge.set({ queue: 'federation', state: 'delayed' }, federation.delayed ?? 0);
    gauge.set({ queue: 'federation', state: 'queued' }, federation.queued);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(() => {});
  }
}

const slot = contextSlot('metrics', (app) => new Metrics(app));

/** This process's metrics for this context, made on first use. */
export const metricsOf = slot.of;

/** Adds what is pending to the shared totals and stops the timer (the context is closing). */
export const closeMetrics = slot.close;

/** Counts a BullMQ worker's finished jobs (completed, failed: an attempt that threw) under a queue's name. */
export function countJobOutcomes(app: AppContext, worker: { on(event: 'completed' | 'failed', listener: () => void): unknown }, queue: string): void {
  worker.on('completed', () => metricsOf(app).count('jobs', queue, 'completed'));
  worker.on('failed', () => metricsOf(app).count('jobs', queue, 'failed'));
}
