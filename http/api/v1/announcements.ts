import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { publishedAnnouncements } from '../../../storage/announcements.ts';
import { dismiss, react, unreact, type AnnouncementDeps } from '../../../services/announcements.ts';
import { renderAnnouncements } from '../../serializers/announcement.ts';

// Mastodon's instance announcements: GET /api/v1/announcements, dismiss, reactions. Operators write them with the
// CLI or the operators' pages (services/announcements.ts); an unpublished or unknown id is 404, as in Mastodon.

const Id = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Reaction = Type.Object({ id: Type.String({ maxLength: 40 }), name: Type.String({ minLength: 1, maxLength: 200 }) });

export default async function announcementsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps: AnnouncementDeps = { db: ctx.db, events: ctx.events, jobs: ctx.jobs };

  // Mastodon asks for the whole `read` scope here (doorkeeper_authorize! :read), not one of its parts. Dismissed
  // announcements are listed too, with `read: true`, as Mastodon's web client shows them.
  app.get('/api/v1/announcements', { config: { auth: { kind: 'user', scopes: ['read'] } } }, async (request) => {
    const viewerId = requireViewer(request);
    return renderAnnouncements(ctx.db, ctx.render, await publishedAnnouncements(ctx.db), viewerId);
  });

  app.post('/api/v1/announcements/:id/dismiss', {
    schema: { params: Id },
    config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
  }, async (request) => {
    await dismiss(deps, requireViewer(request), request.params.id);
    return {};
  });

  app.put('/api/v1/announcements/:id/reactions/:name', {
    schema: { params: Reaction },
    config: { auth: { kind: 'user', scopes: ['write:favourites'] } },
  }, async (request) => {
    await react(deps, requireViewer(request), request.params.id, request.params.name);
    return {};
  });

  app.delete('/api/v1/announcements/:id/reactions/:name', {
    schema: { params: Reaction },
    config: { auth: { kind: 'user', scopes: ['write:favourites'] } },
  }, async (request) => {
    await unreact(deps, requireViewer(request), request.params.id, request.params.name);
    return {};
  });
}
