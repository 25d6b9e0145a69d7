import OAuth2Server, { Request, Response, OAuthError } from '@node-oauth/oauth2-server';
import { Type } from 'typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { oauthModel } from './model.ts';
import { authorizePage, authorizationCodePage, errorPage } from './page.ts';
import { ALL_SCOPES, DEFAULT_SCOPES, parseScopes, validScopes } from './scopes.ts';
import { findApplicationByClientId, revokeAccessToken, hashSecret, secretMatches, type ApplicationRow } from '../../storage/oauth.ts';
import { findUserByEmail } from '../../storage/users.ts';
import { verifyPassword } from '../../services/passwords.ts';
import { OOB_REDIRECT_URI } from '../api/v1/apps.ts';
import { LIMITS } from '../plugins/rate-limit.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

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

const AuthorizeForm = Type.Object({
  ...AuthorizeParams.properties,
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 200 })),
  decision: Type.Optional(Type.String({ maxLength: 20 })),
});

type AuthorizeRequest = { app: ApplicationRow; redirectUri: string; scopes: string[]; params: Record<string, string> };

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

function redirectWithError(reply: FastifyReply, req: AuthorizeRequest, error: string, description: string) {
  if (req.redirectUri === OOB_REDIRECT_URI) {
    return reply.code(400).type('text/html').send(errorPage('Authorization failed', description));
  }
  const url = new URL(req.redirectUri);
  url.searchParams.set('error', error);
  url.searchParams.set('error_description', description);
  if (req.params.state) url.searchParams.set('state', req.params.state);
  return reply.redirect(url.toString(), 302);
}

function sendOAuthError(reply: FastifyReply, err: unknown) {
  if (err instanceof OAuthError) {
    // A client that fails to authenticate gets 401, as RFC 6749 §5.2 and Mastodon do.
    const status = err.name === 'invalid_client' ? 401 : err.code;
    return reply.code(status).send({ error: err.name, error_description: err.message });
  }
  throw err;
}

