import { randomBytes } from 'node:crypto';
import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { insertApplication, findApplicationById } from '../../../storage/oauth.ts';
import { renderApplication, renderCredentialApplication } from '../../serializers/application.ts';
import { DEFAULT_SCOPES, parseScopes, validScopes } from '../../oauth/scopes.ts';
import { unprocessable, ApiError } from '../../../errors.ts';
import { vapidPublicKey } from '../../../services/web-push.ts';

export const OOB_REDIRECT_URI = 'urn:ietf:wg:oauth:2.0:oob';

function checkRedirectUri(uri: string): boolean {
  if (uri === OOB_REDIRECT_URI) return true;
  try {
    const url = new URL(uri);
    // Absolute, no fragment (RFC 6749 §3.1.2); app schemes like `myapp://callback` are allowed.
    return url.hash === '' && url.protocol !== 'javascript:' && url.protocol !== 'data:';
  } catch {
    return false;
  }
}

const CreateApp = Type.Object({
  client_name: Type.String({ minLength: 1, maxLength: 60 }),
  redirect_uris: Type.Union([Type.String({ minLength: 1, maxLength: 2000 }), Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), { minItems: 1, maxItems: 10 })]),
  scopes: Type.Optional(Type.String({ maxLength: 1000 })),
  website: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
});

export default async function appsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/api/v1/apps', { schema: { body: CreateApp }, config: { auth: { kind: 'anonymous' } } }, async (request) => {
    const body = request.body;
    const redirectUris = (Array.isArray(body.redirect_uris) ? body.redirect_uris : body.redirect_uris.split(/\s+/)).filter(Boolean);
    if (redirectUris.length === 0 || !redirectUris.every(checkRedirectUri)) {
      throw unprocessable('Validation failed: Redirect URI must be an absolute URI.');
    }
    const scopes = parseScopes(body.scopes ?? DEFAULT_SCOPES);
    if (!validScopes(scopes)) throw unprocessable('Validation failed: Scopes must be valid OAuth scopes');
    let website: string | null = body.website?.trim() || null;
    if (website !== null) {
      try {
        const u = new URL(website);
        if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
      } catch {
        throw unprocessable('Validation failed: Website is invalid');
      }
    }
    const clientSecret = randomBytes(32).toString('base64url');
    const row = await insertApplication(ctx.db, {
      name: body.client_name.trim(),
      website,
      redirectUris,
      scopes: [...new Set(scopes)].join(' '),
      clientId: randomBytes(32).toString('base64url'),
      clientSecret,
    });
    return renderCredentialApplication(row, await vapidPublicKey(ctx.db), clientSecret);
  });

  app.get('/api/v1/apps/verify_credentials', { config: { auth: { kind: 'app', scopes: [] } } }, async (request) => {
    const row = await findApplicationById(ctx.db, request.token!.application_id);
    if (!row) throw new ApiError(401, 'The access token is invalid');
    return renderApplication(row, await vapidPublicKey(ctx.db));
  });
}
