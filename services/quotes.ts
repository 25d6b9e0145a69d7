import type { Queryable } from '../storage/db.ts';
import { findStatus, type StatusRow, type Visibility } from '../storage/statuses.ts';
import { isId } from '../storage/ids.ts';
import { ApiError } from '../errors.ts';
import { canSee } from './visibility.ts';

/** What `quote_approval_policy` (posting, editing, interaction_policy) and `source[quote_policy]` take. */
export const QUOTE_POLICIES = ['public', 'followers', 'nobody'] as const;
export type QuotePolicy = (typeof QUOTE_POLICIES)[number];

export type QuoteApprovalForViewer = 'automatic' | 'manual' | 'denied' | 'unknown';

/** A policy as sent, or a 422 for anything else (absent and empty: none given). */
export function parseQuotePolicy(value: unknown, name = 'quote_approval_policy'): QuotePolicy | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string' && (QUOTE_POLICIES as readonly string[]).includes(value)) return value as QuotePolicy;
  throw new ApiError(422, `Validation failed: ${name} is not one of ${QUOTE_POLICIES.join(', ')}`);
}

/** Private and direct posts can be quoted by nobody but their author: their policy says nobody (Mastodon's downgrade_quote_policy). */
export function effectiveQuotePolicy(visibility: Visibility, policy: string | undefined): string {
  return visibility === 'private' || visibility === 'direct' ? 'nobody' : (policy ?? 'public');
}

/**
 * Mastodon's Status#quote_policy_for_account: nobody anonymous, no direct post and no boost; the author always; no
 * other account for a private post; then the policy (`followers`: the viewer follows the author). Local posts have
 * automatic policies only, so `manual` and `unknown` do not arise yet.
 */
export function quotePolicyFor(status: StatusRow, viewerId: string | null, viewerFollowsAuthor: boolean): QuoteApprovalForViewer {
  if (!viewerId || status.visibility === 'direct' || status.reblog_of_id) return 'denied';
  if (status.account_id === viewerId) return 'automatic';
  if (status.visibility === 'private') return 'denied';
  const policy = effectiveQuotePolicy(status.visibility, status.quote_approval_policy);
  if (policy === 'public') return 'automatic';
  if (policy === 'followers' && viewerFollowsAuthor) return 'automatic';
  return 'denied';
}

/** The Status entity's `quote_approval` (QuoteApproval) for this viewer. */
export function quoteApproval(status: StatusRow, viewerId: string | null, viewerFollowsAuthor: boolean): { automatic: string[]; manual: string[]; current_user: QuoteApprovalForViewer } {
  const policy = effectiveQuotePolicy(status.visibility, status.quote_approval_policy);
  return {
    automatic: policy === 'nobody' ? [] : [policy],
    manual: [],
    current_user: quotePolicyFor(status, viewerId, viewerFollowsAuthor),
  };
}

export async function follows(db: Queryable, accountId: string, targetId: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM follows WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
  return (rowCount ?? 0) > 0;
}

/** The viewer's follows among these accounts (for `followers` policies). */
export async function followedAmong(db: Queryable, viewerId: string, accountIds: string[]): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const { rows } = await db.query<{ target_account_id: string }>(
    `SELECT target_account_id FROM follows WHERE account_id = $1 AND target_account_id = ANY($2::bigint[])`, [viewerId, accountIds],
  );
  return new Set(rows.map((r) => r.target_account_id));
}

const NOT_FOUND = 'The post you are trying to quote does not appear to exist.';

/**
 * The status an account may quote by this id (a boost stands for its original), as Mastodon's StatusPolicy#quote?
 * decides: one it may see (so not one whose author blocks it) whose policy lets it quote. Anything else is
 * Mastodon's 404, which does not tell a post one may not quote from one that does not exist.
 */
export async function quotableStatus(db: Queryable, accountId: string, id: string): Promise<StatusRow> {
  let status = isId(id) ? await findStatus(db, id) : null;
  if (status?.reblog_of_id) status = await findStatus(db, status.reblog_of_id);
  if (!status || !(await canSee(db, accountId, status))) throw new ApiError(404, NOT_FOUND);
  const following = status.quote_approval_policy === 'followers' && status.account_id !== accountId ? await follows(db, accountId, status.account_id) : false;
  if (quotePolicyFor(status, accountId, following) === 'denied') throw new ApiError(404, NOT_FOUND);
  return status;
}
