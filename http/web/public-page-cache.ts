import type { CacheVersions, VersionsUsed } from '../../storage/cache-versions.ts';

/** A page as sent: its status, type and bytes. */
export interface CachedPage {
  statusCode: number;
  contentType: string;
  body: Buffer;
}

/** The accounts, statuses and account marks (pins) a page was rendered from, with the versions read before it was. */
type Deps = { s: string[]; a: string[]; v: string[] };

interface Entry extends CachedPage {
  deps: Deps;
  /** The versions of deps.s, deps.a, deps.v, in that order, joined. */
  fingerprint: string;
  /** For pages whose list of posts has no version of its own (a tag's): the ids it showed, joined. */
  ids: string | null;
  expires: number;
}

const join = (used: { s: Map<string, string>; a: Map<string, string>; v: Map<string, string> }, deps: Deps) =>
  [...deps.s.map((id) => used.s.get(id)), '|', ...deps.a.map((id) => used.a.get(id)), '|', ...deps.v.map((id) => used.v.get(id))].join(',');

/**
 * Public pages rendered for strangers, kept as bytes and served again while every status and account they were made
 * from has the version it had when they were rendered (storage/cache-versions.ts: every change, counts, deletions and
 * suspensions included, bumps one). A page is checked with one Redis read of those versions; what no version covers
 * (the instance's figures, the end of a poll, a domain block taking effect) is bounded by each page's time to live.
 *
 * What makes a profile's list of posts change bumps its account (a new post, a deletion, a boost) or the account's
 * own marks (a pin), so a profile page names its account in `a` and `v`; a tag page has no such version, and is
 * checked against the ids a fresh query finds.
 */
export class PublicPageCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly versions: CacheVersions;
  hits = 0;
  misses = 0;

  constructor(versions: CacheVersions, maxBytes: number) {
    this.versions = versions;
    this.maxBytes = maxBytes;
    // Redis lost its counters: numbers start again and could meet old ones.
    versions.onReset(() => this.clear());
  }

  /** The page stored under `key` if it is still what a rendering would show now; `ids` as given to `set`. */
  async get(key: string, ids: string[] | null = null): Promise<CachedPage | undefined> {
    const e = this.entries.get(key);
    if (!e) return this.miss();
    if (e.expires <= Date.now() || e.ids !== (ids ? ids.join(',') : null)) return this.miss(key);
    if (e.deps.s.length + e.deps.a.length + e.deps.v.length > 0) {
      const now = await this.versions.getMany(e.deps);
      // The read may have found the counters reset (which clears this cache): then the entry is gone.
      if (this.entries.get(key) !== e || join(now, e.deps) !== e.fingerprint) return this.miss(key);
    }
    this.hits++;
    return e;
  }

  /**
   * Stores a page made from the statuses, accounts and account marks in `used`, under the versions `used` holds,
   * which must have been read before the rows the page shows (a row read later can only be newer).
   */
  set(key: string, page: CachedPage, used: Pick<VersionsUsed, 's' | 'a' | 'v'>, ttlMs: number, ids: string[] | null = null): void {
    this.delete(key);
    const size = page.body.length + key.length;
    if (size > this.maxBytes / 8) return;
    // Unknown versions (Redis away) begin with '?' and never match: such a page would never be served, so is not kept.
    for (const map of [used.s, used.a, used.v]) for (const v of map.values()) if (v.startsWith('?')) return;
    while (this.bytes + size > this.maxBytes) this.delete(this.entries.keys().next().value!);
    const deps = { s: [...used.s.keys()], a: [...used.a.keys()], v: [...used.v.keys()] };
    this.entries.set(key, { ...page, deps, fingerprint: join(used, deps), ids: ids ? ids.join(',') : null, expires: Date.now() + ttlMs });
    this.bytes += size;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private miss(key?: string): undefined {
    if (key !== undefined) this.delete(key);
    this.misses++;
    return undefined;
  }

  private delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.body.length + key.length;
  }
}
