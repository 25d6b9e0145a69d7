import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type { TokenOwner } from '../../storage/oauth.ts';
import type { TokenCache } from '../../services/token-cache.ts';
import { ApiError } from '../../errors.ts';
import { grantsAny, parseScopes } from '../oauth/scopes.ts';
import type { Db } from '../../storage/db.ts';
import { can, permissionForRoute, type Permission } from '../../services/roles.ts';

/**
 * How a route is reached, declared on every API route as `config.auth`:
 * - `public`: no token needed; one that is sent identifies the viewer, must be valid, and must hold one of
 *   `scopes` when they are given (Mastodon's `authorize_if_got_token!`).
 * - `anonymous`: the token is not even looked at (Mastodon's instance and app-registration endpoints).
 * - `app`: any valid token (an app's own, from client_credentials, or a user's) with one of `scopes`.
 * - `user`: a user's token with one of `scopes`.
 * - `admin`: a user's token with one of `scopes`, whose user's role has the permission flag that
 *   services/roles.ts `permissionForRoute` names for the route (Mastodon's admin API and its policies). A route of
 *   this kind the table does not name is refused at start-up.
 */
export type RouteAuth =
  | { kind: 'anonymous' }
  | { kind: 'public'; scopes?: readonly string[] }
  | { kind: 'app' | 'user' | 'admin'; scopes: readonly string[] };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /** For an `admin` route: the role's permission it needs (set at start-up from services/roles.ts). */
    permission?: Permission;
  }
  interface FastifyRequest {
    token: TokenOwner | null;
    /** The signed-in account, when the token belongs to a user. */
    viewerId: string | null;
  }
}

const INVALID_TOKEN = 'The access token is invalid';

function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new ApiError(401, INVALID_TOKEN);
  return match[1]!;
}

/**
 * Whether the token holds one of the route's scopes, remembered per token and route: a cached token is the same
 * object on every request until the token cache drops it (services/token-cache.ts), and a route's scope list is its
 * config's own array, so a token's scopes are not split and matched again on every request.
 */
const grantedByToken = new WeakMap<TokenOwner, Map<readonly string[], boolean>>();

function granted(token: TokenOwner, needed: readonly string[]): boolean {
  let byRoute = grantedByToken.get(token);
  if (!byRoute) grantedByToken.set(token, (byRoute = new Map()));
  let ok = byRoute.get(needed);
  if (ok === undefined) byRoute.set(needed, (ok = grantsAny(parseScopes(token.scopes), needed)));
  return ok;
}

/** Returns the viewer's account id from a signed-in user's token; throws 401/403/422 as Mastodon does. */
export function requireViewer(request: FastifyRequest): string {
  if (!request.viewerId) throw new ApiError(422, 'This method requires an authenticated user');
  return request.viewerId;
}

async function authPlugin(app: FastifyInstance, opts: { db: Db; tokens: TokenCache }) {
  app.decorateRequest('token', null);
  app.decorateRequest('viewerId', null);

  // One mechanism for every route: an /api or /oauth route without a declared policy is a programming error.
  app.addHook('onRoute', (route) => {
    if (/^\/api\//.test(route.url) && !route.config?.auth) {
      throw new Error(`route ${route.method} ${route.url} declares no config.auth`);
    }
    if (route.config?.auth?.kind === 'admin') {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const needed = new Set(methods.map((m) => permissionForRoute(m, route.url)));
      const [permission] = needed;
      if (needed.size !== 1 || !permission) throw new Error(`admin route ${methods.join(',')} ${route.url} has no one permission in services/roles.ts`);
      route.config = { ...route.config, permission };
    }
  });

  // onRequest: authentication comes before the body is read or validated, as in Mastodon. A callback hook: a token
  // the cache holds (nearly every request) is decided at once, without a promise to wait for.
  app.addHook('onRequest', (request, _reply, done) => {
    const policy = request.routeOptions.config.auth;
    if (!policy || policy.kind === 'anonymous') return done();
    let raw: string | null;
    try {
      raw = bearer(request);
    } catch (err) {
      return done(err as FastifyError);
    }
    if (raw === null) return done(policy.kind === 'public' ? undefined : (new ApiError(401, INVALID_TOKEN) as unknown as FastifyError));
    const cached = opts.tokens.cached(raw);
    if (cached) return done(authorize(request, policy, cached));
    opts.tokens.lookup(opts.db, raw).then((token) => done(authorize(request, policy, token)), (err: FastifyError) => done(err));
  });
}

/** Sets the request's token and viewer, or returns why the token may not be used here (401/403/422, as Mastodon). */
function authorize(request: FastifyRequest, policy: Exclude<RouteAuth, { kind: 'anonymous' }>, token: TokenOwner | null): FastifyError | undefined {
  const refuse = (status: number, message: string) => new ApiError(status, message) as unknown as FastifyError;
  if (!token) return refuse(401, INVALID_TOKEN);
  if (token.user_id && token.suspended) return refuse(403, 'Your login is currently disabled');
  request.token = token;
  request.viewerId = token.user_id && token.approved && token.confirmed ? token.account_id : null;
  const scopes = policy.scopes ?? [];
  // An empty list means any token will do (as Mastodon's bare `doorkeeper_authorize!`).
  if (scopes.length > 0 && !granted(token, scopes)) return refuse(403, 'This action is outside the authorized scopes');
  if (policy.kind === 'user' || policy.kind === 'admin') {
    if (!token.user_id) return refuse(422, 'This method requires an authenticated user');
    if (!token.confirmed) return refuse(403, 'Your login is missing a confirmed e-mail address');
    if (!token.approved) return refuse(403, 'Your login is currently pending approval');
    // Mastodon's require_user! asks `functional?`, false for a moved account: it may still read public routes,
    // and its web settings (sessions, not tokens) stay open to cancel the redirect or move again.
    if (token.moved) return refuse(403, 'Your login is currently disabled');
  }
  if (policy.kind === 'admin' && !can(token.role_permissions, request.routeOptions.config.permission!)) return refuse(403, 'This action is not allowed');
  return undefined;
}

export default fp(authPlugin, { name: 'auth' });
