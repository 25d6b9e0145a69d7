import type { AppContext } from '../context.ts';
import { transaction } from '../storage/db.ts';
import { hashSecret, revokeUserGrants, revokeUserTokens } from '../storage/oauth.ts';
import { confirmEmail, emailTaken, findUserByEmail, setPasswordHash, setUnconfirmedEmail, takeMailToken, type UserRow } from '../storage/users.ts';
import { deleteUserWebSessions } from '../storage/web-sessions.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { hashPassword, PASSWORD_LENGTH } from './passwords.ts';
import { checkCurrentPassword } from './sign-in.ts';
import { alertOperatorsOfSignUp } from './operator-alerts.ts';
import { publishTokenInvalidation } from './token-cache.ts';
import { CONFIRMATION_TOKEN_TTL_SECONDS, RESET_PASSWORD_TOKEN_TTL_SECONDS, queueMail, resendConfirmationMail } from './mail.ts';
import { EMAIL_FORMAT } from './accounts.ts';
import { emailBlockErrors } from './admin-blocks.ts';


/** Mastodon's password rule (Devise): 8 to 72 characters. */
export function passwordProblem(password: string, confirmation?: string): string | null {
  if (password.length < PASSWORD_LENGTH.min) return `The password is too short (minimum is ${PASSWORD_LENGTH.min} characters).`;
  if (password.length > PASSWORD_LENGTH.max) return `The password is too long (maximum is ${PASSWORD_LENGTH.max} characters).`;
  if (confirmation !== undefined && confirmation !== password) return 'The two passwords do not match.';
  return null;
}

async function enqueue(ctx: AppContext, rows: OutboxRow[]) {
  // After the commit; if this fails or the process dies first, the outbox sweeper queues them.
  await ctx.jobs.enqueueMany(rows).catch(() => {});
}

/** Mail asked for by strangers (resets, new confirmation links): at most this many per address in half an hour. */
const MAIL_REQUESTS_PER_ADDRESS = 5;

/**
 * Whether another mail may go to this address now. Counted per address, so asking from many addresses cannot fill
 * someone's inbox (or keep voiding their latest link); past the limit the form answers the same and sends nothing.
 */
async function mailAllowed(ctx: AppContext, kind: string, email: string): Promise<boolean> {
  const key = `${ctx.config.redisPrefix}mail-requests:{${hashSecret(`${kind}:${email.trim().toLowerCase()}`)}}`;
  // The window starts with the first request (SET NX with its expiry), then each one counts.
  const results = await ctx.redis.multi().set(key, '0', 'EX', 1800, 'NX').incr(key).exec();
  const count = Number(results?.[1]?.[1]);
  return count <= MAIL_REQUESTS_PER_ADDRESS;
}

/** Signs a user out of every browser and every app, in this process at once and in the others over pub/sub. */
export async function signOutEverywhere(ctx: AppContext, userId: string): Promise<void> {
  await deleteUserWebSessions(ctx.db, userId);
  await revokeUserGrants(ctx.db, userId);
  await revokeUserTokens(ctx.db, userId);
  ctx.tokens.forget(`user:${userId}`);
  await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { userId });
}

/**
 * Sends a reset link if the address belongs to someone; the caller answers the same either way, so the form does
 * not tell who has an account here.
 */
export async function requestPasswordReset(ctx: AppContext, email: string): Promise<void> {
  const user = email ? await findUserByEmail(ctx.db, email.trim()) : null;
  if (!user || user.disabled || !ctx.config.smtp || !(await mailAllowed(ctx, 'reset', user.email))) return;
  const row = await transaction(ctx.db, (tx) => queueMail(tx, { type: 'reset_password', userId: user.id }));
  await enqueue(ctx, [row]);
}

/** Sets a new password with a mailed token (once, within the hour), then signs the person out everywhere. */
export async function resetPassword(ctx: AppContext, token: string, password: string, confirmation: string): Promise<{ ok: true; user: UserRow } | { ok: false; error: string; tokenBad?: boolean }> {
  const problem = passwordProblem(password, confirmation);
  if (problem) return { ok: false, error: problem };
  const hash = await hashPassword(password);
  const user = await transaction(ctx.db, async (tx) => {
    const found = await takeMailToken(tx, 'reset_password', hashSecret(token), RESET_PASSWORD_TOKEN_TTL_SECONDS);
    if (found) await setPasswordHash(tx, found.id, hash);
    return found;
  });
  if (!user) return { ok: false, error: 'This password reset link is invalid or has expired. Ask for a new one.', tokenBad: true };
  await signOutEverywhere(ctx, user.id);
  return { ok: true, user };
}

