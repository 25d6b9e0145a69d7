import type { AppContext } from '../context.ts';
import { findUserByEmail, type UserRow } from '../storage/users.ts';
import { hashSecret } from '../storage/oauth.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { verifyPassword } from './passwords.ts';
import { secondFactorMatches } from './two-factor.ts';

/** Failed attempts on one account before it refuses even the right password for a while (per IP is the route's limit). */
const MAX_FAILURES = 10;
const FAILURE_WINDOW_SECONDS = 15 * 60;

export type CredentialCheck =
  /** `restricted`: suspended or disabled, signed in only to read and appeal their strikes (see `disputesOnly`). */
  | { ok: true; user: UserRow; account: AccountRow; restricted: boolean }
  | { ok: false; error: string; status: 401 | 403 | 429 };

/**
 * Failures are counted by address, whether or not an account has it: a lock that only known addresses could reach
 * would tell which addresses have accounts here.
 */
const failuresKey = (ctx: AppContext, email: string) => `${ctx.config.redisPrefix}sign-in-failures:{${hashSecret(email.trim().toLowerCase())}}`;

async function tooManyFailuresOf(ctx: AppContext, email: string): Promise<boolean> {
  return Number(await ctx.redis.get(failuresKey(ctx, email))) >= MAX_FAILURES;
}

/** Whether this account is locked for now by failed attempts (a security key's second step checks it too). */
export const tooManyFailures = (ctx: AppContext, user: UserRow) => tooManyFailuresOf(ctx, user.email);
/** A failed second step by another means (a security key): counted as a wrong code is. */
export const countSecondFactorFailure = (ctx: AppContext, user: UserRow) => countFailure(ctx, user.email);

async function countFailure(ctx: AppContext, email: string): Promise<void> {
  const key = failuresKey(ctx, email);
  await ctx.redis.multi().incr(key).expire(key, FAILURE_WINDOW_SECONDS).exec();
}

export const TOO_MANY_ATTEMPTS = 'Too many failed sign-in attempts. Try again in a few minutes.';
const INVALID = 'Invalid e-mail address or password.';

/**
 * The first step of every sign-in (the sign-in page and the OAuth authorize page): the e-mail address and password,
 * then whether this login may be used at all. Unknown addresses cost the same time as known ones.
 */
export async function checkCredentials(ctx: AppContext, email: string, password: string): Promise<CredentialCheck> {
  if (email && (await tooManyFailuresOf(ctx, email))) return { ok: false, error: TOO_MANY_ATTEMPTS, status: 429 };
  const user = email ? await findUserByEmail(ctx.db, email) : null;
  if (!(await verifyPassword(user?.password_hash ?? null, password)) || !user) {
    if (email) await countFailure(ctx, email);
    return { ok: false, error: INVALID, status: 401 };
  }
  return accountCheck(ctx, user);
}

/**
 * Whether a person whose credentials were right (a password, a passkey) may be signed in: refused when blocked, let
 * in restricted to their strikes when suspended or disabled.
 */
export async function accountCheck(ctx: AppContext, user: UserRow): Promise<CredentialCheck> {
  const account = await findAccountById(ctx.db, user.account_id);
  const blocker = loginBlocker(user, account);
  if (account && blocker && disputesOnly(user, account)) return { ok: true, user, account, restricted: true };
  if (blocker || !account) return { ok: false, error: blocker ?? INVALID, status: 403 };
  return { ok: true, user, account, restricted: false };
}

/** The second step when two-factor sign-in is on; failures count against the same per-account limit. */
export async function checkSecondFactor(ctx: AppContext, user: UserRow, code: string): Promise<{ ok: true } | { ok: false; error: string; status: 401 | 429 }> {
  if (await tooManyFailuresOf(ctx, user.email)) return { ok: false, error: TOO_MANY_ATTEMPTS, status: 429 };
  if (await secondFactorMatches(ctx, user, code)) return { ok: true };
  await countFailure(ctx, user.email);
  return { ok: false, error: 'Invalid two-factor code or recovery code.', status: 401 };
}

/** After a successful sign-in, earlier failures no longer count. */
export async function clearFailures(ctx: AppContext, user: UserRow): Promise<void> {
  await ctx.redis.del(failuresKey(ctx, user.email));
}

/**
 * The current password, asked again by settings (e-mail and password changes, two-factor changes): failures count
 * against the same per-account limit as sign-in, so a borrowed session cannot be used to guess it.
 */
export async function checkCurrentPassword(ctx: AppContext, user: UserRow, password: string): Promise<string | null> {
  if (await tooManyFailuresOf(ctx, user.email)) return TOO_MANY_ATTEMPTS;
  if (await verifyPassword(user.password_hash, password)) return null;
  await countFailure(ctx, user.email);
  return 'The current password is wrong.';
}

/** Whether a user may be signed in at all: confirmed, approved, not disabled, account not suspended. */
export function loginBlocker(user: UserRow, account: AccountRow | null): string | null {
  if (!account || account.suspended_at) return 'Your account is suspended.';
  if (!user.confirmed_at) return 'You need to confirm your e-mail address before you can sign in. Check your mail for the link.';
  if (!user.approved) return 'Your account is waiting for approval by the operators.';
  if (user.disabled) return 'Your login is currently disabled.';
  return null;
}

/**
 * Whether a login that `loginBlocker` refuses may still sign in to read and appeal its strikes (and nothing else), as
 * Mastodon lets a suspended or disabled person reach /disputes: confirmed and approved, refused only for a suspension
 * or a disabled login, and not deleted.
 */
export function disputesOnly(user: UserRow, account: AccountRow | null): boolean {
  if (!account || account.deleted_at || !user.confirmed_at || !user.approved) return false;
  return account.suspended_at !== null || user.disabled;
}
