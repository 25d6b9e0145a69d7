import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import type { AppContext } from '../../context.ts';
import { isId } from '../params.ts';
import { ApiError } from '../../errors.ts';
import { visibleAccount } from '../../services/accounts.ts';
import { visibleStatus } from '../../services/visibility.ts';
import { statusLength } from '../../services/statuses.ts';
import { acceptUpload, whenProcessed } from '../../services/media.ts';
import { checkAttachable } from '../../services/attachments.ts';
import { isLanguage } from '../../services/languages.ts';
import type { Visibility } from '../../storage/statuses.ts';
import { safeReturnTo } from './auth.ts';
import { interactionPath } from './interaction.ts';
import { sendMessagePage, translatorOf } from './page.ts';
import { clientThread } from './client-pages.ts';
import { composeView, MEDIA_BOXES, POLL_BOXES } from './client-compose.ts';
import { clientEntries } from './client-view.ts';
import { formError } from './service-errors.ts';
import { findMedia } from '../../storage/media.ts';
import { sendClientPage } from './client-page.ts';
import type { SignedIn } from './session.ts';

const Back = Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Compose = Type.Object({
  status: Type.Optional(Type.String({ maxLength: 100_000 })),
  spoiler_text: Type.Optional(Type.String({ maxLength: 10_000 })),
  visibility: Type.Optional(Type.String({ maxLength: 20 })),
  language: Type.Optional(Type.String({ maxLength: 20 })),
  in_reply_to_id: Type.Optional(Type.String({ maxLength: 40 })),
  idempotency_key: Type.Optional(Type.String({ maxLength: 100 })),
  return_to: Type.Optional(Type.String({ maxLength: 4000 })),
  // Each media box's description and focus point (the files come in request.uploads as media_1…media_4, from a
  // multipart form), and files received with an earlier, refused sending of the same form.
  ...Object.fromEntries(Array.from({ length: MEDIA_BOXES }, (_, i) => [
    [`description_${i + 1}`, Type.Optional(Type.String({ maxLength: 1500 }))],
    [`focus_x_${i + 1}`, Type.Optional(Type.String({ maxLength: 10 }))],
    [`focus_y_${i + 1}`, Type.Optional(Type.String({ maxLength: 10 }))],
  ]).flat()) as Record<string, ReturnType<typeof Type.Optional<ReturnType<typeof Type.String>>>>,
  media_ids: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Array(Type.String({ maxLength: 40 }), { maxItems: MEDIA_BOXES })])),
  // When to publish it (a `datetime-local` value and the offset from UTC, in minutes, it is read at).
  scheduled_at: Type.Optional(Type.String({ maxLength: 40 })),
  scheduled_offset: Type.Optional(Type.String({ maxLength: 6 })),
  quoted_status_id: Type.Optional(Type.String({ maxLength: 40 })),
  // A poll: its choices (empty boxes are no choice), how long it runs, whether several answers may be chosen.
  poll_options: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Array(Type.String({ maxLength: 500 }), { maxItems: POLL_BOXES })])),
  poll_expires_in: Type.Optional(Type.String({ maxLength: 10 })),
  poll_multiple: Type.Optional(Type.String({ maxLength: 10 })),
});
const VISIBILITIES = new Set(['public', 'unlisted', 'private', 'direct']);

/**
 * A post's buttons, by path, and the account actor's message for each: as the API's routes do it, the post must be
 * one the person may see (services/visibility.ts, a boost's id standing for the boosted post), and the change is the
 * person's account actor's to make.
 */
const STATUS_ACTIONS = {
  favourite: 'favourite',
  unfavourite: 'unfavourite',
  reblog: 'reblog',
  unreblog: 'unreblog',
  bookmark: 'bookmark',
  unbookmark: 'unbookmark',
  // A boost's id is not the post's here: a boost cannot be pinned (as the API refuses it).
  pin: 'pin',
  unpin: 'unpin',
} as const;

/** A focus coordinate as the form sends it: a number from -1 to 1 (Mastodon's `focus`), else a refusal. */
function focusOf(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < -1 || n > 1) throw new ApiError(422, 'Validation failed: A focus point is two numbers from -1 to 1');
  return n;
}

/** The time a `datetime-local` value names at `offset` minutes east of UTC; null when empty. */
function scheduleOf(value: string, offset: string): Date | null {
  if (!value.trim()) return null;
  const minutes = /^[+-]?\d{1,4}$/.test(offset) ? Number(offset) : NaN;
  const local = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? Date.parse(`${value}Z`) : NaN;
  if (Number.isNaN(local) || Number.isNaN(minutes) || Math.abs(minutes) > 14 * 60) throw new ApiError(422, 'Validation failed: Scheduled at is not a valid date');
  return new Date(local - minutes * 60_000);
}

/** The person's own media among `ids` (files kept from a refused form), for the form to list. */
async function attachedMedia(ctx: AppContext, viewerId: string, ids: string[]) {
  const rows = await Promise.all(ids.slice(0, MEDIA_BOXES).map((id) => findMedia(ctx.db, id)));
  return rows.filter((m) => m !== null && m.account_id === viewerId && m.status_id === null)
    .map((m) => ({ id: m!.id, type: m!.type, description: m!.description ?? '', processing: m!.state === 'processing' }));
}

