import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { findApplicationById } from '../../../storage/oauth.ts';
import { registerApplication } from '../../../services/applications.ts';
import { renderApplication, renderCredentialApplication } from '../../serializers/application.ts';
import { DEFAULT_SCOPES, parseScopes, validScopes } from '../../oauth/scopes.ts';
import { unprocessable, ApiError } from '../../../errors.ts';
import { vapidPublicKey } from '../../../services/web-push.ts';

export { OOB_REDIRECT_URI } from '../../../services/applications.ts';

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
    const scopes = parseScopes(body.scopes ?? DEFAULT_SCOPES);
    if (!validScopes(scopes)) throw unprocessable('Validation failed: Scopes must be valid OAuth scopes');
    const { row, clientSecret } = await registerApplication(ctx.db, {
      name: body.client_name,
      redirectUris: Array.isArray(body.redirect_uris) ? body.redirect_uris : body.redirect_uris.split(/\s+/),
      scopes,
      website: body.website,
    });
    return renderCredentialApplication(row, await vapidPublicKey(ctx.db), clientSecret);
  });

  app.get('/api/v1/apps/verify_credentials', { config: { auth: { kind: 'app', scopes: [] } } }, async (request) => {
    const row = await findApplicationById(ctx.db, request.token!.application_id);
    if (!row) throw new ApiError(401, 'The access token is invalid');
    return renderApplication(row, await vapidPublicKey(ctx.db));
  });
}
