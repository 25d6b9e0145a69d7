import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.ts';
import type { OidcConfig } from '../config.ts';
import { findIdentity, insertIdentity } from '../storage/identities.ts';
import { findUserByEmail, findUserById, type UserRow } from '../storage/users.ts';
import { findAccountById, usernameTaken } from '../storage/accounts.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { ValidationFailed } from '../errors.ts';
import { registerLocalAccount, RESERVED_USERNAMES } from './accounts.ts';
import { alertOperatorsOfSignUp } from './operator-alerts.ts';
import { signUpIpPolicy } from './admin-blocks.ts';
import { loginBlocker } from './sign-in.ts';

/** The provider's name in user_identities, as Mastodon's omniauth strategy names it. */
export const OIDC_PROVIDER = 'openid_connect';
/** How long a browser may stay at the provider before its sign-in is void. */
export const PENDING_SECONDS = 600;

// openid-client (with oauth4webapi and jose) is loaded at the first single sign-on, not at start.
const oidcLibrary = () => import('openid-client');
type Library = Awaited<ReturnType<typeof oidcLibrary>>;
type Configuration = InstanceType<Library['Configuration']>;

/** The provider's configuration (discovered once per process, or built from the settings). */
const configurations = new WeakMap<OidcConfig, Promise<Configuration>>();

async function providerConfiguration(oidc: OidcConfig): Promise<Configuration> {
  let found = configurations.get(oidc);
  if (!found) {
    found = (async () => {
      const client = await oidcLibrary();
      // http only where config.ts allows it: on loopback.
      const execute = [client.enableNonRepudiationChecks, ...(new URL(oidc.issuer).protocol === 'http:' ? [client.allowInsecureRequests] : [])];
      const auth = client.ClientSecretBasic(oidc.clientSecret);
      if (oidc.discovery) return client.discovery(new URL(oidc.issuer), oidc.clientId, undefined, auth, { execute, timeout: 10 });
      const config = new client.Configuration({
        issuer: oidc.issuer,
        authorization_endpoint: oidc.endpoints!.authorization,
        token_endpoint: oidc.endpoints!.token,
        userinfo_endpoint: oidc.endpoints!.userinfo,
        jwks_uri: oidc.endpoints!.jwks,
      }, oidc.clientId, undefined, auth);
      config.timeout = 10;
      for (const fn of execute) fn(config);
      return config;
    })();
    configurations.set(oidc, found);
    // A provider that was away is asked again next time.
    found.catch(() => configurations.delete(oidc));
  }
  return found;
}

/** What the browser's sign-in waits for, kept in Redis under a token in its cookie; used once. */
export interface PendingSignIn {
  state: string;
  nonce: string;
  codeVerifier: string | null;
  returnTo: string;
  /** Set when a signed-in person links the provider to their account from settings. */
  linkUserId: string | null;
}

const pendingKey = (ctx: AppContext, token: string) => `${ctx.config.redisPrefix}oidc-pending:{${token}}`;

export class ProviderUnavailable extends Error {}

/** Starts a sign-in (or a link): where to send the browser, and the token its cookie keeps. */
export async function startOidcSignIn(ctx: AppContext, opts: { returnTo: string; linkUserId?: string | null }): Promise<{ url: string; token: string }> {
  const oidc = ctx.config.oidc!;
  const client = await oidcLibrary();
  const config = await providerConfiguration(oidc).catch((err: Error) => { throw new ProviderUnavailable(err.message); });
  const pending: PendingSignIn = {
    state: client.randomState(),
    nonce: client.randomNonce(),
    codeVerifier: oidc.usePkce ? client.randomPKCECodeVerifier() : null,
    returnTo: opts.returnTo,
    linkUserId: opts.linkUserId ?? null,
  };
  const params: Record<string, string> = {
    redirect_uri: oidc.redirectUri, scope: oidc.scope.join(' '), state: pending.state, nonce: pending.nonce,
  };
  if (pending.codeVerifier) {
    params.code_challenge = await client.calculatePKCECodeChallenge(pending.codeVerifier);
    params.code_challenge_method = 'S256';
  }
  const token = randomBytes(32).toString('base64url');
  await ctx.redis.set(pendingKey(ctx, token), JSON.stringify(pending), 'EX', PENDING_SECONDS);
  return { url: client.buildAuthorizationUrl(config, params).toString(), token };
}

