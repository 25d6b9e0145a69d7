import type { AppContext } from '../context.ts';
import { randomBytes } from 'node:crypto';
import { findUserById, type UserRow } from '../storage/users.ts';
import {
  countWebauthnCredentials, findPasskey, insertWebauthnCredential, MAX_KEYS_PER_USER, useWebauthnCredential, userWebauthnCredentials,
  type WebauthnCredentialRow,
} from '../storage/webauthn-credentials.ts';

// @simplewebauthn/server (with its CBOR and COSE helpers) is loaded at the first use of a security key, not at start.
const library = () => import('@simplewebauthn/server');
/** How long the browser may take to talk to the key. */
const CHALLENGE_SECONDS = 300;

/** The relying party: our host name (WebAuthn's RP ID has no port) and our origin. */
function relyingParty(ctx: AppContext) {
  return { rpID: new URL(ctx.config.publicUrl).hostname, origin: ctx.config.publicUrl };
}

const registrationKey = (ctx: AppContext, userId: string) => `${ctx.config.redisPrefix}webauthn-register:{${userId}}`;
const signInKey = (ctx: AppContext, pendingToken: string) => `${ctx.config.redisPrefix}webauthn-sign-in:{${pendingToken}}`;
const passkeyRegistrationKey = (ctx: AppContext, userId: string) => `${ctx.config.redisPrefix}passkey-register:{${userId}}`;
const passkeySignInKey = (ctx: AppContext, token: string) => `${ctx.config.redisPrefix}passkey-sign-in:{${token}}`;

/** The security keys of a user (second factors), not their passkeys. */
async function securityKeysOf(ctx: AppContext, userId: string) {
  return (await userWebauthnCredentials(ctx.db, userId)).filter((c) => !c.passkey);
}

/** What the browser passes to navigator.credentials.create(): a new challenge, and the keys it has already (not twice). */
export async function registrationOptions(ctx: AppContext, user: UserRow, username: string) {
  const { generateRegistrationOptions } = await library();
  const { rpID } = relyingParty(ctx);
  const options = await generateRegistrationOptions({
    rpName: ctx.config.instanceTitle,
    rpID,
    userName: `${username}@${ctx.config.localDomain}`,
    userID: new TextEncoder().encode(user.id),
    attestationType: 'none',
    excludeCredentials: (await userWebauthnCredentials(ctx.db, user.id)).map((c) => ({ id: c.credential_id, transports: c.transports as never })),
    authenticatorSelection: { residentKey: 'discouraged', userVerification: 'discouraged' },
  });
  await ctx.redis.set(registrationKey(ctx, user.id), options.challenge, 'EX', CHALLENGE_SECONDS);
  return options;
}

/** Checks the key's answer to the challenge we gave and keeps the key under its name; the error to show otherwise. */
export async function addSecurityKey(ctx: AppContext, user: UserRow, nickname: string, response: unknown): Promise<string | null> {
  const name = nickname.trim();
  if (name === '' || name.length > 100) return 'Give the key a name (100 characters at most).';
  if (!user.otp_enabled_at) return 'Turn on two-factor authentication with an app first.';
  if ((await countWebauthnCredentials(ctx.db, user.id)) >= MAX_KEYS_PER_USER) return `You have ${MAX_KEYS_PER_USER} keys already; remove one first.`;
  const challenge = await ctx.redis.getdel(registrationKey(ctx, user.id));
  if (!challenge) return 'That took too long. Try again.';
  const { verifyRegistrationResponse } = await library();
  const { rpID, origin } = relyingParty(ctx);
  let verified;
  try {
    verified = await verifyRegistrationResponse({ response: response as never, expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID, requireUserVerification: false });
  } catch (err) {
    return `The key's answer was not right: ${(err as Error).message}`;
  }
  if (!verified.verified) return 'The key\'s answer was not right.';
  const { credential } = verified.registrationInfo;
  const added = await insertWebauthnCredential(ctx.db, {
    userId: user.id, credentialId: credential.id, publicKey: credential.publicKey, signCount: credential.counter,
    transports: credential.transports ?? [], nickname: name,
  });
  return added ? null : 'That key, or a key with that name, is already added.';
}

/** Whether this user signs in with a security key as one of their second factors. */
export async function hasSecurityKeys(ctx: AppContext, user: UserRow): Promise<boolean> {
  return user.otp_enabled_at !== null && (await securityKeysOf(ctx, user.id)).length > 0;
}

