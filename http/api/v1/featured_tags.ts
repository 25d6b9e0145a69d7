import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound } from '../../../errors.ts';
import { featureHashtag } from '../../../services/featured-tags.ts';
import { visibleAccount } from '../../../services/accounts.ts';
import { findAccountById } from '../../../storage/accounts.ts';
import { featuredTagsOf, recentlyUsedTags, unfeatureTag } from '../../../storage/featured-tags.ts';
import { renderFeaturedTag } from '../../serializers/featured-tag.ts';
import { renderTag } from '../../serializers/tag.ts';

export default async function featuredTagsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const render = async (accountId: string) => {
    const account = (await findAccountById(ctx.db, accountId))!;
    return (await featuredTagsOf(ctx.db, accountId)).map((t) => renderFeaturedTag(ctx.config.publicUrl, account.username, t));
  };

  app.get('/api/v1/featured_tags', { config: { auth: { kind: 'user', scopes: ['read:accounts'] } } }, async (request) => render(requireViewer(request)));

  app.post('/api/v1/featured_tags', {
    schema: { body: Type.Object({ name: Type.Optional(Type.String({ maxLength: 200 })) }) },
    config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const id = await featureHashtag(ctx.db, viewerId, request.body.name ?? '');
    return (await render(viewerId)).find((t) => t.id === id)!;
  });

  app.delete('/api/v1/featured_tags/:id', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
    config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    if (!isId(request.params.id) || !(await unfeatureTag(ctx.db, viewerId, request.params.id))) throw notFound();
    return {};
  });

  app.get('/api/v1/featured_tags/suggestions', { config: { auth: { kind: 'user', scopes: ['read:accounts'] } } }, async (request) => {
    const tags = await recentlyUsedTags(ctx.db, requireViewer(request));
    return tags.map((t) => renderTag(ctx.config.publicUrl, { ...t, history: [] }));
  });

  app.get('/api/v1/accounts/:id/featured_tags', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    const account = await visibleAccount(ctx.db, request.params.id);
    if (account.suspended_at) return [];
    return (await featuredTagsOf(ctx.db, account.id)).map((t) => renderFeaturedTag(ctx.config.publicUrl, account.username, t));
  });
}