/** The signed-in person of a form, or a redirect to sign in (and back to where the form was). */
export async function signedInForForm(request: FastifyRequest, reply: FastifyReply, back: string): Promise<SignedIn | undefined> {
  const me = await request.signedIn();
  if (!me) {
    await reply.redirect(interactionPath(back), 303);
    return undefined;
  }
  return me;
}

/** A refused action: its reason on a page with the status code (Mastodon's words, as the API gives them, in the page's language). */
export async function refused(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, err: unknown, back: string) {
  if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
  const message = err.statusCode === 404 ? (await translatorOf(ctx, request))('refused.not_there') : formError(await translatorOf(ctx, request), err);
  return sendMessagePage(ctx, request, reply, { key: 'refused.title' }, message, { status: err.statusCode, kind: 'error', link: { href: back, text: { key: 'common.go_back' } } });
}

/**
 * The forms of the signed-in pages: write a post or a reply, favourite, boost, bookmark, delete, follow. Each answers
 * with a redirect to the page it came from (Post/Redirect/Get), so reloading that page sends nothing again.
 */
export default async function clientActionRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const back = (returnTo: string | undefined, fallback = '/home') => (returnTo ? safeReturnTo(returnTo, ctx.config.publicUrl) : fallback);

  app.post('/statuses', { schema: { body: Compose } }, async (request, reply) => {
    const body = request.body as typeof request.body & Record<string, string | undefined>;
    const returnTo = back(body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    const viewerId = me.account.id;
    const inReplyToId = body.in_reply_to_id && isId(body.in_reply_to_id) ? body.in_reply_to_id : null;
    const quotedId = body.quoted_status_id && isId(body.quoted_status_id) ? body.quoted_status_id : null;
    const values = {
      status: body.status ?? '', spoiler_text: body.spoiler_text ?? '', in_reply_to_id: inReplyToId ?? '',
      visibility: body.visibility && VISIBILITIES.has(body.visibility) ? body.visibility : undefined,
      language: body.language && isLanguage(body.language) ? body.language : undefined,
      poll_options: [body.poll_options ?? []].flat(),
      poll_expires_in: body.poll_expires_in ?? '86400',
      poll_multiple: body.poll_multiple === '1',
      media: Array.from({ length: MEDIA_BOXES }, (_, i) => ({
        description: body[`description_${i + 1}`] ?? '', focus_x: body[`focus_x_${i + 1}`] || '0', focus_y: body[`focus_y_${i + 1}`] || '0',
      })),
      media_ids: [body.media_ids ?? []].flat().filter(isId),
      scheduled_at: body.scheduled_at ?? '',
      scheduled_offset: body.scheduled_offset ?? '0',
      quoted_status_id: quotedId ?? '',
    };
    // A poll when any choice is written; its rules (two choices at least, lengths, duration) are the service's.
    const choices = values.poll_options.map((o) => o.trim()).filter(Boolean);
    const poll = choices.length > 0
      ? { options: choices, expiresIn: /^\d{1,10}$/.test(values.poll_expires_in) ? Number(values.poll_expires_in) : NaN, multiple: values.poll_multiple, hideTotals: false }
      : null;
    let id: string;
    try {
      const scheduledAt = scheduleOf(values.scheduled_at, values.scheduled_offset);
      // Each file with its description and focus, taken as POST /api/v2/media takes them (processed by a job). Files
      // of an earlier sending of this form come first, as they were chosen first.
      const fresh: string[] = [];
      for (let i = 0; i < MEDIA_BOXES; i++) {
        const file = request.uploads?.[`media_${i + 1}`];
        if (!file || file.data.length === 0) continue;
        const slot = values.media[i]!;
        const media = await acceptUpload(ctx, viewerId, file.data, { description: slot.description.trim(), focusX: focusOf(slot.focus_x), focusY: focusOf(slot.focus_y) });
        fresh.push(media.id);
        values.media[i] = { description: '', focus_x: '0', focus_y: '0' };
      }
      values.media_ids = [...values.media_ids, ...fresh];
      // The files are checked as the post will check them (a video or audio file goes alone) before waiting for any.
      await checkAttachable(ctx.db, viewerId, values.media_ids, { processingAllowed: true });
      // The post needs its files processed (as Mastodon's does): the form waits for them, as an app would poll. A
      // video may take longer: the post is then refused with the service's reason, and the form keeps the files.
      await Promise.all(fresh.map((m) => whenProcessed(ctx, m)));
      const params = {
        text: values.status, spoilerText: values.spoiler_text, sensitive: false,
        visibility: values.visibility as Visibility | undefined, language: values.language ?? null,
        inReplyToId, mediaIds: values.media_ids, poll, idempotencyKey: body.idempotency_key || null, applicationId: null,
        quotedStatusId: quotedId,
      };
      // A time to come makes a scheduled post (as POST /api/v1/statuses with scheduled_at); a past one posts now.
      if (scheduledAt && scheduledAt.getTime() > Date.now()) {
        await ctx.actors.ask(viewerId, { type: 'scheduleStatus', scheduledAt, params: { ...params, idempotencyKey: null } });
        return reply.redirect('/scheduled_statuses?notice=scheduled', 303);
      }
      await ctx.jobBacklog.admit();
      id = await ctx.actors.ask(viewerId, { type: 'postStatus', params });
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      // The form again, as it was sent, with the server's reason (and its count of the text, when too long).
      const length = statusLength(values.status, values.spoiler_text);
      const compose = composeView(ctx, me, {
        ...values, returnTo, error: formError(await translatorOf(ctx, request), err),
        length: length > ctx.config.maxStatusChars ? length : null,
        attached: await attachedMedia(ctx, viewerId, values.media_ids),
        quoted: quotedId ? (await clientEntries(ctx, viewerId, [quotedId], null))[0] ?? null : null,
      });
      if (inReplyToId && err.statusCode !== 404) return clientThread(ctx, request, reply, me, inReplyToId, compose, err.statusCode);
      const heading = (await translatorOf(ctx, request))('publish.title');
      return sendClientPage(ctx, request, reply, 'client/publish', heading, { heading, compose }, err.statusCode);
    }
    return reply.redirect(`${returnTo.replace(/#.*$/, '')}#s-${id}`, 303);
  });

  for (const [action, type] of Object.entries(STATUS_ACTIONS)) {
    app.post(`/statuses/:id/${action}`, { schema: { params: IdParams, body: Back } }, async (request, reply) => {
      const returnTo = back(request.body.return_to);
      const me = await signedInForForm(request, reply, returnTo);
      if (!me) return reply;
      const viewerId = me.account.id;
      try {
        const status = await visibleStatus(ctx.db, viewerId, request.params.id, type !== 'pin' && type !== 'unpin');
        if (type === 'reblog') await ctx.actors.ask(viewerId, { type, status, visibility: 'public' });
        else await ctx.actors.ask(viewerId, { type, status });
      } catch (err) {
        return refused(ctx, request, reply, err, returnTo);
      }
      return reply.redirect(returnTo, 303);
    });
  }

  app.post('/statuses/:id/delete', { schema: { params: IdParams, body: Back } }, async (request, reply) => {
    const returnTo = back(request.body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    try {
      if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
      await ctx.actors.ask(me.account.id, { type: 'deleteStatus', statusId: request.params.id });
    } catch (err) {
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(returnTo, 303);
  });

  // A poll's form: one radio (or several boxes) named `choices`, as POST /api/v1/polls/:id/votes takes them.
  app.post('/polls/:id/votes', {
    schema: { params: IdParams, body: Type.Object({ choices: Type.Optional(Type.Union([Type.String({ maxLength: 4 }), Type.Array(Type.String({ maxLength: 4 }), { maxItems: 50 })])), return_to: Back.properties.return_to }) },
  }, async (request, reply) => {
    const returnTo = back(request.body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    const raw = request.body.choices;
    const choices = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((c) => /^[0-9]{1,3}$/.test(c)).map(Number);
    try {
      if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
      if (choices.length === 0) throw new ApiError(422, 'Choose an option before voting.');
      await ctx.actors.ask(me.account.id, { type: 'votePoll', pollId: request.params.id, choices });
    } catch (err) {
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(returnTo, 303);
  });

  for (const [action, type] of [['authorize', 'authorizeFollowRequest'], ['reject', 'rejectFollowRequest']] as const) {
    app.post(`/follow_requests/:id/${action}`, { schema: { params: IdParams, body: Back } }, async (request, reply) => {
      const returnTo = back(request.body.return_to, '/follow_requests');
      const me = await signedInForForm(request, reply, returnTo);
      if (!me) return reply;
      try {
        // As POST /api/v1/follow_requests/:id/authorize: the request must be there, to this person.
        const found = isId(request.params.id) && await ctx.actors.ask(me.account.id, { type, requesterId: request.params.id });
        if (!found) throw new ApiError(404, 'Record not found');
      } catch (err) {
        return refused(ctx, request, reply, err, returnTo);
      }
      return reply.redirect(returnTo, 303);
    });
  }

  for (const action of ['follow', 'unfollow'] as const) {
    app.post(`/accounts/:id/${action}`, { schema: { params: IdParams, body: Back } }, async (request, reply) => {
      const returnTo = back(request.body.return_to);
      const me = await signedInForForm(request, reply, returnTo);
      if (!me) return reply;
      try {
        const target = await visibleAccount(ctx.db, request.params.id);
        if (action === 'follow') await ctx.actors.ask(me.account.id, { type: 'follow', targetId: target.id, options: {} });
        else await ctx.actors.ask(me.account.id, { type: 'unfollow', targetId: target.id });
      } catch (err) {
        return refused(ctx, request, reply, err, returnTo);
      }
      return reply.redirect(returnTo, 303);
    });
  }
}
