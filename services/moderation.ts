import type { AppContext } from '../context.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { queueWebhookEvent } from './webhooks.ts';
import { transaction } from '../storage/db.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { setApproved } from '../storage/users.ts';
import * as moderation from '../storage/moderation.ts';
import * as reports from '../storage/reports.ts';
import { listRules } from '../storage/rules.ts';
import { forbidden, notFound, unprocessable } from '../errors.ts';
import { publishTokenInvalidation, type TokenInvalidation } from './token-cache.ts';
import { queueDelivery } from './deliveries.ts';
import { alertOperatorsOfReport, type OperatorAlertDeps } from './operator-alerts.ts';
import { queueMail } from './mail.ts';
import { insertStrike, type StrikeAction } from '../storage/strikes.ts';
import { accountTarget, logAction, type ActionName, type Actor } from './action-log.ts';

/**
 * What moderation needs: the database, cache versions to bump after each change, a way to tell every process that a
 * user's tokens answer differently now, and (in a server) the job queue; the CLI has none, so the outbox sweeper of a
 * running server sends what the CLI queued.
 */
export interface ModerationDeps {
  db: Db;
  versions: Pick<CacheVersions, 'bump'>;
  invalidate: (what: TokenInvalidation) => Promise<void>;
  jobs?: { enqueue(row: OutboxRow): Promise<void> } | null;
  /** Telling operators of new reports (services/operator-alerts.ts); a server has it, the CLI does not. */
  alerts?: OperatorAlertDeps | null;
}

export function moderationDeps(ctx: AppContext): ModerationDeps {
  return {
    db: ctx.db,
    versions: ctx.versions,
    invalidate: (what) => publishTokenInvalidation(ctx.redis, ctx.config.redisPrefix, what),
    jobs: ctx.jobs,
    alerts: ctx,
  };
}

async function enqueue(deps: ModerationDeps, rows: OutboxRow[]): Promise<void> {
  if (!deps.jobs) return;
  await Promise.all(rows.map((r) => deps.jobs!.enqueue(r).catch(() => {})));
}

export type AccountActionType = 'none' | 'sensitive' | 'disable' | 'silence' | 'suspend';

/**
 * An operator acts only on accounts whose role is below theirs (Mastodon's AccountPolicy, UserRole#overrides?): a
 * moderator cannot suspend an admin, nor an admin the owner; an account without a role is anyone's to act on.
 */
async function actionable(deps: ModerationDeps, moderatorId: string, target: AccountRow): Promise<void> {
  if (target.domain !== null) return;
  const users = await moderation.usersOfAccounts(deps.db, [target.id, moderatorId]);
  const targetRole = users.get(target.id)?.role;
  if (!targetRole) return;
  const ownRole = users.get(moderatorId)?.role;
  if (!ownRole || ownRole.position <= targetRole.position) throw forbidden();
}

async function userIdOf(deps: ModerationDeps, accountId: string): Promise<string | null> {
  return (await moderation.usersOfAccounts(deps.db, [accountId])).get(accountId)?.id ?? null;
}

/**
 * Suspends an account: its tokens are refused (storage/oauth.ts), its statuses leave every feed and read path
 * (services/hydrate.ts hides a suspended author's statuses; the account's version bump invalidates cached pages),
 * and a local one is sent out as a `Delete` of its actor to its followers' servers, as Mastodon does.
 */
export async function suspendAccount(deps: ModerationDeps, target: AccountRow, by?: Actor): Promise<void> {
  const outbox = await transaction(deps.db, async (tx) => {
    await moderation.setAccountFlag(tx, target.id, 'suspended', true);
    await logAction(tx, by, 'suspend', accountTarget(target));
    return target.domain === null && !target.suspended_at ? [await queueDelivery(tx, { activity: 'DeleteActor', accountId: target.id })] : [];
  });
  await afterAccountChange(deps, target);
  await enqueue(deps, outbox);
}

