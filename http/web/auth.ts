import { randomBytes } from 'node:crypto';
import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { LIMITS } from '../plugins/rate-limit.ts';
import { ApiError, ValidationFailed } from '../../errors.ts';
import { signUp } from '../../services/accounts.ts';
import { lookUpInvite } from '../../services/invites.ts';
import { accountCheck, checkCredentials, checkSecondFactor, clearFailures, countSecondFactorFailure, tooManyFailures, TOO_MANY_ATTEMPTS } from '../../services/sign-in.ts';
import { authenticationOptions, checkPasskey, checkSecurityKey, hasSecurityKeys, passkeySignInOptions, type KeyRefusal } from '../../services/webauthn.ts';
import type { UserRow } from '../../storage/users.ts';
import { confirmAddress, requestPasswordReset, resendConfirmationTo, resetPassword } from '../../services/account-security.ts';
import { operatorHtml } from '../../services/instance.ts';
import { listRules } from '../../storage/rules.ts';
import { findUserById } from '../../storage/users.ts';
import { hashSecret } from '../../storage/oauth.ts';
import { endWebSession, startWebSession } from './session.ts';
import { KEEPS_OPENER, letFormsRedirectAway, sendFormPage, sendMessagePage, translatorOf, type FieldErrors } from './page.ts';
import { negotiate, type Translate } from './i18n.ts';
import { serviceMessage } from './service-errors.ts';

const SignInForm = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 200 })),
  return_to: Type.Optional(Type.String({ maxLength: 4000 })),
});
const SignUpForm = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 200 })),
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 200 })),
  password_confirmation: Type.Optional(Type.String({ maxLength: 200 })),
  agreement: Type.Optional(Type.String({ maxLength: 10 })),
  reason: Type.Optional(Type.String({ maxLength: 1000 })),
  invite_code: Type.Optional(Type.String({ maxLength: 40 })),
});
const PENDING_COOKIE = '_pending_sign_in';
/** The challenge of a sign-in with a passkey, bound to the browser that asked for it. */
const PASSKEY_COOKIE = '_passkey_sign_in';
/** How long the second step of a sign-in may wait for its code. */
const PENDING_SECONDS = 300;

/**
 * A key that signed with its own key material but a counter that did not move on is most likely a copy of it (a
 * cloned key): refused like any wrong answer, and logged for the operators, naming the account and the stored key.
 */
function logCloneSuspect(request: FastifyRequest, refusal: KeyRefusal): void {
  if (refusal.reason !== 'counter') return;
  request.log.warn(
    { event: 'webauthn_counter_not_moved_on', userId: refusal.userId, credentialId: refusal.credentialId, storedCounter: refusal.stored, reportedCounter: refusal.reported },
    'security key refused: its signature counter did not move on past the stored one (a cloned key?)',
  );
}

/**
 * Only our own paths: an open redirect after sign-in would hand a fresh session's first page to anyone. The value is
 * resolved as a browser would resolve it (which drops tabs and line breaks, and reads `\\` as `/`) and must stay on
 * our origin; what is returned is the resolved path, percent-encoded.
 */
export function safeReturnTo(value: string | undefined, base: string): string {
  if (!value || !value.startsWith('/') || /[\x00-\x1f\\]/.test(value)) return '/';
  try {
    const origin = new URL(base).origin;
    const url = new URL(value, origin);
    return url.origin === origin ? `${url.pathname}${url.search}${url.hash}` : '/';
  } catch {
    return '/';
  }
}

/**
 * A refusal of a sign-up field in the page's words: the message key of `field` and the service's code (ERR_TAKEN is
 * `sign_up.error.username.taken`), else the field's name and the service's description.
 */
function fieldError(t: Translate, field: string, e: { error: string; description: string }): string {
  const key = `sign_up.error.${field}.${e.error.replace(/^ERR_/, '').toLowerCase()}`;
  if (t.has(key)) return t(key, { n: /\d+/.exec(e.description)?.[0] ?? '' });
  const name = t.has(`sign_up.field.${field}`) ? t(`sign_up.field.${field}`) : field[0]!.toUpperCase() + field.slice(1);
  return `${name} ${e.description}.`;
}

