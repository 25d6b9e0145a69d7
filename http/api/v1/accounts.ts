import { randomBytes } from 'node:crypto';
import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, IdList, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { LIMITS } from '../../plugins/rate-limit.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { ApiError, forbidden, notFound, unprocessable } from '../../../errors.ts';
import { findAccountById, findAccountByUsername, findAccountsByIds, type AccountRow } from '../../../storage/accounts.ts';
import { findUserByAccountId, pendingAccountIds } from '../../../storage/users.ts';
import { findApplicationById, insertAccessToken } from '../../../storage/oauth.ts';
import * as follows from '../../../storage/follows.ts';
import { signUp, visibleAccount } from '../../../services/accounts.ts';
import { updateAccountProfile } from '../../../services/profile.ts';
import { renderAccount, renderCredentialAccount } from '../../serializers/account.ts';
import { withAccountEmojis } from '../../../services/custom-emojis.ts';
import { renderRelationship } from '../../serializers/relationship.ts';
import { renderToken } from '../../serializers/application.ts';
import type { AppContext } from '../../../context.ts';
import { accountStatusIds } from '../../../storage/statuses.ts';
import { profileVisibilities } from '../../../services/visibility.ts';
import { renderTimeline } from '../../serializers/statuses.ts';
import { pinnedStatusIds } from '../../../storage/status-marks.ts';

const AccountIdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

// Missing fields are blank ones for the service's validation, so they get Mastodon's error codes in `details`.
const Register = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 200 })),
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 200 })),
  agreement: Type.Optional(Bool()),
  locale: Type.String({ maxLength: 20 }),
  reason: Type.Optional(Type.String({ maxLength: 1000 })),
  invite_code: Type.Optional(Type.String({ maxLength: 40 })),
  date_of_birth: Type.Optional(Type.String({ maxLength: 20 })),
});

const Field = Type.Object({ name: Type.Optional(Type.String({ maxLength: 255 })), value: Type.Optional(Type.String({ maxLength: 255 })) });

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Rails' parameter filtering (`permit(fields_attributes: [:name, :value])`) drops a fields_attributes that is not a
 * list or hash of rows, such as masto's `fields_attributes=undefined` or a plain string: it is as if not sent.
 */
function dropMalformedFields(body: unknown): void {
  if (!isObject(body) || !('fields_attributes' in body)) return;
  const value = body.fields_attributes;
  const rows = Array.isArray(value) ? value : isObject(value) ? Object.values(value) : null;
  if (!rows || !rows.every(isObject)) delete body.fields_attributes;
}

const UpdateCredentials = Type.Object({
  display_name: Type.Optional(Type.String({ maxLength: 30 })),
  note: Type.Optional(Type.String({ maxLength: 500 })),
  locked: Type.Optional(Bool()),
  bot: Type.Optional(Bool()),
  discoverable: Type.Optional(Bool()),
  indexable: Type.Optional(Bool()),
  hide_collections: Type.Optional(Bool()),
  // Mastodon 4.4: alt text of the profile images, plain text.
  avatar_description: Type.Optional(Type.String({ maxLength: 150 })),
  header_description: Type.Optional(Type.String({ maxLength: 150 })),
  // Forms send `fields_attributes[0][name]`, which nests to an object keyed by index; JSON clients send an array.
  fields_attributes: Type.Optional(Type.Union([Type.Array(Field, { maxItems: 4 }), Type.Record(Type.String({ pattern: '^[0-9]+$' }), Field, { maxProperties: 4 })])),
  source: Type.Optional(Type.Object({
    privacy: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('unlisted'), Type.Literal('private'), Type.Literal('direct')])),
    sensitive: Type.Optional(Bool()),
    language: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}$' })),
    // Mastodon 4.5: who may quote new posts by default.
    quote_policy: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('followers'), Type.Literal('nobody')])),
  })),
});


async function relationshipOf(ctx: AppContext, viewerId: string, targetId: string) {
  const rels = await follows.relationships(ctx.db, viewerId, [targetId]);
  return renderRelationship(targetId, rels.get(targetId));
}

/** `user@domain` of another server: the stored account, or the one WebFinger and the actor document describe. */
async function resolveRemoteAcct(ctx: AppContext, username: string, domain: string) {
  if (!/^[a-z0-9_.-]{1,255}$/i.test(username) || !/^[a-z0-9.-]{1,253}(:\d{1,5})?$/i.test(domain)) return null;
  // Loaded here, not at start: it brings Fedify (federation/lazy.ts).
  const { resolveAcct } = await import('../../../federation/remote-accounts.ts');
  return resolveAcct(ctx, ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx), username, domain.toLowerCase());
}

