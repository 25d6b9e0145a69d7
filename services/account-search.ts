import type { AppContext } from '../context.ts';
import { findAccountById, findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { pendingAccountIds } from '../storage/users.ts';
import { relationships } from '../storage/follows.ts';
import { searchAccountsFor } from '../storage/account-search.ts';

// `user@domain`, complete: an exact match is looked for (and, with resolve, WebFinger asked).
const HANDLE = /^([a-z0-9_.-]{1,255})@([a-z0-9.-]{1,253}(?::\d{1,5})?)$/i;
const USERNAME = /^[a-z0-9_.-]{1,255}$/i;

/** Whether an account found by its exact handle may be shown: not suspended, approved, followed when asked. */
async function showable(ctx: AppContext, viewerId: string, a: AccountRow | null, following: boolean): Promise<AccountRow | null> {
  if (!a || a.suspended_at) return null;
  if (a.domain === null && (await pendingAccountIds(ctx.db, [a.id])).has(a.id)) return null;
  if (following && !(await relationships(ctx.db, viewerId, [a.id])).get(a.id)?.following) return null;
  return a;
}

export interface AccountSearchOptions {
  limit: number;
  offset: number;
  following: boolean;
  resolve: boolean;
}

/**
 * Accounts a signed-in person finds by `q`, as Mastodon's AccountSearchService answers from its database (both
 * GET /api/v1/accounts/search and the accounts of GET /api/v2/search): a username prefix, words of a display name,
 * or a handle (`user@domain`, matched exactly first, then by prefixes; with `resolve`, a handle of another server
 * not known yet is looked up by WebFinger, signed as the person searching).
 */
export async function findAccounts(ctx: AppContext, viewerId: string, rawQuery: string, o: AccountSearchOptions): Promise<AccountRow[]> {
  const q = rawQuery.trim().replace(/^@/, '');
  const { limit, offset, following } = o;
  if (!q) return [];
  const handle = HANDLE.exec(q);
  if (handle) {
    const [, username, rawDomain] = handle as unknown as [string, string, string];
    const domain = rawDomain.toLowerCase();
    const local = domain === ctx.config.localDomain.toLowerCase();
    let exact: AccountRow | null = null;
    if (offset === 0) {
      // A real host (a dot or a port) is worth a WebFinger lookup; `alice@ex` is still being typed.
      const resolvable = !local && o.resolve && /[.:]/.test(domain);
      const found = local
        ? await findAccountByUsername(ctx.db, username, null)
        : resolvable
          // Loaded here, not at start: it brings Fedify (federation/lazy.ts).
          ? await (await import('../federation/remote-accounts.ts')).resolveAcct(ctx, ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx), username, domain, await findAccountById(ctx.db, viewerId))
          : await findAccountByUsername(ctx.db, username, domain);
      exact = await showable(ctx, viewerId, found, following);
    }
    const rest = await searchAccountsFor(await ctx.readDb(viewerId), {
      viewerId, username, domain: local ? null : domain, following,
      excludeIds: exact ? [exact.id] : [], limit: limit - (exact ? 1 : 0), offset,
    });
    return [...(exact ? [exact] : []), ...rest];
  }
  // `alice@` is a username still being typed.
  const bare = q.replace(/@$/, '');
  return searchAccountsFor(await ctx.readDb(viewerId), { viewerId, username: USERNAME.test(bare) ? bare : null, words: q.split(/\s+/), following, limit, offset });
}
