import { contextSlot, type AppContext } from '../context.ts';
import { pruneServerHealth, upsertServerHealth, type ServerHealthDelta } from '../storage/federation-health.ts';

/** How often a process writes what it saw (one statement for all servers). */
const FLUSH_EVERY_MS = 10_000;
/** At most this many servers are held between flushes; past it, new ones wait for the next flush. */
const MAX_HOSTS = 2_000;
/** Failed fetches remembered by URL, so that whoever gave up on a document can say why. */
const MEMO_SIZE = 1_000;
const MEMO_TTL_MS = 5 * 60_000;
const EXCERPT_CHARS = 300;
const PRUNE_EVERY_MS = 3_600_000;
const FORGET_AFTER_DAYS = 90;

export interface FetchFailure {
  url: string;
  /** The HTTP status, or null when no answer came (DNS, TLS, refused, timeout). */
  status: number | null;
  detail: string;
}

/** A short, single-line excerpt of an answer or an error, for logs and the servers table. */
export function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat;
}

const emptyDelta = (host: string): ServerHealthDelta => ({
  host, lastDeliveryAt: null, lastFetchAt: null, deliveries: 0, deliveryFailures: 0, fetches: 0, fetchFailures: 0,
  droppedInbound: 0, lastFailureAt: null, lastFailureKind: null, lastFailureStatus: null, lastFailureDetail: null,
  lastFailureUrl: null, lastDropAt: null, lastDropReason: null, signatureSpec: null,
});

/**
 * Per remote server: deliveries and fetches that worked or failed, inbound activities dropped, the signature spec
 * it takes. Events are added up in memory and written to PostgreSQL (federation_servers) every few seconds in one
 * statement, so a busy inbox or queue costs no extra write per request.
 */
export class FederationHealth {
  private pending = new Map<string, ServerHealthDelta>();
  private readonly memo = new Map<string, FetchFailure & { at: number }>();
  private readonly app: AppContext;
  private readonly timer: NodeJS.Timeout;
  private lastPrune = 0;
  private flushing: Promise<void> | null = null;

  constructor(app: AppContext) {
    this.app = app;
    this.timer = setInterval(() => void this.flush().catch(() => {}), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  private delta(host: string): ServerHealthDelta | null {
    const key = host.toLowerCase();
    let d = this.pending.get(key);
    if (!d) {
      if (this.pending.size >= MAX_HOSTS) return null;
      this.pending.set(key, (d = emptyDelta(key)));
    }
    return d;
  }

  private failure(d: ServerHealthDelta, kind: string, status: number | null, detail: string, url: string | null): void {
    d.lastFailureAt = new Date();
    d.lastFailureKind = kind;
    d.lastFailureStatus = status;
    d.lastFailureDetail = excerpt(detail);
    d.lastFailureUrl = url;
  }

  delivered(host: string): void {
    const d = this.delta(host);
    if (!d) return;
    d.deliveries++;
    d.lastDeliveryAt = new Date();
  }

  /** A delivery attempt that failed (it may be retried). */
  deliveryFailed(host: string, status: number | null, detail: string, url: string | null): void {
    const d = this.delta(host);
    if (!d) return;
    d.deliveryFailures++;
    this.failure(d, 'delivery', status, detail, url);
  }

  fetched(host: string): void {
    const d = this.delta(host);
    if (!d) return;
    d.fetches++;
    d.lastFetchAt = new Date();
  }

  fetchFailed(host: string, status: number | null): void {
    const d = this.delta(host);
    if (!d) return;
    d.fetchFailures++;
    // The detail (answer excerpt, URL) follows from fetchFailedAt when the fetch was ours.
    this.failure(d, 'fetch', status, status === null ? 'no answer' : `HTTP ${status}`, null);
  }

  /** Details of a failed fetch made through our own loaders: the URL and an excerpt of the answer. */
  fetchFailedAt(failure: FetchFailure): void {
    const host = URL.canParse(failure.url) ? new URL(failure.url).host : null;
    if (!host) return;
    const d = this.delta(host);
    if (d) this.failure(d, 'fetch', failure.status, failure.detail, failure.url);
    if (this.memo.size >= MEMO_SIZE) this.memo.delete(this.memo.keys().next().value!);
    this.memo.set(failure.url, { ...failure, at: Date.now() });
  }

  /** A fetch of this URL worked: an earlier failure no longer explains anything. */
  fetchSucceededAt(url: string): void {
    if (this.memo.size > 0) this.memo.delete(url);
  }

  /** Why the latest fetch of this URL failed, when it did lately. */
  recentFetchFailure(url: string): FetchFailure | null {
    const m = this.memo.get(url);
    return m && Date.now() - m.at < MEMO_TTL_MS ? m : null;
  }

  droppedInbound(host: string, reason: string): void {
    const d = this.delta(host);
    if (!d) return;
    d.droppedInbound++;
    d.lastDropAt = new Date();
    d.lastDropReason = excerpt(reason);
  }

  signatureSpec(host: string, spec: string): void {
    const d = this.delta(host);
    if (d) d.signatureSpec = spec;
  }

  /** Writes what was seen since the last flush; concurrent callers share one write. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => { this.flushing = null; });
    return this.flushing;
  }

  private async write(): Promise<void> {
    const batch = [...this.pending.values()];
    this.pending = new Map();
    try {
      await upsertServerHealth(this.app.db, batch);
    } catch (err) {
      // Kept for the next flush, unless the pool is gone: the context was closed, and this tracker with it.
      if (/pool after calling end/i.test(String(err))) clearInterval(this.timer);
      else for (const d of batch) if (!this.pending.has(d.host)) this.pending.set(d.host, d);
      throw err;
    }
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = Date.now();
      await pruneServerHealth(this.app.db, FORGET_AFTER_DAYS);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(() => {});
  }
}

const slot = contextSlot('federationHealth', (app) => new FederationHealth(app));

/** This process's tracker for this context, made on first use. */
export const healthOf = slot.of;

/** Writes what is pending and stops the timer (the context is closing). */
export const closeHealth = slot.close;
