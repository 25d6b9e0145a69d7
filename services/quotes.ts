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
 * Who a post's author lets quote it, in the words of Mastodon's API (`quote_approval.automatic` / `.manual`, its
 * QUOTE_APPROVAL_POLICY_FLAGS in this order). `following` is never produced here: the author's following collection
 * is not stored, so a rule naming it counts as `unsupported_policy`, as any other actor or collection does.
 */
export const QUOTE_POLICY_KEYS = ['unsupported_policy', 'public', 'followers', 'following'] as const;
export type QuotePolicyKey = (typeof QUOTE_POLICY_KEYS)[number];
export interface QuotePolicyRules { automatic: QuotePolicyKey[]; manual: QuotePolicyKey[] }

/**
 * How a remote post's rules are kept in `statuses.quote_approval_policy` (local posts keep `public`, `followers` or
 * `nobody`): `<automatic>/<manual>`, each a comma-separated list of keys, e.g. `public/`, `/followers`, `/` (nobody
 * but the author, or a Note that says nothing: Mastodon's policy 0). Remote rows stored before policies were read
 * hold the old default `public` and are read as it says.
 */
export function encodeRemoteQuotePolicy(rules: QuotePolicyRules): string {
  const keys = (l: QuotePolicyKey[]) => QUOTE_POLICY_KEYS.filter((k) => l.includes(k)).join(',');
  return `${keys(rules.automatic)}/${keys(rules.manual)}`;
}

/** A status's rules as stored (see encodeRemoteQuotePolicy); a local private or direct post's say nobody. */
export function quotePolicyRules(status: Pick<StatusRow, 'visibility' | 'quote_approval_policy' | 'uri'>): QuotePolicyRules {
  const raw = status.quote_approval_policy ?? 'public';
  const slash = raw.indexOf('/');
  if (slash >= 0) {
    const keys = (part: string) => QUOTE_POLICY_KEYS.filter((k) => part.split(',').includes(k));
    return { automatic: keys(raw.slice(0, slash)), manual: keys(raw.slice(slash + 1)) };
  }
  const policy = status.uri === null ? effectiveQuotePolicy(status.visibility, raw) : raw;
  return { automatic: policy === 'public' ? ['public'] : policy === 'followers' ? ['followers'] : [], manual: [] };
}

/**
 * Mastodon's Status#quote_policy_for_account: nobody anonymous, no direct post and no boost; the author always; no
 * other account for a private post; then the automatic rules, then the manual ones (`followers`: the viewer follows
 * the author); `unknown` when a rule named someone we cannot place, else denied.
 */
export function quotePolicyFor(status: StatusRow, viewerId: string | null, viewerFollowsAuthor: boolean): QuoteApprovalForViewer {
  if (!viewerId || status.visibility === 'direct' || status.reblog_of_id) return 'denied';
  if (status.account_id === viewerId) return 'automatic';
  if (status.visibility === 'private') return 'denied';
  const { automatic, manual } = quotePolicyRules(status);
  if (automatic.includes('public') || (automatic.includes('followers') && viewerFollowsAuthor)) return 'automatic';
  if (manual.includes('public') || (manual.includes('followers') && viewerFollowsAuthor)) return 'manual';
  if (automatic.includes('unsupported_policy') || manual.includes('unsupported_policy')) return 'unknown';
  return 'denied';
}

/** Whether the viewer's follow of the author could change what quotePolicyFor says (a `followers` rule). */
export function policyNamesFollowers(status: StatusRow): boolean {
  const { automatic, manual } = quotePolicyRules(status);
  return automatic.includes('followers') || manual.includes('followers');
}

/** The Status entity's `quote_approval` (QuoteApproval) for this viewer. */
export function quoteApproval(status: StatusRow, viewerId: string | null, viewerFollowsAuthor: boolean): { automatic: string[]; manual: string[]; current_user: QuoteApprovalForViewer } {
  const { automatic, manual } = quotePolicyRules(status);
  return { automatic, manual, current_user: quotePolicyFor(status, viewerId, viewerFollowsAuthor) };
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
  const following = policyNamesFollowers(status) && status.account_id !== accountId ? await follows(db, accountId, status.account_id) : false;
  if (quotePolicyFor(status, accountId, following) === 'denied') throw new ApiError(404, NOT_FOUND);
  return status;
}
