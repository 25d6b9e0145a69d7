import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { findAccountById, findAccountByUri, movedTarget } from '../../storage/accounts.ts';
import { findUserById } from '../../storage/users.ts';
import { accountUri } from '../../services/uris.ts';
import { addAlias, cancelRedirect, federatedResolver, moveAccount, removeAlias, MAX_ALIASES } from '../../services/account-migration.ts';
import { sendFormPage, signedInOrRedirect } from './page.ts';
import type { SignedIn } from './session.ts';

/** Notices shown after a redirect, by key (their message keys): the query string never carries text to show. */
const NOTICES: Record<string, string> = {
  alias_added: 'migration.notice_alias_added',
  alias_removed: 'migration.notice_alias_removed',
  moved: 'migration.notice_moved',
  cancelled: 'migration.notice_cancelled',
};
const Notice = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });
const Acct = Type.Optional(Type.String({ maxLength: 600 }));

/**
 * /settings/migration: the aliases of this account (accounts that may move here), and moving this account
 * to another one (Mastodon's settings/aliases and settings/migration pages, on one page).
 */
export default async function migrationPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function page(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { notice?: string; error?: string; acct?: string } = {}, status = 200) {
    const account = (await findAccountById(ctx.db, me.account.id)) ?? me.account;
    const user = (await findUserById(ctx.db, me.user.id)) ?? me.user;
    const localPrefix = `${ctx.config.publicUrl}/users/`;
    const aliases = await Promise.all(account.also_known_as.map(async (uri) => {
      if (uri.startsWith(localPrefix)) return { uri, handle: `${decodeURIComponent(uri.slice(localPrefix.length))}@${ctx.config.localDomain}` };
      const known = await findAccountByUri(ctx.db, uri);
      return { uri, handle: known ? `${known.username}@${known.domain}` : uri };
    }));
    const movedTo = movedTarget(account);
    return sendFormPage(ctx, request, reply, 'settings/migration', { key: 'settings.migration' }, {
      handle: `${account.username}@${ctx.config.localDomain}`,
      actorUri: accountUri(ctx.render, account),
      aliases, maxAliases: MAX_ALIASES,
      movedTo: movedTo ? { handle: movedTo.domain === null ? `${movedTo.username}@${ctx.config.localDomain}` : `${movedTo.username}@${movedTo.domain}`, url: movedTo.domain === null ? `/@${movedTo.username}` : (movedTo.url ?? movedTo.uri ?? '') } : null,
      twoFactor: user.otp_enabled_at !== null,
      acct: extra.acct ?? '',
      notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  }

  app.get('/settings/migration', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && page(request, reply, me, { notice: (request.query.notice && Object.hasOwn(NOTICES, request.query.notice) ? NOTICES[request.query.notice] : '') || '' });
  });
  // Mastodon's separate aliases page lives here too.
  app.get('/settings/aliases', async (_request, reply) => reply.redirect('/settings/migration', 303));

  app.post('/settings/migration/aliases', { schema: { body: Type.Object({ acct: Acct }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const result = await addAlias(ctx, me.account, request.body.acct ?? '', federatedResolver(ctx, me.account));
    if (!result.ok) return page(request, reply, me, { error: result.error }, 422);
    return reply.redirect('/settings/migration?notice=alias_added', 303);
  });

  app.post('/settings/migration/aliases/remove', { schema: { body: Type.Object({ uri: Type.Optional(Type.String({ maxLength: 2000 })) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    await removeAlias(ctx, me.account, request.body.uri ?? '');
    return reply.redirect('/settings/migration?notice=alias_removed', 303);
  });

  app.post('/settings/migration', {
    schema: { body: Type.Object({ acct: Acct, current_password: Type.Optional(Type.String({ maxLength: 200 })), otp_attempt: Type.Optional(Type.String({ maxLength: 40 })) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const user = (await findUserById(ctx.db, me.user.id)) ?? me.user;
    const result = await moveAccount(ctx, user, me.account, {
      acct: request.body.acct ?? '', currentPassword: request.body.current_password ?? '', otp: request.body.otp_attempt ?? '',
    }, federatedResolver(ctx, me.account));
    if (!result.ok) return page(request, reply, me, { error: result.error, acct: request.body.acct ?? '' }, 422);
    return reply.redirect('/settings/migration?notice=moved', 303);
  });

  app.post('/settings/migration/cancel', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    await cancelRedirect(ctx, me.account);
    return reply.redirect('/settings/migration?notice=cancelled', 303);
  });
}
