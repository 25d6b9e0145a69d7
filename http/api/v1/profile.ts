import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { removeProfileImage } from '../../../services/profile.ts';
import { findUserByAccountId } from '../../../storage/users.ts';
import { countFollowRequests } from '../../../storage/follows.ts';
import { renderCredentialAccount } from '../../serializers/account.ts';

/** Mastodon's /api/v1/profile: removing the avatar or header image (4.2). */
export default async function profileRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  for (const kind of ['avatar', 'header'] as const) {
    app.delete(`/api/v1/profile/${kind}`, {
      config: { auth: { kind: 'user', scopes: ['write:accounts'] } },
    }, async (request) => {
      const viewerId = requireViewer(request);
      const account = await removeProfileImage(ctx, viewerId, kind);
      const [user, requests] = await Promise.all([findUserByAccountId(ctx.db, viewerId), countFollowRequests(ctx.db, viewerId)]);
      return renderCredentialAccount(ctx.render, account, user!, requests);
    });
  }
}
