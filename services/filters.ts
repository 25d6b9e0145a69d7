import { transaction, type Db, type Queryable } from '../storage/db.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import * as filterRows from '../storage/filters.ts';
import { filtersOf, type FilterAction, type FilterContext, type FilterRow } from '../storage/filters.ts';
import { isId } from '../storage/ids.ts';
import { notFound, unprocessable } from '../errors.ts';
import type { StatusRow } from '../storage/statuses.ts';
import type { StatusBundle } from './hydrate.ts';
import { streamChannels, type StreamEvents } from './stream-events.ts';

/** Mastodon's FilterResult, with the filter as the row it came from (serializers render it). */
export interface FilterMatch {
  filter: FilterRow;
  keywordMatches: string[] | null;
  statusMatches: string[] | null;
}

interface CompiledFilter {
  row: FilterRow;
  keywords: { keyword: string; regex: RegExp }[];
  statusIds: Set<string>;
}

/** A viewer's filters, ready to match; `notAfter` is when the first of them expires. */
export interface ViewerFilters {
  filters: CompiledFilter[];
  notAfter: number | undefined;
}

const WORD = '[\\p{L}\\p{N}\\p{M}_]';
const NO_FILTERS: ViewerFilters = { filters: [], notAfter: undefined };

/**
 * A keyword as Mastodon matches it: case-insensitive; a whole-word keyword must not touch a word character at an
 * end that is itself a word character (Ruby's \b around [[:word:]], Unicode-aware here as there).
 */
