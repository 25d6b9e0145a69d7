import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { isId } from '../params.ts';
import type { PageParams } from '../../storage/paging.ts';
import { followedTagsOf } from '../../storage/tag-follows.ts';
import { FEATURED_TAGS_LIMIT, featuredTagsOf, recentlyUsedTags, unfeatureTag } from '../../storage/featured-tags.ts';
import { featureHashtag, unfeatureHashtag } from '../../services/featured-tags.ts';
import { renderFeaturedTag } from '../serializers/featured-tag.ts';
import { safeReturnTo } from './auth.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import { pagingOf, sendClientPage } from './client-page.ts';
import { refused, signedInForForm } from './client-actions.ts';
import type { SignedIn } from './session.ts';

const NameParams = Type.Object({ name: Type.String({ maxLength: 200 }) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Back = Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })) });
const NameForm = Type.Object({ name: Type.Optional(Type.String({ maxLength: 200 })), return_to: Back.properties.return_to });
const PER_PAGE = 100;
const tagName = (raw: string) => raw.trim().replace(/^#/, '');

/**
 * Hashtags one follows (their public posts come into the home feed) and those one features on one's profile: the
 * pages of GET /api/v1/followed_tags and /api/v1/featured_tags, and the forms of /api/v1/tags/:name/follow,
 * /unfollow, /feature, /unfeature and DELETE /api/v1/featured_tags/:id, through the same actor messages and services.
 */
export default async function clientTagRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const back = (returnTo: string | undefined, fallback: string) => (returnTo ? safeReturnTo(returnTo, ctx.config.publicUrl) : fallback);

  async function followedPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, error = '', name = '', status = 200) {
    const p: PageParams = request.method === 'GET' ? { ...pagingOf(request), minId: undefined, limit: PER_PAGE + 1 } : { limit: PER_PAGE + 1 };
    const rows = await followedTagsOf(ctx.db, me.account.id, p);
    const shown = rows.slice(0, PER_PAGE);
    const last = shown.at(-1);
    return sendClientPage(ctx, request, reply, 'client/followed_tags', { key: 'tags.followed_title' }, {
      tags: shown.map((t) => t.name.toLowerCase()), error, name, older: !!p.maxId, pagePath: '/followed_tags',
      pager: { older: rows.length > PER_PAGE && last ? `/followed_tags?max_id=${last.follow_id}` : null, newer: p.maxId ? '/followed_tags' : null },
    }, status);
  }

  async function featuredPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, error = '', name = '', status = 200) {
    const [featured, recent] = await Promise.all([featuredTagsOf(ctx.db, me.account.id), recentlyUsedTags(ctx.db, me.account.id)]);
    const tags = featured.map((t) => renderFeaturedTag(ctx.config.publicUrl, me.account.username, t));
    const names = new Set(tags.map((t) => t.name.toLowerCase()));
    return sendClientPage(ctx, request, reply, 'client/featured_tags', { key: 'tags.featured_title' }, {
      tags,
      suggestions: recent.map((t) => t.name).filter((n) => !names.has(n.toLowerCase())),
      limit: FEATURED_TAGS_LIMIT, error, name, pagePath: '/featured_tags',
    }, status);
  }

  app.get('/followed_tags', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me ? followedPage(request, reply, me) : reply;
  });

  app.get('/featured_tags', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me ? featuredPage(request, reply, me) : reply;
  });

  // Follow a tag by name (the followed tags page's form); a bad name comes back on the page with its reason.
  app.post('/followed_tags', { schema: { body: NameForm } }, async (request, reply) => {
    const me = await signedInForForm(request, reply, '/followed_tags');
    if (!me) return reply;
    const name = tagName(request.body.name ?? '');
    try {
      await ctx.actors.ask(me.account.id, { type: 'followTag', name });
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      return followedPage(request, reply, me, (await translatorOf(ctx, request))(name ? 'tags.error_invalid' : 'tags.error_blank'), request.body.name ?? '', 422);
    }
    return reply.redirect('/followed_tags', 303);
  });

  app.post('/featured_tags', { schema: { body: NameForm } }, async (request, reply) => {
    const me = await signedInForForm(request, reply, '/featured_tags');
    if (!me) return reply;
    try {
      await featureHashtag(ctx.db, me.account.id, request.body.name ?? '');
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      return featuredPage(request, reply, me, formError(await translatorOf(ctx, request), err), request.body.name ?? '', 422);
    }
    return reply.redirect('/featured_tags', 303);
  });

  // As DELETE /api/v1/featured_tags/:id: one's own featured tag, else 404.
  app.post('/featured_tags/:id/delete', { schema: { params: IdParams, body: Back } }, async (request, reply) => {
    const returnTo = back(request.body.return_to, '/featured_tags');
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    try {
      if (!isId(request.params.id) || !(await unfeatureTag(ctx.db, me.account.id, request.params.id))) throw new ApiError(404, 'Record not found');
    } catch (err) {
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(returnTo, 303);
  });

  // A tag's own page and the lists: follow, unfollow, feature, unfeature it by name, and back.
  for (const action of ['follow', 'unfollow', 'feature', 'unfeature'] as const) {
    app.post(`/tags/:name/${action}`, { schema: { params: NameParams, body: Back } }, async (request, reply) => {
      const name = tagName(request.params.name);
      const returnTo = back(request.body.return_to, `/tags/${encodeURIComponent(name)}`);
      const me = await signedInForForm(request, reply, returnTo);
      if (!me) return reply;
      try {
        if (action === 'follow') await ctx.actors.ask(me.account.id, { type: 'followTag', name });
        else if (action === 'unfollow') await ctx.actors.ask(me.account.id, { type: 'unfollowTag', name });
        else if (action === 'feature') await featureHashtag(ctx.db, me.account.id, name);
        else await unfeatureHashtag(ctx.db, me.account.id, name);
      } catch (err) {
        return refused(ctx, request, reply, err, returnTo);
      }
      return reply.redirect(returnTo, 303);
    });
  }
}
