// The posts of a signed-in timeline page as HTML, each kept once rendered and shared by every viewer who sees the same
// thing of it. A post's entry (public/_status) shows what every viewer sees (text, author, media, counts, dates in the
// page's language) and what this viewer has done to it and may do (marks, filters, a Translate button), with marks
// in place of the form token and the way back (page-slots.ts). A kept entry is used again while:
// - the rows it was rendered from are the ones the status cache hands out now: a status, its author, what it boosts
//   and its media are loaded again as new objects whenever their cache version moves (services/hydrate.ts), which
//   every change bumps (an edit, a count, a media description, an account's profile), so a changed post is rendered
//   again on the next page;
// - the viewer's part is the same: it is part of the key, so two viewers share an entry only when their marks,
//   matching filters and Translate button are the same.
// A post with a poll or a quote is rendered every time (what it shows of them depends on the viewer and the time).
import type { AppContext } from '../../context.ts';
import type { StatusRow } from '../../storage/statuses.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import { renderStatus, renderViewerFields } from '../serializers/status.ts';
import { clientEntry, marksOf, type ViewerFlags, type ViewerMarks } from './client-view.ts';
import type { ClientForms } from './client-page.ts';
import type { PageChrome } from './views.ts';
import type { FilterContext } from '../../storage/filters.ts';
import { loadForViewer } from '../serializers/statuses.ts';
import { renderFragment } from './views.ts';
import { SLOT } from './page-slots.ts';

interface Kept {
  /** What it was rendered from, compared by identity. */
  deps: unknown[];
  html: string;
}

/** Kept entries, least recently used first, bounded by their total length. */
class EntryCache {
  private readonly entries = new Map<string, Kept>();
  private size = 0;
  private readonly maxChars: number;
  hits = 0;
  misses = 0;

  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }

  get(key: string, deps: unknown[]): string | undefined {
    const kept = this.entries.get(key);
    if (!kept || kept.deps.length !== deps.length || !kept.deps.every((d, i) => d === deps[i])) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, kept);
    return kept.html;
  }

  set(key: string, deps: unknown[], html: string): void {
    this.delete(key);
    if (html.length > this.maxChars) return;
    while (this.size + html.length > this.maxChars) this.delete(this.entries.keys().next().value!);
    this.entries.set(key, { deps, html });
    this.size += html.length;
  }

  private delete(key: string): void {
    const kept = this.entries.get(key);
    if (!kept) return;
    this.entries.delete(key);
    this.size -= kept.html.length;
  }
}

/** 8 M characters: some 3,000 entries of ~2.5 KB, and their rows kept alive with them. */
export const entryCache = new EntryCache(8 * 1024 * 1024);

const bit = (b: boolean) => (b ? '1' : '0');

/** The viewer's part of an entry as a key: every mark, the filters' titles and whether Translate is offered. */
function viewerKey(m: ViewerMarks, translate: boolean): string {
  return `${bit(m.favourited)}${bit(m.reblogged)}${bit(m.bookmarked)}${bit(m.pinned)}${bit(m.own)}${bit(m.canBoost)}${bit(m.canQuote)}${bit(translate)}${m.filteredBy.length > 0 ? JSON.stringify(m.filteredBy) : ''}`;
}

/** A list's entries for `timeline.eta`: how many, and their HTML. */
export interface EntriesHtml {
  count: number;
  html: string;
}

/**
 * Statuses by id for the viewer, in the order given, as the API renders them in `context` (what the viewer may not
 * see, blocks, mutes and `hide` filters leave out), as the entries of a page in the page's language.
 */
export async function timelineEntries(ctx: AppContext, viewerId: string, ids: string[], context: FilterContext | 'list' | null, frame: { chrome: PageChrome; client: ClientForms }): Promise<EntriesHtml> {
  if (ids.length === 0) return { count: 0, html: '' };
  const { rows, bundle } = await loadForViewer(ctx, viewerId, ids, context);
  return { count: rows.length, html: entriesHtml(ctx, viewerId, rows, bundle, frame.chrome.lang, frame.client.canTranslate) };
}

/** When the first poll still open among these statuses ends (what the page shows of it changes then), if any. */
export function firstPollEnd(rows: StatusRow[], b: StatusBundle, now = Date.now()): number | undefined {
  let end: number | undefined;
  for (const s of rows) {
    const at = b.polls?.get(s.reblog_of_id ?? s.id)?.expires_at?.getTime();
    if (at !== undefined && at > now && (end === undefined || at < end)) end = at;
  }
  return end;
}

/**
 * The entries of these statuses (as `loadForViewer` gave them) in a list of posts of a signed-in page, in the page's
 * `locale`, with marks for the form token and the way back; each as `timeline.eta` puts them one after another.
 */
export function entriesHtml(ctx: AppContext, viewerId: string, rows: StatusRow[], bundle: StatusBundle, locale: string, canTranslate: ClientForms['canTranslate']): string {
  let html = '';
  for (const s of rows) html += `\n${entryHtml(ctx, viewerId, s, bundle, locale, canTranslate)}\n`;
  return html;
}

function entryHtml(ctx: AppContext, viewerId: string, s: StatusRow, b: StatusBundle, locale: string, canTranslate: ClientForms['canTranslate']): string {
  const original = s.reblog_of_id ? b.statuses.get(s.reblog_of_id) : undefined;
  const proper = original ?? s;
  // A poll's form or results depend on the viewer's votes and on the time; a quote's, on whether the viewer may see
  // the quoted post and whom they block or mute: such posts are rendered every time.
  const always = b.polls?.has(proper.id) || b.quotes?.has(proper.id);
  const marks = marksOf(viewerId, { authorId: proper.account_id, visibility: proper.visibility }, renderViewerFields(b, s) as ViewerFlags);
  const translate = canTranslate ? canTranslate({ visibility: proper.visibility, language: proper.language }) : false;
  const key = `${s.id}\u0001${locale}\u0001${viewerKey(marks, translate)}`;
  const deps = [s, original, b.accounts.get(s.account_id), original && b.accounts.get(original.account_id), b.media.get(proper.id)];
  const kept = always ? undefined : entryCache.get(key, deps);
  if (kept !== undefined) {
    entryCache.hits++;
    return kept;
  }
  entryCache.misses++;
  const client: ClientForms = { csrf: SLOT.csrf, returnTo: SLOT.returnTo, ...(canTranslate ? { canTranslate: Object.assign(() => translate, { key: canTranslate.key }) } : {}) };
  const html = renderFragment('public/_status', { e: clientEntry(ctx, viewerId, renderStatus(ctx.render, b, s)), focus: false, thread: false, client }, locale);
  if (!always) entryCache.set(key, deps, html);
  return html;
}