/** Confirms an address with a mailed token (once); a changed address replaces the old one here. */
export async function confirmAddress(ctx: AppContext, token: string): Promise<{ user: UserRow } | { taken: true } | null> {
  let outcome: { user: UserRow; queued: OutboxRow[] } | null;
  try {
    outcome = await transaction(ctx.db, async (tx) => {
      const found = await takeMailToken(tx, 'confirmation', hashSecret(token), CONFIRMATION_TOKEN_TTL_SECONDS);
      if (!found) return null;
      await confirmEmail(tx, found.id);
      // A sign-up that waited for its address: only now do the operators hear of it (bots with made-up addresses
      // never reach them), as in Mastodon.
      const queued = found.confirmed_at ? [] : await alertOperatorsOfSignUp(tx, ctx, { userId: found.id, accountId: found.account_id });
      return { user: found, queued };
    });
  } catch (err) {
    // The new address was taken by someone else while it waited: nothing changed (the link still works, and fails the same).
    if ((err as { code?: string; constraint?: string }).code === '23505') return { taken: true };
    throw err;
  }
  if (!outcome) return null;
  await enqueue(ctx, outcome.queued);
  // Tokens cached as unconfirmed (refused) are read again, here and in every other process.
  ctx.tokens.forget(`user:${outcome.user.id}`);
  await publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, { userId: outcome.user.id });
  return { user: outcome.user };
}

/**
 * Sends the confirmation mail again to whoever asks with an unconfirmed address (the page for a lost or expired
 * link); the caller answers the same whether or not the address is known.
 */
export async function resendConfirmationTo(ctx: AppContext, email: string): Promise<void> {
  const user = email ? await findUserByEmail(ctx.db, email.trim()) : null;
  if (!user || (user.confirmed_at && !user.unconfirmed_email) || !ctx.config.smtp || !(await mailAllowed(ctx, 'confirmation', user.email))) return;
  await resendConfirmationMail(ctx, user.id);
}

/** Changes the password with the current one; every other browser and app is signed out. */
export async function changePassword(ctx: AppContext, user: UserRow, current: string, password: string, confirmation: string): Promise<string | null> {
  const wrong = await checkCurrentPassword(ctx, user, current);
  if (wrong) return wrong;
  const problem = passwordProblem(password, confirmation);
  if (problem) return problem;
  await setPasswordHash(ctx.db, user.id, await hashPassword(password));
  await signOutEverywhere(ctx, user.id);
  return null;
}

/**
 * Changes the e-mail address (with the password). With mail on, the new address waits until it is confirmed from a
 * link sent to it, and the old one is told; with mail off it changes at once.
 */
export async function changeEmail(ctx: AppContext, user: UserRow, newEmail: string, password: string): Promise<string | null> {
  const email = newEmail.trim();
  const wrong = await checkCurrentPassword(ctx, user, password);
  if (wrong) return wrong;
  if (!EMAIL_FORMAT.test(email) || email.length > 254) return 'That e-mail address is invalid.';
  if (email.toLowerCase() === user.email.toLowerCase()) return 'That is already your address.';
  if (await emailTaken(ctx.db, email)) return 'That e-mail address is already taken.';
  // The operator's e-mail blocks, as for a sign-up (a blocked canonical address reads as taken, as in Mastodon).
  const blocked = await emailBlockErrors({ db: ctx.db, redis: ctx.redis, redisPrefix: ctx.config.redisPrefix }, email);
  if (blocked.length) return blocked[0]!.error === 'ERR_BLOCKED' ? 'That e-mail address uses a disallowed e-mail provider.' : 'That e-mail address is already taken.';
  if (!ctx.config.smtp) {
    await transaction(ctx.db, async (tx) => {
      await setUnconfirmedEmail(tx, user.id, email);
      await confirmEmail(tx, user.id);
    });
    return null;
  }
  const rows = await transaction(ctx.db, async (tx) => {
    await setUnconfirmedEmail(tx, user.id, email);
    return [
      await queueMail(tx, { type: 'confirmation', userId: user.id }),
      await queueMail(tx, { type: 'email_changed', userId: user.id, newEmail: email, oldEmail: user.email }),
    ];
  });
  await enqueue(ctx, rows);
  return null;
}
