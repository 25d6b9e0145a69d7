import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { visibleAccount } from '../../services/accounts.ts';
import { MAX_MUTE_SECONDS, muteOptions } from '../../services/blocks.ts';
import { writeAccountNote } from '../../services/account-notes.ts';
import { ApiError } from '../../errors.ts';
import type { AccountMessage } from '../../actors/account.ts';
import { safeReturnTo } from './auth.ts';
import { refused, signedInForForm } from './client-actions.ts';

const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Back = Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })) });
const MuteForm = Type.Object({
  return_to: Back.properties.return_to,
  // A check box: present ("1") when notifications are hidden too.
  notifications: Type.Optional(Type.String({ maxLength: 10 })),
  // Seconds, one of the form's choices; 0 is until unmuted.
  duration: Type.Optional(Type.String({ maxLength: 12 })),
});
const NoteForm = Type.Object({ return_to: Back.properties.return_to, comment: Type.Optional(Type.String({ maxLength: 100_000 })) });
const NotifyForm = Type.Object({ return_to: Back.properties.return_to, notify: Type.Optional(Type.String({ maxLength: 10 })) });

/** The durations a mute form offers, in seconds (Mastodon's choices), 0 first: until unmuted. */
export const MUTE_DURATIONS: [number, string][] = [
  [0, 'relationship.until_unmuted'], [300, 'duration.5m'], [1800, 'duration.30m'], [3600, 'duration.1h'], [21_600, 'duration.6h'],
  [86_400, 'duration.1d'], [259_200, 'duration.3d'], [604_800, 'duration.7d'],
];

/**
 * A profile's forms about the relationship with its account: mute (for a while, with or without its notifications)
 * and unmute, block and unblock, the private note, and the bell (notify on new posts: a follow with `notify`). Each
 * is the person's account actor's message or the service the API's route calls, on an account the API would show
 * (`visibleAccount`), and answers with a redirect back to the profile.
 */
export default async function clientRelationRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const back = (returnTo: string | undefined) => (returnTo ? safeReturnTo(returnTo, ctx.config.publicUrl) : '/home');

  const simple: [string, (targetId: string) => AccountMessage][] = [
    ['unmute', (targetId) => ({ type: 'unmute', targetId })],
    ['block', (targetId) => ({ type: 'block', targetId })],
    ['unblock', (targetId) => ({ type: 'unblock', targetId })],
  ];
  for (const [action, message] of simple) {
    app.post(`/accounts/:id/${action}`, { schema: { params: IdParams, body: Back } }, async (request, reply) => {
      const returnTo = back(request.body.return_to);
      const me = await signedInForForm(request, reply, returnTo);
      if (!me) return reply;
      try {
        const target = await visibleAccount(ctx.db, request.params.id);
        await ctx.actors.ask(me.account.id, message(target.id));
      } catch (err) {
        return refused(ctx, request, reply, err, returnTo);
      }
      return reply.redirect(returnTo, 303);
    });
  }

  app.post('/accounts/:id/mute', { schema: { params: IdParams, body: MuteForm } }, async (request, reply) => {
    const returnTo = back(request.body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    const raw = request.body.duration ?? '0';
    const duration = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
    try {
      const target = await visibleAccount(ctx.db, request.params.id);
      if (!(duration >= 0 && duration <= MAX_MUTE_SECONDS)) throw new ApiError(422, 'Choose how long to mute for.');
      // An unchecked box is absent from the form: notifications then still come.
      await ctx.actors.ask(me.account.id, { type: 'mute', targetId: target.id, options: muteOptions(request.body.notifications === '1', duration) });
    } catch (err) {
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(returnTo, 303);
  });

  app.post('/accounts/:id/note', { schema: { params: IdParams, body: NoteForm } }, async (request, reply) => {
    const returnTo = back(request.body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    try {
      const target = await visibleAccount(ctx.db, request.params.id);
      // Browsers send a textarea's line breaks as CRLF: kept as the apps send them, one character each.
      await writeAccountNote(ctx.db, me.account.id, target.id, (request.body.comment ?? '').replace(/\r\n/g, '\n'));
    } catch (err) {
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(returnTo, 303);
  });

  // The bell: as POST /api/v1/accounts/:id/follow with `notify` (following, or asking to, with that option).
  app.post('/accounts/:id/notify', { schema: { params: IdParams, body: NotifyForm } }, async (request, reply) => {
    const returnTo = back(request.body.return_to);
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    try {
      const target = await visibleAccount(ctx.db, request.params.id);
      await ctx.actors.ask(me.account.id, { type: 'follow', targetId: target.id, options: { notify: request.body.notify === '1' } });
    } catch (err) {
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(returnTo, 303);
  });
}
