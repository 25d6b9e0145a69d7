import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool } from '../../params.ts';
import { renderAccount } from '../../serializers/account.ts';
import { searchAccounts, searchTags } from '../../../storage/search.ts';
import { followedAmong } from '../../../storage/tag-follows.ts';
import { findAccounts } from '../../../services/account-search.ts';
import { findAccountById } from '../../../storage/accounts.ts';
import { renderStatuses } from '../../serializers/statuses.ts';
import { pageParams } from '../../paging.ts';
import { isWordQuery, searchStatuses, statusIdOfLink } from '../../../services/status-search.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 500 }),
  type: Type.Optional(Type.Union([Type.Literal('accounts'), Type.Literal('hashtags'), Type.Literal('statuses')])),
  resolve: Type.Optional(Bool()),
  following: Type.Optional(Bool()),
  exclude_unreviewed: Type.Optional(Bool()),
  account_id: Type.Optional(Type.String({ maxLength: 40 })),
  max_id: Type.Optional(Type.String({ maxLength: 40 })),
  min_id: Type.Optional(Type.String({ maxLength: 40 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: 20, maximumClamp: 40 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
});

const HANDLE = /^@?([a-z0-9_.-]{1,255})(?:@([a-z0-9.-]{1,253}(?::\d{1,5})?))?$/i;

/**
 * GET /api/v2/search, as Mastodon answers it without a full-text index: accounts by handle or username prefix
 * (resolving `user@domain` of another server when `resolve` is set by a signed-in user), hashtags by prefix,
 * statuses by their link. Mastodon also refuses offsets and resolving to anonymous callers.
 */
export default async function searchRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/api/v2/search', {
    schema: { querystring: SearchQuery },
    config: { auth: { kind: 'public', scopes: ['read:search'] } },
  }, async (request) => {
    const q = request.query.q.trim();
    const limit = request.query.limit ?? 20;
    const offset = request.query.offset ?? 0;
    const viewerId = request.viewerId;
    const resolve = (request.query.resolve ?? false) && viewerId !== null;
    // Remote lookups are signed by the person searching, as Mastodon does.
    const viewer = resolve ? await findAccountById(ctx.db, viewerId!) : null;
    const wants = (type: string) => !request.query.type || request.query.type === type;
    // Lookups only (a remote account or post found by `resolve` is stored on the primary by the federation code).
    const readDb = await ctx.readDb(viewerId);
    const result = { accounts: [] as unknown[], statuses: [] as unknown[], hashtags: [] as unknown[] };

    if (wants('accounts')) {
      if (viewerId !== null) {
        // Signed in: usernames, display-name words and handles, accounts followed first (and only those with
        // `following`), resolving `user@domain` when asked.
        const found = await findAccounts(ctx, viewerId, q, { limit, offset, following: request.query.following ?? false, resolve });
        result.accounts = (await withAccountEmojis(readDb, found)).map((a) => renderAccount(ctx.render, a));
      } else {
        const handle = HANDLE.exec(q);
        if (handle) {
          const [, username, domain] = handle as unknown as [string, string, string | undefined];
          const local = !domain || domain.toLowerCase() === ctx.config.localDomain.toLowerCase();
          result.accounts = (await withAccountEmojis(readDb, await searchAccounts(readDb, username, local ? null : domain, limit, offset))).map((a) => renderAccount(ctx.render, a));
        }
      }
    }
    if (wants('hashtags')) {
      const tag = /^#?([\p{L}\p{N}_]{1,100})$/u.exec(q)?.[1];
      if (tag) {
        const found = await searchTags(readDb, tag, limit, offset);
        // `following` for a signed-in viewer (one query), as Mastodon gives it.
        const followed = viewerId ? await followedAmong(readDb, viewerId, found.map((t) => t.id)) : new Set<string>();
        result.hashtags = found.map((t) => ({
          id: t.id, name: t.name.toLowerCase(), url: `${ctx.config.publicUrl}/tags/${encodeURIComponent(t.name.toLowerCase())}`, history: [], following: followed.has(t.id),
        }));
      }
    }
    if (wants('statuses') && /^https?:\/\//i.test(q) && offset === 0) {
      const id = await statusIdOfLink(readDb, ctx.config.publicUrl, q);
      if (id) result.statuses = await renderStatuses(ctx, viewerId, [id]);
    }
    // Words: full-text search, for signed-in users only (as Mastodon); the loader checks visibility once more.
    if (wants('statuses') && viewerId && isWordQuery(q)) {
      const ids = await searchStatuses(ctx, viewerId, q, { accountId: request.query.account_id, page: pageParams(request.query, 20), offset });
      result.statuses = await renderStatuses(ctx, viewerId, ids, 'search');
    }
    // A link to another server's account or post not seen yet: fetched, when asked to resolve.
    if (viewer && (wants('accounts') || wants('statuses')) && /^https?:\/\//i.test(q) && offset === 0 && result.statuses.length === 0) {
      // Loaded here, not at start: it brings Fedify (federation/lazy.ts).
      const { resolveRemoteLink } = await import('../../../federation/resolve.ts');
      const found = await resolveRemoteLink(ctx, q, viewer);
      if (found?.status && wants('statuses')) result.statuses = await renderStatuses(ctx, viewerId, [found.status.id]);
      if (found?.account && wants('accounts')) result.accounts = [renderAccount(ctx.render, (await withAccountEmojis(ctx.db, [found.account]))[0]!)];
    }
    return result;
  });
}
