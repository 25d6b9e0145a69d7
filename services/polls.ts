import type { Queryable } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import * as polls from '../storage/polls.ts';
import { findStatus } from '../storage/statuses.ts';
import { findAccountById } from '../storage/accounts.ts';
import { notFound, unprocessable } from '../errors.ts';
import { canSee } from './visibility.ts';
import { blockedEitherWay } from '../storage/blocks.ts';
import { notifyAccount } from './notifications.ts';
import { queueDelivery } from './deliveries.ts';
import type { StatusDeps } from './statuses.ts';

/** Mastodon's limits, as the instance entity shows them (http/serializers/instance.ts). */
export const POLL_LIMITS = { maxOptions: 4, maxCharactersPerOption: 50, minExpiration: 300, maxExpiration: 2_629_746 } as const;

/** A poll as posted (`poll[options][]`, `poll[expires_in]`, `poll[multiple]`, `poll[hide_totals]`), validated. */
export interface PollParams {
  options: string[];
  expiresIn: number;
  multiple: boolean;
  hideTotals: boolean;
}

/** Checks a poll's parameters as Mastodon's PollValidator does (422 otherwise). */
export function validatePoll(p: PollParams): void {
  if (p.options.length < 2) throw unprocessable('Validation failed: Poll must have at least 2 options');
  if (p.options.length > POLL_LIMITS.maxOptions) throw unprocessable(`Validation failed: Poll can't contain more than ${POLL_LIMITS.maxOptions} items`);
  if (p.options.some((o) => o.trim() === '')) throw unprocessable("Validation failed: Poll options can't be blank");
  if (p.options.some((o) => [...o].length > POLL_LIMITS.maxCharactersPerOption)) {
    throw unprocessable(`Validation failed: Poll contains an item over ${POLL_LIMITS.maxCharactersPerOption} characters`);
  }
  if (new Set(p.options).size !== p.options.length) throw unprocessable('Validation failed: Poll contains duplicate items');
  if (!Number.isFinite(p.expiresIn) || p.expiresIn < POLL_LIMITS.minExpiration) throw unprocessable('Validation failed: Poll duration is too short');
  if (p.expiresIn > POLL_LIMITS.maxExpiration) throw unprocessable('Validation failed: Poll duration is too long');
}

/**
 * A new local poll, in the posting (or editing) transaction, with its end queued through the same transaction's
 * outbox as a delayed job (jobs/queues.ts): it runs at `expires_at`, or when a worker is next up after that.
 */
export async function createLocalPoll(tx: Queryable, statusId: string, accountId: string, p: PollParams): Promise<{ poll: polls.PollRow; outbox: OutboxRow }> {
  const poll = await polls.insertPoll(tx, {
    statusId, accountId, options: p.options, multiple: p.multiple, hideTotals: p.hideTotals, expiresAt: new Date(Date.now() + p.expiresIn * 1000),
  });
  const outbox = await addToOutbox(tx, 'endPoll', { pollId: poll.id, runAt: poll.expires_at!.toISOString() });
  return { poll, outbox };
}

/**
 * POST /api/v1/polls/:id/votes, inside the voter's actor: the choices are recorded (once per voter), the counts move,
 * and a vote on another server's poll is sent to its author (federation/outbound.ts, `Vote`). Errors as Mastodon's.
 */
