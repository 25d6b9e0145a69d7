import { transaction } from '../storage/db.ts';
import { queueWebhookEvent } from '../services/webhooks.ts';
import { findAccountById, updateProfile, type ProfileChanges, type ProfileUpdateResult } from '../storage/accounts.ts';
import { updateSourceDefaults, type SourceDefaults } from '../storage/users.ts';
import { removeNotification } from '../storage/notifications.ts';
import { notifyAccount } from '../services/notifications.ts';
import { streamChannels } from '../services/stream-events.ts';
import type { StatusRow, Visibility } from '../storage/statuses.ts';
import * as follows from '../storage/follows.ts';
import * as statusService from '../services/statuses.ts';
import * as pollService from '../services/polls.ts';
import { ApiError, notFound } from '../errors.ts';
import { queueDelivery } from '../services/deliveries.ts';
import { fieldsNeedVerifying, queueLinkVerification } from '../services/profile-links.ts';
import { randomUUID } from 'node:crypto';
import { homeFeedSourceIds } from '../storage/statuses.ts';
import { FEED_SIZE } from '../storage/feeds.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { followForbidden, type MuteOptions } from '../storage/blocks.ts';
import * as blockService from '../services/blocks.ts';
import * as listService from '../services/lists.ts';
import type { ListRow } from '../storage/lists.ts';
import * as scheduledService from '../services/scheduled-statuses.ts';
import type { ScheduledStatusRow } from '../storage/scheduled-statuses.ts';
import * as tagFollowService from '../services/tag-follows.ts';
import * as conversationService from '../services/conversations.ts';
import * as statusMarks from '../services/status-marks.ts';

/**
 * What an account's actor is asked to do. Each message changes what the account owns (its follows, its
 * statuses, its home feed), so one account's writes are applied one at a time, in the order they arrive. Posts that
 * arrive while the actor is busy are applied together once it is free (one transaction, each post in order: group
 * commit, actors/registry.ts), never across another message sent between them.
 */
export type AccountMessage =
  | { type: 'follow'; targetId: string; options: follows.FollowOptions }
  | { type: 'unfollow'; targetId: string; federate?: boolean }
  | { type: 'acceptRemoteFollow'; requesterId: string; followUri: string }
  | { type: 'authorizeFollowRequest'; requesterId: string }
  | { type: 'rejectFollowRequest'; requesterId: string }
  | { type: 'updateProfile'; profile: ProfileChanges; source: SourceDefaults }
  | { type: 'postStatus'; params: statusService.PostParams }
  | { type: 'deleteStatus'; statusId: string }
  | { type: 'editStatus'; statusId: string; params: statusService.EditParams }
  | { type: 'revokeQuote'; statusId: string; quotingStatusId: string }
  | { type: 'setQuotePolicy'; statusId: string; policy: string }
  | { type: 'votePoll'; pollId: string; choices: number[] }
  | { type: 'favourite'; status: StatusRow; uri?: string | null }
  | { type: 'unfavourite'; status: StatusRow }
  | { type: 'reblog'; status: StatusRow; visibility: Visibility; uri?: string }
  | { type: 'unreblog'; status: StatusRow }
  /** `accepting`: the sender has just found that the feed takes statuses (fan-out checks a thousand at once). */
  | { type: 'addToHomeFeed'; statusIds: string[]; accepting?: boolean }
  | { type: 'removeFromHomeFeed'; statusIds: string[] }
  | { type: 'rebuildHomeFeed' }
  /** `uri`: the id of a Block received from another server, whose account is then the blocker. */
  | { type: 'block'; targetId: string; uri?: string | null }
  | { type: 'unblock'; targetId: string }
  | { type: 'mute'; targetId: string; options: MuteOptions }
  | { type: 'unmute'; targetId: string }
  | { type: 'blockDomain'; domain: string }
  | { type: 'unblockDomain'; domain: string }
  | { type: 'createList'; list: listService.ListChanges }
  | { type: 'updateList'; listId: string; list: listService.ListChanges }
  | { type: 'deleteList'; listId: string }
  | { type: 'addListMembers'; listId: string; accountIds: string[] }
  | { type: 'removeListMembers'; listId: string; accountIds: string[] }
  /** Fan-out: a status by a member of these lists (all this account's, already judged by their replies policy). */
  | { type: 'addToListFeeds'; listIds: string[]; statusId: string }
  | { type: 'rebuildListFeed'; listId: string }
  | { type: 'removeFromFollowers'; followerId: string }
  /** Scheduled posts (services/scheduled-statuses.ts); their publishing is a `postStatus` with `scheduledStatusId`. */
  | { type: 'scheduleStatus'; params: statusService.PostParams; scheduledAt: Date }
  | { type: 'rescheduleStatus'; scheduledStatusId: string; scheduledAt: Date }
  | { type: 'unscheduleStatus'; scheduledStatusId: string }
  /** Followed hashtags (services/tag-follows.ts). */
  | { type: 'followTag' | 'unfollowTag'; name: string }
  /** Direct conversations (services/conversations.ts): the account's own rows. */
  | { type: 'readConversation' | 'unreadConversation' | 'removeConversation'; conversationId: string }
  /** Bookmarks, pins and muted conversations (services/status-marks.ts). */
  | { type: 'bookmark' | 'unbookmark' | 'pin' | 'unpin' | 'muteConversation' | 'unmuteConversation'; status: StatusRow };

