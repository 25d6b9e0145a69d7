import type { AppContext } from '../context.ts';
import { findUserByEmail, type UserRow } from '../storage/users.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { verifyPassword } from './passwords.ts';
import { secondFactorMatches } from './two-factor.ts';

/** Failed attempts on one account before it refuses even the right password for a while (per IP is the route's limit). */
const MAX_FAILURES = 10;
const FAILURE_WINDOW_SECONDS = 15 * 60;

export type CredentialCheck =
  | { ok: true; user: UserRow; account: AccountRow }
  | { ok: false; error: string; status: 401 | 403 | 429 };

const failuresKey = (ctx: AppContext, userId: string) => `${ctx.config.redisPrefix}sign-in-failures:{${userId}}`;

async function tooManyFailures(ctx: AppContext, userId: string): Promise<boolean> {
  return Number(await ctx.redis.get(failuresKey(ctx, userId))) >= MAX_FAILURES;
}

async function countFailure(ctx: AppContext, userId: string): Promise<void> {
  await ctx.redis.multi().incr(failuresKey(ctx, userId)).expire(failuresKey(ctx, userId), FAILURE_WINDOW_SECONDS).exec();
}

export const TOO_MANY_ATTEMPTS = 'Too many failed sign-in attempts. Try again in a few minutes.';
const INVALID = 'Invalid e-mail address or password.';

/**
 * The first step of every sign-in (the sign-in page and the OAuth authorize page): the e-mail address and password,
 * then whether this login may be used at all. Unknown addresses cost the same time as known ones.
 */
export async function checkCredentials(ctx: AppContext, email: string, password: string): Promise<CredentialCheck> {
  const user = email ? await findUserByEmail(ctx.db, email) : null;
  if (user && (await tooManyFailures(ctx, user.id))) return { ok: false, error: TOO_MANY_ATTEMPTS, status: 429 };
  if (!(await verifyPassword(user?.password_hash ?? null, password)) || !user) {
    if (user) await countFailure(ctx, user.id);
    return { ok: false, error: INVALID, status: 401 };
  }
  const account = await findAccountById(ctx.db, user.account_id);
  const blocker = loginBlocker(user, account);
  if (blocker || !account) return { ok: false, error: blocker ?? INVALID, status: 403 };
  return { ok: true, user, account };
}

/** The second step when two-factor sign-in is on; failures count against the same per-account limit. */
export async function checkSecondFactor(ctx: AppContext, user: UserRow, code: string): Promise<{ ok: true } | { ok: false; error: string; status: 401 | 429 }> {
  if (await tooManyFailures(ctx, user.id)) return { ok: false, error: TOO_MANY_ATTEMPTS, status: 429 };
  if (await secondFactorMatches(ctx.db, user, code)) return { ok: true };
  await countFailure(ctx, user.id);
  return { ok: false, error: 'Invalid two-factor code or recovery code.', status: 401 };
}

/** After a successful sign-in, earlier failures no longer count. */
export async function clearFailures(ctx: AppContext, userId: string): Promise<void> {
  await ctx.redis.del(failuresKey(ctx, userId));
}

/** Whether a user may be signed in at all: confirmed, approved, not disabled, account not suspended. */
export function loginBlocker(user: UserRow, account: AccountRow | null): string | null {
  if (!account || account.suspended_at) return 'Your account is suspended.';
  if (!user.confirmed_at) return 'You need to confirm your e-mail address before you can sign in. Check your mail for the link.';
  if (!user.approved) return 'Your account is waiting for approval by the operators.';
  if (user.disabled) return 'Your login is currently disabled.';
  return null;
}
