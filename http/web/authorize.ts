import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { oauthLibrary, oauthServer } from '../oauth/server.ts';
import { DEFAULT_SCOPES, parseScopes, validScopes } from '../oauth/scopes.ts';
import { findApplicationByClientId, type ApplicationRow } from '../../storage/oauth.ts';
import { OOB_REDIRECT_URI } from '../api/v1/apps.ts';
import { endWebSession } from './session.ts';
import { KEEPS_OPENER, sendFormPage, sendMessagePage, translatorOf } from './page.ts';
import { serviceMessage } from './service-errors.ts';

const AuthorizeParams = Type.Object({
  client_id: Type.Optional(Type.String({ maxLength: 200 })),
  redirect_uri: Type.Optional(Type.String({ maxLength: 2000 })),
  response_type: Type.Optional(Type.String({ maxLength: 50 })),
  scope: Type.Optional(Type.String({ maxLength: 1000 })),
  state: Type.Optional(Type.String({ maxLength: 2000 })),
  code_challenge: Type.Optional(Type.String({ maxLength: 200 })),
  code_challenge_method: Type.Optional(Type.String({ maxLength: 20 })),
  force_login: Type.Optional(Type.String({ maxLength: 10 })),
  lang: Type.Optional(Type.String({ maxLength: 20 })),
});
const AuthorizeForm = Type.Object({ ...AuthorizeParams.properties, decision: Type.Optional(Type.String({ maxLength: 20 })) });

type AuthorizeRequest = { app: ApplicationRow; redirectUri: string; scopes: string[]; params: Record<string, string> };

/**
 * The page's policy without `form-action`: approving redirects the form's submission to the app's own redirect URI
 * (another origin, or an app's custom scheme), which `form-action 'self'` would block (Mastodon drops it here too).
 */
const AUTHORIZE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data: https: http:; frame-ancestors 'none'; base-uri 'none'";

/** Checks what must be right before we may redirect anywhere: the client and its redirect URI. */
async function checkAuthorizeRequest(ctx: RouteOptions['ctx'], q: Record<string, string | undefined>): Promise<AuthorizeRequest | { error: string }> {
  if (!q.client_id) return { error: 'The request is missing a client_id.' };
  const app = await findApplicationByClientId(ctx.db, q.client_id);
  if (!app) return { error: 'Client authentication failed due to unknown client.' };
  const redirectUri = q.redirect_uri ?? (app.redirect_uris.length === 1 ? app.redirect_uris[0]! : undefined);
  if (!redirectUri || !app.redirect_uris.includes(redirectUri)) {
    return { error: 'The redirect URI included is not valid.' };
  }
  const scopes = parseScopes(q.scope ?? DEFAULT_SCOPES);
  const params: Record<string, string> = { client_id: q.client_id, redirect_uri: redirectUri, response_type: q.response_type ?? '', scope: scopes.join(' ') };
  for (const k of ['state', 'code_challenge', 'code_challenge_method'] as const) {
    if (q[k] !== undefined) params[k] = q[k];
  }
  return { app, redirectUri, scopes, params };
}

/** OAuth's authorize step in the browser: the signed-in person approves or denies an app (sign-in first if needed). */
export default async function authorizePageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const server = oauthServer(ctx.db);

  // OAuth's own words for what went wrong (the library's and RFC 6749's), said in the page's language where known.
  const failure = async (request: FastifyRequest, reply: FastifyReply, message: string) =>
    sendMessagePage(ctx, request, reply, { key: 'authorize.failed' }, serviceMessage(await translatorOf(ctx, request), message), { status: 400, kind: 'error' });

  function redirectWithError(request: FastifyRequest, reply: FastifyReply, req: AuthorizeRequest, error: string, description: string) {
    if (req.redirectUri === OOB_REDIRECT_URI) return failure(request, reply, description);
    const url = new URL(req.redirectUri);
    url.searchParams.set('error', error);
    url.searchParams.set('error_description', description);
    if (req.params.state) url.searchParams.set('state', req.params.state);
    return reply.redirect(url.toString(), 302);
  }

  const signInFirst = (reply: FastifyReply, params: Record<string, string>) =>
    reply.redirect(`/auth/sign_in?return_to=${encodeURIComponent(`/oauth/authorize?${new URLSearchParams(params)}`)}`, 302);

  // An out-of-band app's code, to be copied by hand into the app (it is worth nothing without the app's secret).
  app.get('/oauth/authorize/native', {
    ...KEEPS_OPENER, schema: { querystring: Type.Object({ code: Type.Optional(Type.String({ maxLength: 200 })) }) },
  }, async (request, reply) => {
    return sendFormPage(ctx, request, reply, 'oauth/code', { key: 'authorize.code_title' }, { code: request.query.code ?? '' });
  });

  app.get('/oauth/authorize', { ...KEEPS_OPENER, schema: { querystring: AuthorizeParams } }, async (request, reply) => {
    reply.header('content-security-policy', AUTHORIZE_CSP);
    const checked = await checkAuthorizeRequest(ctx, request.query);
    if ('error' in checked) return failure(request, reply, checked.error);
    if (checked.params.response_type !== 'code') {
      return redirectWithError(request, reply, checked, 'unsupported_response_type', 'The authorization server does not support this response type.');
    }
    if (!validScopes(checked.scopes)) {
      return redirectWithError(request, reply, checked, 'invalid_scope', 'The requested scope is invalid, unknown, or malformed.');
    }
    // force_login: the app wants someone to sign in afresh (another account, say), as Mastodon does.
    if (request.query.force_login === 'true' || request.query.force_login === '1') {
      await endWebSession(ctx, request, reply);
      return signInFirst(reply, checked.params);
    }
    const signedIn = await request.signedIn();
    if (!signedIn) return signInFirst(reply, checked.params);
    return sendFormPage(ctx, request, reply, 'oauth/authorize', { key: 'authorize.title', params: { app: checked.app.name } }, {
      appName: checked.app.name, website: checked.app.website, scopes: checked.scopes, params: checked.params, username: signedIn.account.username,
    });
  });

  app.post('/oauth/authorize', { ...KEEPS_OPENER, schema: { body: AuthorizeForm } }, async (request, reply) => {
    reply.header('content-security-policy', AUTHORIZE_CSP);
    const checked = await checkAuthorizeRequest(ctx, request.body);
    if ('error' in checked) return failure(request, reply, checked.error);
    const signedIn = await request.signedIn();
    if (!signedIn) return signInFirst(reply, checked.params);
    if (request.body.decision !== 'approve') {
      return redirectWithError(request, reply, checked, 'access_denied', 'The resource owner or authorization server denied the request.');
    }
    const { Request, Response, OAuthError } = await oauthLibrary();
    const oauthRequest = new Request({
      method: 'POST',
      query: {},
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: checked.params,
    });
    const oauthResponse = new Response();
    try {
      await (await server()).authorize(oauthRequest, oauthResponse, { authenticateHandler: { handle: () => ({ id: signedIn.user.id }) } });
    } catch (err) {
      if (err instanceof OAuthError && err.name !== 'invalid_client') return redirectWithError(request, reply, checked, err.name, err.message);
      return failure(request, reply, (err as Error).message);
    }
    const location = new URL(String(oauthResponse.headers?.location));
    if (checked.redirectUri === OOB_REDIRECT_URI) {
      // Post/Redirect/Get, as Mastodon's `/oauth/authorize/native`: the code is on a page of its own.
      return reply.redirect(`/oauth/authorize/native?${new URLSearchParams({ code: location.searchParams.get('code') ?? '' })}`, 303);
    }
    return reply.redirect(location.toString(), 302);
  });
}
