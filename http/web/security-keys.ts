import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { addPasskey, addSecurityKey, passkeyRegistrationOptions, registrationOptions } from '../../services/webauthn.ts';
import { checkCurrentPassword } from '../../services/sign-in.ts';
import { findUserById } from '../../storage/users.ts';
import { deleteWebauthnCredential, userWebauthnCredentials } from '../../storage/webauthn-credentials.ts';
import { isId } from '../../storage/ids.ts';
import type { SignedIn } from './session.ts';
import { sendFormPage, signedInOrRedirect, translatorOf } from './page.ts';
import { serviceMessage } from './service-errors.ts';

// Notices after a redirect, by key: their message keys (the page's template says them).
const NOTICES: Record<string, string> = { key_added: 'keys.notice_key_added', key_removed: 'keys.notice_removed', passkey_added: 'keys.notice_passkey_added' };

/**
 * A person's passkeys (which sign in alone) and security keys (a second factor), WebAuthn both: named, with their last
 * use; added by the page's script, removed with the password.
 */
export default async function securityKeyPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function keysPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { notice?: string; error?: string } = {}, status = 200) {
    const user = (await findUserById(ctx.db, me.user.id)) ?? me.user;
    const all = await userWebauthnCredentials(ctx.db, user.id);
    return sendFormPage(ctx, request, reply, 'settings/security_keys', { key: 'keys.title' }, {
      twoFactorOn: user.otp_enabled_at !== null, keys: all.filter((k) => !k.passkey), passkeys: all.filter((k) => k.passkey),
      passwordless: ctx.config.omniauthOnly ? '' : 'yes', notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  }

  app.get('/settings/security_keys', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && keysPage(request, reply, me, { notice: (request.query.notice && Object.hasOwn(NOTICES, request.query.notice) ? NOTICES[request.query.notice] : '') || '' });
  });

  app.post('/settings/security_keys/options', async (request, reply) => {
    const me = await request.signedIn();
    const t = await translatorOf(ctx, request);
    if (!me) return reply.code(401).send({ error: t('keys.sign_in_again') });
    if (!me.user.otp_enabled_at) return reply.code(422).send({ error: t('error.key_needs_two_factor') });
    return registrationOptions(ctx, me.user, me.account.username);
  });

  // The script sends JSON; a form posted without it (no JavaScript) is told what is missing.
  app.post('/settings/security_keys', {
    schema: { body: Type.Object({ nickname: Type.Optional(Type.String({ maxLength: 200 })), credential: Type.Optional(Type.Unknown()) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const json = request.headers['content-type']?.startsWith('application/json');
    if (!json || !request.body.credential) return keysPage(request, reply, me, { error: (await translatorOf(ctx, request))('keys.needs_js_key') }, 422);
    const error = await addSecurityKey(ctx, me.user, request.body.nickname ?? '', request.body.credential);
    return error ? reply.code(422).send({ error: serviceMessage(await translatorOf(ctx, request), error) }) : { ok: true };
  });

  app.post('/settings/passkeys/options', async (request, reply) => {
    const me = await request.signedIn();
    const t = await translatorOf(ctx, request);
    if (!me) return reply.code(401).send({ error: t('keys.sign_in_again') });
    if (ctx.config.omniauthOnly) return reply.code(403).send({ error: t('error.sso_only') });
    return passkeyRegistrationOptions(ctx, me.user, me.account.username);
  });

  app.post('/settings/passkeys', {
    schema: { body: Type.Object({ nickname: Type.Optional(Type.String({ maxLength: 200 })), credential: Type.Optional(Type.Unknown()) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const json = request.headers['content-type']?.startsWith('application/json');
    if (!json || !request.body.credential) return keysPage(request, reply, me, { error: (await translatorOf(ctx, request))('keys.needs_js_passkey') }, 422);
    const t = await translatorOf(ctx, request);
    if (ctx.config.omniauthOnly) return reply.code(403).send({ error: t('error.sso_only') });
    const error = await addPasskey(ctx, me.user, request.body.nickname ?? '', request.body.credential);
    return error ? reply.code(422).send({ error: serviceMessage(t, error) }) : { ok: true };
  });

  app.post('/settings/security_keys/:id/delete', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 30 }) }), body: Type.Object({ current_password: Type.Optional(Type.String({ maxLength: 200 })) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const wrongPassword = await checkCurrentPassword(ctx, me.user, request.body.current_password ?? '');
    if (wrongPassword) return keysPage(request, reply, me, { error: wrongPassword }, 422);
    if (!isId(request.params.id) || !(await deleteWebauthnCredential(ctx.db, me.user.id, request.params.id))) {
      return keysPage(request, reply, me, { error: (await translatorOf(ctx, request))('keys.no_such') }, 404);
    }
    return reply.redirect('/settings/security_keys?notice=key_removed', 303);
  });
}
