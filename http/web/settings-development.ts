import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isId } from '../params.ts';
import { ApiError } from '../../errors.ts';
import { createOwnApplication, OOB_REDIRECT_URI } from '../../services/applications.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { isStaff } from '../../services/roles.ts';
import { deleteOwnedApplication, ownedApplications } from '../../storage/oauth.ts';
import { GRANULAR_SCOPES, TOP_SCOPES, validScopes } from '../oauth/scopes.ts';
import { sendFormPage, signedInOrRedirect, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import { notFoundPage } from './error-pages.ts';
import type { SignedIn } from './session.ts';

/** What a new app's secrets are kept as, for the one page that shows them after the redirect (then deleted). */
const SHOWN_ONCE_SECONDS = 600;
const many = (max: number) => Type.Optional(Type.Union([Type.String({ maxLength: max }), Type.Array(Type.String({ maxLength: max }), { maxItems: 60 })]));
const AppForm = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 200 })),
  website: Type.Optional(Type.String({ maxLength: 2000 })),
  redirect_uris: Type.Optional(Type.String({ maxLength: 4000 })),
  scopes: many(60),
});
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

/** The scopes a person may give their own app: every one, the operators' only to staff (a role with their powers). */
function scopeChoices(me: SignedIn): string[] {
  const staff = isStaff(me.user.role?.permissions);
  return [...TOP_SCOPES, ...GRANULAR_SCOPES.filter((s) => staff || !s.startsWith('admin:'))];
}

/**
 * Development (Mastodon's /settings/applications): apps a person makes for themselves, each with an access token for
 * them holding the scopes chosen, made by the same service as POST /api/v1/apps. Secrets and tokens are stored
 * hashed, so they are shown once, on the page the form leads to.
 */
export default async function developmentPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const onceKey = (userId: string, appId: string) => `${ctx.config.redisPrefix}new-app:{${userId}}:${appId}`;

  async function indexPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, form: { name: string; website: string; redirect_uris: string; scopes: string[] }, error = '', status = 200) {
    return sendFormPage(ctx, request, reply, 'settings/development', { key: 'settings.development' }, {
      apps: (await ownedApplications(ctx.db, me.user.id)).map((a) => ({ id: a.id, name: a.name, scopes: a.scopes.split(' ').join(', ') })),
      form, scopeChoices: scopeChoices(me), notice: (request.query as { notice?: string }).notice === 'deleted' ? 'development.notice_deleted' : '', error,
    }, status);
  }

  app.get('/settings/development', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && indexPage(request, reply, me, { name: '', website: '', redirect_uris: OOB_REDIRECT_URI, scopes: ['read', 'write', 'follow'] });
  });

  app.post('/settings/development', { schema: { body: AppForm } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const b = request.body;
    const scopes = [b.scopes ?? []].flat();
    const form = { name: b.name ?? '', website: b.website ?? '', redirect_uris: b.redirect_uris ?? '', scopes };
    const allowed = scopeChoices(me);
    try {
      if (scopes.length === 0) throw new ApiError(422, 'Choose at least one scope.');
      if (!validScopes(scopes) || !scopes.every((s) => allowed.includes(s))) throw new ApiError(422, 'Scopes must be valid OAuth scopes.');
      const made = await createOwnApplication(ctx.db, me.user.id, { name: form.name, website: form.website, redirectUris: form.redirect_uris.split(/\s+/), scopes });
      await ctx.redis.set(onceKey(me.user.id, made.row.id), JSON.stringify({ clientSecret: made.clientSecret, accessToken: made.accessToken }), 'EX', SHOWN_ONCE_SECONDS);
      return reply.redirect(`/settings/development/${made.row.id}`, 303);
    } catch (err) {
      if (!(err instanceof ApiError) || err.statusCode >= 500) throw err;
      return indexPage(request, reply, me, form, formError(await translatorOf(ctx, request), err), 422);
    }
  });

  app.get('/settings/development/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const found = isId(request.params.id) ? (await ownedApplications(ctx.db, me.user.id)).find((a) => a.id === request.params.id) : undefined;
    if (!found) return notFoundPage(request, reply);
    // The secrets of an app just made, read once: a reload (or anyone later) sees them no more.
    const raw = await ctx.redis.getdel(onceKey(me.user.id, found.id));
    const secrets = raw ? (JSON.parse(raw) as { clientSecret: string; accessToken: string }) : null;
    return sendFormPage(ctx, request, reply, 'settings/development-app', found.name, {
      app: { id: found.id, name: found.name, website: found.website, scopes: found.scopes.split(' '), redirectUris: found.redirect_uris, clientId: found.client_id },
      secrets, notice: secrets ? 'development.notice_made' : '', error: '',
    });
  });

  app.post('/settings/development/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    if (!isId(request.params.id) || !(await deleteOwnedApplication(ctx.db, me.user.id, request.params.id))) return notFoundPage(request, reply);
    await ctx.redis.del(onceKey(me.user.id, request.params.id));
    // Its tokens went with it: cached ones of this user are forgotten in every process.
    ctx.tokens.forget(`user:${me.user.id}`);
    await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { userId: me.user.id });
    return reply.redirect('/settings/development?notice=deleted', 303);
  });
}
