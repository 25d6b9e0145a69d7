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
import { isLanguage } from '../../services/languages.ts';
import type { Visibility } from '../../storage/statuses.ts';
import { safeReturnTo } from './auth.ts';
import { interactionPath } from './interaction.ts';
import { sendMessagePage } from './page.ts';
import { clientThread } from './client-pages.ts';
import { composeView, POLL_BOXES } from './client-compose.ts';
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
  // The image's description (the file itself comes in request.uploads, from a multipart form).
  description: Type.Optional(Type.String({ maxLength: 1500 })),
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

/** The signed-in person of a form, or a redirect to sign in (and back to where the form was). */
export async function signedInForForm(request: FastifyRequest, reply: FastifyReply, back: string): Promise<SignedIn | undefined> {
  const me = await request.signedIn();
  if (!me) {
    await reply.redirect(interactionPath(back), 303);
    return undefined;
  }
  return me;
}

/** A refused action: its reason on a page with the status code (Mastodon's words, as the API gives them). */
export function refused(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, err: unknown, back: string) {
  if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
  const message = err.statusCode === 404 ? 'This post or account is not there, or you may not see it.' : err.message;
  return sendMessagePage(ctx, request, reply, 'Not done', message, { status: err.statusCode, kind: 'error', link: { href: back, text: 'Go back' } });
}

/**
 * The forms of the signed-in pages: write a post or a reply, favourite, boost, bookmark, delete, follow. Each answers
 * with a redirect to the page it came from (Post/Redirect/Get), so reloading that page sends nothing again.
 */
export default async function clientActionRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const back = (returnTo: string | undefined, fallback = '/home') => (returnTo ? safeReturnTo(returnTo, ctx.config.publicUrl) : fallback);

  app.post('/statuses', { schema: { body: Compose } }, async (request, reply) => {
    const body = request.body;
    const returnTo = back(body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    const viewerId = me.account.id;
    const inReplyToId = body.in_reply_to_id && isId(body.in_reply_to_id) ? body.in_reply_to_id : null;
    const values = {
      status: body.status ?? '', spoiler_text: body.spoiler_text ?? '', in_reply_to_id: inReplyToId ?? '',
      visibility: body.visibility && VISIBILITIES.has(body.visibility) ? body.visibility : undefined,
      language: body.language && isLanguage(body.language) ? body.language : undefined,
      poll_options: [body.poll_options ?? []].flat(),
      poll_expires_in: body.poll_expires_in ?? '86400',
      poll_multiple: body.poll_multiple === '1',
    };
    // A poll when any choice is written; its rules (two choices at least, lengths, duration) are the service's.
    const choices = values.poll_options.map((o) => o.trim()).filter(Boolean);
    const poll = choices.length > 0
      ? { options: choices, expiresIn: /^\d{1,10}$/.test(values.poll_expires_in) ? Number(values.poll_expires_in) : NaN, multiple: values.poll_multiple, hideTotals: false }
      : null;
    let id: string;
    try {
      // An image with its description, taken as POST /api/v2/media takes it (processed by a job, shown once ready).
      const file = request.uploads?.file;
      const mediaIds: string[] = [];
      if (file && file.data.length > 0) {
        const media = await acceptUpload(ctx, viewerId, file.data, { description: (body.description ?? '').trim(), focusX: 0, focusY: 0 });
        // The post needs the file processed (as Mastodon's does): the form waits for it, as an app would poll.
        await whenProcessed(ctx, media.id);
        mediaIds.push(media.id);
      }
      await ctx.jobBacklog.admit();
      id = await ctx.actors.ask(viewerId, {
        type: 'postStatus',
        params: {
          text: values.status, spoilerText: values.spoiler_text, sensitive: false,
          visibility: values.visibility as Visibility | undefined, language: values.language ?? null,
          inReplyToId, mediaIds, poll, idempotencyKey: body.idempotency_key || null, applicationId: null,
        },
      });
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      // The form again, as it was sent, with the server's reason (and its count of the text, when too long).
      const length = statusLength(values.status, values.spoiler_text);
      const compose = composeView(ctx, me, {
        ...values, description: body.description ?? '', returnTo, error: err.message.replace(/^Validation failed: /, '') + '.',
        length: length > ctx.config.maxStatusChars ? length : null,
      });
      if (inReplyToId && err.statusCode !== 404) return clientThread(ctx, request, reply, me, inReplyToId, compose, err.statusCode);
      return sendClientPage(ctx, request, reply, 'client/publish', 'New post', { heading: 'New post', compose }, err.statusCode);
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
