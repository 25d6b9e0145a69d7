/** What a page's body is kept as: bytes, or anything that says how many it holds (http/web/page-slots.ts). */
export interface PageBody {
  readonly length: number;
}

/** A rendered page and what it was made from: the ids it shows and the cache versions it was rendered under. */
export interface RenderedPage<B extends PageBody = Buffer> {
  ids: string[];
  /** The cache versions it was rendered under: Redis keys and their values (CacheVersions.keysOf). */
  versions: { keys: string[]; values: string[] };
  /** What is sent; its `length` (bytes) counts against the cache's size. */
  body: B;
  /** When it stops being what a rendering would show without any change being made (a filter that expires). */
  notAfter?: number | undefined;
}

interface Entry<B extends PageBody> extends RenderedPage<B> {
  expires: number;
  /**
   * The Redis keys it was made from, when all were read under client tracking (storage/key-tracking.ts) and none
   * changed before it was stored: the page is then dropped as soon as one of them changes, and can be served
   * without asking Redis. Null for a page that must be checked against Redis before each use.
   */
  tracked: string[] | null;
}

/**
 * Rendered timeline pages, bounded by their total size. A page is served again only when it is known to be what a
 * full rendering would show now: either it is tracked (`getTracked`, dropped by `invalidate` when any key it was
 * made from changes), or a fresh read shows the same ids and unchanged versions of every status, account and viewer
 * it was rendered from (the caller checks both in the Redis command that reads the ids).
 */
export class RenderedPageCache<B extends PageBody = Buffer> {
  private readonly entries = new Map<string, Entry<B>>();
  /** Tracked pages by the Redis keys they were made from. */
  private readonly byKey = new Map<string, Set<string>>();
  private bytes = 0;
  private readonly maxBytes: number;
  /** Pages served from here and pages rendered instead, counted by the caller (GET /metrics shows the ratio). */
  hits = 0;
  misses = 0;
  /** Of the hits, those served without asking Redis (the page was tracked); the rest were checked by a feed read. */
  trackedHits = 0;
  private readonly ttlMs: number;
  /** Pages being rendered now, by key: a request for the same page waits for that rendering instead of repeating it. */
  private readonly rendering = new Map<string, Promise<RenderedPage<B> | undefined>>();

  constructor(maxBytes: number, ttlMs: number) {
    this.maxBytes = maxBytes;
    this.ttlMs = ttlMs;
  }

  get(key: string): RenderedPage<B> | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires > Date.now()) return e;
    this.delete(key);
    return undefined;
  }

  /** A page that no change has reached since it was stored (the caller syncs with the tracking first). */
  getTracked(key: string): RenderedPage<B> | undefined {
    const e = this.entries.get(key);
    return e?.tracked && e.expires > Date.now() ? e : undefined;
  }

  /**
   * The rendering of this page under way, if any, settling with its page (undefined if it failed). Many requests for
   * one page arrive together after a change (a client's several connections, a stream of new posts): one renders
   * while the others wait, rather than each rendering it again (see http/home-timeline.ts for when they may take
   * its page). One rendering of a page runs at a time.
   */
  renderingOf(key: string): Promise<RenderedPage<B> | undefined> | undefined {
    return this.rendering.get(key);
  }

  /** Marks a page as being rendered; the function returned ends that with its page (call it whatever the outcome). */
  startRendering(key: string): (page?: RenderedPage<B>) => void {
    let end!: (page: RenderedPage<B> | undefined) => void;
    const done = new Promise<RenderedPage<B> | undefined>((resolve) => { end = resolve; });
    this.rendering.set(key, done);
    return (page) => {
      if (this.rendering.get(key) === done) this.rendering.delete(key);
      end(page);
    };
  }

  /** True when a fresh read of the page's ids finds the ones it was rendered with. */
  static sameIds(page: RenderedPage<PageBody>, ids: string[]): boolean {
    return page.ids.length === ids.length && page.ids.every((id, i) => id === ids[i]);
  }

  /** Stores a page; `tracked` lists the keys it was made from when they are tracked (see Entry.tracked). */
  set(key: string, page: RenderedPage<B>, tracked: string[] | null = null): void {
    this.delete(key);
    const size = page.body.length;
    if (size > this.maxBytes) return;
    while (this.bytes + size > this.maxBytes) this.delete(this.entries.keys().next().value!);
    const expires = Math.min(Date.now() + this.ttlMs, page.notAfter ?? Infinity);
    this.entries.set(key, { ids: page.ids, versions: page.versions, body: page.body, notAfter: page.notAfter, expires, tracked });
    this.bytes += size;
    for (const k of tracked ?? []) {
      let pages = this.byKey.get(k);
      if (!pages) this.byKey.set(k, (pages = new Set()));
      pages.add(key);
    }
  }

  /** These Redis keys changed (null: any may have): drops every page made from them. */
  invalidate(keys: string[] | null): void {
    if (keys === null) {
      this.entries.clear();
      this.byKey.clear();
      this.bytes = 0;
      return;
    }
    for (const k of keys) {
      const pages = this.byKey.get(k);
      if (!pages) continue;
      for (const page of [...pages]) this.delete(page);
    }
  }

  private delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.body.length;
    for (const k of e.tracked ?? []) {
      const pages = this.byKey.get(k);
      pages?.delete(key);
      if (pages?.size === 0) this.byKey.delete(k);
    }
  }
}
