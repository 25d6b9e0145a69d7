import type { Queryable } from '../storage/db.ts';
import type { NotificationType } from '../storage/notifications.ts';
import { answersPrivateMention, policyFacts, type PolicyAction, type PolicyFacts } from '../storage/notification-policy.ts';

/** The types a notification policy decides on (Mastodon's `filterable` ones); polls' ends, edits and new posts of followed accounts are always accepted. */
export const FILTERABLE_TYPES: ReadonlySet<NotificationType> = new Set(['mention', 'reblog', 'follow', 'follow_request', 'favourite', 'added_to_collection']);

/**
 * What the recipient's notification policy does with a notification (Mastodon's NotifyService DropCondition and
 * FilterCondition): `drop` makes none, `filter` keeps it aside in a notification request, `accept` lists it. A sender
 * whose request the recipient accepted is always accepted; a `drop` rule wins over a `filter` one.
 */
export async function policyVerdict(tx: Queryable, recipientId: string, senderId: string, type: NotificationType, statusId: string | null): Promise<PolicyAction> {
  if (!FILTERABLE_TYPES.has(type) || recipientId === senderId) return 'accept';
  const facts = await policyFacts(tx, recipientId, senderId, statusId);
  if (!facts || facts.permitted) return 'accept';
  let privateMention: boolean | undefined;
  const unsolicitedPrivateMention = async () => {
    if (privateMention === undefined) privateMention = type === 'mention' && facts.direct && !!statusId && !(await answersPrivateMention(tx, recipientId, senderId, statusId));
    return privateMention;
  };
  for (const action of ['drop', 'filter'] as const) {
    if (await applies(facts, action, unsolicitedPrivateMention)) return action;
  }
  return 'accept';
}

async function applies(f: PolicyFacts, action: 'drop' | 'filter', unsolicitedPrivateMention: () => Promise<boolean>): Promise<boolean> {
  if (f.for_limited_accounts === action && f.limited && !f.following) return true;
  if (f.for_not_following === action && !f.following) return true;
  if (f.for_not_followers === action && !f.follower) return true;
  if (f.for_new_accounts === action && f.new_account && !f.following) return true;
  return f.for_private_mentions === action && !f.following && (await unsolicitedPrivateMention());
}
