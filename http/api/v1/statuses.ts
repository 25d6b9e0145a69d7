import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import type { AppContext } from '../../../context.ts';
import { Bool, IdList, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { notFound, unprocessable, UnexpectedMentions } from '../../../errors.ts';
import * as statuses from '../../../storage/statuses.ts';
import { findAccountsByIds, type AccountRow } from '../../../storage/accounts.ts';
import { blocksAccount } from '../../../services/relations.ts';
import { visibleStatus } from '../../../services/visibility.ts';
import { refreshForContext } from '../../../services/thread-backfill.ts';
import { asyncRefreshHeader } from '../../serializers/async-refresh.ts';
import { threadReadingOrder } from '../../../services/public-pages.ts';
import { renderStatus } from '../../serializers/status.ts';
import { loadForViewer, renderStatuses } from '../../serializers/statuses.ts';
import { renderAccount } from '../../serializers/account.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';
import { parseScheduledAt } from '../../../services/scheduled-statuses.ts';
import { renderScheduledStatuses } from '../../serializers/scheduled-status.ts';
import { parseBoolean } from '../../plugins/validation.ts';
import type { PollParams } from '../../../services/polls.ts';
import { editsOf } from '../../../storage/status-edits.ts';
import { findMediaByIds } from '../../../storage/media.ts';
import { renderStatusEdits } from '../../serializers/status-edit.ts';
import { parseQuotePolicy } from '../../../services/quotes.ts';
import { acceptedQuotesPage } from '../../../storage/quotes.ts';

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
  // Read by parsePoll (forms send it as strings, JSON as numbers and booleans; empty means none).
  poll: Type.Optional(Type.Unknown()),
  // Account ids the post may mention; a mention of anyone else is refused (422 with unexpected_accounts).
  allowed_mentions: Type.Optional(IdList(50)),
  scheduled_at: Type.Optional(Type.Unknown()),
  // Mastodon 4.5 quotes: the status quoted, and who may quote this one (checked by parseQuotePolicy: 422 otherwise).
  quoted_status_id: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
  quote_approval_policy: Type.Optional(Type.Unknown()),
});

/** PUT /api/v1/statuses/:id: the status as it is to be. */
const EditStatus = Type.Object({
  status: Type.Optional(Type.String({ maxLength: 100_000 })),
  sensitive: Type.Optional(Bool()),
  spoiler_text: Type.Optional(Type.String({ maxLength: 10_000 })),
  language: Type.Optional(Type.Union([Type.String({ pattern: '^[a-zA-Z]{2,3}([-_][a-zA-Z]{2,4})?$' }), Type.Null()])),
  media_ids: Type.Optional(IdList(4)),
  media_attributes: Type.Optional(Type.Array(Type.Object({
    id: Type.String({ maxLength: 40 }),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    // "x,y" as in Mastodon's media API, each between -1 and 1.
    focus: Type.Optional(Type.String({ maxLength: 40 })),
  }), { maxItems: 4 })),
  poll: Type.Optional(Type.Unknown()),
  quote_approval_policy: Type.Optional(Type.Unknown()),
});

/** `poll[options][]`, `poll[expires_in]`, `poll[multiple]`, `poll[hide_totals]` as PollParams; null for no poll. */
function parsePoll(value: unknown): PollParams | null {
  if (isEmpty(value)) return null;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw unprocessable('Validation failed: poll is not a poll');
  const p = value as Record<string, unknown>;
  const rawOptions = p.options === undefined ? [] : Array.isArray(p.options) ? p.options : typeof p.options === 'object' && p.options !== null ? Object.values(p.options) : [p.options];
  if (rawOptions.length > 50 || rawOptions.some((o) => typeof o !== 'string')) throw unprocessable('Validation failed: Poll options must be text');
  const expiresIn = typeof p.expires_in === 'number' ? p.expires_in : typeof p.expires_in === 'string' && /^\d{1,10}$/.test(p.expires_in) ? Number(p.expires_in) : NaN;
  const flag = (v: unknown, name: string) => {
    if (v === undefined || v === null || v === '') return false;
    const b = parseBoolean(v);
    if (b === undefined) throw unprocessable(`Validation failed: poll[${name}] is not a boolean`);
    return b;
  };
  return { options: rawOptions as string[], expiresIn, multiple: flag(p.multiple, 'multiple'), hideTotals: flag(p.hide_totals, 'hide_totals') };
}

/** A focal point `"x,y"` (each -1..1), or a 422. */
function parseFocus(focus: string | undefined): { focusX?: number; focusY?: number } {
  if (focus === undefined || focus === '') return {};
  const [x, y] = focus.split(',').map(Number);
  if (x === undefined || y === undefined || !(Math.abs(x) <= 1) || !(Math.abs(y) <= 1)) throw unprocessable('Validation failed: focus must be two numbers between -1 and 1');
  return { focusX: x, focusY: y };
}

