import type { AppContext } from '../context.ts';
import type { UserRow } from '../storage/users.ts';
import {
  countWebauthnCredentials, insertWebauthnCredential, MAX_KEYS_PER_USER, useWebauthnCredential, userWebauthnCredentials,
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
  return user.otp_enabled_at !== null && (await countWebauthnCredentials(ctx.db, user.id)) > 0;
}

/** What the browser passes to navigator.credentials.get() in the second step of a sign-in. */
export async function authenticationOptions(ctx: AppContext, user: UserRow, pendingToken: string) {
  const { generateAuthenticationOptions } = await library();
  const options = await generateAuthenticationOptions({
    rpID: relyingParty(ctx).rpID,
    allowCredentials: (await userWebauthnCredentials(ctx.db, user.id)).map((c) => ({ id: c.credential_id, transports: c.transports as never })),
    userVerification: 'discouraged',
  });
  await ctx.redis.set(signInKey(ctx, pendingToken), options.challenge, 'EX', CHALLENGE_SECONDS);
  return options;
}

/**
 * Checks a key's answer in the second step of a sign-in: one of this user's keys, signing our challenge (used once)
 * for our origin, with a counter that moved on (a cloned key's would not).
 */
export async function securityKeyMatches(ctx: AppContext, user: UserRow, pendingToken: string, response: unknown): Promise<boolean> {
  const challenge = await ctx.redis.getdel(signInKey(ctx, pendingToken));
  const id = (response as { id?: unknown } | null)?.id;
  if (!challenge || typeof id !== 'string' || !user.otp_enabled_at) return false;
  const key = (await userWebauthnCredentials(ctx.db, user.id)).find((c) => c.credential_id === id);
  if (!key) return false;
  const { verifyAuthenticationResponse } = await library();
  const { rpID, origin } = relyingParty(ctx);
  try {
    const result = await verifyAuthenticationResponse({
      response: response as never, expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID, requireUserVerification: false,
      credential: { id: key.credential_id, publicKey: new Uint8Array(key.public_key), counter: Number(key.sign_count), transports: key.transports as never },
    });
    return result.verified && (await useWebauthnCredential(ctx.db, key.id, result.authenticationInfo.newCounter));
  } catch {
    return false;
  }
}
