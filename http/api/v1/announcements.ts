import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound } from '../../../errors.ts';

// Mastodon's instance announcements (GET /api/v1/announcements, dismiss, reactions). Operators cannot publish one
// here yet, so there are none: the list is empty (as GoToSocial answers) and every id is unknown (404, as Mastodon
// answers for an announcement that is not published). The scopes and the signed-in user are checked as Mastodon does.

const Id = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Reaction = Type.Object({ id: Type.String({ maxLength: 40 }), name: Type.String({ maxLength: 200 }) });

export default async function announcementsRoutes(fastify: FastifyInstance, _options: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // Mastodon asks for the whole `read` scope here (doorkeeper_authorize! :read), not one of its parts.
  app.get('/api/v1/announcements', { config: { auth: { kind: 'user', scopes: ['read'] } } }, async (request) => {
    requireViewer(request);
    return [];
  });

  app.post('/api/v1/announcements/:id/dismiss', {
    schema: { params: Id },
    config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
  }, async (request) => {
    requireViewer(request);
    throw notFound();
  });

  for (const method of ['PUT', 'DELETE'] as const) {
    app.route({
      method,
      url: '/api/v1/announcements/:id/reactions/:name',
      schema: { params: Reaction },
      config: { auth: { kind: 'user', scopes: ['write:favourites'] } },
      handler: async (request) => {
        requireViewer(request);
        throw notFound();
      },
    });
  }
}
