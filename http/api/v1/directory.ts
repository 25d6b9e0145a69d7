import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool } from '../../params.ts';
import { directoryPage } from '../../../storage/directory.ts';
import { renderAccount } from '../../serializers/account.ts';
import { visibleAccount } from '../../../services/accounts.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

/** Offsets beyond this read too far down the index for a listing; Mastodon's directory is browsed from the top. */
const MAX_OFFSET = 10_000;

/** The profile directory (Mastodon's DirectoriesController), and the retired identity proofs (always none). */
export default async function directoryRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/directory', {
    schema: {
      querystring: Type.Object({
        offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET })),
        limit: Type.Optional(Type.Integer({ minimum: 1 })),
        order: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('new')])),
        local: Type.Optional(Bool()),
      }),
    },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    const q = request.query;
    const accounts = await directoryPage(ctx.db, { order: q.order ?? 'active', local: q.local ?? false, offset: q.offset ?? 0, limit: Math.min(q.limit ?? 40, 80) });
    return (await withAccountEmojis(ctx.db, accounts)).map((a) => renderAccount(ctx.render, a));
  });

  // Keybase proofs are gone from Mastodon; apps still ask, and get an empty list for an account that exists.
  app.get('/api/v1/accounts/:id/identity_proofs', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    await visibleAccount(ctx.db, request.params.id);
    return [];
  });
}
