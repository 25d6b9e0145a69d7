import { randomUUID } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { transaction } from '../storage/db.ts';
import { findAccountById } from '../storage/accounts.ts';
import * as follows from '../storage/follows.ts';
import * as blocks from '../storage/blocks.ts';
import { removeNotification } from '../storage/notifications.ts';
import type { OutboxRow } from '../storage/outbox.ts';
import { ApiError, notFound, unprocessable } from '../errors.ts';
import { queueDelivery } from './deliveries.ts';
import { unmergeFromHomeFeed, type StatusDeps } from './statuses.ts';

// Blocks, mutes and domain blocks, applied by the blocker's actor (actors/account.ts): what they change is theirs.

/** How many of a blocked domain's follows are undone per transaction. */
const DOMAIN_BATCH = 500;

/**
 * Removes the follows (and requests) between two accounts in both directions, inside the caller's transaction,
 * with what tells remote servers so: an Undo of ours, a Reject of theirs (as Mastodon's UnfollowService and
 * RejectFollowService do). Returns whether each direction had anything.
 */
async function severFollows(tx: Parameters<typeof follows.unfollow>[0], accountId: string, targetId: string, deliveries: OutboxRow[]) {
  const ourUri = await follows.followUri(tx, accountId, targetId);
  const theirUri = await follows.followUri(tx, targetId, accountId);
  const ours = await follows.unfollow(tx, accountId, targetId);
  const theirs = await follows.unfollow(tx, targetId, accountId);
  if (ours) {
    deliveries.push(await queueDelivery(tx, { activity: 'UndoFollow', accountId, targetId, followUri: ourUri }));
    await removeNotification(tx, targetId, accountId, 'follow');
    await removeNotification(tx, targetId, accountId, 'follow_request');
  }
  if (theirs) {
    deliveries.push(await queueDelivery(tx, { activity: 'RejectFollow', accountId, requesterId: targetId, followUri: theirUri }));
    await removeNotification(tx, accountId, targetId, 'follow');
    await removeNotification(tx, accountId, targetId, 'follow_request');
  }
  return { ours, theirs };
}

async function afterSevering(deps: StatusDeps, accountId: string, targetId: string, severed: { ours: boolean; theirs: boolean }) {
  if (severed.ours) await unmergeFromHomeFeed(deps, accountId, targetId);
  if (severed.theirs) await unmergeFromHomeFeed(deps, targetId, accountId);
}

async function enqueue(deps: StatusDeps, deliveries: OutboxRow[]) {
  // The outbox sweeper sends whatever is not queued here (a crash between commit and enqueue loses nothing).
  for (const d of deliveries) await deps.jobs.enqueue(d).catch(() => {});
}

/**
 * `accountId` blocks `targetId`, as Mastodon's BlockService: follows both ways end, and a remote account's server is
 * sent a Block. `uri`: the id of a Block received from another server (its blocker is then the remote account).
 */
export async function blockAccount(deps: StatusDeps, accountId: string, targetId: string, uri: string | null = null): Promise<void> {
  const deliveries: OutboxRow[] = [];
  const severed = await transaction(deps.db, async (tx) => {
    if (targetId === accountId) throw new ApiError(403, 'This action is not allowed');
    const [me, target] = [await findAccountById(tx, accountId), await findAccountById(tx, targetId)];
    if (!me || !target) throw notFound();
    const blockUri = uri ?? (me.domain === null && target.domain !== null ? `${deps.config.publicUrl}/blocks/${randomUUID()}` : null);
    const created = await blocks.insertBlock(tx, accountId, targetId, blockUri);
    const severed = await severFollows(tx, accountId, targetId, deliveries);
    if (created && me.domain === null && target.domain !== null) deliveries.push(await queueDelivery(tx, { activity: 'Block', accountId, targetId, blockUri }));
    return severed;
  });
  await deps.versions.bump({ accounts: [accountId, targetId], relations: [accountId, targetId] });
  await enqueue(deps, deliveries);
  await afterSevering(deps, accountId, targetId, severed);
}

