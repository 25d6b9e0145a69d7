import { transaction, type Db, type Queryable } from '../storage/db.ts';
import type { NotificationType } from '../storage/notifications.ts';
import {
  acceptSenders, answersPrivateMention, dismissSenders, lockRequests, pendingSummary, policyFacts, updatePolicy,
  type NotificationPolicy, type PolicyAction, type PolicyFacts,
} from '../storage/notification-policy.ts';
import { notFound } from '../errors.ts';
import { isId } from '../storage/ids.ts';

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

/**
 * Accepts or dismisses the recipient's notification requests among these ids (Mastodon's bulk accept and dismiss
 * ignore ids that are not theirs); with `one`, that one request must be theirs, else 404. Accepting merges the
 * sender's filtered notifications at once, in the transaction.
 */
export async function settleRequests(db: Db, recipientId: string, ids: string[], how: 'accept' | 'dismiss', one = false): Promise<void> {
  const wanted = ids.filter((id) => isId(id));
  if (one && wanted.length === 0) throw notFound();
  if (wanted.length === 0) return;
  await transaction(db, async (tx) => {
    const senders = await lockRequests(tx, recipientId, wanted);
    if (one && senders.length === 0) throw notFound();
    if (senders.length > 0) await (how === 'accept' ? acceptSenders : dismissSenders)(tx, recipientId, senders);
  });
}

/** Changes the recipient's notification policy (what is not named stays); the policy as it is then. */
export function changePolicy(db: Db, recipientId: string, changes: Partial<NotificationPolicy>): Promise<NotificationPolicy> {
  return transaction(db, (tx) => updatePolicy(tx, recipientId, changes));
}

/** The NotificationPolicy entity's fields: the policy and the summary of what waits. */
export async function policyWithSummary(db: Queryable, recipientId: string, policy: NotificationPolicy) {
  return { ...policy, summary: await pendingSummary(db, recipientId) };
}
