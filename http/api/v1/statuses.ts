import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../app.ts';
import type { AppContext } from '../../../context.ts';
import { Bool, IdList, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import * as statuses from '../../../storage/statuses.ts';
import { findAccountsByIds, type AccountRow } from '../../../storage/accounts.ts';
import { blocksAccount } from '../../../services/relations.ts';
import { canSee } from '../../../services/visibility.ts';
import { renderStatus } from '../../serializers/status.ts';
import { loadForViewer, renderStatuses } from '../../serializers/statuses.ts';
import { renderAccount } from '../../serializers/account.ts';

const StatusParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const VisibilityParam = Type.Union([Type.Literal('public'), Type.Literal('unlisted'), Type.Literal('private'), Type.Literal('direct')]);

const PostStatus = Type.Object({
  status: Type.Optional(Type.String({ maxLength: 100_000 })),
  in_reply_to_id: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
  sensitive: Type.Optional(Bool()),
  spoiler_text: Type.Optional(Type.String({ maxLength: 10_000 })),
  visibility: Type.Optional(VisibilityParam),
  language: Type.Optional(Type.Union([Type.String({ pattern: '^[a-zA-Z]{2,3}([-_][a-zA-Z]{2,4})?$' }), Type.Null()])),
  media_ids: Type.Optional(IdList(4)),
  // Declared only so that they are seen (the validator removes unknown properties) and refused below.
  poll: Type.Optional(Type.Unknown()),
  scheduled_at: Type.Optional(Type.Unknown()),
  quoted_status_id: Type.Optional(Type.Unknown()),
});

const NOT_YET_SUPPORTED = ['poll', 'scheduled_at', 'quoted_status_id'] as const;

/** null, '', or a list or hash of nothing but such: what clients send for "none" (`scheduled_at: null`, `poll[expires_in]=`). */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (typeof value === 'object') return Object.values(value).every(isEmpty);
  return false;
}

/** A feature we do not have yet is refused rather than silently dropped: the author would lose the poll or the date. */
function refuseUnsupported(body: Partial<Record<(typeof NOT_YET_SUPPORTED)[number], unknown>>): void {
  const param = NOT_YET_SUPPORTED.find((name) => !isEmpty(body[name]));
  if (param) throw unprocessable(`Validation failed: ${param} is not supported by this server yet`);
}

/** A live status the viewer may see (reblogs are acted on through their original), or a 404. */
export async function visibleStatus(ctx: AppContext, viewerId: string | null, id: string, followReblog = false): Promise<statuses.StatusRow> {
  let status = isId(id) ? await statuses.findStatus(ctx.db, id) : null;
  if (status && followReblog && status.reblog_of_id) status = await statuses.findStatus(ctx.db, status.reblog_of_id);
  if (!status || !(await canSee(ctx.db, viewerId, status))) throw notFound();
  return status;
}

async function renderOne(ctx: AppContext, viewerId: string | null, id: string) {
  const [rendered] = await renderStatuses(ctx, viewerId, [id]);
  if (!rendered) throw notFound();
  return rendered;
}

