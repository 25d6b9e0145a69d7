import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { LIMITS } from '../plugins/rate-limit.ts';
import { finishOidcSignIn, OIDC_PROVIDER, PENDING_SECONDS, ProviderUnavailable, startOidcSignIn, takePendingSignIn } from '../../services/oidc.ts';
import { checkCurrentPassword } from '../../services/sign-in.ts';
import { deleteUserIdentity } from '../../storage/identities.ts';
import { startWebSession } from './session.ts';
import { safeReturnTo } from './auth.ts';
import { sendMessagePage, signedInOrRedirect, translatorOf } from './page.ts';
import { serviceMessage } from './service-errors.ts';

const PENDING_COOKIE = '_oidc_pending';
/** Mastodon's paths (omniauth's request and callback phases), so a provider set up for Mastodon works unchanged. */
const START_PATH = '/auth/auth/openid_connect';
const CALLBACK_PATH = '/auth/auth/openid_connect/callback';

/**
 * Single sign-on through the OpenID Connect provider of the settings: the sign-in page's button (and so the OAuth
 * authorize flow's sign-in step), the provider's callback, and linking and unlinking from account settings.
 */
export default async function oidcPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const oidc = ctx.config.oidc;
  if (!oidc) return;
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const limit = { ...LIMITS.signIn, keyGenerator: (request: FastifyRequest) => `sign-in:${request.ip}` };
  const cookieOptions = { path: START_PATH, httpOnly: true, sameSite: 'lax' as const, secure: ctx.config.publicUrl.startsWith('https:') };

  // The services' words (services/oidc.ts) or the page's, said in the page's language.
  const failure = async (request: FastifyRequest, reply: FastifyReply, status: number, message: string, link = { href: '/auth/sign_in', text: 'password.back' }) =>
    sendMessagePage(ctx, request, reply, { key: 'oidc.failed' }, serviceMessage(await translatorOf(ctx, request), message), { status, kind: 'error', link: { href: link.href, text: { key: link.text } } });

  app.post(START_PATH, {
    schema: { body: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })), link: Type.Optional(Type.String({ maxLength: 10 })) }) },
    config: { rateLimit: limit },
  }, async (request, reply) => {
    let linkUserId: string | null = null;
    let returnTo = safeReturnTo(request.body.return_to, ctx.config.publicUrl);
    if (request.body.link) {
      const me = await signedInOrRedirect(request, reply);
      if (!me) return;
      linkUserId = me.user.id;
      returnTo = '/settings/account';
    }
    let started: { url: string; token: string };
    try {
      started = await startOidcSignIn(ctx, { returnTo, linkUserId });
    } catch (err) {
      if (err instanceof ProviderUnavailable) return failure(request, reply, 502, `${oidc.displayName} could not be reached. Try again in a few minutes.`);
      throw err;
    }
    reply.setCookie(PENDING_COOKIE, started.token, { ...cookieOptions, maxAge: PENDING_SECONDS });
    return reply.redirect(started.url, 303);
  });

  // The provider's answer: code, state and iss (or an error) in the query, checked by openid-client.
  app.get(CALLBACK_PATH, { config: { rateLimit: limit } }, async (request, reply) => {
    const pending = await takePendingSignIn(ctx, request.cookies[PENDING_COOKIE]);
    reply.clearCookie(PENDING_COOKIE, { path: START_PATH });
    if (!pending) return failure(request, reply, 400, `This sign-in with ${oidc.displayName} was not started in this browser, or took too long. Start again.`);
    // A link is for the person who asked for it, still signed in here.
    if (pending.linkUserId && (await request.signedIn())?.user.id !== pending.linkUserId) {
      return failure(request, reply, 403, `Sign in again, then link ${oidc.displayName} from your account settings.`);
    }
    const callbackUrl = new URL(oidc.redirectUri);
    callbackUrl.search = new URL(request.url, ctx.config.publicUrl).search;
    const outcome = await finishOidcSignIn(ctx, callbackUrl, pending, request.ip);
    if (!outcome.ok) {
      return failure(request, reply, outcome.status, outcome.error, pending.linkUserId ? { href: '/settings/account', text: 'oidc.back_settings' } : undefined);
    }
    if (pending.linkUserId) return reply.redirect('/settings/account?notice=oidc_linked', 303);
    await startWebSession(ctx, request, reply, outcome.user);
    return reply.redirect(pending.returnTo, 303);
  });

  // Unlinking asks for the password: someone who only ever signed in through the provider sets one first (by a reset).
  app.post('/settings/account/identity/unlink', {
    schema: { body: Type.Object({ current_password: Type.Optional(Type.String({ maxLength: 200 })) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const wrongPassword = await checkCurrentPassword(ctx, me.user, request.body.current_password ?? '');
    if (wrongPassword) {
      const t = await translatorOf(ctx, request);
      return sendMessagePage(ctx, request, reply, { key: 'oidc.not_unlinked' }, `${serviceMessage(t, wrongPassword)} ${t('oidc.unlink_needs_password', { provider: oidc.displayName })}`, {
        status: 422, kind: 'error', link: { href: '/settings/account', text: { key: 'oidc.back_settings' } },
      });
    }
    await deleteUserIdentity(ctx.db, me.user.id, OIDC_PROVIDER);
    return reply.redirect('/settings/account?notice=oidc_unlinked', 303);
  });
}