/** What the browser passes to navigator.credentials.get() in the second step of a sign-in. */
export async function authenticationOptions(ctx: AppContext, user: UserRow, pendingToken: string) {
  const { generateAuthenticationOptions } = await library();
  const options = await generateAuthenticationOptions({
    rpID: relyingParty(ctx).rpID,
    allowCredentials: (await securityKeysOf(ctx, user.id)).map((c) => ({ id: c.credential_id, transports: c.transports as never })),
    userVerification: 'discouraged',
  });
  await ctx.redis.set(signInKey(ctx, pendingToken), options.challenge, 'EX', CHALLENGE_SECONDS);
  return options;
}

/**
 * Why a key's answer was refused. `counter`: the signature was the key's own, but its signature counter did not move
 * on past the one we stored: a copy of the key that has signed less than the original (a cloned key), or an answer
 * racing another. The others: no challenge of ours is waiting (none asked, used, expired), the credential is none of
 * this person's, or the answer does not verify (signature, challenge, origin, RP ID, user verification).
 */
export type KeyRefusal =
  | { reason: 'no-challenge' | 'unknown-key' | 'not-verified'; userId: string | null }
  | { reason: 'counter'; userId: string; credentialId: string; stored: number; reported: number };
export type KeyCheck<T> = { ok: true; value: T } | ({ ok: false } & KeyRefusal);

/** WebAuthn's rule for the counter (§6.1.1): when either is not 0, the new one must be greater than the stored one. */
const counterMovedOn = (stored: number, reported: number) => (stored === 0 && reported === 0) || reported > stored;

/**
 * Verifies an answer against one stored credential, and records the use. The library checks everything but the
 * counter (it is given 0 for the stored one, so that it never refuses on that ground); the counter is checked here,
 * after the signature verified, so that a refusal on that ground means the key material itself answered. The stored
 * counter moves only forward, in one conditional UPDATE (useWebauthnCredential), so two answers racing cannot both pass.
 */
async function verifyUse(ctx: AppContext, key: WebauthnCredentialRow, challenge: string, response: unknown, requireUserVerification: boolean): Promise<KeyCheck<null>> {
  const { verifyAuthenticationResponse } = await library();
  const { rpID, origin } = relyingParty(ctx);
  let reported: number;
  try {
    const result = await verifyAuthenticationResponse({
      response: response as never, expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID, requireUserVerification,
      credential: { id: key.credential_id, publicKey: new Uint8Array(key.public_key), counter: 0, transports: key.transports as never },
    });
    if (!result.verified) return { ok: false, reason: 'not-verified', userId: key.user_id };
    reported = result.authenticationInfo.newCounter;
  } catch {
    return { ok: false, reason: 'not-verified', userId: key.user_id };
  }
  const stored = Number(key.sign_count);
  if (!counterMovedOn(stored, reported) || !(await useWebauthnCredential(ctx.db, key.id, reported))) {
    return { ok: false, reason: 'counter', userId: key.user_id, credentialId: key.id, stored, reported };
  }
  return { ok: true, value: null };
}

/**
 * Checks a key's answer in the second step of a sign-in: one of this user's keys, signing our challenge (used once)
 * for our origin, with a counter that moved on (a cloned key's would not).
 */
export async function checkSecurityKey(ctx: AppContext, user: UserRow, pendingToken: string, response: unknown): Promise<KeyCheck<null>> {
  const challenge = await ctx.redis.getdel(signInKey(ctx, pendingToken));
  const id = (response as { id?: unknown } | null)?.id;
  if (!challenge || typeof id !== 'string' || !user.otp_enabled_at) return { ok: false, reason: 'no-challenge', userId: user.id };
  const key = (await securityKeysOf(ctx, user.id)).find((c) => c.credential_id === id);
  if (!key) return { ok: false, reason: 'unknown-key', userId: user.id };
  return verifyUse(ctx, key, challenge, response, false);
}

/**
 * What the browser passes to navigator.credentials.create() for a passkey: a credential the authenticator keeps
 * (discoverable, "resident"), with user verification (a PIN, a fingerprint), so that it alone signs this person in.
 */