export default async function statusesRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/api/v1/statuses', {
    schema: { body: PostStatus, headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ maxLength: 256 })) }) },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const body = request.body;
    refuseUnsupported(body);
    if (body.in_reply_to_id && !isId(body.in_reply_to_id)) throw notFound();
    if ((body.media_ids ?? []).some((id) => !isId(id))) throw unprocessable('Validation failed: media_ids names media that does not exist');
    const id = await ctx.actors.ask(viewerId, {
      type: 'postStatus',
      params: {
        text: body.status ?? '',
        spoilerText: body.spoiler_text ?? '',
        sensitive: body.sensitive ?? false,
        visibility: body.visibility,
        language: body.language ?? null,
        inReplyToId: body.in_reply_to_id ?? null,
        mediaIds: body.media_ids ?? [],
        idempotencyKey: request.headers['idempotency-key'] ?? null,
        applicationId: request.token!.application_id,
      },
    });
    return renderOne(ctx, viewerId, id);
  });

  app.get('/api/v1/statuses/:id', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request) => {
    const status = await visibleStatus(ctx, request.viewerId, request.params.id);
    return renderOne(ctx, request.viewerId, status.id);
  });

  app.delete('/api/v1/statuses/:id', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    if (!isId(request.params.id)) throw notFound();
    const { rows, bundle } = await ctx.statusLoader.load(viewerId, [request.params.id]);
    const deleted = await ctx.actors.ask(viewerId, { type: 'deleteStatus', statusId: request.params.id });
    // Rendered as it was, with its source text, so apps can offer "delete and redraft".
    const status = rows[0] ?? deleted;
    bundle.statuses.set(status.id, status);
    return renderStatus(ctx.render, bundle, status, { withSource: true });
  });

  app.get('/api/v1/statuses/:id/context', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request) => {
    const viewerId = request.viewerId;
    const status = await visibleStatus(ctx, viewerId, request.params.id);
    const thread = await statuses.threadIds(ctx.db, status);
    const ancestors = await renderStatuses(ctx, viewerId, thread.ancestors, 'thread');
    // Depth-first, oldest reply first at each level: the order people read a thread in.
    const children = new Map<string, string[]>();
    for (const d of thread.descendants) children.set(d.parent, [...(children.get(d.parent) ?? []), d.id]);
    const order: string[] = [];
    const walk = (id: string) => {
      for (const child of children.get(id) ?? []) {
        order.push(child);
        walk(child);
      }
    };
    walk(status.id);
    const { rows, bundle } = await loadForViewer(ctx, viewerId, order, 'thread');
    // A reply hidden from the viewer (or by a filter) hides its subtree too, as Mastodon does.
    const shown = new Set([status.id]);
    const parentOf = new Map(thread.descendants.map((d) => [d.id, d.parent]));
    const visibleIds = new Set(rows.map((r) => r.id));
    const descendants = order.filter((id) => {
      const ok = visibleIds.has(id) && shown.has(parentOf.get(id)!);
      if (ok) shown.add(id);
      return ok;
    });
    return {
      ancestors,
      descendants: descendants.map((id) => renderStatus(ctx.render, bundle, bundle.statuses.get(id)!)),
    };
  });

  for (const action of ['favourite', 'unfavourite', 'reblog', 'unreblog'] as const) {
    app.post(`/api/v1/statuses/:id/${action}`, {
      schema: {
        params: StatusParams,
        body: Type.Object({ visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('unlisted'), Type.Literal('private')])) }),
      },
      config: { auth: { kind: 'user', scopes: action.endsWith('favourite') ? ['write:favourites'] : ['write:statuses'] } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const status = await visibleStatus(ctx, viewerId, request.params.id, true);
      if (action === 'reblog') {
        const reblogId = await ctx.actors.ask(viewerId, { type: 'reblog', status, visibility: request.body.visibility ?? 'public' });
        return renderOne(ctx, viewerId, reblogId);
      }
      await ctx.actors.ask(viewerId, { type: action, status });
      return renderOne(ctx, viewerId, status.id);
    });
  }

  for (const list of ['favourited_by', 'reblogged_by'] as const) {
    app.get(`/api/v1/statuses/:id/${list}`, {
      schema: { params: StatusParams, querystring: Type.Object(PagingQuery(40, 80)) },
      config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
    }, async (request, reply) => {
      const status = await visibleStatus(ctx, request.viewerId, request.params.id);
      const page = await statuses.actorsOf(ctx.db, list, status.id, pageParams(request.query, 40));
      const byId = new Map((await findAccountsByIds(ctx.db, page.accountIds)).map((a) => [a.id, a]));
      // Neither side of a block sees the other here (Mastodon's without_blocking / domain blocks).
      const relations = await ctx.statusLoader.relations.forViewer(request.viewerId);
      const shown = (a: AccountRow) => !relations.blockedBy.has(a.id) && !blocksAccount(relations, a, a.id);
      setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
      return page.accountIds.map((id) => byId.get(id)).filter((a) => !!a && shown(a)).map((a) => renderAccount(ctx.render, a!));
    });
  }
}
