import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { can } from '../../services/roles.ts';
import { createInvite, endInvite, inviteState, INVITE_EXPIRIES, INVITE_MAX_USES } from '../../services/invites.ts';
import { invitesOf } from '../../storage/invites.ts';
import { isId } from '../../storage/ids.ts';
import type { SignedIn } from './session.ts';
import { sendFormPage, sendMessagePage, signedInOrRedirect, translatorOf } from './page.ts';

// Notices after a redirect, by key: their message keys.
const NOTICES: Record<string, string> = { made: 'invites.notice_made', ended: 'invites.notice_ended' };
const InviteForm = Type.Object({
  max_uses: Type.Optional(Type.String({ maxLength: 5 })),
  expires_in: Type.Optional(Type.String({ maxLength: 10 })),
  autofollow: Type.Optional(Type.String({ maxLength: 5 })),
});
const choice = (v: string | undefined) => (v && /^\d{1,7}$/.test(v) ? Number(v) : null);

/** Invites (Mastodon's /invites): made and ended by people whose role may invite (services/invites.ts). */
export default async function invitePageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  /** Signed in, with invite_users; anyone else is sent to sign in or gets a 403 page. */
  async function inviter(request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | null> {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return null;
    if (!can(me.user.role?.permissions, 'invite_users')) {
      await sendMessagePage(ctx, request, reply, { key: 'invites.not_allowed_title' }, { key: 'invites.not_allowed' }, { status: 403, kind: 'error' });
      return null;
    }
    return me;
  }

  const page = async (request: FastifyRequest, reply: FastifyReply, me: SignedIn, notice: string, error: string, status = 200) => {
    const now = new Date();
    return sendFormPage(ctx, request, reply, 'invites', { key: 'invites.title' }, {
      invites: (await invitesOf(ctx.db, me.account.id)).map((i) => ({
        id: i.id, link: `${ctx.config.publicUrl}/invite/${i.code}`, uses: i.uses, maxUses: i.max_uses, expiresAt: i.expires_at,
        autofollow: i.autofollow, state: inviteState(i, now),
      })),
      expiries: INVITE_EXPIRIES, maxUses: INVITE_MAX_USES, notice, error,
    }, status);
  };

  app.get('/invites', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await inviter(request, reply);
    if (!me) return;
    const key = request.query.notice && Object.hasOwn(NOTICES, request.query.notice) ? NOTICES[request.query.notice]! : '';
    return page(request, reply, me, key ? (await translatorOf(ctx, request))(key) : '', '');
  });

  app.post('/invites', { schema: { body: InviteForm } }, async (request, reply) => {
    const me = await inviter(request, reply);
    if (!me) return;
    try {
      await createInvite(ctx.db, { accountId: me.account.id, permissions: me.user.role?.permissions }, {
        maxUses: choice(request.body.max_uses), expiresIn: choice(request.body.expires_in), autofollow: request.body.autofollow === '1',
      });
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return page(request, reply, me, '', err.message, 422);
      throw err;
    }
    return reply.redirect('/invites?notice=made', 303);
  });

  app.post('/invites/:id/expire', { schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) } }, async (request, reply) => {
    const me = await inviter(request, reply);
    if (!me) return;
    try {
      if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
      await endInvite(ctx.db, { accountId: me.account.id, permissions: me.user.role?.permissions }, request.params.id);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 404) return page(request, reply, me, '', (await translatorOf(ctx, request))('invites.gone'), 404);
      throw err;
    }
    return reply.redirect('/invites?notice=ended', 303);
  });
}
