import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { renderMedia } from '../../serializers/media.ts';
import { acceptUpload } from '../../../services/media.ts';
import { unprocessable } from '../../../errors.ts';

export const MediaDetails = {
  description: Type.Optional(Type.String({ maxLength: 1500 })),
  focus: Type.Optional(Type.String({ maxLength: 40 })),
};

/** `focus` is "x,y", each from -1 to 1 (Mastodon's focal point). */
export function parseFocus(focus: string | undefined): { focusX?: number; focusY?: number } {
  if (focus === undefined || focus === '') return {};
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(focus);
  const x = m ? Number(m[1]) : NaN;
  const y = m ? Number(m[2]) : NaN;
  if (!(x >= -1 && x <= 1 && y >= -1 && y <= 1)) throw unprocessable('Validation failed: focus must be two numbers from -1.0 to 1.0, as "x,y"');
  return { focusX: x, focusY: y };
}

export default async function mediaV2Routes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // Accepted at once (202, no URL yet); processing continues in a job (services/media.ts).
  app.post('/api/v2/media', {
    schema: { body: Type.Object(MediaDetails) },
    config: { auth: { kind: 'user', scopes: ['write:media'] } },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const file = request.uploads.file;
    if (!file) throw unprocessable('Validation failed: File is missing');
    const focus = parseFocus(request.body.focus);
    const media = await acceptUpload(ctx, viewerId, file.data, {
      description: request.body.description ?? '', focusX: focus.focusX ?? 0, focusY: focus.focusY ?? 0, thumbnail: request.uploads.thumbnail?.data,
    });
    return reply.code(202).send(renderMedia(ctx.render, media));
  });
}
