import { Type } from '../../schema.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { ApiError, forbidden } from '../../../errors.ts';
import { usersOfAccounts } from '../../../storage/moderation.ts';
import { findUserById } from '../../../storage/users.ts';
import { resendConfirmationMail } from '../../../services/mail.ts';

const Resend = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 320 })),
});

/**
 * Mastodon's Api::V1::Emails::ConfirmationsController. These serve people whose address is not confirmed yet, so
 * their policy is `app` (any valid token with the scope) rather than `user`, which refuses unconfirmed logins; the
 * user behind the token is checked here.
 */
export default async function emailsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // The token's user, whether or not their address is confirmed or their sign-up approved.
  const tokenUser = (request: FastifyRequest) => (request.token?.user_id ? findUserById(ctx.db, request.token.user_id) : Promise.resolve(null));

  /**
   * POST /api/v1/emails/confirmations: sends the confirmation mail again, to the address given in `email` if there
   * is one (correcting a mistyped address). Only the app the user signed up through may, and only while an address
   * waits for confirmation. Answers `{}`.
   */
  app.post('/api/v1/emails/confirmations', {
    schema: { body: Type.Optional(Resend) },
    config: {
      auth: { kind: 'app', scopes: ['write:accounts'] },
      // Mastodon's throttle_email_confirmations/ip: 25 in 5 minutes per address (each one sends a mail).
      rateLimit: { max: 25, timeWindow: 5 * 60 * 1000, keyGenerator: (request) => `email-confirmations:${request.ip}` },
    },
    // Mastodon's before_actions, before the body is validated.
    preValidation: async (request) => {
      const token = request.token!;
      const user = token.user_id && token.account_id ? (await usersOfAccounts(ctx.db, [token.account_id])).get(token.account_id) : undefined;
      if (!user || user.created_by_application_id !== token.application_id) {
        throw forbidden('This method is only available to the application the user originally signed-up with');
      }
    },
  }, async (request) => {
    await resendConfirmationMail(ctx, request.token!.user_id!, request.body?.email);
    return {};
  });

  /** GET /api/v1/emails/check_confirmation (Mastodon 4.4): whether the token's user has confirmed their address. */
  app.get('/api/v1/emails/check_confirmation', {
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    if (!request.token) throw new ApiError(401, 'The access token is invalid');
    const user = await tokenUser(request);
    if (!user) throw new ApiError(422, 'This method requires an authenticated user');
    return user.confirmed_at !== null;
  });
}
