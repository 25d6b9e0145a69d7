import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound } from '../../../errors.ts';
import { findAsyncRefresh } from '../../../storage/async-refreshes.ts';
import { renderAsyncRefresh } from '../../serializers/async-refresh.ts';

/**
 * Work a request started in the background (Mastodon 4.4's async refreshes, still `v1_alpha` there): a client told
 * of one by a `Mastodon-Async-Refresh` header polls it here until it is `finished`, then asks again for what it
 * refreshed. `read` scope, users' tokens only, as Mastodon's.
 */
export default async function asyncRefreshesRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1_alpha/async_refreshes/:id', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 200 }) }) },
    config: { auth: { kind: 'user', scopes: ['read'] } },
  }, async (request) => {
    requireViewer(request);
    const refresh = await findAsyncRefresh(ctx.redis, ctx.config.redisPrefix, request.params.id);
    if (!refresh) throw notFound();
    return renderAsyncRefresh(refresh);
  });
}
