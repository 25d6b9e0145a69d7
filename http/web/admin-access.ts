import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { can, permissionForRoute } from '../../services/roles.ts';
import type { SignedIn } from './session.ts';
import { sendMessagePage } from './page.ts';

/**
 * The check every operators' page makes first: only operators whose role has the page's permission
 * (services/roles.ts names it for each page) pass; a stranger is sent to sign in, a signed-in person without it gets
 * a 403 page. Null when the request was answered.
 */
export function operatorGuard(ctx: AppContext) {
  return async function operator(request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | null> {
    const permission = permissionForRoute(request.method, request.routeOptions.url ?? '');
    if (!permission) throw new Error(`operators' page ${request.routeOptions.url} has no permission in services/roles.ts`);
    const me = await request.signedIn();
    if (!me) {
      await reply.redirect(`/auth/sign_in?return_to=${encodeURIComponent(request.method === 'GET' ? request.url : '/admin')}`, 303);
      return null;
    }
    if (!can(me.user.role?.permissions, permission)) {
      await sendMessagePage(ctx, request, reply, 'Not allowed', 'Only the operators of this server may see this page.', { status: 403, kind: 'error' });
      return null;
    }
    return me;
  };
}
