import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import type { AppContext } from '../../../context.ts';
import { PagingQuery } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { followedTagsOf } from '../../../storage/tag-follows.ts';
import { tagForViewer, tagHistories, type FollowedTag } from '../../../services/tag-follows.ts';
import { renderTag } from '../../serializers/tag.ts';
import { featuredTagNames } from '../../../storage/featured-tags.ts';
import { featureHashtag, unfeatureHashtag } from '../../../services/featured-tags.ts';

const NameParams = Type.Object({ name: Type.String({ maxLength: 200 }) });

/** Tag entities with their history and, for a signed-in viewer, `following` and `featuring` (Mastodon 4.4). */
async function render(ctx: AppContext, tags: FollowedTag[], viewerId: string | null) {
  const [histories, featured] = await Promise.all([
    tagHistories(ctx.db, tags.map((t) => t.id)),
    viewerId ? featuredTagNames(ctx.db, viewerId, tags.map((t) => t.name)) : Promise.resolve(new Set<string>()),
  ]);
  return tags.map((t) => ({
    ...renderTag(ctx.config.publicUrl, { id: t.id, name: t.name, history: histories.get(t.id) ?? [] }),
    ...(viewerId ? { following: t.following, featuring: featured.has(t.name.toLowerCase()) } : {}),
  }));
}

/**
 * Hashtags (Mastodon's TagsController and FollowedTagsController): a tag's entity, following and unfollowing it
 * (idempotent, through the follower's actor), and the tags one follows (Link paging by the follow).
 */
export default async function tagsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/tags/:name', {
    schema: { params: NameParams },
    config: { auth: { kind: 'public' } },
  }, async (request) => {
    const tag = await tagForViewer(ctx.db, request.viewerId, request.params.name.replace(/^#/, ''));
    return (await render(ctx, [tag], request.viewerId))[0];
  });

  for (const action of ['follow', 'unfollow'] as const) {
    app.post(`/api/v1/tags/:name/${action}`, {
      schema: { params: NameParams },
      config: { auth: { kind: 'user', scopes: ['write:follows'] } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const tag = await ctx.actors.ask(viewerId, { type: action === 'follow' ? 'followTag' : 'unfollowTag', name: request.params.name.replace(/^#/, '') });
      return (await render(ctx, [tag], viewerId))[0];
    });
  }

  // Mastodon 4.4's way to feature a hashtag on one's profile (the same as POST /api/v1/featured_tags).
  for (const action of ['feature', 'unfeature'] as const) {
    app.post(`/api/v1/tags/:name/${action}`, {
      schema: { params: NameParams },
      config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const name = request.params.name.replace(/^#/, '');
      if (action === 'feature') await featureHashtag(ctx.db, viewerId, name);
      else await unfeatureHashtag(ctx.db, viewerId, name);
      return (await render(ctx, [await tagForViewer(ctx.db, viewerId, name)], viewerId))[0];
    });
  }

  app.get('/api/v1/followed_tags', {
    schema: { querystring: Type.Object(PagingQuery(100, 200)) },
    config: { auth: { kind: 'user', scopes: ['read:follows'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const rows = await followedTagsOf(ctx.db, viewerId, pageParams(request.query, 100));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.follow_id ?? null, rows.at(-1)?.follow_id ?? null);
    return render(ctx, rows.map((r) => ({ id: r.id, name: r.name, following: true })), viewerId);
  });
}