export type AccountReply<M extends AccountMessage> =
  M extends { type: 'follow' } ? follows.FollowOutcome :
  M extends { type: 'unfollow' } ? boolean :
  M extends { type: 'authorizeFollowRequest' | 'rejectFollowRequest' } ? boolean :
  M extends { type: 'updateProfile' } ? ProfileUpdateResult :
  M extends { type: 'postStatus' | 'reblog' } ? string :
  M extends { type: 'deleteStatus' } ? StatusRow :
  M extends { type: 'createList' | 'updateList' } ? ListRow :
  M extends { type: 'scheduleStatus' | 'rescheduleStatus' } ? ScheduledStatusRow :
  M extends { type: 'followTag' | 'unfollowTag' } ? tagFollowService.FollowedTag :
  void;

export type AccountActorDeps = statusService.StatusDeps;

/**
 * Applies `postStatus` messages the registry gathered for `accountId` (actors/registry.ts), in the order sent: one
 * transaction and one commit for all (services/statuses.ts postStatuses). Each gets its own answer.
 */
export function handlePostStatuses(deps: AccountActorDeps, accountId: string, params: statusService.PostParams[]): Promise<statusService.PostOutcome[]> {
  return statusService.postStatuses(deps, accountId, params);
}

/** Applies one message for `accountId`. Every write commits inside this call (DESIGN.md: the actor's memory is only a cache). */
export async function handleAccountMessage(deps: AccountActorDeps, accountId: string, msg: AccountMessage): Promise<unknown> {
  const result = await applyMessage(deps, accountId, msg);
  // Relationship and profile changes alter Account entities (counts, fields) that readers cache.
  switch (msg.type) {
    case 'follow':
    case 'unfollow':
      await deps.versions.bump({ accounts: [accountId, msg.targetId] });
      break;
    case 'authorizeFollowRequest':
    case 'rejectFollowRequest':
      await deps.versions.bump({ accounts: [accountId, msg.requesterId] });
      break;
    case 'updateProfile':
      await deps.versions.bump({ accounts: [accountId] });
      break;
    default:
      break; // status messages bump what they change themselves (services/statuses.ts)
  }
  return result;
}

