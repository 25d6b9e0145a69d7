import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { findAccounts } from '../../../services/account-search.ts';
import { renderAccount } from '../../serializers/account.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 500 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: 40, maximumClamp: 80 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
  resolve: Type.Optional(Bool()),
  following: Type.Optional(Bool()),
});

/** GET /api/v1/accounts/search (services/account-search.ts says how accounts are found). */
export default async function accountSearchRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/accounts/search', {
    schema: { querystring: SearchQuery },
    config: { auth: { kind: 'user', scopes: ['read:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const q = request.query;
    const found = await findAccounts(ctx, viewerId, q.q ?? '', { limit: q.limit ?? 40, offset: q.offset ?? 0, following: q.following ?? false, resolve: q.resolve ?? false });
    return (await withAccountEmojis(ctx.db, found)).map((a) => renderAccount(ctx.render, a));
  });
}