export async function unsuspendAccount(deps: ModerationDeps, target: AccountRow, by?: Actor): Promise<void> {
  // A deleted account stays suspended: its data is gone or going (services/account-deletion.ts).
  if (!target.suspended_at || target.deleted_at) throw forbidden();
  const outbox = await transaction(deps.db, async (tx) => {
    await moderation.setAccountFlag(tx, target.id, 'suspended', false);
    await logAction(tx, by, 'unsuspend', accountTarget(target));
    // Servers that heard of the suspension learn the actor is back (Mastodon sends an Update of it).
    return target.domain === null ? [await queueDelivery(tx, { activity: 'UpdatePerson', accountId: target.id })] : [];
  });
  await afterAccountChange(deps, target);
  await enqueue(deps, outbox);
}

/** A change of one mark, written with its audit log entry. */
async function markAccount(deps: ModerationDeps, target: AccountRow, action: ActionName, by: Actor | undefined, write: (tx: Queryable) => Promise<unknown>): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await write(tx);
    await logAction(tx, by, action, accountTarget(target));
  });
  await afterAccountChange(deps, target);
}

export async function setSilenced(deps: ModerationDeps, target: AccountRow, on: boolean, by?: Actor): Promise<void> {
  await markAccount(deps, target, on ? 'silence' : 'unsilence', by, (tx) => moderation.setAccountFlag(tx, target.id, 'silenced', on));
}

export async function setSensitized(deps: ModerationDeps, target: AccountRow, on: boolean, by?: Actor): Promise<void> {
  await markAccount(deps, target, on ? 'sensitive' : 'unsensitive', by, (tx) => moderation.setAccountFlag(tx, target.id, 'sensitized', on));
}

/** A disabled user cannot sign in and its tokens are refused; a remote account has no user, so nothing changes. */
export async function setDisabled(deps: ModerationDeps, target: AccountRow, on: boolean, by?: Actor): Promise<void> {
  if (target.domain !== null) return;
  await markAccount(deps, target, on ? 'disable' : 'enable', by, (tx) => moderation.setUserDisabled(tx, target.id, on));
}

async function afterAccountChange(deps: ModerationDeps, target: AccountRow): Promise<void> {
  await deps.versions.bump({ accounts: [target.id] });
  const userId = target.domain === null ? await userIdOf(deps, target.id) : null;
  if (userId) await deps.invalidate({ userId });
}

/** A local account waiting for approval (403 otherwise, as Mastodon answers). */
async function pendingUser(deps: ModerationDeps, target: AccountRow) {
  const user = target.domain === null ? (await moderation.usersOfAccounts(deps.db, [target.id])).get(target.id) : undefined;
  if (!user || user.approved) throw forbidden();
  return user;
}

export async function approveAccount(deps: ModerationDeps, target: AccountRow, by?: Actor): Promise<void> {
  const user = await pendingUser(deps, target);
  // The approval and its mail in one transaction: a crash loses neither half.
  const row = await transaction(deps.db, async (tx) => {
    await setApproved(tx, user.id, true);
    await logAction(tx, by, 'approve', accountTarget(target));
    return [await queueMail(tx, { type: 'approved', userId: user.id }), ...(await queueWebhookEvent(tx, 'account.approved', target.id))];
  });
  await enqueue(deps, row);
  await deps.invalidate({ userId: user.id });
  await deps.versions.bump({ accounts: [target.id] });
}

/** A rejected sign-up is removed with everything of it (its name is free again). */
export async function rejectAccount(deps: ModerationDeps, target: AccountRow, by?: Actor): Promise<void> {
  const user = await pendingUser(deps, target);
  // The user row goes with the account, so the mail carries the address, name and language it needs.
  const row = await transaction(deps.db, async (tx) => {
    await moderation.deletePendingAccount(tx, target.id);
    // The account is gone: the entry keeps its name only.
    await logAction(tx, by, 'reject', { ...accountTarget(target), id: null });
    return queueMail(tx, { type: 'rejected', email: user.email, username: target.username, locale: user.locale });
  });
  await enqueue(deps, [row]);
  await deps.invalidate({ userId: user.id });
  await deps.versions.bump({ accounts: [target.id] });
}

