import type { AppContext } from '../context.ts';
import { findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import {
  featuredIds, friendsOfFriends, mostFollowed, mostInteractions, suggestibleAmong, type SuggestionSource,
} from '../storage/suggestions.ts';

export interface Suggestion {
  account: AccountRow;
  sources: SuggestionSource[];
}

interface GlobalLists {
  mostInteractions: string[];
  mostFollowed: string[];
}

/** How long the server-wide lists (most_followed, most_interactions) are kept in Redis. */
export const GLOBAL_LISTS_TTL_SECONDS = 600;

export const globalListsKey = (redisPrefix: string) => `${redisPrefix}suggestions:global`;

/** The server-wide lists, the same for everyone: computed at most once per TTL (per racing process), kept in Redis. */
async function globalLists(ctx: AppContext): Promise<GlobalLists> {
  const key = globalListsKey(ctx.config.redisPrefix);
  const cached = await ctx.redis.get(key);
  if (cached) {
    try {
      const parsed = JSON.parse(cached) as GlobalLists;
      if (Array.isArray(parsed.mostInteractions) && Array.isArray(parsed.mostFollowed)) return parsed;
    } catch { /* recomputed below */ }
  }
  const readDb = await ctx.readDb(null);
  const [interactions, followed] = await Promise.all([mostInteractions(readDb), mostFollowed(readDb)]);
  const lists: GlobalLists = { mostInteractions: interactions, mostFollowed: followed };
  await ctx.redis.set(key, JSON.stringify(lists), 'EX', GLOBAL_LISTS_TTL_SECONDS);
  return lists;
}

/** Forgets the cached server-wide lists (the next request computes them again). */
export async function forgetGlobalSuggestions(ctx: Pick<AppContext, 'redis' | 'config'>): Promise<void> {
  await ctx.redis.del(globalListsKey(ctx.config.redisPrefix));
}

/**
 * Accounts to suggest to the viewer, as Mastodon's AccountSuggestions: the operator's featured accounts, then
 * friends of friends, then the server's most interacted-with and most followed accounts. An account found by several
 * sources appears once, with each of them. Everyone goes through the same exclusions (storage/suggestions.ts
 * `suggestible`); the algorithmic sources also need the account to have opted in to discovery, featured ones only
 * not to have opted out.
 */
export async function suggestionsFor(ctx: AppContext, viewerId: string, limit: number): Promise<Suggestion[]> {
  // A replica, unless the viewer has just written (a follow or a dismissal must show at once).
  const db = await ctx.readDb(viewerId);
  const [featured, fof, global] = await Promise.all([
    featuredIds(db), friendsOfFriends(db, viewerId, limit), globalLists(ctx),
  ]);
  const candidates = [...new Set([...featured, ...global.mostInteractions, ...global.mostFollowed])];
  const eligible = new Map((await suggestibleAmong(db, viewerId, candidates)).map((r) => [r.id, r.discoverable]));

  const found = new Map<string, SuggestionSource[]>();
  const add = (id: string, source: SuggestionSource) => {
    const sources = found.get(id);
    if (sources) sources.push(source);
    else found.set(id, [source]);
  };
  for (const id of featured) if (eligible.has(id) && eligible.get(id) !== false) add(id, 'featured');
  for (const id of fof) add(id, 'friends_of_friends');
  for (const id of global.mostInteractions) if (eligible.get(id) === true) add(id, 'most_interactions');
  for (const id of global.mostFollowed) if (eligible.get(id) === true) add(id, 'most_followed');

  const chosen = [...found.entries()].slice(0, limit);
  const accounts = new Map((await findAccountsByIds(db, chosen.map(([id]) => id))).map((a) => [a.id, a]));
  return chosen.flatMap(([id, sources]) => {
    const account = accounts.get(id);
    return account ? [{ account, sources }] : [];
  });
}