/** The waiting sign-in of a browser's token, taken (a callback can use it once, right or wrong). */
export async function takePendingSignIn(ctx: AppContext, token: string | undefined): Promise<PendingSignIn | null> {
  if (!token || token.length > 100) return null;
  const raw = await ctx.redis.getdel(pendingKey(ctx, token));
  return raw ? (JSON.parse(raw) as PendingSignIn) : null;
}

export type OidcOutcome =
  | { ok: true; user: UserRow; created: boolean; linked: boolean }
  | { ok: false; status: 400 | 403 | 409 | 422 | 502; error: string };

const refuse = (status: 400 | 403 | 409 | 422 | 502, error: string) => ({ ok: false as const, status, error });

type Claims = Record<string, unknown>;

/**
 * The provider's answer checked by openid-client: the `state`, the `iss`, the code exchanged (with the PKCE
 * verifier), the ID token's signature, issuer, audience, expiry and `nonce`; then the userinfo's claims for the same
 * `sub` where the provider has that endpoint.
 */
async function verifiedClaims(ctx: AppContext, callbackUrl: URL, pending: PendingSignIn): Promise<{ ok: true; claims: Claims } | Extract<OidcOutcome, { ok: false }>> {
  const client = await oidcLibrary();
  let config: Configuration;
  try {
    config = await providerConfiguration(ctx.config.oidc!);
  } catch {
    return refuse(502, `${ctx.config.oidc!.displayName} could not be reached. Try again in a few minutes.`);
  }
  try {
    const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      pkceCodeVerifier: pending.codeVerifier ?? undefined,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims()!;
    const userinfo = config.serverMetadata().userinfo_endpoint
      ? await client.fetchUserInfo(config, tokens.access_token, idClaims.sub)
      : {};
    return { ok: true, claims: { ...userinfo, ...idClaims } };
  } catch (err) {
    if (err instanceof client.AuthorizationResponseError) {
      return refuse(400, err.error === 'access_denied' ? 'The sign-in was cancelled.' : `${ctx.config.oidc!.displayName} refused the sign-in (${err.error}).`);
    }
    if (err instanceof client.ResponseBodyError) return refuse(400, `${ctx.config.oidc!.displayName} refused the sign-in (${err.error}). Start again.`);
    const e = err as { code?: string; message?: string };
    if (e.code && e.code.startsWith('OAUTH_')) return refuse(400, `The answer from ${ctx.config.oidc!.displayName} could not be verified (${whyUnverified(err)}). Nobody was signed in: start again.`);
    return refuse(502, `${ctx.config.oidc!.displayName} could not be reached. Try again in a few minutes.`);
  }
}

/** openid-client's reason for refusing an answer, in words a person can act on. */
function whyUnverified(err: unknown): string {
  const e = err as { message?: string; cause?: { message?: string } };
  const detail = `${e.message ?? ''} ${typeof e.cause?.message === 'string' ? e.cause.message : ''}`;
  if (/"exp"/.test(detail)) return 'its ID token has expired';
  if (/"iat"|"nbf"/.test(detail)) return 'its ID token is dated in the future; check the clocks';
  if (/signature verification failed/i.test(detail)) return 'its ID token is not signed with the provider\'s key';
  return e.message ?? 'unknown reason';
}

const claimString = (v: unknown) => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null);

/** Mastodon's ensure_valid_username: the part before any @, letters, digits and underscores, 30 at most. */
function validUsername(raw: string): string {
  return raw.split('@')[0]!.replace(/[^a-z0-9_]+/gi, '').slice(0, 30);
}

/** Mastodon's ensure_unique_username: name, name_1, name_2… (bounded; a reserved name counts as taken). */
async function uniqueUsername(ctx: AppContext, start: string): Promise<string | null> {
  const base = start || 'user';
  for (let i = 0; i < 50; i++) {
    const suffix = i === 0 ? '' : `_${i}`;
    const name = `${base.slice(0, 30 - suffix.length)}${suffix}`;
    if (!RESERVED_USERNAMES.has(name.toLowerCase()) && !(await usernameTaken(ctx.db, name))) return name;
  }
  return null;
}

async function signInAs(ctx: AppContext, user: UserRow | null, extra: { created?: boolean; linked?: boolean } = {}): Promise<OidcOutcome> {
  const account = user ? await findAccountById(ctx.db, user.account_id) : null;
  const blocker = user ? loginBlocker(user, account) : 'This account no longer exists.';
  if (blocker || !user) return refuse(403, blocker ?? 'This account no longer exists.');
  return { ok: true, user, created: extra.created ?? false, linked: extra.linked ?? false };
}

