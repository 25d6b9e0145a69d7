import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { unprocessable } from '../../../errors.ts';
import { findMarkers, saveMarker, type MarkerTimeline } from '../../../storage/markers.ts';
import { renderMarker } from '../../serializers/marker.ts';
import { transaction } from '../../../storage/db.ts';

const Timeline = Type.Union([Type.Literal('home'), Type.Literal('notifications')]);
const Position = Type.Object({ last_read_id: Type.String({ maxLength: 40 }) });

export default async function markersRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/markers', {
    schema: { querystring: Type.Object({ timeline: Type.Optional(Type.Array(Timeline, { maxItems: 2 })) }) },
    config: { auth: { kind: 'user', scopes: ['read:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const timelines = request.query.timeline ?? [];
    const markers = await findMarkers(ctx.db, viewerId, timelines);
    return Object.fromEntries(markers.map((m) => [m.timeline, renderMarker(m)]));
  });

  app.post('/api/v1/markers', {
    schema: { body: Type.Object({ home: Type.Optional(Position), notifications: Type.Optional(Position) }) },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const updates = (['home', 'notifications'] as MarkerTimeline[])
      .map((t) => [t, request.body[t]?.last_read_id] as const)
      .filter((u): u is readonly [MarkerTimeline, string] => u[1] !== undefined);
    // Neither timeline given: nothing to save, and Mastodon answers an empty map.
    if (updates.length === 0) return {};
    for (const [t, id] of updates) if (!isId(id)) throw unprocessable(`Validation failed: ${t}[last_read_id] is not an id`);
    const saved = await transaction(ctx.db, async (tx) => {
      const out = [];
      for (const [t, id] of updates) out.push(await saveMarker(tx, viewerId, t, id));
      return out;
    });
    return Object.fromEntries(saved.map((m) => [m.timeline, renderMarker(m)]));
  });
}
