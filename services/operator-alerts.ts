import { OPERATOR_MAIL_BITS } from './roles.ts';
import type { Queryable } from '../storage/db.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import type { Config } from '../config.ts';
import type { JobQueues } from '../jobs/queues.ts';
import type { StreamEvents } from './stream-events.ts';
import { operatorEmails } from '../storage/users.ts';
import { notifyAccount } from './notifications.ts';
import { mailEnabled, queueMail } from './mail.ts';

/**
 * What telling the operators needs: stream events and the job queue (notifications reach open streams and Web Push
 * after the commit, services/notifications.ts) and the settings (whether mail is on). An AppContext is one.
 */
export interface OperatorAlertDeps {
  events: StreamEvents;
  jobs: JobQueues;
  config: Pick<Config, 'smtp'>;
}

/**
 * Someone signed up: every operator (an admin whose login works, storage/users.ts operatorEmails; at most 100) gets
 * the `admin.sign_up` notification from the new account and, with mail on, a "new sign-up" mail that says whether the
 * account waits for approval and links to /admin/approvals. Call it inside the transaction that creates the user;
 * it returns the mails' outbox rows, which the caller queues after the commit (`ctx.jobs.enqueueMany(rows)`; the
 * outbox sweeper queues them if the process dies first). The notifications need nothing more: their stream events
 * and Web Push follow the commit by themselves. The new account itself, if an operator, is not told of itself.
 */
export async function alertOperatorsOfSignUp(tx: Queryable, deps: OperatorAlertDeps, signUp: { userId: string; accountId: string }): Promise<OutboxRow[]> {
  const operators = (await operatorEmails(tx, OPERATOR_MAIL_BITS)).filter((op) => op.account_id !== signUp.accountId);
  const rows: OutboxRow[] = [];
  for (const op of operators) {
    await notifyAccount(deps, tx, op.account_id, signUp.accountId, 'admin.sign_up');
    if (mailEnabled(deps.config)) rows.push(await queueMail(tx, { type: 'new_sign_up', userId: signUp.userId, operatorId: op.id }));
  }
  return rows;
}

/**
 * A report was filed (POST /api/v1/reports, services/moderation.ts fileReport): every operator gets the
 * `admin.report` notification from the reporter (with the report) and, with mail on, a "new report" mail linking
 * to /admin/reports/:id, as Mastodon's ReportService#notify_staff!: not when other reports about the same account
 * are still open (the operators know of it already). Called inside the transaction that writes the report; returns
 * the mails' outbox rows for the caller to queue after the commit. A reporter who is an operator gets no
 * notification of their own report (nobody is notified of their own action), but does get the mail.
 */
export async function alertOperatorsOfReport(tx: Queryable, deps: OperatorAlertDeps, report: { reportId: string; reporterAccountId: string; targetAccountId: string }): Promise<OutboxRow[]> {
  if (await otherOpenReports(tx, report.targetAccountId, report.reportId)) return [];
  const rows: OutboxRow[] = [];
  for (const op of await operatorEmails(tx, OPERATOR_MAIL_BITS)) {
    await notifyAccount(deps, tx, op.account_id, report.reporterAccountId, 'admin.report', null, report.reportId);
    if (mailEnabled(deps.config)) rows.push(await queueMail(tx, { type: 'new_report', reportId: report.reportId, operatorId: op.id }));
  }
  return rows;
}

/** Whether another report about the account is still open (Mastodon's Report#unresolved_siblings?). */
async function otherOpenReports(tx: Queryable, targetAccountId: string, reportId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `SELECT 1 FROM reports WHERE target_account_id = $1 AND id <> $2 AND action_taken_at IS NULL LIMIT 1`,
    [targetAccountId, reportId],
  );
  return (rowCount ?? 0) > 0;
}
