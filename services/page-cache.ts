/** A rendered page and what it was made from: the ids it shows and the cache versions it was rendered under. */
export interface RenderedPage {
  ids: string[];
  /** The cache versions it was rendered under: Redis keys and their values (CacheVersions.keysOf). */
  versions: { keys: string[]; values: string[] };
  body: Buffer;
}

interface Entry extends RenderedPage {
  expires: number;
}

/**
 * Rendered timeline pages, bounded by their total size. A page is served again only when a fresh read shows the
 * same ids and unchanged versions of every status, account and viewer it was rendered from (the caller checks both
 * in the Redis command that reads the ids), so it is never staler than what a full rendering would show.
 */
export class RenderedPageCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly ttlMs: number;

  constructor(maxBytes: number, ttlMs: number) {
    this.maxBytes = maxBytes;
    this.ttlMs = ttlMs;
  }

  get(key: string): RenderedPage | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires > Date.now()) return e;
    this.delete(key);
    return undefined;
  }

  /** True when a fresh read of the page's ids finds the ones it was rendered with. */
  static sameIds(page: RenderedPage, ids: string[]): boolean {
    return page.ids.length === ids.length && page.ids.every((id, i) => id === ids[i]);
  }

  set(key: string, page: RenderedPage): void {
    this.delete(key);
    const size = page.body.length;
    if (size > this.maxBytes) return;
    while (this.bytes + size > this.maxBytes) this.delete(this.entries.keys().next().value!);
    this.entries.set(key, { ...page, expires: Date.now() + this.ttlMs });
    this.bytes += size;
  }

  private delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.body.length;
  }
}
