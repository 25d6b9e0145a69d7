import type { PoolClient } from 'pg';
import { transaction, type Db } from '../storage/db.ts';
import { queueWebhookEvent } from './webhooks.ts';
import { inviteRefusal, lookUpInvite } from './invites.ts';
import { setUserInvite, useInvite } from '../storage/invites.ts';
import { emailTaken, insertUser, pendingAccountIds, type UserRow } from '../storage/users.ts';
import { findAccountById, insertLocalAccount, usernameTaken, type AccountRow } from '../storage/accounts.ts';
import { isId } from '../storage/ids.ts';
import { hashPassword, PASSWORD_LENGTH } from './passwords.ts';
import { forbidden, notFound, unprocessable, ValidationFailed } from '../errors.ts';
import type { AppContext } from '../context.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { queueMail } from './mail.ts';
import { alertOperatorsOfSignUp } from './operator-alerts.ts';
import { emailBlockErrors, signUpIpPolicy, type EmailBlockDeps } from './admin-blocks.ts';
import { usernameBlocksFor } from './username-blocks.ts';

// Mastodon's rule for local usernames: letters, digits and underscores (dots and dashes occur only in remote ones).
const USERNAME = /^[a-z0-9_]+$/i;
export const RESERVED_USERNAMES = new Set(['admin', 'administrator', 'root', 'webmaster', 'support', 'help', 'mod', 'moderator', 'postmaster', 'hostmaster', 'abuse', 'security', 'instance', 'actor', 'system']);
export const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** What a person gives to join, through an app (POST /api/v1/accounts) or the sign-up page. */
export interface SignUp {
  username: string;
  email: string;
  password: string;
  agreement: boolean;
  locale?: string | null | undefined;
  reason?: string | null | undefined;
  /** The password typed again (the sign-up page asks for it; the API does not). */
  passwordConfirmation?: string | undefined;
  /** An invite's code (services/invites.ts): a good one lets the person join while sign-ups are closed or reviewed. */
  inviteCode?: string | null | undefined;
}

/** A local account to create, by a sign-up or an operator. */
export interface Registration extends SignUp {
  approved: boolean;
  /** The name of its role (storage/roles.ts), if any. */
  role?: string | null;
  /** The time before roles: true means the Admin role (kept for callers that still say it). */
  admin?: boolean;
  applicationId?: string | null;
  /** The new account's display name (a single sign-on provider's `name`); empty unless given. */
  displayName?: string;
  /** Operators may take the names reserved here (RESERVED_USERNAMES); the public cannot. The operators' username
   *  blocks (services/username-blocks.ts) refuse a name whoever asks, as Mastodon's validator does. */
  allowReserved?: boolean;
  /** What the name meets among the username blocks, when the caller looked already (signUp does, to hold it). */
  usernameBlocks?: { refused: boolean; held: boolean };
  /** Whether the address counts as confirmed at once (mail is off, or an operator made the account). */
  confirmed: boolean;
  /** A sign-up's address is checked against the operator's e-mail blocks (with the address it came from). */
  emailBlocks?: EmailBlockDeps & { ip?: string | null | undefined };
}

type Details = ValidationFailed['details'];
/** Rails' `blank?` for a string: empty or only whitespace. */
const blank = (value: string) => /^\s*$/.test(value);

function add(details: Details, field: string, error: string, description: string) {
  (details[field] ??= []).push({ error, description });
}

/**
 * Creates a local account and its user in one transaction; `alsoInTransaction` adds what must be written with
 * them (the new user's first token), so a failure leaves neither half.
 */
