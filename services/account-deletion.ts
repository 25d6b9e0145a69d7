import type { AppContext } from '../context.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { markAccountGone, type AccountRow } from '../storage/accounts.ts';
import type { UserRow } from '../storage/users.ts';
import { endUserAccess, markAccountDeleted, queueSeveredFollows } from '../storage/account-deletion.ts';
import { forbidden } from '../errors.ts';
import { checkCurrentPassword, checkSecondFactor } from './sign-in.ts';
import { moderationDeps, type ModerationDeps } from './moderation.ts';
import { accountTarget, logAction, type Actor } from './action-log.ts';

/**
 * Deleting an account, as Mastodon does (Settings::DeletesController, Admin::AccountDeletionWorker, and a remote
 * actor's `Delete`): at once the account is suspended and marked deleted, its user signed out everywhere (web
 * sessions gone, tokens and codes revoked), and the first run of the deletion job queued through an outbox row of
 * the same transaction; the job (jobs/account-deletion.ts) sends a local actor's `Delete` and removes everything
 * but the account row, which stays: a local username is never registered again, a remote actor is not brought
 * back by late deliveries or fetches.
 */
export async function startAccountDeletion(
  deps: ModerationDeps, account: AccountRow, options: { ownDelete?: boolean; by?: Actor } = {},
): Promise<void> {
  const { rows, userId, touched } = await transaction(deps.db, async (tx) => {
    await markAccountDeleted(tx, account.id);
    await logAction(tx, options.by, 'destroy', accountTarget(account));
    // An operator deleting a remote account tells its server the follows are over (Mastodon's reject_follows! and
    // undo_follows!); the actor's own Delete needs no answer (Mastodon's skip_activitypub).
    const severed = account.domain !== null && !options.ownDelete ? await queueSeveredFollows(tx, account.id) : [];
    // A remote actor follows and is followed by nobody here from now on (its follows' counts given back at once);
    // the job removes the rest.
    const touched = account.domain === null ? [] : await markAccountGone(tx, account.id);
    const userId = account.domain === null ? await endUserAccess(tx, account.id) : null;
    // Mastodon keeps reports (and the statuses they name) unless it destroys the account record, which it does only
    // for a remote actor's own Delete.
    const row = await addToOutbox(tx, 'deleteAccount', { accountId: account.id, step: 'deliver', ...(options.ownDelete ? { keepReports: false } : {}) });
    return { rows: [row, ...severed], userId, touched };
  });
  await deps.versions.bump({ accounts: [account.id, ...touched] });
  if (userId) await deps.invalidate({ userId });
  // Without a queue (the CLI) a running server's outbox sweeper queues them.
  if (deps.jobs) for (const row of rows) await deps.jobs.enqueue(row).catch(() => {});
}

/**
 * A person deletes their own account from the settings page: the current password, and a second factor when
 * two-factor sign-in is on. Returns what was wrong, or null once the deletion has started.
 */
export async function deleteOwnAccount(
  ctx: AppContext, me: { user: UserRow; account: AccountRow }, input: { password: string; code: string },
): Promise<string | null> {
  if (me.account.suspended_at) return 'This account is suspended.';
  const wrongPassword = await checkCurrentPassword(ctx, me.user, input.password);
  if (wrongPassword) return wrongPassword;
  if (me.user.otp_enabled_at) {
    if (!input.code.trim()) return 'Enter the code from your authenticator app (or a recovery code).';
    const second = await checkSecondFactor(ctx, me.user, input.code);
    if (!second.ok) return second.error;
  }
  await startAccountDeletion(moderationDeps(ctx), me.account);
  ctx.tokens.forget(`user:${me.user.id}`);
  return null;
}

/**
 * An operator deletes an account's data (DELETE /api/v1/admin/accounts/:id): only a suspended one, as Mastodon's
 * AccountPolicy allows (403 otherwise).
 */
export async function deleteSuspendedAccount(deps: ModerationDeps, target: AccountRow, by: Actor): Promise<void> {
  if (!target.suspended_at) throw forbidden();
  await startAccountDeletion(deps, target, { by });
}

/** A remote actor's `Delete` of itself (federation/inbox.ts): what we hold of it goes, its row stays as a tombstone. */
export async function deleteRemoteActor(ctx: AppContext, remote: AccountRow): Promise<void> {
  if (remote.domain === null || remote.deleted_at) return;
  await startAccountDeletion(moderationDeps(ctx), remote, { ownDelete: true });
}
