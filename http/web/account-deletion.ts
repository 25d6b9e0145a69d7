import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { deleteOwnAccount } from '../../services/account-deletion.ts';
import { endWebSession, type SignedIn } from './session.ts';
import { sendFormPage, sendMessagePage, signedInOrRedirect } from './page.ts';

/** Settings, "Delete account" (Mastodon's /settings/delete): the rules live in services/account-deletion.ts. */
export default async function accountDeletionPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const page = (request: FastifyRequest, reply: FastifyReply, me: SignedIn, error = '', status = 200) =>
    sendFormPage(ctx, request, reply, 'settings/delete', { key: 'settings.delete' }, {
      username: me.account.username, twoFactor: me.user.otp_enabled_at !== null, notice: '', error,
    }, status);

  app.get('/settings/delete', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && page(request, reply, me);
  });

  app.post('/settings/delete', {
    schema: {
      body: Type.Object({
        current_password: Type.Optional(Type.String({ maxLength: 200 })),
        otp_code: Type.Optional(Type.String({ maxLength: 40 })),
      }),
    },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const error = await deleteOwnAccount(ctx, me, { password: request.body.current_password ?? '', code: request.body.otp_code ?? '' });
    // 429 when too many wrong passwords were tried, as sign-in answers; 422 for a wrong one.
    if (error) return page(request, reply, me, error, /Too many/.test(error) ? 429 : 422);
    await endWebSession(ctx, request, reply);
    return reply.redirect('/auth/done/account_deleted', 303);
  });
}
