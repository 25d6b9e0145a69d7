import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../app.ts';
import type { AppContext } from '../../../context.ts';
import { PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import * as scheduled from '../../../storage/scheduled-statuses.ts';
import type { Visibility } from '../../../storage/statuses.ts';
import { parseScheduledAt } from '../../../services/scheduled-statuses.ts';
import { renderScheduledStatus } from '../../serializers/scheduled-status.ts';
import type { PollParams } from '../../../services/polls.ts';

const Params = Type.Object({ id: Type.String({ maxLength: 40 }) });
const READ = { kind: 'user', scopes: ['read:statuses'] } as const;
const WRITE = { kind: 'user', scopes: ['write:statuses'] } as const;

async function render(ctx: AppContext, rows: scheduled.ScheduledStatusRow[]) {
  const media = await scheduled.mediaOfScheduled(ctx.db, rows.map((r) => r.id));
  return rows.map((r) => renderScheduledStatus(ctx.render, r, media.get(r.id) ?? []));
}

/** What POST /api/v1/statuses took, as far as a scheduled post needs it. */
export interface SchedulePostBody {
  status?: string | undefined;
  in_reply_to_id?: string | null | undefined;
  sensitive?: boolean | undefined;
  spoiler_text?: string | undefined;
  visibility?: Visibility | undefined;
  language?: string | null | undefined;
  media_ids?: string[] | undefined;
  poll?: unknown;
}


/** POST /api/v1/statuses with a `scheduled_at` to come: a ScheduledStatus, made by the author's actor. */
export async function schedulePost(ctx: AppContext, viewerId: string, applicationId: string | null, body: SchedulePostBody, at: Date, poll: PollParams | null) {
  const row = await ctx.actors.ask(viewerId, {
    type: 'scheduleStatus',
    scheduledAt: at,
    params: {
      text: body.status ?? '',
      spoilerText: body.spoiler_text ?? '',
      sensitive: body.sensitive ?? false,
      visibility: body.visibility,
      language: body.language ?? null,
      inReplyToId: body.in_reply_to_id ?? null,
      mediaIds: body.media_ids ?? [],
      idempotencyKey: null,
      applicationId,
      poll,
    },
  });
  return (await render(ctx, [row]))[0];
}

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
    return render(ctx, rows);
  });

  app.get('/api/v1/scheduled_statuses/:id', { schema: { params: Params }, config: { auth: READ } }, async (request) => {
    return (await render(ctx, [await own(requireViewer(request), request.params.id)]))[0];
  });

  app.put('/api/v1/scheduled_statuses/:id', {
    schema: { params: Params, body: Type.Object({ scheduled_at: Type.Optional(Type.Unknown()) }) },
    config: { auth: WRITE },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const row = await own(viewerId, request.params.id);
    const at = parseScheduledAt(request.body?.scheduled_at);
    // Without a new time it stays as it is, as in Mastodon (which updates only what is given).
    if (!at) return (await render(ctx, [row]))[0];
    const moved = await ctx.actors.ask(viewerId, { type: 'rescheduleStatus', scheduledStatusId: row.id, scheduledAt: at });
    return (await render(ctx, [moved]))[0];
  });

  app.delete('/api/v1/scheduled_statuses/:id', { schema: { params: Params }, config: { auth: WRITE } }, async (request) => {
    const viewerId = requireViewer(request);
    const row = await own(viewerId, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'unscheduleStatus', scheduledStatusId: row.id });
    return {};
  });
}