/**
 * What a form that succeeded leads to (Post/Redirect/Get): a page by key, its words fixed here, so a reload asks
 * nothing again and the address carries no text to show.
 */
const DONE_PAGES: Record<string, { title: string; message: string; link?: { href: string; text: string } }> = {
  signed_up_confirm: { title: 'done.almost', message: 'done.signed_up_confirm' },
  signed_up_approval: { title: 'done.almost', message: 'done.signed_up_approval' },
  signed_up_both: { title: 'done.almost', message: 'done.signed_up_both' },
  confirmation_sent: { title: 'done.check_mail', message: 'done.confirmation_sent' },
  reset_sent: { title: 'done.check_mail', message: 'done.reset_sent' },
  reset_no_mail: { title: 'done.check_mail', message: 'done.reset_no_mail' },
  password_changed: { title: 'done.password_changed_title', message: 'done.password_changed', link: { href: '/auth/sign_in', text: 'common.sign_in' } },
  account_deleted: { title: 'done.account_deleted_title', message: 'done.account_deleted' },
};

/** Joining, confirming an address, signing in (with a second factor), signing out and resetting a password. */
export default async function authPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const pendingKey = (token: string) => `${ctx.config.redisPrefix}sign-in-pending:{${token}}`;
  const signInLimit = { ...LIMITS.signIn, keyGenerator: (request: FastifyRequest) => `sign-in:${request.ip}` };

  async function signUpPage(request: FastifyRequest, reply: FastifyReply, values: Record<string, string | boolean> = {}, errors: FieldErrors = {}, error = '', status = 200) {
    // OMNIAUTH_ONLY: people join by signing in through the provider, never with a password of ours. An invite's
    // form (/invite/:code) is open and needs no reason, whatever the registration mode.
    const invited = typeof values.invite_code === 'string' && values.invite_code !== '';
    const mode = ctx.config.omniauthOnly ? 'none' : invited ? 'open' : ctx.config.registrationsMode;
    return sendFormPage(ctx, request, reply, 'auth/sign_up', (await translatorOf(ctx, request))('sign_up.title'), {
      closed: mode === 'none',
      closedMessage: mode === 'none' ? operatorHtml(ctx.config.registrationsClosedMessage) : '',
      approvalRequired: mode === 'approved',
      rules: mode === 'none' ? [] : await listRules(ctx.db),
      domain: ctx.config.localDomain,
      values: { username: '', email: '', reason: '', agreement: false, invite_code: '', ...values },
      errors,
      error,
    }, status);
  }

  /** The sign-in form, with single sign-on's button when a provider is set (whose form leaves for the provider). */
  async function signInPage(request: FastifyRequest, reply: FastifyReply, values: { email: string; returnTo: string; error: string }, status = 200) {
    if (ctx.config.oidc) letFormsRedirectAway(reply);
    return sendFormPage(ctx, request, reply, 'auth/sign_in', (await translatorOf(ctx, request))('sign_in.title'), {
      ...values, notice: '', oidc: ctx.config.oidc?.displayName ?? '', omniauthOnly: ctx.config.omniauthOnly,
    }, status);
  }

  app.get<{ Params: { key: string } }>('/auth/done/:key', async (request, reply) => {
    const page = Object.hasOwn(DONE_PAGES, request.params.key) ? DONE_PAGES[request.params.key]! : null;
    if (!page) return reply.redirect('/');
    return sendMessagePage(ctx, request, reply, { key: page.title }, { key: page.message }, page.link ? { link: { href: page.link.href, text: { key: page.link.text } } } : {});
  });

  app.get('/auth/sign_up', async (request, reply) => {
    if (await request.signedIn()) return reply.redirect('/');
    return signUpPage(request, reply);
  });

  app.post('/auth/sign_up', {
    schema: { body: SignUpForm },
    config: { rateLimit: { ...LIMITS.registration, keyGenerator: (request: FastifyRequest) => `registration:${request.ip}` } },
  }, async (request, reply) => {
    const body = request.body;
    const values = { username: body.username ?? '', email: body.email ?? '', reason: body.reason ?? '', agreement: body.agreement === '1', invite_code: body.invite_code ?? '' };
    if ((ctx.config.registrationsMode === 'none' && !values.invite_code) || ctx.config.omniauthOnly) return signUpPage(request, reply, values, {}, '', 403);
    let created;
    try {
      created = await signUp(ctx, {
        username: values.username.trim(),
        email: values.email.trim(),
        password: body.password ?? '',
        agreement: values.agreement,
        // The language the sign-up page spoke (the browser's, where the pages speak it), as Mastodon keeps it.
        locale: negotiate(request.headers['accept-language']) ?? ctx.config.instanceLanguages[0] ?? 'en',
        reason: values.reason,
        passwordConfirmation: body.password_confirmation ?? '',
        inviteCode: values.invite_code || null,
        // Every refusal at once (the reason the operators need too), each by its field.
      }, { ip: request.ip, allErrors: true });
    } catch (err) {
      const t = await translatorOf(ctx, request);
      if (err instanceof ValidationFailed) {
        const errors: FieldErrors = {};
        for (const [field, list] of Object.entries(err.details)) errors[field] = list.map((e) => fieldError(t, field, e));
        return signUpPage(request, reply, values, errors, t('sign_up.correct'), 422);
      }
      if (err instanceof ApiError && err.statusCode < 500) {
        const reasonMissing = /reason/.test(err.message);
        return signUpPage(request, reply, values, reasonMissing ? { reason: [t('sign_up.error.reason.blank')] } : {}, reasonMissing ? t('sign_up.correct') : err.message, err.statusCode);
      }
      throw err;
    }
    const { user } = created;
    if (user.confirmed_at && user.approved) {
      await startWebSession(ctx, request, reply, user);
      return reply.redirect(`/@${encodeURIComponent(created.account.username)}`, 303);
    }
    const done = !user.confirmed_at && !user.approved ? 'signed_up_both' : !user.confirmed_at ? 'signed_up_confirm' : 'signed_up_approval';
    return reply.redirect(`/auth/done/${done}`, 303);
  });

  // An invite's link (Mastodon's /invite/:code): the sign-up form carrying the code, or why the code will not do.
  app.get('/invite/:code', { schema: { params: Type.Object({ code: Type.String({ maxLength: 40 }) }) } }, async (request, reply) => {
    if (await request.signedIn()) return reply.redirect('/');
    const found = await lookUpInvite(ctx.db, request.params.code);
    if (!found || found.state !== 'valid' || ctx.config.omniauthOnly) {
      const why = !found ? 'invite.invalid' : found.state === 'expired' ? 'invite.expired' : found.state === 'used_up' ? 'invite.used_up' : 'invite.sso';
      return sendMessagePage(ctx, request, reply, { key: 'invite.title' }, { key: why }, { status: found ? 410 : 404, kind: 'error' });
    }
    return signUpPage(request, reply, { invite_code: found.invite.code });
  });

  app.get<{ Querystring: { confirmation_token?: string } }>('/auth/confirmation', {
    schema: { querystring: Type.Object({ confirmation_token: Type.Optional(Type.String({ maxLength: 200 })) }) },
  }, async (request, reply) => {
    const confirmed = request.query.confirmation_token ? await confirmAddress(ctx, request.query.confirmation_token) : null;
    if (confirmed && 'taken' in confirmed) {
      return sendMessagePage(ctx, request, reply, { key: 'confirmation.taken_title' }, { key: 'confirmation.taken' }, { status: 409, kind: 'error' });
    }
    if (!confirmed) {
      return sendMessagePage(ctx, request, reply, { key: 'confirmation.invalid_title' }, { key: 'confirmation.invalid' }, { status: 404, kind: 'error', link: { href: '/auth/confirmation/new', text: { key: 'confirmation.send' } } });
    }
    const user = confirmed.user;
    const fresh = await findUserById(ctx.db, user.id);
    const message = fresh && !fresh.approved ? 'confirmation.done_waiting' : 'confirmation.done';
    return sendMessagePage(ctx, request, reply, { key: 'confirmation.done_title' }, { key: message }, { link: { href: '/auth/sign_in', text: { key: 'common.sign_in' } } });
  });

  app.get('/auth/confirmation/new', async (request, reply) =>
    sendFormPage(ctx, request, reply, 'auth/confirmation_new', { key: 'confirmation.title' }));

  app.post('/auth/confirmation', {
    schema: { body: Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })) }) },
    config: { rateLimit: { ...LIMITS.signIn, keyGenerator: (request: FastifyRequest) => `confirmation:${request.ip}` } },
  }, async (request, reply) => {
    await resendConfirmationTo(ctx, request.body.email ?? '');
    // The same answer whether or not the address has an account waiting here.
    return reply.redirect('/auth/done/confirmation_sent', 303);
  });

  app.get<{ Querystring: { return_to?: string } }>('/auth/sign_in', {
    ...KEEPS_OPENER,
    schema: { querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })) }) },
  }, async (request, reply) => {
    const returnTo = safeReturnTo(request.query.return_to, ctx.config.publicUrl);
    if (await request.signedIn()) return reply.redirect(returnTo);
    return signInPage(request, reply, { email: '', returnTo, error: '' });
  });

  app.post('/auth/sign_in', { ...KEEPS_OPENER, schema: { body: SignInForm }, config: { rateLimit: signInLimit } }, async (request, reply) => {
    const { email = '', password = '' } = request.body;
    let returnTo = safeReturnTo(request.body.return_to, ctx.config.publicUrl);
    if (ctx.config.omniauthOnly) return signInPage(request, reply, { email, returnTo, error: (await translatorOf(ctx, request))('sign_in.only_sso', { provider: ctx.config.oidc!.displayName }) }, 403);
    const checked = await checkCredentials(ctx, email.trim(), password);
    if (!checked.ok) {
      return signInPage(request, reply, { email, returnTo, error: checked.error }, checked.status);
    }
    // A suspended or disabled person gets only their strikes, where they may appeal.
    if (checked.restricted) returnTo = '/disputes/strikes';
    if (checked.user.otp_enabled_at) {
      // The password was right: the second step waits for the code, bound to this browser by a cookie of its own.
      const token = randomBytes(32).toString('base64url');
      // Bound to the password it was started with: a reset or change meanwhile voids it.
      await ctx.redis.set(pendingKey(token), JSON.stringify({ userId: checked.user.id, returnTo, pw: hashSecret(checked.user.password_hash) }), 'EX', PENDING_SECONDS);
      reply.setCookie(PENDING_COOKIE, token, { path: '/auth/sign_in', httpOnly: true, sameSite: 'lax', secure: ctx.config.publicUrl.startsWith('https:'), maxAge: PENDING_SECONDS });
      return reply.redirect('/auth/sign_in/two_factor', 303);
    }
    await clearFailures(ctx, checked.user);
    await startWebSession(ctx, request, reply, checked.user);
    return reply.redirect(returnTo, 303);
  });

  const pendingSignIn = async (request: FastifyRequest) => {
    const token = request.cookies[PENDING_COOKIE];
    const raw = token && token.length < 100 ? await ctx.redis.get(pendingKey(token)) : null;
    return raw && token ? { token, ...(JSON.parse(raw) as { userId: string; returnTo: string; pw: string }) } : null;
  };

  const twoFactorPage = async (request: FastifyRequest, reply: FastifyReply, user: UserRow | null, error = '', status = 200) =>
    sendFormPage(ctx, request, reply, 'auth/two_factor', { key: 'two_factor.title' }, { error, securityKeys: user ? await hasSecurityKeys(ctx, user) : false }, status);

  /** The user of a pending sign-in, if the password it began with is still theirs. */
  const pendingUser = async (pending: Awaited<ReturnType<typeof pendingSignIn>>) => {
    const user = pending ? await findUserById(ctx.db, pending.userId) : null;
    return pending && user && hashSecret(user.password_hash) === pending.pw ? user : null;
  };

  async function finishSecondStep(request: FastifyRequest, reply: FastifyReply, pending: NonNullable<Awaited<ReturnType<typeof pendingSignIn>>>, user: UserRow) {
    await ctx.redis.del(pendingKey(pending.token));
    reply.clearCookie(PENDING_COOKIE, { path: '/auth/sign_in' });
    await clearFailures(ctx, user);
    await startWebSession(ctx, request, reply, user);
  }

  app.get('/auth/sign_in/two_factor', KEEPS_OPENER, async (request, reply) => {
    const pending = await pendingSignIn(request);
    if (!pending) return reply.redirect('/auth/sign_in');
    return twoFactorPage(request, reply, await pendingUser(pending));
  });

  // A security key instead of a code: the browser's script asks for a challenge, then sends the key's answer.
  app.post('/auth/sign_in/webauthn/options', { ...KEEPS_OPENER, config: { rateLimit: signInLimit } }, async (request, reply) => {
    const pending = await pendingSignIn(request);
    const user = await pendingUser(pending);
    if (!pending || !user || !(await hasSecurityKeys(ctx, user))) return reply.code(401).send({ error: (await translatorOf(ctx, request))('sign_in.start_again') });
    return authenticationOptions(ctx, user, pending.token);
  });

  app.post('/auth/sign_in/webauthn', {
    ...KEEPS_OPENER,
    schema: { body: Type.Object({ credential: Type.Optional(Type.Unknown()) }) },
    config: { rateLimit: signInLimit },
  }, async (request, reply) => {
    const pending = await pendingSignIn(request);
    const user = await pendingUser(pending);
    const t = await translatorOf(ctx, request);
    if (!pending || !user) return reply.code(401).send({ error: t('sign_in.start_again') });
    if (await tooManyFailures(ctx, user)) return reply.code(429).send({ error: serviceMessage(t, TOO_MANY_ATTEMPTS) });
    const checked = await checkSecurityKey(ctx, user, pending.token, request.body.credential);
    if (!checked.ok) {
      await countSecondFactorFailure(ctx, user);
      logCloneSuspect(request, checked);
      return reply.code(401).send({ error: t('sign_in.key_refused') });
    }
    await finishSecondStep(request, reply, pending, user);
    return { redirect: pending.returnTo };
  });

  // A passkey instead of the address and password: the browser's script asks for a challenge for any passkey of
  // this server, the authenticator offers the person's own, and its answer names the account. The passkey verified
  // the person (a PIN, a fingerprint) itself, so there is no second step.
  app.post('/auth/sign_in/passkey/options', { ...KEEPS_OPENER, config: { rateLimit: signInLimit } }, async (request, reply) => {
    if (ctx.config.omniauthOnly) return reply.code(403).send({ error: (await translatorOf(ctx, request))('sign_in.only_sso', { provider: ctx.config.oidc!.displayName }) });
    const { options, token } = await passkeySignInOptions(ctx);
    reply.setCookie(PASSKEY_COOKIE, token, { path: '/auth/sign_in', httpOnly: true, sameSite: 'strict', secure: ctx.config.publicUrl.startsWith('https:'), maxAge: PENDING_SECONDS });
    return options;
  });

  app.post('/auth/sign_in/passkey', {
    ...KEEPS_OPENER,
    schema: { body: Type.Object({ credential: Type.Optional(Type.Unknown()), return_to: Type.Optional(Type.String({ maxLength: 4000 })) }) },
    config: { rateLimit: signInLimit },
  }, async (request, reply) => {
    const t = await translatorOf(ctx, request);
    if (ctx.config.omniauthOnly) return reply.code(403).send({ error: t('sign_in.only_sso', { provider: ctx.config.oidc!.displayName }) });
    // The form is shown by the script; posted without it, the page says what is missing.
    if (!request.headers['content-type']?.startsWith('application/json')) {
      return signInPage(request, reply, { email: '', returnTo: safeReturnTo(request.body.return_to, ctx.config.publicUrl), error: t('sign_in.passkey_needs_js') }, 422);
    }
    const passkey = await checkPasskey(ctx, request.cookies[PASSKEY_COOKIE], request.body.credential);
    reply.clearCookie(PASSKEY_COOKIE, { path: '/auth/sign_in' });
    if (!passkey.ok) {
      // Only the passkey's own signature counts against its owner's account: anyone may name a credential id.
      if (passkey.reason === 'counter') {
        const owner = await findUserById(ctx.db, passkey.userId);
        if (owner) await countSecondFactorFailure(ctx, owner);
        logCloneSuspect(request, passkey);
      }
      return reply.code(401).send({ error: t('sign_in.passkey_refused') });
    }
    const user = passkey.value;
    const checked = await accountCheck(ctx, user);
    if (!checked.ok) return reply.code(checked.status).send({ error: serviceMessage(t, checked.error) });
    await clearFailures(ctx, user);
    await startWebSession(ctx, request, reply, user);
    return { redirect: checked.restricted ? '/disputes/strikes' : safeReturnTo(request.body.return_to, ctx.config.publicUrl) };
  });

  app.post('/auth/sign_in/two_factor', {
    ...KEEPS_OPENER,
    schema: { body: Type.Object({ code: Type.Optional(Type.String({ maxLength: 40 })) }) },
    config: { rateLimit: signInLimit },
  }, async (request, reply) => {
    const pending = await pendingSignIn(request);
    const user = await pendingUser(pending);
    if (!pending || !user) return reply.redirect('/auth/sign_in', 303);
    const checked = await checkSecondFactor(ctx, user, request.body.code ?? '');
    if (!checked.ok) return twoFactorPage(request, reply, user, checked.error, checked.status);
    await finishSecondStep(request, reply, pending, user);
    return reply.redirect(pending.returnTo, 303);
  });

  app.get('/auth/sign_out', async (request, reply) => {
    if (!(await request.signedIn())) return reply.redirect('/');
    return sendFormPage(ctx, request, reply, 'auth/sign_out', { key: 'nav.sign_out' });
  });

  app.post('/auth/sign_out', async (request, reply) => {
    await endWebSession(ctx, request, reply);
    return reply.redirect('/', 303);
  });

  app.get('/auth/password/new', async (request, reply) =>
    sendFormPage(ctx, request, reply, 'auth/password_new', { key: 'password.reset_title' }, { error: '' }));

  app.post('/auth/password', {
    schema: { body: Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })) }) },
    config: { rateLimit: { ...LIMITS.signIn, keyGenerator: (request: FastifyRequest) => `password-reset:${request.ip}` } },
  }, async (request, reply) => {
    await requestPasswordReset(ctx, request.body.email ?? '');
    // The same answer whether or not the address has an account here.
    return reply.redirect(`/auth/done/${ctx.config.smtp ? 'reset_sent' : 'reset_no_mail'}`, 303);
  });

  app.get<{ Querystring: { reset_password_token?: string } }>('/auth/password/edit', {
    schema: { querystring: Type.Object({ reset_password_token: Type.Optional(Type.String({ maxLength: 200 })) }) },
  }, async (request, reply) => {
    const token = request.query.reset_password_token ?? '';
    if (!token) return reply.redirect('/auth/password/new');
    return sendFormPage(ctx, request, reply, 'auth/password_edit', { key: 'password.choose_title' }, { token, error: '' });
  });

  app.post('/auth/password/edit', {
    schema: {
      body: Type.Object({
        reset_password_token: Type.Optional(Type.String({ maxLength: 200 })),
        password: Type.Optional(Type.String({ maxLength: 200 })),
        password_confirmation: Type.Optional(Type.String({ maxLength: 200 })),
      }),
    },
    config: { rateLimit: signInLimit },
  }, async (request, reply) => {
    const token = request.body.reset_password_token ?? '';
    const result = await resetPassword(ctx, token, request.body.password ?? '', request.body.password_confirmation ?? '');
    if (!result.ok) {
      if (result.tokenBad) {
        return sendMessagePage(ctx, request, reply, { key: 'confirmation.invalid_title' }, serviceMessage(await translatorOf(ctx, request), result.error), {
          status: 404, kind: 'error', link: { href: '/auth/password/new', text: { key: 'password.new_link' } },
        });
      }
      return sendFormPage(ctx, request, reply, 'auth/password_edit', { key: 'password.choose_title' }, { token, error: result.error }, 422);
    }
    return reply.redirect('/auth/done/password_changed', 303);
  });
}
