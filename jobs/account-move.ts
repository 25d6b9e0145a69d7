import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { findAccountsByIds } from '../storage/accounts.ts';
import { blocksAndMutesToCarry, localFollowsBatch } from '../storage/account-moves.ts';
import { notesAbout, prependAccountNote } from '../storage/account-notes.ts';
import { addRequestedListMembers } from '../storage/lists.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { queueAccountMove, type AccountMovePayload } from '../services/account-migration.ts';

/** Followers moved per job; the next batch is another job (queued from its own outbox row), so none runs long. */
export const MOVE_BATCH = 100;
/** Notes, blocks and mutes read per query while carrying them over. */
const RELATION_BATCH = 200;

/**
 * An account moved (services/account-migration.ts, federation/move.ts): as Mastodon's MoveWorker and
 * UnfollowFollowWorker, each local follower of the old account follows the new one with the same options (a locked
 * or remote one gets a request) and the lists that held the old account hold the new one when the follow is
 * immediate (on the request when it is one), then unfollows the old one. After the last batch, notes on the old
 * account are copied to the new one, and local blocks and mutes of the old account carried over to it. A follower
 * who may not follow the new account (a block) keeps the old follow.
 */
export async function runAccountMove(ctx: AppContext, job: AccountMovePayload): Promise<void> {
  const [origin, target] = await orderedAccounts(ctx, job.accountId, job.targetId);
  if (!origin || !target) return;
  // A move cancelled (or replaced) meanwhile stops here.
  if (origin.moved_to_account_id !== target.id) return;
  const follows = await localFollowsBatch(ctx.db, origin.id, job.after ?? '0', MOVE_BATCH);
  for (const f of follows) {
    if (f.accountId === target.id) continue; // the new account following the old one has nothing to move
    const outcome = await ctx.actors
      .ask(f.accountId, { type: 'follow', targetId: target.id, options: { reblogs: f.showReblogs, notify: f.notify, languages: f.languages } })
      .catch((err: unknown) => {
        if (err instanceof ApiError && err.statusCode < 500) return null; // not allowed (a block): the old follow stays
        throw err;
      });
    if (outcome === null) continue;
    if (outcome === 'requested') {
      // Mastodon 4.x keeps the lists on the request; its posts reach the lists once it is accepted.
      if (f.listIds.length > 0) await addRequestedListMembers(ctx.db, f.accountId, f.listIds, target.id);
    } else {
      for (const listId of f.listIds) await ctx.actors.ask(f.accountId, { type: 'addListMembers', listId, accountIds: [target.id] }).catch(() => {});
    }
    await ctx.actors.ask(f.accountId, { type: 'unfollow', targetId: origin.id });
  }
  if (follows.length === MOVE_BATCH) {
    const next = await queueAccountMove(ctx.db, { accountId: origin.id, targetId: target.id, after: follows.at(-1)!.followId });
    await ctx.jobs.enqueue(next).catch(() => {}); // the sweeper queues it otherwise
    return;
  }
  await copyNotes(ctx, origin, target);
  await carryOver(ctx, 'block', origin.id, target.id);
  await carryOver(ctx, 'mute', origin.id, target.id);
}

/** As Mastodon's copy_account_notes!: each note on the old account heads the owner's note on the new one, saying whence. */
async function copyNotes(ctx: AppContext, origin: AccountRow, target: AccountRow): Promise<void> {
  const acct = origin.domain === null ? `${origin.username}@${ctx.config.localDomain}` : `${origin.username}@${origin.domain}`;
  let after = '0';
  for (;;) {
    const batch = await notesAbout(ctx.db, origin.id, after, RELATION_BATCH);
    for (const n of batch) await prependAccountNote(ctx.db, n.accountId, target.id, `Your note on @${acct}, who moved here:\n${n.comment}`);
    if (batch.length < RELATION_BATCH) return;
    after = batch.at(-1)!.id;
  }
}

async function orderedAccounts(ctx: AppContext, originId: string, targetId: string) {
  const rows = await findAccountsByIds(ctx.db, [originId, targetId]);
  return [rows.find((r) => r.id === originId) ?? null, rows.find((r) => r.id === targetId) ?? null] as const;
}

/** Local blocks (or mutes) of the old account, given to the new one, except where it is blocked (muted) or followed already. */
async function carryOver(ctx: AppContext, kind: 'block' | 'mute', originId: string, targetId: string): Promise<void> {
  let after = '0';
  for (;;) {
    const batch = await blocksAndMutesToCarry(ctx.db, kind, originId, targetId, after, RELATION_BATCH);
    for (const r of batch) {
      const msg = kind === 'block'
        ? { type: 'block' as const, targetId }
        : { type: 'mute' as const, targetId, options: { notifications: r.notifications, expiresAt: r.expiresAt } };
      await ctx.actors.ask(r.accountId, msg).catch(() => {});
    }
    if (batch.length < RELATION_BATCH) return;
    after = batch.at(-1)!.id;
  }
}