/** OAuth 2 as Mastodon does it: authorization code (with PKCE) and client credentials grants, revocation, metadata. */
export default async function oauthRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const server = new OAuth2Server({
    model: oauthModel(ctx.db),
    // Tokens never expire, as in Mastodon; the library still wants a number.
    accessTokenLifetime: Number.MAX_SAFE_INTEGER,
    authorizationCodeLifetime: 600,
    allowEmptyState: true,
    allowExtendedTokenAttributes: true,
    requireClientAuthentication: { authorization_code: true, client_credentials: true },
  });

  app.get('/oauth/authorize', { schema: { querystring: AuthorizeParams } }, async (request, reply) => {
    const checked = await checkAuthorizeRequest(ctx, request.query);
    if ('error' in checked) return reply.code(400).type('text/html').send(errorPage('Authorization failed', checked.error));
    if (checked.params.response_type !== 'code') {
      return redirectWithError(reply, checked, 'unsupported_response_type', 'The authorization server does not support this response type.');
    }
    if (!validScopes(checked.scopes)) {
      return redirectWithError(reply, checked, 'invalid_scope', 'The requested scope is invalid, unknown, or malformed.');
    }
    return reply.type('text/html').header('cache-control', 'no-store').send(
      authorizePage({ appName: checked.app.name, website: checked.app.website, scopes: checked.scopes, params: checked.params }),
    );
  });

  app.post('/oauth/authorize', {
    schema: { body: AuthorizeForm },
    config: { rateLimit: { ...LIMITS.signIn, keyGenerator: (request) => `sign-in:${request.ip}` } },
  }, async (request, reply) => {
    const body = request.body;
    const checked = await checkAuthorizeRequest(ctx, body);
    if ('error' in checked) return reply.code(400).type('text/html').send(errorPage('Authorization failed', checked.error));
    if (body.decision === 'deny') {
      return redirectWithError(reply, checked, 'access_denied', 'The resource owner or authorization server denied the request.');
    }
    const page = (status: number, error: string) =>
      reply.code(status).type('text/html').header('cache-control', 'no-store').send(
        authorizePage({ appName: checked.app.name, website: checked.app.website, scopes: checked.scopes, params: checked.params, error, email: body.email ?? '' }),
      );
    const user = body.email ? await findUserByEmail(ctx.db, body.email) : null;
    if (!(await verifyPassword(user?.password_hash ?? null, body.password ?? '')) || !user) {
      return page(401, 'Invalid e-mail address or password.');
    }
    if (!user.approved) return page(403, 'Your account is pending approval.');
    if (user.disabled) return page(403, 'Your login is currently disabled.');

    const oauthRequest = new Request({
      method: 'POST',
      query: {},
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: checked.params,
    });
    const oauthResponse = new Response();
    try {
      await server.authorize(oauthRequest, oauthResponse, { authenticateHandler: { handle: () => ({ id: user.id }) } });
    } catch (err) {
      if (err instanceof OAuthError && err.name !== 'invalid_client') {
        return redirectWithError(reply, checked, err.name, err.message);
      }
      return reply.code(400).type('text/html').send(errorPage('Authorization failed', (err as Error).message));
    }
    const location = new URL(String(oauthResponse.headers?.location));
    if (checked.redirectUri === OOB_REDIRECT_URI) {
      return reply.type('text/html').header('cache-control', 'no-store').send(authorizationCodePage(checked.app.name, location.searchParams.get('code') ?? ''));
    }
    return reply.redirect(location.toString(), 302);
  });

  // JSON and form bodies both reach here parsed; the library insists on the form content type, so we say it is one.
  app.post('/oauth/token', { schema: { body: Type.Optional(Type.Record(Type.String(), Type.Unknown())) } }, async (request, reply) => {
    const oauthRequest = new Request({
      method: 'POST',
      query: {},
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'transfer-encoding': 'identity',
        ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
      },
      body: (request.body ?? {}) as Record<string, unknown>,
    });
    const oauthResponse = new Response();
    try {
      await server.token(oauthRequest, oauthResponse);
    } catch (err) {
      return sendOAuthError(reply, err);
    }
    const token = oauthResponse.body as Record<string, unknown>;
    return reply.header('cache-control', 'no-store').send({
      access_token: token.access_token,
      token_type: 'Bearer',
      scope: token.scope,
      created_at: token.created_at,
    });
  });

  app.post('/oauth/revoke', {
    schema: {
      body: Type.Object({
        token: Type.String({ maxLength: 200 }),
        client_id: Type.Optional(Type.String({ maxLength: 200 })),
        client_secret: Type.Optional(Type.String({ maxLength: 200 })),
      }),
    },
  }, async (request, reply) => {
    let { client_id: clientId, client_secret: clientSecret } = request.body;
    const basic = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString();
      const colon = decoded.indexOf(':');
      clientId = decodeURIComponent(decoded.slice(0, colon));
      clientSecret = decodeURIComponent(decoded.slice(colon + 1));
    }
    const client = clientId ? await findApplicationByClientId(ctx.db, clientId) : null;
    if (!client || !clientSecret || !secretMatches(clientSecret, client.client_secret_hash)) {
      return reply.code(401).send({ error: 'invalid_client', error_description: 'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.' });
    }
    // RFC 7009: an unknown or foreign token is not an error; the answer is the same.
    await revokeAccessToken(ctx.db, request.body.token, client.id);
    // This process forgets it before answering; the others hear of it over pub/sub.
    ctx.tokens.forget(`token:${hashSecret(request.body.token)}`);
    await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { token: request.body.token });
    return reply.send({});
  });

  app.get('/.well-known/oauth-authorization-server', async () => {
    const base = ctx.config.publicUrl;
    return {
      issuer: `${base}/`,
      service_documentation: 'https://docs.joinmastodon.org/',
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      revocation_endpoint: `${base}/oauth/revoke`,
      app_registration_endpoint: `${base}/api/v1/apps`,
      scopes_supported: ALL_SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
    };
  });
}
