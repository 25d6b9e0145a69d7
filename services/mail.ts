import { transaction, type Db, type Queryable } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import { emailTaken, findUserById, setUnconfirmedEmail } from '../storage/users.ts';
import type { Config } from '../config.ts';
import { forbidden, notFound, ValidationFailed } from '../errors.ts';
import { EMAIL_FORMAT } from './accounts.ts';
import type { EmailKind } from './notification-emails.ts';

/**
 * The mail this server sends. A payload names what the mail is about by id, never by row, and never carries a
 * secret: the job (jobs/mail.ts) reads the latest data when it runs, makes any single-use token itself and stores
 * only its hash. Operators' mails name one operator each, so that one bad address or one retry concerns one message.
 */
export type Mail =
  /** To `unconfirmed_email ?? email`: a link that confirms the address (nothing if it was confirmed meanwhile). */
  | { type: 'confirmation'; userId: string }
  /** A link to choose a new password, working for RESET_PASSWORD_TOKEN_TTL_SECONDS. */
  | { type: 'reset_password'; userId: string }
  /** An operator approved the sign-up: a link to sign in. */
  | { type: 'approved'; userId: string }
  /**
   * An operator rejected the sign-up; the user row is gone by then, so the address, name and interface language
   * travel with the mail (rows queued before the language did are mailed in the server's language).
   */
  | { type: 'rejected'; email: string; username: string; locale?: string | null }
  /** To one operator: someone signed up (and whether they wait for approval). */
  | { type: 'new_sign_up'; userId: string; operatorId: string }
  /** To one operator: a report was filed. */
  | { type: 'new_report'; reportId: string; operatorId: string }
  /**
   * To the old address: a change to `newEmail` was asked for. `oldEmail` (the address in use when the change was
   * asked) is where it goes; without it, the user's current address, unless that is already the new one.
   */
  | { type: 'email_changed'; userId: string; newEmail: string; oldEmail?: string }
  /** A notification of a kind the person takes mail of (services/notification-emails.ts), with an unsubscribe link. */
  | { type: 'notification'; userId: string; notificationId: string; kind: EmailKind }
  /** The daily digest: the notifications after `afterId` up to `upToId`, counted, and the latest few. */
  | { type: 'notification_digest'; userId: string; afterId: string; upToId: string }
  /** To the target of a strike: what was done and the moderator's text, with a link to the strike (and its appeal). */
  | { type: 'warning'; strikeId: string }
  /** To the person who appealed: the appeal was approved (the action undone) or rejected. */
  | { type: 'appeal_approved'; appealId: string }
  | { type: 'appeal_rejected'; appealId: string };

export type MailType = Mail['type'];

/** The outbox kind (and BullMQ job name) of mail. */
export const MAIL_JOB_KIND = 'sendMail';

/** How long a password reset link works: what the mail says, and what the page that takes the token must use. */
export const RESET_PASSWORD_TOKEN_TTL_SECONDS = 3600;
/** How long a confirmation link works (Devise's confirm_within, as Mastodon sets it: two days). */
export const CONFIRMATION_TOKEN_TTL_SECONDS = 2 * 24 * 3600;

/** Whether this server sends mail (an SMTP server is set). Off: addresses count as confirmed at once. */
export function mailEnabled(config: Pick<Config, 'smtp'>): boolean {
  return config.smtp !== null;
}

/** What start-up logs when no SMTP server is set. */
export const MAIL_OFF_NOTICE = 'Mail is off (no SMTP_URL or SMTP_SERVER): no mail is sent, and new sign-ups count as confirmed at once';

/**
 * Writes a mail's outbox row in the caller's transaction: if it rolls back, no mail goes. The caller queues the row
 * after the commit (`ctx.jobs.enqueue(row)` or `enqueueMany`); a row whose job never got queued (a crash between
 * commit and queueing) is queued by the outbox sweeper. With mail off the job does nothing, so callers need not check.
 */
export async function queueMail(tx: Queryable, mail: Mail): Promise<OutboxRow> {
  return addToOutbox(tx, MAIL_JOB_KIND, { mail });
}

/**
 * Sends the confirmation mail again (Mastodon's resend_confirmation_instructions), for a user whose address is not
 * confirmed yet, or who waits to confirm a new one; `email` first corrects the address to confirm (it becomes the
 * user's `unconfirmed_email`; the address in use stays until the new one is confirmed; giving the address in use
 * again drops a waiting change). Refused (403) for a user with nothing to confirm; an address that is malformed or
 * another user's is a 422. The change and the mail's outbox row commit together; the job is queued after.
 */
export async function resendConfirmationMail(deps: { db: Db; jobs: { enqueue(row: OutboxRow): Promise<void> } }, userId: string, email?: string): Promise<void> {
  const user = await findUserById(deps.db, userId);
  if (!user) throw notFound();
  if (user.confirmed_at !== null && !user.unconfirmed_email) {
    throw forbidden('This method is only available while the e-mail is awaiting confirmation');
  }
  let unconfirmed: string | null | undefined;
  if (email !== undefined) {
    const address = email.trim();
    if (!EMAIL_FORMAT.test(address) || address.length > 254) throw new ValidationFailed({ email: [{ error: 'ERR_INVALID', description: 'is invalid' }] });
    if (address.toLowerCase() === user.email.toLowerCase()) unconfirmed = null;
    else if (await emailTaken(deps.db, address)) throw new ValidationFailed({ email: [{ error: 'ERR_TAKEN', description: 'is already taken' }] });
    else unconfirmed = address;
  }
  const row = await transaction(deps.db, async (tx) => {
    if (unconfirmed !== undefined) await setUnconfirmedEmail(tx, user.id, unconfirmed);
    return queueMail(tx, { type: 'confirmation', userId: user.id });
  });
  await deps.jobs.enqueue(row).catch(() => {});
}
