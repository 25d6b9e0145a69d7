import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { isId } from '../../params.ts';
import { renderMedia } from '../../serializers/media.ts';
import { findMedia } from '../../../storage/media.ts';
import { updateMedia } from '../../../services/media.ts';
import { ApiError, notFound } from '../../../errors.ts';
import { MediaDetails, parseFocus } from '../v2/media.ts';

export default async function mediaV1Routes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const params = Type.Object({ id: Type.String({ maxLength: 40 }) });

  /** The viewer's own attachment, not yet attached to a status (Mastodon shows nothing else here). */
  const ownUnattached = async (viewerId: string, id: string) => {
    const media = isId(id) ? await findMedia(ctx.db, id) : null;
    if (!media || media.account_id !== viewerId || media.status_id !== null) throw notFound();
    return media;
  };

  // 206 while processing, 200 when done, 422 when processing failed (Mastodon's words, then why).
  app.get('/api/v1/media/:id', {
    schema: { params },
    config: { auth: { kind: 'user', scopes: ['write:media'] } },
  }, async (request, reply) => {
    const media = await ownUnattached(requireViewer(request), request.params.id);
    if (media.state === 'failed') throw new ApiError(422, `Error processing thumbnail for uploaded media${media.failure ? `: ${media.failure}` : ''}`);
    return reply.code(media.state === 'ready' ? 200 : 206).send(renderMedia(ctx.render, media));
  });

  app.put('/api/v1/media/:id', {
    schema: { params, body: Type.Object(MediaDetails) },
    config: { auth: { kind: 'user', scopes: ['write:media'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    await ownUnattached(viewerId, request.params.id);
    const focus = parseFocus(request.body.focus);
    const updated = await updateMedia(ctx, viewerId, request.params.id, { description: request.body.description, ...focus, thumbnail: request.uploads.thumbnail?.data });
    if (!updated) throw notFound();
    return renderMedia(ctx.render, updated);
  });
}