async function applyMessage(deps: AccountActorDeps, accountId: string, msg: AccountMessage): Promise<unknown> {
  switch (msg.type) {
    case 'follow': {
      const { outcome, delivery } = await transaction(deps.db, async (tx) => {
        if (msg.targetId === accountId) throw new ApiError(403, 'This action is not allowed');
        const target = await findAccountById(tx, msg.targetId);
        if (!target || target.suspended_at) throw notFound();
        // Mastodon's FollowService#following_not_allowed?: not between accounts either blocks, nor into a blocked server.
        if (await followForbidden(tx, accountId, target.id)) throw new ApiError(403, 'This action is not allowed');
        // Our Follow of a remote account gets an id of its own, which its Accept or Reject will name.
        const remoteTarget = target.domain !== null;
        const options = remoteTarget ? { ...msg.options, uri: msg.options.uri ?? `${deps.config.publicUrl}/follows/${randomUUID()}` } : msg.options;
        const result = await follows.follow(tx, accountId, target, options);
        if (target.domain === null && result === 'followed') await notifyAccount(deps, tx, target.id, accountId, 'follow');
        if (target.domain === null && result === 'requested') await notifyAccount(deps, tx, target.id, accountId, 'follow_request');
        const delivery = remoteTarget && result === 'requested'
          ? await queueDelivery(tx, { activity: 'Follow', accountId, targetId: target.id, followUri: await follows.followUri(tx, accountId, target.id) })
          : null;
        return { outcome: result, delivery };
      });
      if (delivery) await deps.jobs.enqueue(delivery).catch(() => {});
      if (outcome === 'followed') await statusService.mergeIntoHomeFeed(deps, accountId, msg.targetId);
      return outcome;
    }
    case 'acceptRemoteFollow': {
      const delivery = await queueDelivery(deps.db, { activity: 'AcceptFollow', accountId, requesterId: msg.requesterId, followUri: msg.followUri });
      await deps.jobs.enqueue(delivery).catch(() => {});
      return undefined;
    }
    case 'unfollow': {
      const { removed, delivery } = await transaction(deps.db, async (tx) => {
        const uri = await follows.followUri(tx, accountId, msg.targetId);
        const gone = await follows.unfollow(tx, accountId, msg.targetId);
        const delivery = gone && msg.federate !== false
          ? await queueDelivery(tx, { activity: 'UndoFollow', accountId, targetId: msg.targetId, followUri: uri })
          : null;
        // As in Mastodon, where a follow's and a follow request's notification are destroyed with them:
        // a withdrawn request must not stay in the target's notifications, and a later follow notifies afresh.
        if (gone) {
          await removeNotification(tx, msg.targetId, accountId, 'follow');
          await removeNotification(tx, msg.targetId, accountId, 'follow_request');
        }
        return { removed: gone, delivery };
      });
      if (delivery) await deps.jobs.enqueue(delivery).catch(() => {});
      await statusService.unmergeFromHomeFeed(deps, accountId, msg.targetId);
      return removed;
    }
    case 'authorizeFollowRequest':
    case 'rejectFollowRequest': {
      const { done, delivery } = await transaction(deps.db, async (tx) => {
        const uri = await follows.followUri(tx, msg.requesterId, accountId);
        const found = msg.type === 'authorizeFollowRequest'
          ? await follows.authorizeFollowRequest(tx, accountId, msg.requesterId)
          : await follows.rejectFollowRequest(tx, accountId, msg.requesterId);
        if (found) await removeNotification(tx, accountId, msg.requesterId, 'follow_request');
        // The requester hears of the decision (the delivery job sends only from a local account to a remote one).
        const activity = msg.type === 'authorizeFollowRequest' ? 'AcceptFollow' : 'RejectFollow';
        const delivery = found ? await queueDelivery(tx, { activity, accountId, requesterId: msg.requesterId, followUri: uri }) : null;
        return { done: found, delivery };
      });
      if (delivery) await deps.jobs.enqueue(delivery).catch(() => {});
      if (done && msg.type === 'authorizeFollowRequest') await statusService.mergeIntoHomeFeed(deps, msg.requesterId, accountId);
      return done;
    }
    case 'updateProfile': {
      const deliveries: OutboxRow[] = [];
      const { result, authorized } = await transaction(deps.db, async (tx) => {
        await updateSourceDefaults(tx, accountId, msg.source);
        const result = await updateProfile(tx, accountId, msg.profile);
        // Unlocking accepts every pending follow request, as Mastodon's UpdateAccountService does.
        const authorized = msg.profile.locked === false ? await follows.authorizeAllFollowRequests(tx, accountId) : [];
        // Other servers refresh the profile (the delivery job sends nothing when no remote account follows).
        deliveries.push(await queueDelivery(tx, { activity: 'UpdatePerson', accountId }));
        // Operators' webhooks hear of the edit (account.updated).
        deliveries.push(...(await queueWebhookEvent(tx, 'account.updated', accountId)));
        // Links in the fields not verified yet are checked (Mastodon's VerifyAccountLinksWorker).
        if (msg.profile.fields && fieldsNeedVerifying(result.account)) deliveries.push(await queueLinkVerification(tx, accountId));
        for (const requesterId of authorized) {
          deliveries.push(await queueDelivery(tx, { activity: 'AcceptFollow', accountId, requesterId, followUri: await follows.followUri(tx, requesterId, accountId) }));
        }
        if (authorized.length === 0) return { result, authorized };
        for (const requesterId of authorized) await removeNotification(tx, accountId, requesterId, 'follow_request');
        // The counts moved after the profile row was returned.
        return { result: { ...result, account: (await findAccountById(tx, accountId))! }, authorized };
      });
      for (const d of deliveries) await deps.jobs.enqueue(d).catch(() => {});
      if (authorized.length > 0) {
        await deps.versions.bump({ accounts: authorized });
        for (const requesterId of authorized) await statusService.mergeIntoHomeFeed(deps, requesterId, accountId);
      }
      return result;
    }
    case 'postStatus':
      return statusService.postStatus(deps, accountId, msg.params);
    case 'deleteStatus':
      return statusService.deleteStatus(deps, accountId, msg.statusId);
    case 'editStatus':
      return statusService.editStatus(deps, accountId, msg.statusId, msg.params);
    case 'revokeQuote':
      return statusService.revokeQuote(deps, accountId, msg.statusId, msg.quotingStatusId);
    case 'setQuotePolicy':
      return statusService.setQuotePolicy(deps, accountId, msg.statusId, msg.policy);
    case 'votePoll':
      return pollService.vote(deps, accountId, msg.pollId, msg.choices);
    case 'favourite':
      return statusService.favouriteStatus(deps, accountId, msg.status, msg.uri ?? null);
    case 'unfavourite':
      return statusService.unfavouriteStatus(deps, accountId, msg.status);
    case 'reblog':
      return statusService.reblogStatus(deps, accountId, msg.status, msg.visibility, msg.uri ?? null);
    case 'unreblog':
      return statusService.unreblogStatus(deps, accountId, msg.status);
    // The home feed is this account's own: fan-out and deletions of others' statuses reach it through here, so
    // they take turns with its follows, unfollows and rebuilds.
    case 'addToHomeFeed':
      // The home stream has been told by the fan-out job (jobs/fanout.ts).
      if (msg.accepting || (await deps.feeds.accepts(accountId))) await deps.feeds.add(accountId, msg.statusIds);
      return undefined;
    case 'removeFromHomeFeed':
      await deps.feeds.remove([accountId], msg.statusIds);
      // At once rather than one round trip after another: a batch of purged posts names hundreds.
      await Promise.all(msg.statusIds.map((statusId) => deps.events.publish(streamChannels.home(accountId), { event: 'delete', statusId })));
      return undefined;
    case 'block':
      return blockService.blockAccount(deps, accountId, msg.targetId, msg.uri ?? null);
    case 'unblock':
      return blockService.unblockAccount(deps, accountId, msg.targetId);
    case 'mute':
      return blockService.muteAccount(deps, accountId, msg.targetId, msg.options);
    case 'unmute':
      return blockService.unmuteAccount(deps, accountId, msg.targetId);
    case 'blockDomain':
      return blockService.blockDomain(deps, accountId, msg.domain);
    case 'unblockDomain':
      return blockService.unblockDomain(deps, accountId, msg.domain);
    case 'createList':
      return listService.createList(deps, accountId, msg.list);
    case 'updateList':
      return listService.updateList(deps, accountId, msg.listId, msg.list);
    case 'deleteList':
      return listService.deleteList(deps, accountId, msg.listId);
    case 'addListMembers':
      return listService.addMembers(deps, accountId, msg.listId, msg.accountIds);
    case 'removeListMembers':
      return listService.removeMembers(deps, accountId, msg.listId, msg.accountIds);
    case 'addToListFeeds':
      for (const listId of msg.listIds) await deps.listFeeds.addIfAccepting(listId, [msg.statusId]);
      await deps.events.publish(msg.listIds.map((id) => streamChannels.list(id)), { event: 'update', statusId: msg.statusId });
      return undefined;
    case 'rebuildListFeed':
      return listService.rebuildListFeed(deps, accountId, msg.listId);
    case 'removeFromFollowers': {
      // Mastodon's RemoveFromFollowersService: the follow ends; a remote follower's server is sent a Reject of it.
      const { removed, delivery } = await transaction(deps.db, async (tx) => {
        const uri = await follows.followUri(tx, msg.followerId, accountId);
        const gone = await follows.unfollow(tx, msg.followerId, accountId);
        const delivery = gone ? await queueDelivery(tx, { activity: 'RejectFollow', accountId, requesterId: msg.followerId, followUri: uri }) : null;
        return { removed: gone, delivery };
      });
      if (delivery) await deps.jobs.enqueue(delivery).catch(() => {});
      if (removed) {
        await deps.versions.bump({ accounts: [accountId, msg.followerId] });
        await statusService.unmergeFromHomeFeed(deps, msg.followerId, accountId);
      }
      return undefined;
    }
    case 'bookmark':
    case 'unbookmark':
    case 'pin':
    case 'unpin':
    case 'muteConversation':
    case 'unmuteConversation':
      return statusMarks[msg.type](deps, accountId, msg.status);
    case 'scheduleStatus':
      return scheduledService.scheduleStatus(deps, accountId, msg.params, msg.scheduledAt);
    case 'rescheduleStatus':
      return scheduledService.rescheduleStatus(deps, accountId, msg.scheduledStatusId, msg.scheduledAt);
    case 'unscheduleStatus':
      return scheduledService.unscheduleStatus(deps, accountId, msg.scheduledStatusId);
    case 'followTag':
      return tagFollowService.followTag(deps, accountId, msg.name);
    case 'unfollowTag':
      return tagFollowService.unfollowTag(deps, accountId, msg.name);
    case 'readConversation':
    case 'unreadConversation':
      return conversationService.markRead(deps, accountId, msg.conversationId, msg.type === 'unreadConversation');
    case 'removeConversation':
      return conversationService.remove(deps, accountId, msg.conversationId);
    case 'rebuildHomeFeed':
      // Readers that found the feed missing at once all ask; the first rebuilds it, the others find it built.
      if (!(await deps.feeds.isReady(accountId))) await deps.feeds.rebuild(accountId, () => homeFeedSourceIds(deps.db, accountId, FEED_SIZE));
      return undefined;
  }
}