/** null, '', or a list or hash of nothing but such: what clients send for "none" (`scheduled_at: null`, `poll[expires_in]=`). */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (typeof value === 'object') return Object.values(value).every(isEmpty);
  return false;
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
  }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const body = request.body;
    const quotePolicy = parseQuotePolicy(body.quote_approval_policy);
    if (body.in_reply_to_id && !isId(body.in_reply_to_id)) throw notFound();
    if ((body.media_ids ?? []).some((id) => !isId(id))) throw unprocessable('Validation failed: media_ids names media that does not exist');
    const params = {
      text: body.status ?? '',
      spoilerText: body.spoiler_text ?? '',
      sensitive: body.sensitive ?? false,
      visibility: body.visibility,
      language: body.language ?? null,
      inReplyToId: body.in_reply_to_id ?? null,
      mediaIds: body.media_ids ?? [],
      poll: parsePoll(body.poll),
      idempotencyKey: request.headers['idempotency-key'] ?? null,
      applicationId: request.token!.application_id,
      allowedMentions: body.allowed_mentions ?? null,
      quotedStatusId: body.quoted_status_id || null,
      quotePolicy: quotePolicy ?? null,
    };
    // A time to come makes a ScheduledStatus (published by jobs/scheduled-statuses.ts); a past one posts now, as in
    // Mastodon.
    const scheduledAt = parseScheduledAt(body.scheduled_at);
    if (scheduledAt && scheduledAt.getTime() > Date.now()) {
      const row = await ctx.actors.ask(viewerId, { type: 'scheduleStatus', scheduledAt, params: { ...params, idempotencyKey: null } });
      return (await renderScheduledStatuses(ctx, [row]))[0];
    }
    // While this process's job worker is behind, a new post waits (bounded) for it (services/job-backlog.ts).
    await ctx.jobBacklog.admit();
    let id: string;
    try {
      id = await ctx.actors.ask(viewerId, { type: 'postStatus', params });
    } catch (err) {
      if (!(err instanceof UnexpectedMentions)) throw err;
      // Mastodon names the accounts the post would have reached, so the app can ask before sending it anyway.
      const accounts = await findAccountsByIds(ctx.db, err.accountIds);
      return reply.code(422).send({ error: err.message, unexpected_accounts: accounts.map((a) => renderAccount(ctx.render, a)) });
    }
    return renderOne(ctx, viewerId, id);
  });

  // Several statuses at once (Mastodon 4.3): those the viewer may see, in the order asked; no id asks for nothing.
  app.get('/api/v1/statuses', {
    schema: { querystring: Type.Object({ id: Type.Optional(IdList(20)) }) },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request) => renderStatuses(ctx, request.viewerId, [...new Set((request.query.id ?? []).filter(isId))]));

  app.get('/api/v1/statuses/:id', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request) => {
    const status = await visibleStatus(ctx.db, request.viewerId, request.params.id);
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

  app.put('/api/v1/statuses/:id', {
    schema: { params: StatusParams, body: EditStatus },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const body = request.body;
    if (!isId(request.params.id)) throw notFound();
    if ((body.media_ids ?? []).some((id) => !isId(id))) throw unprocessable('Validation failed: media_ids names media that does not exist');
    await ctx.actors.ask(viewerId, {
      type: 'editStatus',
      statusId: request.params.id,
      params: {
        text: body.status ?? '',
        spoilerText: body.spoiler_text ?? '',
        sensitive: body.sensitive ?? false,
        language: body.language,
        mediaIds: body.media_ids ?? [],
        mediaAttributes: (body.media_attributes ?? []).map((m) => ({ id: m.id, description: m.description, ...parseFocus(m.focus) })),
        poll: parsePoll(body.poll),
        quotePolicy: parseQuotePolicy(body.quote_approval_policy),
      },
    });
    return renderOne(ctx, viewerId, request.params.id);
  });

  // Every version, oldest first; a status never edited has one, itself (Mastodon's StatusEdit).
  app.get('/api/v1/statuses/:id/history', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request) => {
    const status = await visibleStatus(ctx.db, request.viewerId, request.params.id);
    const { rows, bundle } = await ctx.statusLoader.load(request.viewerId, [status.id]);
    const current = rows[0];
    if (!current) throw notFound();
    const edits = await editsOf(ctx.db, status.id);
    const media = await findMediaByIds(ctx.db, [...new Set(edits.flatMap((e) => e.media_ids))]);
    return renderStatusEdits(ctx.render, bundle, current, edits, media);
  });

  // What the author typed, for an edit form.
  app.get('/api/v1/statuses/:id/source', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'user', scopes: ['read:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const status = await visibleStatus(ctx.db, viewerId, request.params.id);
    // Another server's status has no source here but its HTML, which Mastodon gives as its text too.
    return { id: status.id, text: status.uri === null ? status.text : status.content, spoiler_text: status.spoiler_text };
  });

  app.get('/api/v1/statuses/:id/context', {
    schema: { params: StatusParams },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const viewerId = request.viewerId;
    const status = await visibleStatus(ctx.db, viewerId, request.params.id);
    // A remote thread's missing posts are fetched in the background; the client may poll and ask again (Mastodon
    // 4.4+). Redis or PostgreSQL failing here leaves the thread as it is, not the request failed.
    const refresh = await refreshForContext(ctx, viewerId, status).catch((err: unknown) => {
      request.log.warn({ err }, 'could not start fetching the thread');
      return null;
    });
    if (refresh) reply.header('Mastodon-Async-Refresh', asyncRefreshHeader(refresh));
    const thread = await statuses.threadIds(ctx.db, status);
    const ancestors = await renderStatuses(ctx, viewerId, thread.ancestors, 'thread');
    // Every reply loaded for the viewer, then read in the order people read a thread in (services/public-pages.ts),
    // a reply hidden from the viewer (or by a filter) hiding its subtree too, as Mastodon does.
    const all = threadReadingOrder(status.id, thread.descendants, { has: () => true }, Infinity);
    const { rows, bundle } = await loadForViewer(ctx, viewerId, all, 'thread');
    const descendants = threadReadingOrder(status.id, thread.descendants, new Set(rows.map((r) => r.id)), Infinity);
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
      const status = await visibleStatus(ctx.db, viewerId, request.params.id, true);
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
      const status = await visibleStatus(ctx.db, request.viewerId, request.params.id);
      const page = await statuses.actorsOf(ctx.db, list, status.id, pageParams(request.query, 40));
      const byId = new Map((await withAccountEmojis(ctx.db, await findAccountsByIds(ctx.db, page.accountIds))).map((a) => [a.id, a]));
      // Neither side of a block sees the other here (Mastodon's without_blocking / domain blocks).
      const relations = await ctx.statusLoader.relations.forViewer(request.viewerId);
      const shown = (a: AccountRow) => !relations.blockedBy.has(a.id) && !blocksAccount(relations, a, a.id);
      setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
      return page.accountIds.map((id) => byId.get(id)).filter((a) => !!a && shown(a)).map((a) => renderAccount(ctx.render, a!));
    });
  }

  // The accepted quotes of a status one may see, newest first, as Mastodon's QuotesController#index lists them to any
  // token: others than its author do not get the quotes by accounts they block or mute (its StatusFilter).
  app.get('/api/v1/statuses/:id/quotes', {
    schema: { params: StatusParams, querystring: Type.Object(PagingQuery(20, 40)) },
    config: { auth: { kind: 'app', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const viewerId = request.viewerId;
    const status = await visibleStatus(ctx.db, viewerId, request.params.id);
    const page = await acceptedQuotesPage(ctx.db, status.id, pageParams(request.query, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId ?? null, page.lastId ?? null);
    // ('search': what the viewer's blocks and mutes leave out, without their filters.)
    return renderStatuses(ctx, viewerId, page.statusIds, status.account_id === viewerId ? null : 'search');
  });

  // The quoted author takes back their approval: the quote shows as `revoked`; answered with the quoting status.
  app.post('/api/v1/statuses/:id/quotes/:quoting_status_id/revoke', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }), quoting_status_id: Type.String({ maxLength: 40 }) }) },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const { id, quoting_status_id: quotingId } = request.params;
    if (!isId(id) || !isId(quotingId)) throw notFound();
    // A status one may not see is not there (404); its quote, not its author's to revoke, is refused (403).
    await visibleStatus(ctx.db, viewerId, id);
    await ctx.actors.ask(viewerId, { type: 'revokeQuote', statusId: id, quotingStatusId: quotingId });
    const [rendered] = await renderStatuses(ctx, viewerId, [quotingId]);
    return rendered ?? renderOne(ctx, viewerId, id);
  });

  // Who may quote one's status from now on.
  app.put('/api/v1/statuses/:id/interaction_policy', {
    schema: { params: StatusParams, body: Type.Object({ quote_approval_policy: Type.Optional(Type.Unknown()) }) },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    if (!isId(request.params.id)) throw notFound();
    const policy = parseQuotePolicy(request.body?.quote_approval_policy);
    if (policy) await ctx.actors.ask(viewerId, { type: 'setQuotePolicy', statusId: request.params.id, policy });
    else if (!(await statuses.findStatus(ctx.db, request.params.id))) throw notFound();
    return renderOne(ctx, viewerId, request.params.id);
  });
}
