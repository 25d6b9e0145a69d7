import type { FilterKeywordRow, FilterRow, FilterStatusRow } from '../../storage/filters.ts';
import type { FilterMatch } from '../../services/filters.ts';

export function renderFilterKeyword(k: FilterKeywordRow) {
  return { id: k.id, keyword: k.keyword, whole_word: k.whole_word };
}

export function renderFilterStatus(s: FilterStatusRow) {
  return { id: s.id, status_id: s.status_id };
}

/** Mastodon's Filter; its keywords and statuses are listed where the filter itself is asked for, not in results. */
export function renderFilter(f: FilterRow, withRules = true) {
  return {
    id: f.id,
    title: f.title,
    context: f.context,
    expires_at: f.expires_at?.toISOString() ?? null,
    filter_action: f.action,
    ...(withRules ? { keywords: f.keywords.map(renderFilterKeyword), statuses: f.statuses.map(renderFilterStatus) } : {}),
  };
}

/** FilterResult, in a Status entity's `filtered`. */
export function renderFilterResult(m: FilterMatch) {
  return { filter: renderFilter(m.filter, false), keyword_matches: m.keywordMatches, status_matches: m.statusMatches };
}

/** The v1 Filter: one keyword of a filter, as Mastodon maps the old API onto the new filters. */
export function renderV1Filter(f: FilterRow, k: FilterKeywordRow) {
  return {
    id: k.id,
    phrase: k.keyword,
    context: f.context,
    whole_word: k.whole_word,
    expires_at: f.expires_at?.toISOString() ?? null,
    irreversible: f.action === 'hide',
  };
}
