import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../app.ts';
import { Bool } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import type { AppContext } from '../../../context.ts';
import { findAccountById, findAccountByUsername, type AccountRow } from '../../../storage/accounts.ts';
import { pendingAccountIds } from '../../../storage/users.ts';
import { relationships } from '../../../storage/follows.ts';
import { searchAccountsFor } from '../../../storage/account-search.ts';
import { resolveAcct } from '../../../federation/remote-accounts.ts';
import { renderAccount } from '../../serializers/account.ts';

const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 500 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: 40, maximumClamp: 80 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
  resolve: Type.Optional(Bool()),
  following: Type.Optional(Bool()),
});

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

/**
 * GET /api/v1/accounts/search, as Mastodon's AccountSearchService answers it from its database: `q` is a username
 * prefix, words of a display name, or a handle (`user@domain`, matched exactly first, then by prefixes; with
 * `resolve`, a handle of another server not known yet is looked up by WebFinger, signed as the viewer).
 */
export default async function accountSearchRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/accounts/search', {
    schema: { querystring: SearchQuery },
    config: { auth: { kind: 'user', scopes: ['read:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const q = (request.query.q ?? '').trim().replace(/^@/, '');
    const limit = request.query.limit ?? 40;
    const offset = request.query.offset ?? 0;
    const following = request.query.following ?? false;
    if (!q) return [];

    const handle = HANDLE.exec(q);
    if (handle) {
      const [, username, rawDomain] = handle as unknown as [string, string, string];
      const domain = rawDomain.toLowerCase();
      const local = domain === ctx.config.localDomain.toLowerCase();
      let exact: AccountRow | null = null;
      if (offset === 0) {
        // A real host (a dot or a port) is worth a WebFinger lookup; `alice@ex` is still being typed.
        const resolvable = !local && (request.query.resolve ?? false) && /[.:]/.test(domain);
        const found = local
          ? await findAccountByUsername(ctx.db, username, null)
          : resolvable
            ? await resolveAcct(ctx, ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx), username, domain, await findAccountById(ctx.db, viewerId))
            : await findAccountByUsername(ctx.db, username, domain);
        exact = await showable(ctx, viewerId, found, following);
      }
      const rest = await searchAccountsFor(ctx.db, {
        viewerId, username, domain: local ? null : domain, following,
        excludeIds: exact ? [exact.id] : [], limit: limit - (exact ? 1 : 0), offset,
      });
      return [...(exact ? [exact] : []), ...rest].map((a) => renderAccount(ctx.render, a));
    }

    // `alice@` is a username still being typed.
    const bare = q.replace(/@$/, '');
    const found = await searchAccountsFor(ctx.db, {
      viewerId, username: USERNAME.test(bare) ? bare : null, words: q.split(/\s+/), following, limit, offset,
    });
    return found.map((a) => renderAccount(ctx.render, a));
  });
}
