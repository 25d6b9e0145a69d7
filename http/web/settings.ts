import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { updateAccountProfile } from '../../services/profile.ts';
import { changeEmail, changePassword, signOutEverywhere } from '../../services/account-security.ts';
import { disableTwoFactor, enableTwoFactor, newTotpSecret, regenerateRecoveryCodes, totpEnrolment, totpMatches } from '../../services/two-factor.ts';
import { checkCurrentPassword } from '../../services/sign-in.ts';
import { isLanguage, LANGUAGES } from '../../services/languages.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { authorizedApplications, revokeApplicationForUser } from '../../storage/oauth.ts';
import { findUserById, otpBackupCodesLeft } from '../../storage/users.ts';
import { deleteUserWebSession, userWebSessions } from '../../storage/web-sessions.ts';
import { isId } from '../params.ts';
import { browserInWords } from './browser-names.ts';
import { notFoundPage } from './error-pages.ts';
import { dateView } from './page-view.ts';
import { findAccountById } from '../../storage/accounts.ts';
import { renderAccount } from '../serializers/account.ts';
import { endWebSession, SESSION_COOKIE, type SignedIn } from './session.ts';
import { letFormsRedirectAway, sendFormPage, signedInOrRedirect, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import { findUserIdentity } from '../../storage/identities.ts';
import { OIDC_PROVIDER } from '../../services/oidc.ts';
import { EMAIL_KINDS, emailChoices, saveEmailChoices, type EmailKind } from '../../services/notification-emails.ts';

const MAX_FIELDS = 4;
const VISIBILITIES = ['public', 'unlisted', 'private', 'direct'] as const;
/** Notices shown after a redirect, by key (their message keys): the query string never carries text to show. */
const NOTICES: Record<string, string> = {
  saved: 'notice.saved',
  email: 'notice.email',
  email_changed: 'notice.email_changed',
  two_factor_on: 'notice.two_factor_on',
  two_factor_off: 'notice.two_factor_off',
  new_codes: 'notice.new_codes',
  revoked: 'notice.revoked',
  oidc_linked: 'notice.oidc_linked',
  oidc_unlinked: 'notice.oidc_unlinked',
  session_ended: 'notice.session_ended',
};
const Notice = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });
/** Every language the server knows, by name, for a select. */
let languageList: [string, string][] | undefined;
export const languageChoices = () => (languageList ??= [...LANGUAGES].sort((a, b) => a[1].localeCompare(b[1])));
const checkbox = (v: unknown) => v === '1' || v === 'on' || v === 'true';
const str = (v: unknown, max: number) => (typeof v === 'string' ? v.slice(0, max) : '');