export async function unblockAccount(deps: StatusDeps, accountId: string, targetId: string): Promise<void> {
  const deliveries: OutboxRow[] = [];
  await transaction(deps.db, async (tx) => {
    const [me, target] = [await findAccountById(tx, accountId), await findAccountById(tx, targetId)];
    if (!me || !target) throw notFound();
    const removed = await blocks.deleteBlock(tx, accountId, targetId);
    if (removed && me.domain === null && target.domain !== null) {
      deliveries.push(await queueDelivery(tx, { activity: 'UndoBlock', accountId, targetId, blockUri: removed.uri }));
    }
  });
  await deps.versions.bump({ relations: [accountId, targetId] });
  await enqueue(deps, deliveries);
}

/** A mute's longest duration in seconds (ten years): past it "until unmuted" is meant. */
export const MAX_MUTE_SECONDS = 315_360_000;

/**
 * A mute's options as Mastodon's `mute` takes them: notifications hidden unless told otherwise, and a duration in
 * seconds after which it ends (0 or none: until unmuted).
 */
export function muteOptions(notifications: boolean | undefined, durationSeconds: number | null | undefined, now = Date.now()): blocks.MuteOptions {
  const duration = durationSeconds ?? 0;
  return { notifications: notifications ?? true, expiresAt: duration > 0 ? new Date(now + duration * 1000) : null };
}

/** Mutes (or changes a mute's options): nothing is sent anywhere; the muted account is not told. */
export async function muteAccount(deps: StatusDeps, accountId: string, targetId: string, o: blocks.MuteOptions): Promise<void> {
  if (targetId === accountId) throw new ApiError(403, 'This action is not allowed');
  const target = await findAccountById(deps.db, targetId);
  if (!target) throw notFound();
  await blocks.upsertMute(deps.db, accountId, targetId, o);
  await deps.versions.bump({ relations: [accountId] });
}

export async function unmuteAccount(deps: StatusDeps, accountId: string, targetId: string): Promise<void> {
  if (await blocks.deleteMute(deps.db, accountId, targetId)) await deps.versions.bump({ relations: [accountId] });
}

/** A domain as Mastodon stores one (lower case, IDN as punycode), taken from a bare host or a pasted URL; or a 422. */
export function normalizeDomain(input: string | undefined): string {
  const raw = (input ?? '').trim();
  if (!raw) throw unprocessable("Validation failed: Domain can't be blank");
  let host = raw;
  try {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) host = new URL(raw).host;
  } catch {
    /* judged below as it is */
  }
  const [name, port] = host.toLowerCase().split(/:(?=\d+$)/) as [string, string | undefined];
  const ascii = domainToASCII(name.replace(/\.$/, ''));
  if (!ascii || !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(ascii) || ascii.length > 253) {
    throw unprocessable('Validation failed: Domain is not a valid domain name');
  }
  return port ? `${ascii}:${port}` : ascii;
}

/**
 * Blocks a whole server for one person, as Mastodon's BlockDomainFromAccountService and its after-service: their
 * follows of its accounts and its accounts' follows of them (and requests) end, in batches.
 */
export async function blockDomain(deps: StatusDeps, accountId: string, domain: string): Promise<void> {
  if (domain === deps.config.localDomain.toLowerCase()) throw new ApiError(422, 'Validation failed: Domain cannot be your own server');
  await blocks.insertDomainBlock(deps.db, accountId, domain);
  await deps.versions.bump({ relations: [accountId] });
  for (;;) {
    const batch = await blocks.domainRelationsBatch(deps.db, accountId, domain, DOMAIN_BATCH);
    const others = [...new Set([...batch.followers, ...batch.following, ...batch.requesters, ...batch.requested])];
    if (others.length === 0) break;
    const deliveries: OutboxRow[] = [];
    const severed = await transaction(deps.db, async (tx) => {
      const out: [string, { ours: boolean; theirs: boolean }][] = [];
      for (const other of others) out.push([other, await severFollows(tx, accountId, other, deliveries)]);
      return out;
    });
    await deps.versions.bump({ accounts: [accountId, ...others] });
    await enqueue(deps, deliveries);
    for (const [other, s] of severed) await afterSevering(deps, accountId, other, s);
  }
}

export async function unblockDomain(deps: StatusDeps, accountId: string, domain: string): Promise<void> {
  if (await blocks.deleteDomainBlock(deps.db, accountId, domain)) await deps.versions.bump({ relations: [accountId] });
}
