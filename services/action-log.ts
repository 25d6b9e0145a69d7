import type { Queryable } from '../storage/db.ts';
import { insertActionLog } from '../storage/action-logs.ts';

/**
 * The operators' audit log (Mastodon's Admin::ActionLog). Every service that acts for an operator calls `logAction`
 * with the transaction of the action itself, so an action and its entry are written together or not at all.
 */

/** The kinds of things operators act on, as Mastodon names them (its target_type). */
export const TARGET_TYPES = [
  'Account', 'Report', 'AccountWarning', 'Appeal', 'AccountModerationNote', 'ReportNote', 'Announcement', 'Webhook',
  'DomainBlock', 'DomainAllow', 'IpBlock', 'EmailDomainBlock', 'CanonicalEmailBlock', 'UserRole', 'User', 'CustomEmoji',
  'AdminSettings', 'Rule', 'Relay', 'UsernameBlock',
  // Not Mastodon's: a job of the queues (its Sidekiq pages log nothing).
  'Job',
] as const;
export type TargetType = (typeof TARGET_TYPES)[number];

/** The actions written, for the page's filter (Mastodon's names where it has one). */
export const ACTIONS = [
  'approve', 'reject', 'warn', 'sensitive', 'unsensitive', 'disable', 'enable', 'silence', 'unsilence', 'suspend', 'unsuspend',
  'destroy', 'create', 'update', 'publish', 'unpublish', 'rotate_secret',
  'assigned_to_self', 'unassigned', 'resolve', 'reopen', 'change_role', 'copy', 'retry',
] as const;
export type ActionName = (typeof ACTIONS)[number];

export interface ActionTarget {
  type: TargetType;
  id: string | null;
  /** What the entry calls it once it is gone: an acct, a domain, an address range, a report's number. */
  name: string;
}

/**
 * Who acts: an operator's account id, or null for the command line run without --as. A service called without one
 * (undefined) does something that is no operator's doing (a scheduled job, a person's own deletion) and logs nothing.
 */
export type Actor = string | null;

export async function logAction(tx: Queryable, actor: Actor | undefined, action: ActionName, target: ActionTarget): Promise<void> {
  if (actor === undefined) return;
  await insertActionLog(tx, { accountId: actor ?? null, action, targetType: target.type, targetId: target.id, humanIdentifier: target.name });
}

/** An account as the log names it. */
export function accountTarget(a: { id: string; username: string; domain: string | null }): ActionTarget {
  return { type: 'Account', id: a.id, name: a.domain ? `${a.username}@${a.domain}` : a.username };
}