/**
 * The provider's callback, as Mastodon's find_for_omniauth: the identity's user; or, linking from settings, the
 * signed-in person; or (OIDC_LINK_EXISTING) the account with the same confirmed address; or a new account. An
 * address counts only when the provider says it is verified (or OIDC_SECURITY_ASSUME_EMAIL_IS_VERIFIED). Everything
 * refused is refused before anything is written.
 */
export async function finishOidcSignIn(ctx: AppContext, callbackUrl: URL, pending: PendingSignIn, ip: string | null | undefined): Promise<OidcOutcome> {
  const oidc = ctx.config.oidc!;
  const verified = await verifiedClaims(ctx, callbackUrl, pending);
  if (!verified.ok) return verified;
  const c = verified.claims;
  const uid = claimString(c[oidc.uidField]);
  if (!uid || uid.length > 1000) return refuse(400, `${oidc.displayName} did not say who you are (no "${oidc.uidField}" claim).`);
  const identity = await findIdentity(ctx.db, OIDC_PROVIDER, uid);

  if (pending.linkUserId) {
    if (identity && identity.user_id !== pending.linkUserId) return refuse(409, `That ${oidc.displayName} login is already linked to another account here.`);
    if (!identity && !(await insertIdentity(ctx.db, { provider: OIDC_PROVIDER, uid, userId: pending.linkUserId }))) {
      return refuse(409, `Your account is already linked to another ${oidc.displayName} login. Unlink it first.`);
    }
    return signInAs(ctx, await findUserById(ctx.db, pending.linkUserId), { linked: true });
  }
  if (identity) return signInAs(ctx, await findUserById(ctx.db, identity.user_id));

  const email = claimString(c.email);
  const emailVerified = c.email_verified === true || c.email_verified === 'true' || oidc.assumeEmailIsVerified;
  const existing = email ? await findUserByEmail(ctx.db, email) : null;
  if (existing) {
    if (!oidc.linkExisting || !emailVerified || !existing.confirmed_at) {
      return refuse(409, `An account here already uses ${email}. Sign in with its password, then link ${oidc.displayName} in your account settings.`);
    }
    if (!(await insertIdentity(ctx.db, { provider: OIDC_PROVIDER, uid, userId: existing.id }))) {
      return refuse(409, `That account is already linked to another ${oidc.displayName} login.`);
    }
    return signInAs(ctx, existing, { linked: true });
  }
  if (!oidc.createAccounts) return refuse(403, `No account here is linked to your ${oidc.displayName} login. Sign in with your password and link it in your account settings.`);
  if (!email || !emailVerified) return refuse(403, `${oidc.displayName} did not give a confirmed e-mail address for you, so no account can be made here. Confirm your address there and try again.`);
  if ((await signUpIpPolicy(ctx.db, ip)) === 'block') return refuse(403, 'Sign-ups from your network are not allowed here.');

  const username = await uniqueUsername(ctx, validUsername(claimString(c.preferred_username) ?? uid));
  if (!username) return refuse(409, 'No free username could be found for you. Ask the operators.');
  const queued: OutboxRow[] = [];
  try {
    const { user } = await registerLocalAccount(ctx.db, {
      username,
      email,
      // Nobody knows it: the provider vouches for this person. A password reset gives them one if they want it.
      password: randomBytes(24).toString('base64url'),
      agreement: true,
      approved: true,
      confirmed: true,
      displayName: claimString(c.name)?.slice(0, 30) ?? '',
      emailBlocks: { db: ctx.db, redis: ctx.redis, redisPrefix: ctx.config.redisPrefix, ip },
    }, async (tx, created) => {
      if (!(await insertIdentity(tx, { provider: OIDC_PROVIDER, uid, userId: created.user.id }))) throw new IdentityTaken();
      queued.push(...(await alertOperatorsOfSignUp(tx, ctx, { userId: created.user.id, accountId: created.account.id })));
    });
    await ctx.jobs.enqueueMany(queued).catch(() => {});
    return signInAs(ctx, user, { created: true });
  } catch (err) {
    // Two first sign-ins of one person at once: the other made the account, and this one signs into it.
    if (err instanceof IdentityTaken) {
      const found = await findIdentity(ctx.db, OIDC_PROVIDER, uid);
      return found ? signInAs(ctx, await findUserById(ctx.db, found.user_id)) : refuse(409, 'Try again.');
    }
    if (err instanceof ValidationFailed) return refuse(422, `No account could be made for you here: ${err.message.replace(/^Validation failed: /, '')}.`);
    throw err;
  }
}

class IdentityTaken extends Error {}