export function keywordRegex(keyword: string, wholeWord: boolean): RegExp {
  const escaped = keyword.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  if (!wholeWord) return new RegExp(escaped, 'iu');
  const start = new RegExp(`^${WORD}`, 'u').test(keyword) ? `(?<!${WORD})` : '';
  const end = new RegExp(`${WORD}$`, 'u').test(keyword) ? `(?!${WORD})` : '';
  return new RegExp(`${start}${escaped}${end}`, 'iu');
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", nbsp: ' ' };

/** What filters read of a status, as Mastodon's searchable_text: warning, text without markup, media descriptions. */
export function searchableText(s: StatusRow, mediaDescriptions: string[]): string {
  const text = s.content
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/p>\s*<p>/gi, '\n\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#?\w+);/g, (m, e: string) => ENTITIES[e] ?? (e.startsWith('#') ? String.fromCodePoint(Number(e.startsWith('#x') ? `0${e.slice(1)}` : e.slice(1))) : m));
  return [s.spoiler_text, text, ...mediaDescriptions].filter(Boolean).join('\n\n');
}

/**
 * Compiled filters per viewer, kept while the viewer's filter version (bumped after every change to them, in any
 * process) is the one they were compiled under. Readers get that version in the same Redis read as the statuses'
 * (services/hydrate.ts), so a viewer without filters pays nothing but a map lookup.
 */
export class FilterCache {
  private readonly entries = new Map<string, { version: string; value: ViewerFilters }>();
  private readonly db: Queryable;
  private readonly versions: CacheVersions;

  constructor(db: Queryable, versions: CacheVersions) {
    this.db = db;
    this.versions = versions;
    versions.onReset?.(() => this.entries.clear()); // Redis lost the versions these were kept under
  }

  async forViewer(viewerId: string, version?: string): Promise<ViewerFilters> {
    const v = version ?? (await this.versions.get('f', [viewerId]))[0]!;
    // Filter versions never expire (storage/cache-versions.ts): 0 is someone who has never had a filter.
    if (v === '0') return NO_FILTERS;
    const hit = this.entries.get(viewerId);
    if (hit && hit.version === v) return hit.value;
    const rows = await filtersOf(this.db, viewerId);
    const value: ViewerFilters = {
      filters: rows.map((row) => ({
        row,
        keywords: row.keywords.map((k) => ({ keyword: k.keyword, regex: keywordRegex(k.keyword, k.whole_word) })),
        statusIds: new Set(row.statuses.map((s) => s.status_id)),
      })),
      notAfter: rows.reduce<number | undefined>((min, r) => (r.expires_at && (min === undefined || r.expires_at.getTime() < min) ? r.expires_at.getTime() : min), undefined),
    };
    if (this.entries.size >= 20_000) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(viewerId, { version: v, value });
    return value;
  }
}

/** The filters that match a status in a context, as Mastodon applies them (never to the viewer's own posts). */
export function matchFilters(filters: ViewerFilters, context: FilterContext, viewerId: string, b: StatusBundle, s: StatusRow, now = Date.now()): FilterMatch[] {
  if (filters.filters.length === 0) return [];
  const proper = s.reblog_of_id ? (b.statuses.get(s.reblog_of_id) ?? s) : s;
  if (proper.account_id === viewerId) return [];
  let text: string | undefined;
  const out: FilterMatch[] = [];
  for (const f of filters.filters) {
    if (!f.row.context.includes(context) || (f.row.expires_at && f.row.expires_at.getTime() <= now)) continue;
    const statusMatches = [s.id, proper.id].filter((id, i, all) => all.indexOf(id) === i && f.statusIds.has(id));
    let keywordMatches: string[] = [];
    if (f.keywords.length > 0) {
      text ??= searchableText(proper, (b.media.get(proper.id) ?? []).map((m) => m.description ?? ''));
      keywordMatches = f.keywords.filter((k) => k.regex.test(text!)).map((k) => k.keyword);
    }
    if (statusMatches.length > 0 || keywordMatches.length > 0) {
      out.push({ filter: f.row, keywordMatches: keywordMatches.length > 0 ? keywordMatches : null, statusMatches: statusMatches.length > 0 ? statusMatches : null });
    }
  }
  return out;
}

/**
 * Applies a viewer's filters to rows about to be rendered: statuses a `hide` filter matches are dropped, the others
 * that match carry their results (bundle.filtered) for the `filtered` attribute.
 */
export function applyFilters(filters: ViewerFilters, context: FilterContext, viewerId: string, rows: StatusRow[], bundle: StatusBundle): { rows: StatusRow[]; bundle: StatusBundle } {
  if (filters.filters.length === 0) return { rows, bundle };
  const filtered = new Map<string, FilterMatch[]>();
  const kept = rows.filter((s) => {
    const matches = matchFilters(filters, context, viewerId, bundle, s);
    if (matches.some((m) => m.filter.action === 'hide')) return false;
    if (matches.length > 0) {
      filtered.set(s.id, matches);
      if (s.reblog_of_id) filtered.set(s.reblog_of_id, matches);
    }
    return true;
  });
  return { rows: kept, bundle: { ...bundle, filtered } };
}

export interface FilterChangeDeps {
  versions: CacheVersions;
  events: StreamEvents;
}

/** After a change to an account's filters has committed: every process recompiles them, open streams are told. */
export async function filtersChanged(deps: FilterChangeDeps, accountId: string): Promise<void> {
  await deps.versions.bump({ filters: [accountId] });
  await deps.events.publish(streamChannels.home(accountId), { event: 'filters_changed' });
}

/** A change to a filter's keywords: a new one (no id), a change to one of its own, or its removal (`destroy`). */
export interface KeywordChange {
  id?: string | undefined;
  keyword?: string | undefined;
  wholeWord?: boolean | undefined;
  destroy: boolean;
}

export interface FilterFields {
  title: string;
  context: FilterContext[];
  action: FilterAction;
  /** Null: never expires. */
  expiresAt: Date | null;
}

type FilterDeps = FilterChangeDeps & { db: Db };

/** POST /api/v2/filters and the filters page: a new filter with its keywords, within the account's limits. */
export async function createFilter(deps: FilterDeps, accountId: string, f: FilterFields, changes: KeywordChange[]): Promise<string> {
  const keywords = changes.filter((k) => !k.destroy);
  if (keywords.some((k) => k.keyword === undefined || k.keyword.trim() === '')) throw unprocessable("Validation failed: Keywords keyword can't be blank");
  if (keywords.length > filterRows.FILTER_LIMITS.keywordsPerFilter) throw unprocessable(`Validation failed: a filter may have at most ${filterRows.FILTER_LIMITS.keywordsPerFilter} keywords`);
  const id = await transaction(deps.db, async (tx) => {
    if ((await filterRows.countFilters(tx, accountId)) >= filterRows.FILTER_LIMITS.filters) throw unprocessable(`Validation failed: you may keep at most ${filterRows.FILTER_LIMITS.filters} filters`);
    const id = await filterRows.insertFilter(tx, accountId, f);
    for (const k of keywords) await filterRows.insertKeyword(tx, id, k.keyword!, k.wholeWord ?? true);
    return id;
  });
  await filtersChanged(deps, accountId);
  return id;
}

/** PUT /api/v2/filters/:id and the filters page: the fields given change, and the keywords as `changes` say. */
export async function updateFilter(deps: FilterDeps, accountId: string, filterId: string, f: Partial<FilterFields>, changes: KeywordChange[]): Promise<void> {
  const filter = isId(filterId) ? await filterRows.findFilter(deps.db, accountId, filterId) : null;
  if (!filter) throw notFound();
  await transaction(deps.db, async (tx) => {
    await filterRows.updateFilter(tx, accountId, filter.id, f);
    for (const c of changes) {
      if (c.id !== undefined) {
        // A keyword named by id must be this filter's; Mastodon ignores others, and so do we.
        const existing = isId(c.id) ? await filterRows.findKeyword(tx, accountId, c.id) : null;
        if (!existing || existing.custom_filter_id !== filter.id) continue;
        if (c.destroy) await filterRows.deleteKeyword(tx, existing.id);
        else await filterRows.updateKeyword(tx, existing.id, c.keyword, c.wholeWord);
      } else if (!c.destroy) {
        if (c.keyword === undefined || c.keyword.trim() === '') throw unprocessable("Validation failed: Keywords keyword can't be blank");
        await filterRows.insertKeyword(tx, filter.id, c.keyword, c.wholeWord ?? true);
      }
    }
    if ((await filterRows.countKeywords(tx, filter.id)) > filterRows.FILTER_LIMITS.keywordsPerFilter) {
      throw unprocessable(`Validation failed: a filter may have at most ${filterRows.FILTER_LIMITS.keywordsPerFilter} keywords`);
    }
  });
  await filtersChanged(deps, accountId);
}

/** DELETE /api/v2/filters/:id and the filters page. */
export async function deleteFilter(deps: FilterDeps, accountId: string, filterId: string): Promise<void> {
  if (!isId(filterId) || !(await filterRows.deleteFilter(deps.db, accountId, filterId))) throw notFound();
  await filtersChanged(deps, accountId);
}
