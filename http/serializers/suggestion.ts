import type { Suggestion } from '../../services/suggestions.ts';
import type { SuggestionSource } from '../../storage/suggestions.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';

/** The deprecated single `source`, from the first of `sources`, as Mastodon's SuggestionSerializer maps it. */
function legacySource(source: SuggestionSource | undefined): 'staff' | 'global' | 'past_interactions' {
  switch (source) {
    case 'featured': return 'staff';
    case 'friends_of_friends': return 'past_interactions';
    default: return 'global';
  }
}

/** Mastodon's Suggestion entity (v2). */
export function renderSuggestion(ctx: RenderContext, s: Suggestion) {
  return {
    source: legacySource(s.sources[0]),
    sources: s.sources,
    account: renderAccount(ctx, s.account),
  };
}
