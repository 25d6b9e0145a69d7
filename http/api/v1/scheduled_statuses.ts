import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound } from '../../../errors.ts';
import * as scheduled from '../../../storage/scheduled-statuses.ts';
import { parseScheduledAt } from '../../../services/scheduled-statuses.ts';
import { renderScheduledStatuses } from '../../serializers/scheduled-status.ts';

const Params = Type.Object({ id: Type.String({ maxLength: 40 }) });
const READ = { kind: 'user', scopes: ['read:statuses'] } as const;
const WRITE = { kind: 'user', scopes: ['write:statuses'] } as const;

/**
 * Scheduled posts (Mastodon's ScheduledStatus): listed (Link paging by id), shown, moved and cancelled by their
 * author only (someone else's are a 404). Publishing happens in jobs/scheduled-statuses.ts.
 */
export default async function scheduledStatusesRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const own = async (viewerId: string, id: string) => {
    const row = isId(id) ? await scheduled.findScheduledStatus(ctx.db, viewerId, id) : null;
    if (!row) throw notFound();
    return row;
  };

  app.get('/api/v1/scheduled_statuses', {
    schema: { querystring: Type.Object(PagingQuery(20, 40)) },
    config: { auth: READ },
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const rows = await scheduled.scheduledStatusesOf(ctx.db, viewerId, pageParams(request.query, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, rows[0]?.id ?? null, rows.at(-1)?.id ?? null);
    return renderScheduledStatuses(ctx, rows);
  });

  app.get('/api/v1/scheduled_statuses/:id', { schema: { params: Params }, config: { auth: READ } }, async (request) => {
    return (await renderScheduledStatuses(ctx, [await own(requireViewer(request), request.params.id)]))[0];
  });

  app.put('/api/v1/scheduled_statuses/:id', {
    schema: { params: Params, body: Type.Object({ scheduled_at: Type.Optional(Type.Unknown()) }) },
    config: { auth: WRITE },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const row = await own(viewerId, request.params.id);
    const at = parseScheduledAt(request.body?.scheduled_at);
    // Without a new time it stays as it is, as in Mastodon (which updates only what is given).
    if (!at) return (await renderScheduledStatuses(ctx, [row]))[0];
    const moved = await ctx.actors.ask(viewerId, { type: 'rescheduleStatus', scheduledStatusId: row.id, scheduledAt: at });
    return (await renderScheduledStatuses(ctx, [moved]))[0];
  });

  app.delete('/api/v1/scheduled_statuses/:id', { schema: { params: Params }, config: { auth: WRITE } }, async (request) => {
    const viewerId = requireViewer(request);
    const row = await own(viewerId, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'unscheduleStatus', scheduledStatusId: row.id });
    return {};
  });
}
