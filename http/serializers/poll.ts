import type { PollRow } from '../../storage/polls.ts';
import { pollExpired } from '../../storage/polls.ts';

/**
 * Mastodon's Poll entity. `viewer`: the signed-in account looking and its choices (`voted`, `own_votes` are shown only
 * then; the author counts as having voted, as in Mastodon). Tallies of a poll that hides them are null until it
 * ends, except to its author. `emojis`: the custom emoji its options use, rendered.
 */
export function renderPoll(p: PollRow, viewer: { accountId: string; choices: number[] } | null, emojis: unknown[] = []): Record<string, unknown> {
  const expired = pollExpired(p);
  const own = viewer?.accountId === p.account_id;
  const hidden = p.hide_totals && !expired && !own;
  return {
    id: p.id,
    expires_at: p.expires_at?.toISOString() ?? null,
    expired,
    multiple: p.multiple,
    votes_count: p.votes_count,
    voters_count: p.voters_count,
    options: p.options.map((title, i) => ({ title, votes_count: hidden ? null : (p.cached_tallies[i] ?? 0) })),
    emojis,
    ...(viewer ? { voted: own || viewer.choices.length > 0, own_votes: viewer.choices } : {}),
  };
}
