import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { hashSecret } from '../../storage/oauth.ts';
import { deleteWebSession, findWebSession, insertWebSession, touchWebSession, type WebSessionRow } from '../../storage/web-sessions.ts';
import { findUserById, recordSignIn, type UserRow } from '../../storage/users.ts';
import { findAccountById, type AccountRow } from '../../storage/accounts.ts';
import { disputesOnly, loginBlocker } from '../../services/sign-in.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import type { CachedSession, ResolvedSession } from '../../services/session-cache.ts';

export const SESSION_COOKIE = '_session';
/** A session unused for this long is over (a person who comes back after a month signs in again). */
const SESSION_IDLE_SECONDS = 30 * 24 * 3600;
/** A session's last use is written at most this often: not a write per page. */
const TOUCH_EVERY_MS = 3600_000;

/** Who a browser's session belongs to. */
export interface SignedIn {
  session: WebSessionRow;
  user: UserRow;
  account: AccountRow;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in person of this request's session cookie, or null; read once per request. */
    signedIn(): Promise<SignedIn | null>;
    /**
     * Also a suspended or disabled person (services/sign-in.ts disputesOnly), for the pages they may still use: their
     * strikes and appeals. `restricted` says which.
     */
    signedInForDisputes(): Promise<(SignedIn & { restricted: boolean }) | null>;
  }
}

const cache = new WeakMap<FastifyRequest, Promise<(SignedIn & { restricted: boolean }) | null>>();

async function sessionOf(ctx: AppContext, request: FastifyRequest): Promise<(SignedIn & { restricted: boolean }) | null> {
  const raw = request.cookies[SESSION_COOKIE];
  if (!raw || raw.length > 100) return null;
  // A form (any method but GET and HEAD) acts on its person's rows as PostgreSQL has them now, never on a cached copy.
  return sessionOfHash(ctx, hashSecret(raw), request.method !== 'GET' && request.method !== 'HEAD');
}

/** The session of a cookie token's hash read from PostgreSQL, with whose it is; null when it may not be used. */
async function readSession(ctx: AppContext, tokenHash: string): Promise<CachedSession<ResolvedSession> | null> {
  const session = await findWebSession(ctx.db, tokenHash, SESSION_IDLE_SECONDS);
  if (!session) return null;
  const user = await findUserById(ctx.db, session.user_id);
  const account = user ? await findAccountById(ctx.db, user.account_id) : null;
  if (!user || !account) return null;
  const restricted = loginBlocker(user, account) !== null;
  if (restricted && !disputesOnly(user, account)) return null;
  return { userId: user.id, accountId: account.id, value: { session, user, account, restricted } };
}

/**
 * The session of a cookie token's hash, its user and account, and whether the person may only see their strikes:
 * from the process's cache of sessions (services/session-cache.ts, forgotten in every process when the session ends
 * or its person changes), or `fresh` from PostgreSQL.
 */
async function sessionOfHash(ctx: AppContext, tokenHash: string, fresh = false): Promise<ResolvedSession | null> {
  const found = fresh ? ((await readSession(ctx, tokenHash))?.value ?? null) : await ctx.sessions.lookup(tokenHash, () => readSession(ctx, tokenHash));
  if (!found) return null;
  if (Date.now() - found.session.last_active_at.getTime() > TOUCH_EVERY_MS) {
    // Marked on the copy this process keeps too, so that its next pages do not write again.
    found.session.last_active_at = new Date();
    await touchWebSession(ctx.db, found.session.id);
  }
  return found;
}

/**
 * The session cookie's value in a raw `Cookie` header (for the streaming API's WebSocket handshake, which is outside
 * the pages' scope and its cookie parser), or null.
 */
export function sessionCookieOf(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return value && value.length <= 100 ? value : null;
    }
  }
  return null;
}

/**
 * Who a session (by its token's hash) belongs to, when it still stands and its person may use the site: null for an
 * ended or expired session and for a suspended or disabled person (who may only see their strikes). `fresh`: read
 * from PostgreSQL, not the cache (to check a session again when something about its person changed).
 */
export async function activeSessionOf(ctx: AppContext, tokenHash: string, options: { fresh?: boolean } = {}): Promise<SignedIn | null> {
  const found = await sessionOfHash(ctx, tokenHash, options.fresh);
  return found && !found.restricted ? { session: found.session, user: found.user, account: found.account } : null;
}

/** Tells every process that a session ended: its cached copies go, and streams it opened close (http/streaming/routes.ts). */
async function announceEnded(ctx: AppContext, tokenHash: string): Promise<void> {
  ctx.sessions.drop(tokenHash);
  await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { sessionHash: tokenHash }).catch(() => {});
}

function cookieOptions(ctx: AppContext) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: ctx.config.publicUrl.startsWith('https:'),
  };
}

/**
 * Starts a session for a user who has just proved who they are: a new random token (never one the browser already
 * had, so a planted cookie is worth nothing), and a new form secret.
 */
export async function startWebSession(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, user: UserRow): Promise<void> {
  const old = request.cookies[SESSION_COOKIE];
  if (old) {
    await deleteWebSession(ctx.db, hashSecret(old));
    await announceEnded(ctx, hashSecret(old));
  }
  const token = randomBytes(32).toString('base64url');
  await insertWebSession(ctx.db, { tokenHash: hashSecret(token), userId: user.id, ip: request.ip ?? null, userAgent: request.headers['user-agent'] ?? null });
  await recordSignIn(ctx.db, user.id, request.ip ?? null);
  reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions(ctx), maxAge: SESSION_IDLE_SECONDS });
  reply.clearCookie('_csrf', { path: '/' });
  cache.delete(request);
}

export async function endWebSession(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const raw = request.cookies[SESSION_COOKIE];
  if (raw) {
    await deleteWebSession(ctx.db, hashSecret(raw));
    await announceEnded(ctx, hashSecret(raw));
  }
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
  reply.clearCookie('_csrf', { path: '/' });
  cache.delete(request);
}

/**
 * Cookies, web sessions and CSRF protection for the pages (registered inside the pages' scope only: the API
 * never reads a cookie). Every POST of a page must carry the form's `_csrf` token, checked before validation, but
 * those of routes configured `signedLink: true`, which take a signed token of their own.
 */
declare module 'fastify' {
  interface FastifyContextConfig {
    /** A page route whose POST carries a signed token of its own (an unsubscribe link): no CSRF form token asked. */
    signedLink?: boolean;
  }
}

async function sessionPlugin(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  await app.register(cookie);
  await app.register(csrf, {
    sessionPlugin: '@fastify/cookie',
    cookieOpts: cookieOptions(ctx),
  });
  const anySession = (request: FastifyRequest) => {
    let found = cache.get(request);
    if (!found) {
      found = sessionOf(ctx, request);
      cache.set(request, found);
    }
    return found;
  };
  app.decorateRequest('signedInForDisputes', function signedInForDisputes(this: FastifyRequest) {
    return anySession(this);
  });
  // Everywhere else a restricted session counts as no session.
  app.decorateRequest('signedIn', async function signedIn(this: FastifyRequest) {
    const found = await anySession(this);
    return found && !found.restricted ? { session: found.session, user: found.user, account: found.account } : null;
  });
  app.addHook('preValidation', (request, reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD') return done();
    // A route whose form carries its own proof (a signed token in the link a mail gave) opts out: a mail client's
    // one-click unsubscribe (RFC 8058) has no cookie and no form token.
    if (request.routeOptions.config?.signedLink) return done();
    app.csrfProtection(request, reply, done);
  });
}

export default fp(sessionPlugin, { name: 'web-session' });
