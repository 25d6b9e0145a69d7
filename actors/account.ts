import { transaction, type Db } from '../storage/db.ts';
import { findAccountById, updateProfile, type AccountRow, type ProfileChanges } from '../storage/accounts.ts';
import { updateSourceDefaults, type SourceDefaults } from '../storage/users.ts';
import * as follows from '../storage/follows.ts';
import { ApiError, notFound } from '../errors.ts';

/**
 * What an account's actor is asked to do. Each message changes the account's own follows,
 * so one account's writes are applied one at a time, in the order they arrive.
 */
export type AccountMessage =
  | { type: 'follow'; targetId: string; options: follows.FollowOptions }
  | { type: 'unfollow'; targetId: string }
  | { type: 'authorizeFollowRequest'; requesterId: string }
  | { type: 'rejectFollowRequest'; requesterId: string }
  | { type: 'updateProfile'; profile: ProfileChanges; source: SourceDefaults };

export type AccountReply<M extends AccountMessage> =
  M extends { type: 'follow' } ? follows.FollowOutcome :
  M extends { type: 'unfollow' } ? boolean :
  M extends { type: 'authorizeFollowRequest' | 'rejectFollowRequest' } ? boolean :
  M extends { type: 'updateProfile' } ? AccountRow :
  never;

export interface AccountActorDeps {
  db: Db;
}

/** Applies one message for `accountId`. Every write commits inside this call (DESIGN.md: the actor's memory is only a cache). */
export async function handleAccountMessage(deps: AccountActorDeps, accountId: string, msg: AccountMessage): Promise<unknown> {
  switch (msg.type) {
    case 'follow':
      return transaction(deps.db, async (tx) => {
        if (msg.targetId === accountId) throw new ApiError(403, 'This action is not allowed');
        const target = await findAccountById(tx, msg.targetId);
        if (!target || target.suspended_at) throw notFound();
        return follows.follow(tx, accountId, target, msg.options);
      });
    case 'unfollow':
      return transaction(deps.db, (tx) => follows.unfollow(tx, accountId, msg.targetId));
    case 'authorizeFollowRequest':
      return transaction(deps.db, (tx) => follows.authorizeFollowRequest(tx, accountId, msg.requesterId));
    case 'rejectFollowRequest':
      return transaction(deps.db, (tx) => follows.rejectFollowRequest(tx, accountId, msg.requesterId));
    case 'updateProfile':
      return transaction(deps.db, async (tx) => {
        await updateSourceDefaults(tx, accountId, msg.source);
        return updateProfile(tx, accountId, msg.profile);
      });
  }
}