export default async function accountsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const r = ctx.render;

  app.post('/api/v1/accounts', {
    schema: { body: Register },
    config: {
      auth: { kind: 'app', scopes: ['write:accounts'] },
      rateLimit: { ...LIMITS.registration, keyGenerator: (request) => `registration:${request.ip}` },
    },
    // Mastodon's before_actions: after the token and scope check (onRequest), before the body is validated.
    preValidation: async (request) => {
      if (request.token?.user_id) throw forbidden('This method requires an client credentials authentication');
      // OMNIAUTH_ONLY (Mastodon's omniauth_only?): people join through the single sign-on provider only.
      // An invite code opens closed sign-ups (Mastodon's allowed_registration?); signUp checks that it is good.
      const invite = (request.body as { invite_code?: unknown } | undefined)?.invite_code;
      if ((ctx.config.registrationsMode === 'none' && (typeof invite !== 'string' || invite === '')) || ctx.config.omniauthOnly) throw forbidden('Registrations are closed');
    },
  }, async (request) => {
    const body = request.body;
    const token = request.token!;
    // The new user's token carries the scopes the app registered (not those of the app token), as in Mastodon's AppSignUpService.
    const application = await findApplicationById(ctx.db, token.application_id);
    const accessToken = randomBytes(32).toString('base64url');
    const { extra: row } = await signUp(ctx, {
      username: body.username ?? '',
      email: body.email ?? '',
      password: body.password ?? '',
      agreement: body.agreement ?? false,
      locale: body.locale,
      reason: body.reason ?? null,
      inviteCode: body.invite_code || null,
    }, {
      applicationId: token.application_id,
      ip: request.ip,
      alsoInTransaction: (tx, { user }) => insertAccessToken(tx, { token: accessToken, applicationId: token.application_id, userId: user.id, scopes: application?.scopes ?? token.scopes }),
    });
    return renderToken(accessToken, row!.scopes, row!.created_at);
  });

  app.get('/api/v1/accounts/verify_credentials', {
    config: { auth: { kind: 'user', scopes: ['read:accounts', 'profile'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const [account, user, requests] = await Promise.all([
      findAccountById(ctx.db, viewerId),
      findUserByAccountId(ctx.db, viewerId),
      follows.countFollowRequests(ctx.db, viewerId),
    ]);
    if (!account || !user) throw new ApiError(401, 'The access token is invalid');
    await withAccountEmojis(ctx.db, [account]);
    return renderCredentialAccount(r, account, user, requests);
  });

  app.patch('/api/v1/accounts/update_credentials', {
    schema: { body: Type.Optional(UpdateCredentials) },
    config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
    preValidation: async (request) => dropMalformedFields(request.body),
  }, async (request) => {
    const viewerId = requireViewer(request);
    const body = request.body ?? {};
    const current = await findAccountById(ctx.db, viewerId);
    if (!current) throw new ApiError(401, 'The access token is invalid');
    const fields = body.fields_attributes === undefined ? undefined
      : (Array.isArray(body.fields_attributes)
        ? body.fields_attributes
        : Object.entries(body.fields_attributes).sort(([a], [b]) => Number(a) - Number(b)).map(([, f]) => f))
        .map((f) => ({ name: (f.name ?? '').trim(), value: (f.value ?? '').trim() }))
        // Mastodon drops rows left entirely blank, which is how apps remove a field.
        .filter((f) => f.name !== '' || f.value !== '');
    const updated = await updateAccountProfile(ctx, current, {
      displayName: body.display_name,
      note: body.note,
      locked: body.locked,
      bot: body.bot,
      discoverable: body.discoverable,
      indexable: body.indexable,
      hideCollections: body.hide_collections,
      avatarDescription: body.avatar_description,
      headerDescription: body.header_description,
      fields,
      avatar: request.uploads.avatar?.data,
      header: request.uploads.header?.data,
      source: body.source,
    });
    const [user, requests] = await Promise.all([findUserByAccountId(ctx.db, viewerId), follows.countFollowRequests(ctx.db, viewerId)]);
    await withAccountEmojis(ctx.db, [updated]);
    return renderCredentialAccount(r, updated, user!, requests);
  });

  app.get('/api/v1/accounts/relationships', {
    schema: { querystring: Type.Object({ id: Type.Optional(IdList(40)), with_suspended: Type.Optional(Bool()) }) },
    config: { auth: { kind: 'user', scopes: ['read:follows'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const requested = [...new Set((request.query.id ?? []).filter(isId))];
    const existing = await findAccountsByIds(ctx.db, requested);
    const known = new Set(existing.filter((a) => request.query.with_suspended || !a.suspended_at).map((a) => a.id));
    // In the order asked; ids that name no account are left out, as Mastodon does.
    const ids = requested.filter((id) => known.has(id));
    const rels = await follows.relationships(ctx.db, viewerId, ids);
    return ids.map((id) => renderRelationship(id, rels.get(id)));
  });

  app.get('/api/v1/accounts/lookup', {
    schema: { querystring: Type.Object({ acct: Type.String({ minLength: 1, maxLength: 300 }) }) },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    const acct = request.query.acct.replace(/^@/, '');
    const [username, domain] = acct.split('@') as [string, string | undefined];
    const local = domain === undefined || domain.toLowerCase() === ctx.config.localDomain.toLowerCase();
    // An account of another server not known yet is found by WebFinger and stored (federation/remote-accounts.ts).
    const account = local
      ? await findAccountByUsername(await ctx.readDb(request.viewerId), username, null)
      : await resolveRemoteAcct(ctx, username, domain);
    if (!account || account.suspended_at) throw notFound();
    const db = await ctx.readDb(request.viewerId);
    return renderAccount(r, (await withAccountEmojis(db, [await visibleAccount(db, account.id)]))[0]!);
  });

  app.get('/api/v1/accounts', {
    schema: { querystring: Type.Object({ id: Type.Optional(IdList(40)) }) },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    // No id asks for nothing: an empty list, as in Mastodon.
    const requested = [...new Set((request.query.id ?? []).filter(isId))];
    const db = await ctx.readDb(request.viewerId);
    const [found, waiting] = await Promise.all([findAccountsByIds(db, requested), pendingAccountIds(db, requested)]);
    const byId = new Map((await withAccountEmojis(db, found)).map((a) => [a.id, a]));
    return requested.map((id) => byId.get(id)).filter((a): a is AccountRow => !!a && !a.suspended_at && !waiting.has(a.id)).map((a) => renderAccount(r, a));
  });

  app.get('/api/v1/accounts/:id', {
    schema: { params: AccountIdParams },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request) => {
    const db = await ctx.readDb(request.viewerId);
    return renderAccount(r, (await withAccountEmojis(db, [await visibleAccount(db, request.params.id)]))[0]!);
  });

  for (const list of ['followers', 'following'] as const) {
    app.get(`/api/v1/accounts/:id/${list}`, {
      schema: { params: AccountIdParams, querystring: Type.Object(PagingQuery(40, 80)) },
      config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
    }, async (request, reply) => {
      const db = await ctx.readDb(request.viewerId);
      const account = await visibleAccount(db, request.params.id);
      // An account that hides its collections shows them to itself only; others get an empty list, as in Mastodon.
      if (account.hide_collections && request.viewerId !== account.id) return [];
      const p = pageParams(request.query, 40);
      const page = list === 'followers' ? await follows.followersPage(db, account.id, p) : await follows.followingPage(db, account.id, p);
      setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
      return (await withAccountEmojis(db, page.accounts)).map((a) => renderAccount(r, a));
    });
  }

  app.get('/api/v1/accounts/:id/statuses', {
    schema: {
      params: AccountIdParams,
      querystring: Type.Object({
        ...PagingQuery(20, 40),
        only_media: Type.Optional(Bool()),
        exclude_replies: Type.Optional(Bool()),
        exclude_reblogs: Type.Optional(Bool()),
        pinned: Type.Optional(Bool()),
        tagged: Type.Optional(Type.String({ maxLength: 100 })),
      }),
    },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request, reply) => {
    const db = await ctx.readDb(request.viewerId);
    const account = await visibleAccount(db, request.params.id);
    const q = request.query;
    const viewerId = request.viewerId;
    const visibilities = await profileVisibilities(db, viewerId, account.id);
    // Pins: all of them on the first page, newest pin first, without paging (Mastodon's apps ask once).
    if (q.pinned) {
      const pinned = q.max_id || q.min_id || q.since_id ? [] : await pinnedStatusIds(db, account.id, { visibilities, mentionedViewerId: viewerId, limit: q.limit ?? 20 });
      return reply.type('application/json; charset=utf-8').send(await renderTimeline(ctx, viewerId, pinned, 'account'));
    }
    const ids = await accountStatusIds(db, account.id, {
      visibilities, mentionedViewerId: viewerId, excludeReplies: q.exclude_replies, excludeReblogs: q.exclude_reblogs, onlyMedia: q.only_media, tagged: q.tagged,
    }, pageParams(q, 20));
    setLinkHeader(request, reply, ctx.config.publicUrl, ids[0] ?? null, ids.at(-1) ?? null);
    return reply.type('application/json; charset=utf-8').send(await renderTimeline(ctx, viewerId, ids, 'account'));
  });

  app.post('/api/v1/accounts/:id/follow', {
    schema: {
      params: AccountIdParams,
      body: Type.Optional(Type.Object({
        reblogs: Type.Optional(Bool()),
        notify: Type.Optional(Bool()),
        languages: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z]{2,3}$' }), { maxItems: 50 })),
      })),
    },
    config: { auth: { kind: 'user', scopes: ['follow', 'write:follows'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    if (target.id === viewerId) throw forbidden();
    const body = request.body ?? {};
    await ctx.actors.ask(viewerId, { type: 'follow', targetId: target.id, options: { reblogs: body.reblogs, notify: body.notify, languages: body.languages } });
    return relationshipOf(ctx, viewerId, target.id);
  });

  app.post('/api/v1/accounts/:id/unfollow', {
    schema: { params: AccountIdParams },
    config: { auth: { kind: 'user', scopes: ['follow', 'write:follows'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'unfollow', targetId: target.id });
    return relationshipOf(ctx, viewerId, target.id);
  });
}
