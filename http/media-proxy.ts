import { Type } from './schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from './route-options.ts';
import { notFound } from '../errors.ts';
import { isId } from './params.ts';
import { findMedia } from '../storage/media.ts';
import { findAccountById } from '../storage/accounts.ts';
import { accountImageUrl, attachmentUrls } from '../services/media-urls.ts';
import { findRemoteEmoji } from '../storage/custom-emojis.ts';

/**
 * GET /media_proxy/:id/(original|small) and /media_proxy/accounts/:id/(avatar|header): another server's file as a
 * copy of ours (made now when missing: never copied yet, or pruned), by a redirect to the file host, as Mastodon's
 * MediaProxyController. What cannot be copied (refused, too large, a private address, a server whose media is
 * rejected) answers 404, and is not asked for again for a while.
 */
export default async function mediaProxyRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // Loaded at the first proxied view: sharp and the guarded fetch are not needed by a process nobody asks.
  const remoteMedia = () => import('../services/remote-media.ts');
  const log = fastify.log;

  app.get('/media_proxy/:id/:variant', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }), variant: Type.Union([Type.Literal('original'), Type.Literal('small')]) }) },
    config: { auth: { kind: 'anonymous' } },
  }, async (request, reply) => {
    const { id, variant } = request.params;
    if (!isId(id)) throw notFound();
    let media = await findMedia(ctx.db, id);
    if (!media?.remote_url || !media.status_id) throw notFound();
    if (!media.original_key) {
      const rm = await remoteMedia();
      if (await rm.recentlyFailed(ctx, `attachment:${id}`)) throw notFound();
      await rm.copyAttachment(ctx, id, log);
      media = await findMedia(ctx.db, id);
    }
    if (!media?.original_key) throw notFound();
    const { url, preview } = attachmentUrls(ctx.render, media);
    const target = variant === 'small' ? preview : url;
    if (!target) throw notFound();
    return reply.header('cache-control', 'public, max-age=3600').redirect(target, 302);
  });

  app.get('/media_proxy/accounts/:id/:kind', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }), kind: Type.Union([Type.Literal('avatar'), Type.Literal('header')]) }) },
    config: { auth: { kind: 'anonymous' } },
  }, async (request, reply) => {
    const { id, kind } = request.params;
    if (!isId(id)) throw notFound();
    let account = await findAccountById(ctx.db, id);
    if (!account || account.domain === null) throw notFound();
    const file = () => (kind === 'avatar' ? account!.avatar_file : account!.header_file);
    if (!file()) {
      const rm = await remoteMedia();
      if (!(await rm.recentlyFailed(ctx, `${kind}:${id}`))) {
        await rm.copyAccountImage(ctx, id, kind, log);
        account = await findAccountById(ctx.db, id);
      }
    }
    // No copy to be had: the default image, as an account without one shows.
    const target = account && file() ? accountImageUrl(ctx.render, account, kind) : `${ctx.config.publicUrl}/${kind}s/original/missing.png`;
    return reply.header('cache-control', file() ? 'public, max-age=3600' : 'public, max-age=600').redirect(target, 302);
  });

  // Another server's emoji: always named by this URL (services/custom-emojis.ts), so it answers with the copy, made
  // now when there is none.
  app.get('/media_proxy/emojis/:id/:variant', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }), variant: Type.Union([Type.Literal('original'), Type.Literal('static')]) }) },
    config: { auth: { kind: 'anonymous' } },
  }, async (request, reply) => {
    const { id, variant } = request.params;
    if (!isId(id)) throw notFound();
    let emoji = await findRemoteEmoji(ctx.db, id);
    if (!emoji || emoji.disabled) throw notFound();
    if (!emoji.image_key || !emoji.static_key) {
      const rm = await remoteMedia();
      if (await rm.recentlyFailed(ctx, `emoji:${id}`)) throw notFound();
      await rm.copyEmoji(ctx, id, log);
      emoji = await findRemoteEmoji(ctx.db, id);
    }
    const key = variant === 'static' ? emoji?.static_key : emoji?.image_key;
    if (!key) throw notFound();
    return reply.header('cache-control', 'public, max-age=86400').redirect(ctx.fileHost.url(key), 302);
  });
}
