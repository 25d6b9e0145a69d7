import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { findUserByAccountId } from '../../../storage/users.ts';
import { renderPreferences } from '../../serializers/preferences.ts';
import { ApiError } from '../../../errors.ts';

export default async function preferencesRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/api/v1/preferences', { config: { auth: { kind: 'user', scopes: ['read:accounts'] } } }, async (request) => {
    const user = await findUserByAccountId(ctx.db, requireViewer(request));
    if (!user) throw new ApiError(401, 'The access token is invalid');
    return renderPreferences(user);
  });
}