export async function passkeyRegistrationOptions(ctx: AppContext, user: UserRow, username: string) {
  const { generateRegistrationOptions } = await library();
  const options = await generateRegistrationOptions({
    rpName: ctx.config.instanceTitle,
    rpID: relyingParty(ctx).rpID,
    userName: `${username}@${ctx.config.localDomain}`,
    userID: new TextEncoder().encode(user.id),
    attestationType: 'none',
    excludeCredentials: (await userWebauthnCredentials(ctx.db, user.id)).map((c) => ({ id: c.credential_id, transports: c.transports as never })),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
  });
  await ctx.redis.set(passkeyRegistrationKey(ctx, user.id), options.challenge, 'EX', CHALLENGE_SECONDS);
  return options;
}

/** Checks the authenticator's answer and keeps the passkey under its name; the error to show otherwise. */
export async function addPasskey(ctx: AppContext, user: UserRow, nickname: string, response: unknown): Promise<string | null> {
  const name = nickname.trim();
  if (name === '' || name.length > 100) return 'Give the passkey a name (100 characters at most).';
  if ((await countWebauthnCredentials(ctx.db, user.id)) >= MAX_KEYS_PER_USER) return `You have ${MAX_KEYS_PER_USER} keys and passkeys already; remove one first.`;
  const challenge = await ctx.redis.getdel(passkeyRegistrationKey(ctx, user.id));
  if (!challenge) return 'That took too long. Try again.';
  const { verifyRegistrationResponse } = await library();
  const { rpID, origin } = relyingParty(ctx);
  let verified;
  try {
    verified = await verifyRegistrationResponse({ response: response as never, expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID, requireUserVerification: true });
  } catch (err) {
    return `The passkey's answer was not right: ${(err as Error).message}`;
  }
  if (!verified.verified) return 'The passkey\'s answer was not right.';
  const { credential } = verified.registrationInfo;
  // A credential the authenticator does not keep could not be found without a name: it would never sign in.
  const residentKey = (response as { clientExtensionResults?: { credProps?: { rk?: boolean } } }).clientExtensionResults?.credProps?.rk;
  if (residentKey === false) return 'This authenticator cannot keep a passkey. Add it as a security key instead.';
  const added = await insertWebauthnCredential(ctx.db, {
    userId: user.id, credentialId: credential.id, publicKey: credential.publicKey, signCount: credential.counter,
    transports: credential.transports ?? [], nickname: name, passkey: true,
  });
  return added ? null : 'That passkey, or one with that name, is already added.';
}

/**
 * The first step of signing in with a passkey, before anyone says who they are: a challenge for any passkey of this
 * server (no list of credentials), kept under a token for the browser's cookie.
 */
export async function passkeySignInOptions(ctx: AppContext): Promise<{ options: unknown; token: string }> {
  const { generateAuthenticationOptions } = await library();
  const options = await generateAuthenticationOptions({ rpID: relyingParty(ctx).rpID, userVerification: 'required' });
  const token = randomBytes(32).toString('base64url');
  await ctx.redis.set(passkeySignInKey(ctx, token), options.challenge, 'EX', CHALLENGE_SECONDS);
  return { options, token };
}

/**
 * Whose passkey answered: the credential it names, for the user its handle names, signing our challenge (used once)
 * for our origin with the person verified, its counter moved on. Refused otherwise, with the passkey's owner when the
 * credential was one of ours.
 */
export async function checkPasskey(ctx: AppContext, token: string | undefined, response: unknown): Promise<KeyCheck<UserRow>> {
  if (!token || token.length > 100) return { ok: false, reason: 'no-challenge', userId: null };
  const challenge = await ctx.redis.getdel(passkeySignInKey(ctx, token));
  const r = response as { id?: unknown; response?: { userHandle?: unknown } } | null;
  if (!challenge) return { ok: false, reason: 'no-challenge', userId: null };
  if (typeof r?.id !== 'string' || r.id.length > 1000) return { ok: false, reason: 'unknown-key', userId: null };
  const key = await findPasskey(ctx.db, r.id);
  if (!key) return { ok: false, reason: 'unknown-key', userId: null };
  // The handle the authenticator kept is the user id it was made for: it must be this credential's owner.
  const handle = typeof r.response?.userHandle === 'string' ? Buffer.from(r.response.userHandle, 'base64url').toString('utf8') : null;
  if (handle !== key.user_id) return { ok: false, reason: 'not-verified', userId: key.user_id };
  const used = await verifyUse(ctx, key, challenge, response, true);
  if (!used.ok) return used;
  const user = await findUserById(ctx.db, key.user_id);
  return user ? { ok: true, value: user } : { ok: false, reason: 'unknown-key', userId: null };
}
