import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { oauthLibrary, oauthServer } from './server.ts';
import { ALL_SCOPES } from './scopes.ts';
import { findApplicationByClientId, revokeAccessToken, hashSecret, secretMatches } from '../../storage/oauth.ts';
import { findAccountById } from '../../storage/accounts.ts';
import { requireViewer } from '../plugins/auth.ts';
import { renderAccount } from '../serializers/account.ts';
import { ApiError } from '../../errors.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

/** The grants Mastodon offers, and so this server. */
const GRANT_TYPES = ['authorization_code', 'client_credentials'];

async function sendOAuthError(reply: FastifyReply, err: unknown) {
  const { OAuthError } = await oauthLibrary();
  if (err instanceof OAuthError) {
    // A client that fails to authenticate gets 401, as RFC 6749 §5.2 and Mastodon do.
    const status = err.name === 'invalid_client' ? 401 : err.code;
    return reply.code(status).send({ error: err.name, error_description: err.message });
  }
  throw err;
}

/**
 * OAuth 2's API side as Mastodon does it: tokens (authorization code with PKCE, client credentials), revocation and
 * server metadata. The authorize step is a page (http/web/authorize.ts).
 */
export default async function oauthRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const server = oauthServer(ctx.db);

  // JSON and form bodies both reach here parsed; the library insists on the form content type, so we say it is one.
  app.post('/oauth/token', { schema: { body: Type.Optional(Type.Record(Type.String(), Type.Unknown())) } }, async (request, reply) => {
    // The library knows the password and refresh-token grants too; Mastodon offers neither (the password grant went
    // in 4.3), so they are refused as Doorkeeper refuses a grant it does not offer, before any credential is read.
    const grantType = (request.body as Record<string, unknown> | undefined)?.grant_type;
    if (typeof grantType === 'string' && !GRANT_TYPES.includes(grantType)) {
      return reply.code(400).send({ error: 'unsupported_grant_type', error_description: 'The authorization grant type is not supported by the authorization server.' });
    }
    const { Request, Response } = await oauthLibrary();
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
      await (await server()).token(oauthRequest, oauthResponse);
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

  // Mastodon 4.4's OpenID-Connect-style userinfo: who the token's user is, for apps that sign people in with us.
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method, url: '/oauth/userinfo',
      config: { auth: { kind: 'user', scopes: ['profile', 'read:accounts'] } },
      handler: async (request, reply) => {
        const account = await findAccountById(ctx.db, requireViewer(request));
        if (!account) throw new ApiError(401, 'The access token is invalid');
        const entity = renderAccount(ctx.render, account);
        return reply.header('cache-control', 'no-store').send({
          iss: `${ctx.config.publicUrl}/`,
          sub: entity.uri,
          name: entity.display_name,
          preferred_username: entity.username,
          profile: entity.url,
          picture: entity.avatar,
        });
      },
    });
  }

  app.get('/.well-known/oauth-authorization-server', async () => {
    const base = ctx.config.publicUrl;
    return {
      issuer: `${base}/`,
      service_documentation: 'https://docs.joinmastodon.org/',
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      revocation_endpoint: `${base}/oauth/revoke`,
      userinfo_endpoint: `${base}/oauth/userinfo`,
      app_registration_endpoint: `${base}/api/v1/apps`,
      scopes_supported: ALL_SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: GRANT_TYPES,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
    };
  });
}
