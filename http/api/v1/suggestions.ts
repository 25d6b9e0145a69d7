import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound } from '../../../errors.ts';
import { findAccountById } from '../../../storage/accounts.ts';
import { dismissSuggestion } from '../../../storage/suggestions.ts';
import { suggestionsFor } from '../../../services/suggestions.ts';
import { renderAccount } from '../../serializers/account.ts';
import { renderSuggestion } from '../../serializers/suggestion.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';

// Mastodon's limit_param(DEFAULT_ACCOUNTS_LIMIT): 40 by default, at most 80.
const Limit = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, default: 40, maximumClamp: 80 })) });

/**
 * Follow suggestions, as Mastodon's Api::V1::SuggestionsController and Api::V2::SuggestionsController: a signed-in
 * user's token with read (read:accounts) to list, write (write:accounts) to dismiss one.
 */
export default async function suggestionsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v2/suggestions', {
    schema: { querystring: Limit },
    config: { auth: { kind: 'user', scopes: ['read:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const found = await suggestionsFor(ctx, viewerId, request.query.limit ?? 40);
    return found.map((s) => renderSuggestion(ctx.render, s));
  });

  // v1 (deprecated): the same accounts, without their reasons.
  app.get('/api/v1/suggestions', {
    schema: { querystring: Limit },
    config: { auth: { kind: 'user', scopes: ['read:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const found = await suggestionsFor(ctx, viewerId, request.query.limit ?? 40);
    await withAccountEmojis(ctx.db, found.map((s) => s.account));
    return found.map((s) => renderAccount(ctx.render, s.account));
  });

  app.delete('/api/v1/suggestions/:account_id', {
    schema: { params: Type.Object({ account_id: Type.String({ maxLength: 40 }) }) },
    config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const id = request.params.account_id;
    if (!isId(id) || !(await findAccountById(ctx.db, id))) throw notFound();
    await dismissSuggestion(ctx.db, viewerId, id);
    return {};
  });
}