export interface AccountActionOptions {
  reportId?: string | undefined;
  /** The moderator's words to the person, kept with the strike and sent in its mail. */
  text?: string | undefined;
  /** Mail the person about the strike (Mastodon's default: yes). Only local accounts get mail. */
  sendEmail?: boolean | undefined;
}

/** The strike action an account action records (Mastodon's AccountWarning actions). */
const STRIKE_ACTION: Record<AccountActionType, StrikeAction> = { none: 'none', sensitive: 'sensitive', disable: 'disable', silence: 'silence', suspend: 'suspend' };

/**
 * Mastodon's Admin::AccountAction: the action, the strike that records it (with the text and the report's posts) and
 * its mail, and the report it came from resolved, all in one transaction; any action but `none` resolves every open
 * report about the account. `none` records a strike only with a text (a warning) or a report.
 */
export async function takeAccountAction(deps: ModerationDeps, moderatorId: string, target: AccountRow, type: AccountActionType, options: AccountActionOptions = {}): Promise<void> {
  const report = options.reportId ? await reports.findReport(deps.db, options.reportId) : null;
  if (options.reportId && !report) throw notFound();
  if (report && report.target_account_id !== target.id) throw unprocessable('Validation failed: Report is about another account');
  if (type !== 'none') await actionable(deps, moderatorId, target);
  const text = options.text?.trim() ?? '';
  const local = target.domain === null;
  const userId = local ? await userIdOf(deps, target.id) : null;
  const outbox = await transaction(deps.db, async (tx) => {
    const rows: OutboxRow[] = [];
    switch (type) {
      case 'sensitive': await moderation.setAccountFlag(tx, target.id, 'sensitized', true); break;
      case 'disable': if (local) await moderation.setUserDisabled(tx, target.id, true); break;
      case 'silence': await moderation.setAccountFlag(tx, target.id, 'silenced', true); break;
      case 'suspend':
        await moderation.setAccountFlag(tx, target.id, 'suspended', true);
        if (local && !target.suspended_at) rows.push(await queueDelivery(tx, { activity: 'DeleteActor', accountId: target.id }));
        break;
      case 'none': break;
    }
    if (type !== 'none' || text !== '' || report) {
      const strike = await insertStrike(tx, {
        moderatorId, targetAccountId: target.id, action: STRIKE_ACTION[type], text, statusIds: report?.status_ids ?? [], reportId: report?.id ?? null,
      });
      if (userId && (options.sendEmail ?? true)) rows.push(await queueMail(tx, { type: 'warning', strikeId: strike.id }));
    }
    if (type !== 'none' || text !== '') await logAction(tx, moderatorId, type === 'none' ? 'warn' : type, accountTarget(target));
    // Every report resolved here is heard by the operators' webhooks (report.updated).
    const resolved: string[] = [];
    if (report && (await reports.resolveReport(tx, report.id, moderatorId))) resolved.push(report.id);
    if (type !== 'none') resolved.push(...(await reports.resolveReportsAbout(tx, target.id, moderatorId)));
    for (const id of resolved) {
      rows.push(...(await queueWebhookEvent(tx, 'report.updated', id)));
      await logAction(tx, moderatorId, 'resolve', reportTarget(id));
    }
    return rows;
  });
  if (type !== 'none') await afterAccountChange(deps, target);
  await enqueue(deps, outbox);
}

/**
 * A change to a report (assigned, resolved, reopened, its category or rules): made with its report.updated webhook
 * deliveries and its audit log entry in one transaction, as every change to a report is heard by the operators'
 * webhooks and kept in the log.
 */