export async function registerLocalAccount<T = undefined>(
  db: Db,
  r: Registration,
  alsoInTransaction?: (tx: PoolClient, created: { account: AccountRow; user: UserRow }) => Promise<T>,
  /** Refusals found before (a reason the operators need): reported with the account's own, all at once. */
  earlier: Details = {},
): Promise<{ account: AccountRow; user: UserRow; extra: T | undefined; queued: OutboxRow[] }> {
  const details: Details = structuredClone(earlier);
  // The codes and their order follow Mastodon's validations: presence first. A username's format is checked only
  // when it differs from the column's default '' (Rails' will_save_change_to_username?), so '' is only blank;
  // the email validator calls '' invalid as well; Devise skips a blank password's length check.
  if (blank(r.username)) add(details, 'username', 'ERR_BLANK', "can't be blank");
  if (r.username !== '' && !USERNAME.test(r.username)) add(details, 'username', 'ERR_INVALID', 'must contain only letters, numbers and underscores');
  if (r.username.length > 30) add(details, 'username', 'ERR_TOO_LONG', 'is too long (maximum is 30 characters)');
  if (!r.allowReserved && RESERVED_USERNAMES.has(r.username.toLowerCase())) add(details, 'username', 'ERR_RESERVED', 'is reserved');
  if (!details.username && (r.usernameBlocks ?? await usernameBlocksFor(db, r.username)).refused) add(details, 'username', 'ERR_RESERVED', 'is reserved');
  if (blank(r.email)) add(details, 'email', 'ERR_BLANK', "can't be blank");
  if (!EMAIL_FORMAT.test(r.email) || r.email.length > 254) add(details, 'email', 'ERR_INVALID', 'is invalid');
  else if (r.emailBlocks) for (const e of await emailBlockErrors(r.emailBlocks, r.email, r.emailBlocks.ip)) add(details, 'email', e.error, e.description);
  if (blank(r.password)) add(details, 'password', 'ERR_BLANK', "can't be blank");
  else if (r.password.length < PASSWORD_LENGTH.min) add(details, 'password', 'ERR_TOO_SHORT', `is too short (minimum is ${PASSWORD_LENGTH.min} characters)`);
  if (r.password.length > PASSWORD_LENGTH.max) add(details, 'password', 'ERR_TOO_LONG', `is too long (maximum is ${PASSWORD_LENGTH.max} characters)`);
  if (r.passwordConfirmation !== undefined && r.passwordConfirmation !== r.password) add(details, 'password_confirmation', 'ERR_CONFIRMATION', "doesn't match Password");
  if (!r.agreement) add(details, 'agreement', 'ERR_ACCEPTED', 'must be accepted');
  // Uniqueness is checked with the rest (as Rails validates every attribute at once), for a name or address that is
  // otherwise valid, so that a form shows every refusal in one answer.
  if (!details.username && await usernameTaken(db, r.username)) add(details, 'username', 'ERR_TAKEN', 'is already taken');
  if (!details.email && await emailTaken(db, r.email)) add(details, 'email', 'ERR_TAKEN', 'is already taken');
  if (Object.keys(details).length > 0) throw new ValidationFailed(details);

  // The account's signing keys are made when it first federates (federation/keys.ts), not here.
  const passwordHash = await hashPassword(r.password);
  try {
    return await transaction(db, async (tx) => {
      const account = await insertLocalAccount(tx, { username: r.username, displayName: r.displayName ?? '' });
      const user = await insertUser(tx, {
        accountId: account.id,
        email: r.email,
        passwordHash,
        approved: r.approved,
        role: r.role ?? (r.admin ? 'Admin' : null),
        locale: r.locale ?? null,
        reason: r.reason ?? null,
        agreement: r.agreement,
        applicationId: r.applicationId ?? null,
        confirmed: r.confirmed,
      });
      const extra = alsoInTransaction ? await alsoInTransaction(tx, { account, user }) : undefined;
      // Operators' webhooks hear of every new local account (Mastodon's account.created), whoever made it.
      const queued = await queueWebhookEvent(tx, 'account.created', account.id);
      return { account, user, extra, queued };
    });
  } catch (err) {
    // Two registrations racing for one name: the unique index decides, and the loser hears why.
    const e = err as { code?: string; constraint?: string };
    if (e.code === '23505' && e.constraint === 'accounts_username_domain') {
      throw new ValidationFailed({ username: [{ error: 'ERR_TAKEN', description: 'is already taken' }] });
    }
    if (e.code === '23505' && e.constraint === 'users_email') {
      throw new ValidationFailed({ email: [{ error: 'ERR_TAKEN', description: 'is already taken' }] });
    }
    throw err;
  }
}

/**
 * An account that exists and may be shown through the API, or a 404: a local account still waiting for approval is
 * shown to nobody (Mastodon's check_account_approval).
 */
export async function visibleAccount(db: Db, id: string): Promise<AccountRow> {
  const account = isId(id) ? await findAccountById(db, id) : null;
  if (!account || (account.domain === null && (await pendingAccountIds(db, [account.id])).has(account.id))) throw notFound();
  return account;
}

