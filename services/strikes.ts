import { transaction } from '../storage/db.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { accountTarget, logAction } from './action-log.ts';
import * as moderation from '../storage/moderation.ts';
import { appealsOfStrikes, decideAppeal, findAppeal, findStrike, insertAppeal, overruleStrike, type AppealRow, type StrikeRow } from '../storage/strikes.ts';
import { forbidden, notFound, unprocessable } from '../errors.ts';
import { queueDelivery } from './deliveries.ts';
import { queueMail } from './mail.ts';
import type { ModerationDeps } from './moderation.ts';

/** Mastodon's Appeal: at most this many characters, and only within this many days of the strike. */
export const APPEAL_TEXT_MAX = 2000;
export const APPEAL_WINDOW_DAYS = 20;

/** Why a strike cannot be appealed now, or null when it can (Mastodon's AccountWarning#appeal_eligible? and Appeal's checks). */
export function appealRefusal(strike: StrikeRow, appeal: AppealRow | null | undefined, now = new Date()): string | null {
  if (appeal) return 'This decision has already been appealed.';
  if (strike.overruled_at) return 'This decision has already been overruled.';
  if (strike.created_at.getTime() < now.getTime() - APPEAL_WINDOW_DAYS * 86_400_000) return `Appeals are taken only within ${APPEAL_WINDOW_DAYS} days of the decision.`;
  return null;
}

async function enqueue(deps: ModerationDeps, rows: OutboxRow[]): Promise<void> {
  if (!deps.jobs) return;
  await Promise.all(rows.map((r) => deps.jobs!.enqueue(r).catch(() => {})));
}

/** One of the person's own strikes (anyone else's is not found). */
export async function ownStrike(deps: Pick<ModerationDeps, 'db'>, accountId: string, strikeId: string): Promise<StrikeRow> {
  const strike = await findStrike(deps.db, strikeId);
  if (!strike || strike.target_account_id !== accountId) throw notFound();
  return strike;
}

/**
 * The person appeals a strike against them: once per strike, not against an overruled one, within the window, with
 * a text (422 otherwise). Two appeals at once meet the unique strike: one is taken, the other refused.
 */
export async function appealStrike(deps: ModerationDeps, accountId: string, strikeId: string, text: string): Promise<AppealRow> {
  const strike = await ownStrike(deps, accountId, strikeId);
  const refusal = appealRefusal(strike, (await appealsOfStrikes(deps.db, [strike.id])).get(strike.id));
  if (refusal) throw unprocessable(refusal);
  const body = text.trim();
  if (body === '') throw unprocessable('Please say why the decision should be overturned.');
  if ([...body].length > APPEAL_TEXT_MAX) throw unprocessable(`The appeal is too long (at most ${APPEAL_TEXT_MAX} characters).`);
  const appeal = await insertAppeal(deps.db, { accountId, strikeId: strike.id, text: body });
  if (!appeal) throw unprocessable('This decision has already been appealed.');
  return appeal;
}

/**
 * Mastodon's ApproveAppealService: the strike's action is undone (unsuspended, unsilenced, no longer sensitive,
 * enabled), the strike overruled, the appeal approved and its mail queued, in one transaction. An appeal decided
 * already is a 422; one whose account is deleted cannot be undone (403). No operator account: the shell's (the CLI).
 */
export async function approveAppeal(deps: ModerationDeps, operatorAccountId: string | null, appealId: string): Promise<void> {
  const appeal = await findAppeal(deps.db, appealId);
  const strike = appeal ? await findStrike(deps.db, appeal.account_warning_id) : null;
  const target = strike ? await findAccountById(deps.db, strike.target_account_id) : null;
  if (!appeal || !strike || !target) throw notFound();
  if (strike.action === 'suspend' && target.deleted_at) throw forbidden();
  const outbox = await transaction(deps.db, async (tx) => {
    if (!(await decideAppeal(tx, appeal.id, 'approved', operatorAccountId))) throw unprocessable('This appeal has already been decided.');
    await logAction(tx, operatorAccountId, 'approve', appealTarget(appeal.id, target));
    const rows: OutboxRow[] = [];
    switch (strike.action) {
      case 'suspend':
        if (target.suspended_at) {
          await moderation.setAccountFlag(tx, target.id, 'suspended', false);
          // Servers that heard of the suspension learn the actor is back.
          if (target.domain === null) rows.push(await queueDelivery(tx, { activity: 'UpdatePerson', accountId: target.id }));
        }
        break;
      case 'silence': await moderation.setAccountFlag(tx, target.id, 'silenced', false); break;
      case 'sensitive': await moderation.setAccountFlag(tx, target.id, 'sensitized', false); break;
      case 'disable': await moderation.setUserDisabled(tx, target.id, false); break;
      // Nothing to undo for a warning; deleted posts stay deleted (as in Mastodon); nothing here marks single posts yet.
      case 'none': case 'delete_statuses': case 'mark_statuses_as_sensitive': break;
    }
    await overruleStrike(tx, strike.id);
    rows.push(await queueMail(tx, { type: 'appeal_approved', appealId: appeal.id }));
    return rows;
  });
  await deps.versions.bump({ accounts: [target.id] });
  const userId = target.domain === null ? (await moderation.usersOfAccounts(deps.db, [target.id])).get(target.id)?.id : undefined;
  if (userId) await deps.invalidate({ userId });
  await enqueue(deps, outbox);
}

/** The appeal is rejected: the strike and its action stay; the person is told by mail. */
export async function rejectAppeal(deps: ModerationDeps, operatorAccountId: string | null, appealId: string): Promise<void> {
  const appeal = await findAppeal(deps.db, appealId);
  const target = appeal ? await findAccountById(deps.db, appeal.account_id) : null;
  if (!appeal || !target) throw notFound();
  const row = await transaction(deps.db, async (tx) => {
    const decided = await decideAppeal(tx, appealId, 'rejected', operatorAccountId);
    if (!decided) throw unprocessable('This appeal has already been decided.');
    await logAction(tx, operatorAccountId, 'reject', appealTarget(appealId, target));
    return queueMail(tx, { type: 'appeal_rejected', appealId });
  });
  await enqueue(deps, [row]);
}

/** An appeal as the audit log names it: by the account that appealed. */
const appealTarget = (id: string, account: AccountRow) => ({ type: 'Appeal' as const, id, name: accountTarget(account).name });