export async function changeReport(deps: ModerationDeps, by: Actor, action: ActionName, change: (tx: Queryable) => Promise<reports.ReportRow | null>): Promise<reports.ReportRow | null> {
  const { row, outbox } = await transaction(deps.db, async (tx) => {
    const row = await change(tx);
    if (row) await logAction(tx, by, action, reportTarget(row.id));
    return { row, outbox: row ? await queueWebhookEvent(tx, 'report.updated', row.id) : [] };
  });
  await enqueue(deps, outbox);
  return row;
}

const reportTarget = (id: string) => ({ type: 'Report' as const, id, name: `#${id}` });

/** The report actions of the admin API, the report page and the CLI (Mastodon's Admin::ReportsController). */
export const reportActions = {
  assignToSelf: (deps: ModerationDeps, id: string, me: string) => changeReport(deps, me, 'assigned_to_self', (tx) => reports.assignReport(tx, id, me)),
  unassign: (deps: ModerationDeps, id: string, me: Actor) => changeReport(deps, me, 'unassigned', (tx) => reports.assignReport(tx, id, null)),
  resolve: (deps: ModerationDeps, id: string, me: Actor) => changeReport(deps, me, 'resolve', (tx) => reports.resolveReport(tx, id, me)),
  reopen: (deps: ModerationDeps, id: string, me: Actor) => changeReport(deps, me, 'reopen', (tx) => reports.reopenReport(tx, id)),
};

export const COMMENT_LIMIT = 1000;

export interface ReportInput {
  accountId: string;
  statusIds: string[];
  ruleIds: string[];
  comment: string;
  category: reports.ReportCategory;
  forward: boolean;
}

/**
 * A person's report (POST /api/v1/reports): the account must be one shown here, the statuses its own, the rules this
 * server's; naming rules makes it a `violation`. Forwarded only when the account is remote: a `Flag` goes to its
 * server through the outbox of the same transaction (federation/flag.ts).
 */
export async function fileReport(deps: ModerationDeps, reporter: AccountRow, input: ReportInput): Promise<reports.ReportRow> {
  const target = await findAccountById(deps.db, input.accountId);
  if (!target) throw notFound();
  if (target.domain === null && (await moderation.usersOfAccounts(deps.db, [target.id])).get(target.id)?.approved === false) throw notFound();
  const statusIds = [...new Set(input.statusIds)];
  const owned = await reports.statusIdsOfAccount(deps.db, target.id, statusIds);
  if (statusIds.some((id) => !owned.has(id))) throw notFound();
  const ruleIds = [...new Set(input.ruleIds)];
  if (ruleIds.length > 0) {
    const known = new Set((await listRules(deps.db)).map((r) => r.id));
    if (ruleIds.some((id) => !known.has(id))) throw unprocessable('Validation failed: Rule ids contains an unknown rule');
  }
  if ([...input.comment].length > COMMENT_LIMIT) throw unprocessable(`Validation failed: Comment is too long (maximum is ${COMMENT_LIMIT} characters)`);
  const forwarded = input.forward && target.domain !== null;
  const { report, outbox } = await transaction(deps.db, async (tx) => {
    const report = (await reports.insertReport(tx, {
      accountId: reporter.id,
      targetAccountId: target.id,
      statusIds,
      ruleIds,
      comment: input.comment,
      category: ruleIds.length > 0 ? 'violation' : input.category,
      forwarded,
    }))!;
    const alerts = deps.alerts ? await alertOperatorsOfReport(tx, deps.alerts, { reportId: report.id, reporterAccountId: reporter.id, targetAccountId: target.id }) : [];
    const hooks = await queueWebhookEvent(tx, 'report.created', report.id);
    return { report, outbox: [...(forwarded ? [await queueDelivery(tx, { activity: 'Flag', reportId: report.id })] : []), ...alerts, ...hooks] };
  });
  await enqueue(deps, outbox);
  return report;
}