/**
 * The one place that decides whether someone may join and how: the registration mode (closed: refused; approval:
 * a reason is needed and the account waits), whether the address must be confirmed by mail (not when mail is off),
 * and the account's own rules (registerLocalAccount). The API and the sign-up page both call it.
 */
export async function signUp<T = undefined>(
  ctx: AppContext,
  input: SignUp,
  opts: { applicationId?: string | null; ip?: string | null | undefined; allErrors?: boolean; alsoInTransaction?: (tx: PoolClient, created: { account: AccountRow; user: UserRow }) => Promise<T> } = {},
): Promise<{ account: AccountRow; user: UserRow; extra: T | undefined; queued: OutboxRow[] }> {
  const mode = ctx.config.registrationsMode;
  // An invite, named, must be good; it opens closed sign-ups and skips the review (Mastodon's valid_invitation?).
  const invited = input.inviteCode ? await lookUpInvite(ctx.db, input.inviteCode) : null;
  if (input.inviteCode && (!invited || invited.state !== 'valid')) throw unprocessable(inviteRefusal(invited?.invite ?? null));
  // OMNIAUTH_ONLY: people join by signing in through the provider (services/oidc.ts), never with a password.
  if ((mode === 'none' && !invited) || ctx.config.omniauthOnly) throw forbidden('Registrations are closed');
  // The operator's IP blocks (Mastodon's allowed_registration? and requires_approval?): sign_up_block refuses as a
  // closed server does (403), sign_up_requires_approval holds the account for approval even while sign-ups are open.
  const ipPolicy = await signUpIpPolicy(ctx.db, opts.ip);
  if (ipPolicy === 'block') throw forbidden();
  // A name that meets a username block allowing approval waits for the operators too (one meeting a block that
  // refuses is refused by registerLocalAccount, with the other refusals).
  const nameBlocks = USERNAME.test(input.username) ? await usernameBlocksFor(ctx.db, input.username) : { refused: false, held: false };
  const held = ipPolicy === 'approval' || nameBlocks.held;
  const earlier: Details = {};
  if (mode === 'approved' && !invited && !input.reason?.trim()) {
    // The page shows it with the other refusals; the API answers it alone, as it always has.
    if (!opts.allErrors) throw unprocessable('Validation failed: reason must be given while registrations need approval');
    add(earlier, 'reason', 'ERR_BLANK', "can't be blank");
  }
  const queued: OutboxRow[] = [];
  const result = await registerLocalAccount(ctx.db, {
    username: input.username,
    email: input.email,
    password: input.password,
    passwordConfirmation: input.passwordConfirmation,
    agreement: input.agreement,
    locale: input.locale ?? null,
    reason: (mode === 'approved' && !invited) || held ? input.reason?.trim() || null : null,
    approved: (mode === 'open' || invited !== null) && !held,
    usernameBlocks: nameBlocks,
    applicationId: opts.applicationId ?? null,
    // With mail off nobody could confirm: the address counts as confirmed at once.
    confirmed: ctx.config.smtp === null,
    emailBlocks: { db: ctx.db, redis: ctx.redis, redisPrefix: ctx.config.redisPrefix, ip: opts.ip },
  }, async (tx, created) => {
    if (invited) {
      // Counted in the sign-up's transaction: two people racing for an invite's last use cannot both have it.
      const used = await useInvite(tx, invited.invite.id);
      if (!used) throw unprocessable(inviteRefusal(invited.invite));
      await setUserInvite(tx, created.user.id, used.id);
    }
    if (!created.user.confirmed_at) queued.push(await queueMail(tx, { type: 'confirmation', userId: created.user.id }));
    // Operators hear of a sign-up (admin.sign_up, and a mail) once its address is confirmed: now if it needs no
    // confirmation, else when the link is followed (services/account-security.ts).
    if (created.user.confirmed_at) queued.push(...(await alertOperatorsOfSignUp(tx, ctx, { userId: created.user.id, accountId: created.account.id })));
    return opts.alsoInTransaction ? opts.alsoInTransaction(tx, created) : undefined;
  }, earlier);
  // After the commit; a crash before this leaves the rows for the outbox sweeper.
  await ctx.jobs.enqueueMany([...queued, ...result.queued]).catch(() => {});
  // Mastodon's autofollow: the newcomer follows whoever invited them.
  if (invited?.invite.autofollow) {
    await ctx.actors.ask(result.account.id, { type: 'follow', targetId: invited.invite.account_id, options: {} }).catch(() => {});
  }
  return result;
}