export async function vote(deps: StatusDeps, accountId: string, pollId: string, choices: number[]): Promise<void> {
  const found = await polls.findPoll(deps.db, pollId);
  const status = found ? await findStatus(deps.db, found.status_id) : null;
  if (!found || !status || !(await canSee(deps.db, accountId, status))) throw notFound();
  if (status.account_id !== accountId && (await blockedEitherWay(deps.db, accountId, status.account_id))) throw notFound();
  const [author, voter] = await Promise.all([findAccountById(deps.db, found.account_id), findAccountById(deps.db, accountId)]);
  const remote = author !== null && author.domain !== null;
  const outbox = await transaction(deps.db, async (tx) => {
    const poll = await polls.lockPoll(tx, pollId);
    if (!poll) throw notFound();
    if (polls.pollExpired(poll)) throw unprocessable('Validation failed: The poll has already ended');
    if (poll.account_id === accountId) throw unprocessable('Validation failed: You cannot vote in your own poll');
    if (await polls.hasVoted(tx, poll.id, accountId)) throw unprocessable('Validation failed: You have already voted on this poll');
    const unique = [...new Set(choices)];
    if (unique.length === 0 || unique.some((c) => !Number.isInteger(c) || c < 0 || c >= poll.options.length)) {
      throw unprocessable('Validation failed: Choice is not a valid option');
    }
    if (!poll.multiple && unique.length > 1) throw unprocessable('Validation failed: You can only choose one option');
    // Our vote on another server's poll is a Note of ours, named after the poll and the choice.
    const uris = remote ? unique.map((c) => `${deps.config.publicUrl}/users/${voter!.username}#votes/${poll.id}/${c}`) : [];
    await polls.insertVotes(tx, poll, accountId, unique, uris);
    return remote
      ? [await queueDelivery(tx, { activity: 'Vote', accountId, pollId: poll.id })]
      // Other servers see the counts move (as Mastodon does, through an Update of the Question).
      : [await queueDelivery(tx, { activity: 'Update', statusId: poll.status_id })];
  });
  await deps.versions.bump({ statuses: [found.status_id], viewers: [accountId] });
  await Promise.all(outbox.map((r) => deps.jobs.enqueue(r).catch(() => {})));
}

/**
 * The end of a local poll (the delayed `endPoll` job): marked ended once, its voters and author get a `poll`
 * notification, and other servers the final Update(Question). A job that finds the poll ended, gone or not yet
 * due does nothing (a poll edited away, a repeat).
 */
export async function endPoll(deps: StatusDeps, pollId: string): Promise<boolean> {
  const outbox = await transaction(deps.db, async (tx) => {
    const poll = await polls.markPollEnded(tx, pollId);
    if (!poll) return null;
    const status = await findStatus(tx, poll.status_id);
    if (!status) return null;
    for (const voter of await polls.localVoters(tx, poll.id)) await notifyAccount(deps, tx, voter, poll.account_id, 'poll', poll.status_id);
    await notifyAccount(deps, tx, poll.account_id, poll.account_id, 'poll', poll.status_id);
    return { row: await queueDelivery(tx, { activity: 'Update', statusId: poll.status_id }), statusId: poll.status_id };
  });
  if (!outbox) return false;
  await deps.versions.bump({ statuses: [outbox.statusId] });
  await deps.jobs.enqueue(outbox.row).catch(() => {});
  return true;
}

/**
 * A vote from another server on one of our polls (a Note named after an option, answering the Question). Counted once
 * per voter and option (once per voter on a single-choice poll), not after the poll's end nor by its author; other
 * servers then see the counts move.
 */
export async function receiveRemoteVote(deps: StatusDeps, pollId: string, voterId: string, optionName: string, uri: string): Promise<boolean> {
  const counted = await transaction(deps.db, async (tx) => {
    const poll = await polls.lockPoll(tx, pollId);
    if (!poll || polls.pollExpired(poll) || poll.account_id === voterId) return null;
    const choice = poll.options.indexOf(optionName);
    if (choice < 0) return null;
    const mine = (await polls.ownVotes(tx, voterId, [poll.id])).get(poll.id) ?? [];
    if (mine.includes(choice) || (!poll.multiple && mine.length > 0)) return null;
    const { rows } = await tx.query(`SELECT 1 FROM poll_votes WHERE uri = $1`, [uri]);
    if (rows.length > 0) return null;
    await polls.insertVotes(tx, poll, voterId, [choice], [uri]);
    // A voter's second option of a multiple-choice poll is not a second voter.
    if (mine.length > 0) await tx.query(`UPDATE polls SET voters_count = voters_count - 1 WHERE id = $1`, [poll.id]);
    return { statusId: poll.status_id, row: await queueDelivery(tx, { activity: 'Update', statusId: poll.status_id }) };
  });
  if (!counted) return false;
  await deps.versions.bump({ statuses: [counted.statusId] });
  await deps.jobs.enqueue(counted.row).catch(() => {});
  return true;
}