/** A person's own settings: profile, posting defaults, e-mail and password, two-factor sign-in, authorized apps. */
export default async function settingsPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const setupKey = (userId: string) => `${ctx.config.redisPrefix}otp-setup:{${userId}}`;
  // New recovery codes wait here for the one page (after the redirect) that shows them, then are gone.
  const codesKey = (userId: string) => `${ctx.config.redisPrefix}otp-new-codes:{${userId}}`;
  const showCodesOnce = (userId: string, codes: string[]) => ctx.redis.set(codesKey(userId), JSON.stringify(codes), 'EX', 600);

  // The notice's key: the page's template says it (settings/nav.eta).
  const notice = (q: { notice?: string | undefined }) => (q.notice && Object.hasOwn(NOTICES, q.notice) ? NOTICES[q.notice]! : '');

  app.get('/settings', async (_request, reply) => reply.redirect('/settings/profile'));

  async function profilePage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { notice?: string; error?: string } = {}, status = 200) {
    const account = (await findAccountById(ctx.db, me.account.id)) ?? me.account;
    const rendered = renderAccount(ctx.render, account);
    const fields = [...account.fields.map((f) => ({ name: f.name, value: f.value })), ...Array(MAX_FIELDS).fill({ name: '', value: '' })].slice(0, MAX_FIELDS);
    return sendFormPage(ctx, request, reply, 'settings/profile', { key: 'settings.profile' }, {
      account, fields, notice: extra.notice ?? '', error: extra.error ?? '',
      avatarUrl: account.avatar_file ? rendered.avatar : '', headerUrl: account.header_file ? rendered.header : '',
    }, status);
  }

  app.get('/settings/profile', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && profilePage(request, reply, me, { notice: notice(request.query) });
  });

  // Multipart (files) or a plain form: the body plugin gives fields in the body and files in request.uploads.
  app.post('/settings/profile', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const rows = body.fields_attributes && typeof body.fields_attributes === 'object' ? Object.values(body.fields_attributes as Record<string, Record<string, unknown>>) : [];
    const fields = rows.slice(0, MAX_FIELDS)
      .map((f) => ({ name: str(f?.name, 255).trim(), value: str(f?.value, 255).trim() }))
      .filter((f) => f.name !== '' || f.value !== '');
    try {
      // The same service as PATCH /api/v1/accounts/update_credentials: the same checks, the same writes.
      await updateAccountProfile(ctx, me.account, {
        displayName: str(body.display_name, 30),
        note: str(body.note, 500),
        locked: checkbox(body.locked),
        bot: checkbox(body.bot),
        discoverable: checkbox(body.discoverable),
        hideCollections: checkbox(body.hide_collections),
        noindex: checkbox(body.noindex),
        avatarDescription: str(body.avatar_description, 150),
        headerDescription: str(body.header_description, 150),
        fields,
        avatar: request.uploads?.avatar?.data.length ? request.uploads.avatar.data : undefined,
        header: request.uploads?.header?.data.length ? request.uploads.header.data : undefined,
      });
    } catch (err) {
      if (err instanceof ApiError && err.statusCode < 500) return profilePage(request, reply, me, { error: formError(await translatorOf(ctx, request), err) }, 422);
      throw err;
    }
    return reply.redirect('/settings/profile?notice=saved', 303);
  });

  app.get('/settings/preferences', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && sendFormPage(ctx, request, reply, 'settings/preferences', { key: 'preferences.title' }, { user: me.user, account: me.account, languages: languageChoices(), notice: notice(request.query), error: '' });
  });

  app.post('/settings/preferences', {
    schema: {
      body: Type.Object({
        privacy: Type.Optional(Type.String({ maxLength: 20 })), language: Type.Optional(Type.String({ maxLength: 10 })),
        sensitive: Type.Optional(Type.String({ maxLength: 10 })), show_application: Type.Optional(Type.String({ maxLength: 10 })),
        indexable: Type.Optional(Type.String({ maxLength: 10 })),
      }),
    },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const { privacy = 'public', language = '' } = request.body;
    const lang = language.trim().toLowerCase();
    const t = await translatorOf(ctx, request);
    const error = !(VISIBILITIES as readonly string[]).includes(privacy) ? t('preferences.error_privacy')
      : lang !== '' && !isLanguage(lang) ? t('preferences.error_language', { code: lang }) : '';
    if (error) return sendFormPage(ctx, request, reply, 'settings/preferences', { key: 'preferences.title' }, { user: me.user, account: me.account, languages: languageChoices(), notice: '', error }, 422);
    // The same service as PATCH /api/v1/accounts/update_credentials (its `indexable` and `source[...]`).
    await updateAccountProfile(ctx, me.account, {
      showApplication: checkbox(request.body.show_application),
      indexable: checkbox(request.body.indexable),
      source: { privacy, sensitive: checkbox(request.body.sensitive), language: lang === '' ? null : lang },
    });
    return reply.redirect('/settings/preferences?notice=saved', 303);
  });

  // Mail about notifications, as Mastodon's /settings/preferences/notifications: one box per kind, and the digest.
  const EMAIL_LABELS: Record<EmailKind, string> = {
    mention: 'mail_settings.mention', direct: 'mail_settings.direct', follow: 'mail_settings.follow',
    follow_request: 'mail_settings.follow_request', favourite: 'mail_settings.favourite', reblog: 'mail_settings.reblog',
  };
  app.get('/settings/preferences/notifications', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const choices = await emailChoices(ctx.db, me.user.id);
    return sendFormPage(ctx, request, reply, 'settings/notifications', { key: 'mail_settings.title' }, {
      kinds: EMAIL_KINDS.map((k) => ({ name: k, label: EMAIL_LABELS[k], on: choices.kinds[k] })),
      digest: choices.digest, mailOn: ctx.config.smtp !== null, notice: notice(request.query), error: '',
    });
  });

  app.post('/settings/preferences/notifications', {
    schema: { body: Type.Object(Object.fromEntries([...EMAIL_KINDS, 'digest'].map((k) => [k, Type.Optional(Type.String({ maxLength: 10 }))]))) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const body = request.body as Record<string, unknown>;
    const kinds = Object.fromEntries(EMAIL_KINDS.map((k) => [k, checkbox(body[k])])) as Record<EmailKind, boolean>;
    await saveEmailChoices(ctx.db, me.user.id, kinds, checkbox(body.digest));
    return reply.redirect('/settings/preferences/notifications?notice=saved', 303);
  });

  async function accountPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { notice?: string; error?: string } = {}, status = 200) {
    const user = (await findUserById(ctx.db, me.user.id)) ?? me.user;
    const t = await translatorOf(ctx, request);
    const sessions = (await userWebSessions(ctx.db, user.id)).map((s) => ({
      id: s.id, browser: browserInWords(s.user_agent, t), ip: s.ip, lastActive: dateView(s.last_active_at), current: s.id === me.session.id,
    }));
    const oidc = ctx.config.oidc
      ? { displayName: ctx.config.oidc.displayName, linked: (await findUserIdentity(ctx.db, user.id, OIDC_PROVIDER)) !== null }
      : null;
    if (oidc) letFormsRedirectAway(reply);
    return sendFormPage(ctx, request, reply, 'settings/account', { key: 'settings.account' }, { user, sessions, oidc, notice: extra.notice ?? '', error: extra.error ?? '' }, status);
  }

  app.get('/settings/account', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && accountPage(request, reply, me, { notice: notice(request.query) });
  });

  const Password = { current_password: Type.Optional(Type.String({ maxLength: 200 })) };

  app.post('/settings/account/email', {
    schema: { body: Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })), ...Password }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const error = await changeEmail(ctx, me.user, request.body.email ?? '', request.body.current_password ?? '');
    if (error) return accountPage(request, reply, me, { error }, 422);
    return reply.redirect(`/settings/account?notice=${ctx.config.smtp ? 'email' : 'email_changed'}`, 303);
  });

  app.post('/settings/account/password', {
    schema: { body: Type.Object({ password: Type.Optional(Type.String({ maxLength: 200 })), password_confirmation: Type.Optional(Type.String({ maxLength: 200 })), ...Password }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const error = await changePassword(ctx, me.user, request.body.current_password ?? '', request.body.password ?? '', request.body.password_confirmation ?? '');
    if (error) return accountPage(request, reply, me, { error }, 422);
    // Every session ended, this one too: the person signs in again with the new password.
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/auth/sign_in', 303);
  });

  // One browser signed out (a lost phone, a shared computer); this one signs out on its own page.
  app.post<{ Params: { id: string } }>('/settings/sessions/:id/sign_out', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const { id } = request.params;
    if (id === me.session.id) return reply.redirect('/auth/sign_out', 303);
    const ended = isId(id) ? await deleteUserWebSession(ctx.db, me.user.id, id) : null;
    if (!ended) return notFoundPage(request, reply);
    // Its live updates (a stream opened with that session's cookie) end too, in whichever process holds them.
    ctx.sessions.drop(ended);
    await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { sessionHash: ended });
    return reply.redirect('/settings/account?notice=session_ended', 303);
  });

  app.post('/settings/account/sign_out_everywhere', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    await signOutEverywhere(ctx, me.user.id);
    await endWebSession(ctx, request, reply);
    return reply.redirect('/auth/sign_in', 303);
  });

  async function twoFactorPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { notice?: string; error?: string; recoveryCodes?: string[] } = {}, status = 200) {
    const user = (await findUserById(ctx.db, me.user.id)) ?? me.user;
    const enabled = user.otp_enabled_at !== null;
    const pendingSecret = enabled ? null : await ctx.redis.get(setupKey(user.id));
    const setup = pendingSecret
      ? { secret: pendingSecret, ...(await totpEnrolment(pendingSecret, ctx.config.instanceTitle, `${me.account.username}@${ctx.config.localDomain}`)) }
      : null;
    return sendFormPage(ctx, request, reply, 'settings/two_factor', { key: 'two_factor.title' }, {
      enabled, setup, codesLeft: enabled ? await otpBackupCodesLeft(ctx.db, user.id) : 0,
      recoveryCodes: extra.recoveryCodes ?? null, notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  }

  app.get('/settings/two_factor', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const codes = await ctx.redis.getdel(codesKey(me.user.id));
    return twoFactorPage(request, reply, me, { notice: notice(request.query), recoveryCodes: codes ? (JSON.parse(codes) as string[]) : undefined });
  });

  // A new secret waits (15 minutes) for the person to prove their app has it; only then is it the account's.
  app.post('/settings/two_factor/new', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    if (!me.user.otp_enabled_at) await ctx.redis.set(setupKey(me.user.id), await newTotpSecret(), 'EX', 900);
    return reply.redirect('/settings/two_factor', 303);
  });

  app.post('/settings/two_factor', {
    schema: { body: Type.Object({ code: Type.Optional(Type.String({ maxLength: 20 })), ...Password }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const secret = await ctx.redis.get(setupKey(me.user.id));
    if (!secret || me.user.otp_enabled_at) return reply.redirect('/settings/two_factor', 303);
    const wrongPassword = await checkCurrentPassword(ctx, me.user, request.body.current_password ?? '');
    if (wrongPassword) return twoFactorPage(request, reply, me, { error: wrongPassword }, 422);
    if (!(await totpMatches(secret, (request.body.code ?? '').trim()))) {
      return twoFactorPage(request, reply, me, { error: (await translatorOf(ctx, request))('two_factor.code_wrong') }, 422);
    }
    const codes = await enableTwoFactor(ctx, me.user.id, secret);
    await ctx.redis.del(setupKey(me.user.id));
    await showCodesOnce(me.user.id, codes);
    return reply.redirect('/settings/two_factor?notice=two_factor_on', 303);
  });

  app.post('/settings/two_factor/recovery_codes', { schema: { body: Type.Object(Password) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    if (!me.user.otp_enabled_at) return reply.redirect('/settings/two_factor', 303);
    const wrongPassword = await checkCurrentPassword(ctx, me.user, request.body.current_password ?? '');
    if (wrongPassword) return twoFactorPage(request, reply, me, { error: wrongPassword }, 422);
    await showCodesOnce(me.user.id, await regenerateRecoveryCodes(ctx, me.user));
    return reply.redirect('/settings/two_factor?notice=new_codes', 303);
  });

  app.post('/settings/two_factor/disable', { schema: { body: Type.Object(Password) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const wrongPassword = await checkCurrentPassword(ctx, me.user, request.body.current_password ?? '');
    if (wrongPassword) return twoFactorPage(request, reply, me, { error: wrongPassword }, 422);
    await disableTwoFactor(ctx, me.user.id);
    return reply.redirect('/settings/two_factor?notice=two_factor_off', 303);
  });

  app.get('/settings/applications', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && sendFormPage(ctx, request, reply, 'settings/applications', { key: 'applications.title' }, {
      apps: await authorizedApplications(ctx.db, me.user.id), notice: notice(request.query), error: '',
    });
  });

  app.post<{ Params: { id: string } }>('/settings/applications/:id/revoke', {
    schema: { params: Type.Object({ id: Type.String({ pattern: '^[0-9]{1,20}$' }) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    await revokeApplicationForUser(ctx.db, me.user.id, request.params.id);
    // Cached tokens of this user are forgotten everywhere; the revoked ones are then refused.
    ctx.tokens.forget(`user:${me.user.id}`);
    await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { userId: me.user.id });
    return reply.redirect('/settings/applications?notice=revoked', 303);
  });
}
