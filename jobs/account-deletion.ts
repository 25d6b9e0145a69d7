import { Delete, PUBLIC_COLLECTION, type Recipient } from '@fedify/vocab';
import type { AppContext } from '../context.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import * as deletion from '../storage/account-deletion.ts';
import { groupsForCommand } from '../storage/redis-keys.ts';
import { accountUri } from '../services/uris.ts';
import { recipientOf } from '../federation/objects.ts';
import { deliverable } from '../federation/deliverable.ts';
import { removeStatusFromFeeds } from './fanout.ts';
import { accountArchives, deleteAccountArchive } from '../storage/account-archives.ts';
import { removeArchiveFiles } from '../services/exports.ts';

/**
 * Deleting an account (Mastodon's DeleteAccountService, run by AccountDeletionWorker), in steps: the `Delete` of a
 * local actor is sent first, while its follows still say who knows it; then its statuses (their files, and what
 * cascades from them), its remaining uploads, favourites, follows both ways, feeds, and every other row naming it;
 * last its profile is emptied. Only the account row is kept: a local name stays reserved, a remote actor's row is
 * a tombstone (services/account-deletion.ts marked both at the start).
 *
 * Each run does batches for about RUN_MS, then writes the outbox row of its next run and queues it; the worker
 * removes this run's row only after that, so a crash anywhere means this run is retried. Every batch is idempotent.
 */
const RUN_MS = 1500;
const STATUS_BATCH = 50;
const MEDIA_BATCH = 100;
const ROW_BATCH = 1000;
const DELIVERY_BATCH = 1000;
const ARCHIVE_BATCH = 20;

export const DELETION_STEPS = ['deliver', 'statuses', 'media', 'favourites', 'follows', 'feeds', 'archives', 'references', 'profile'] as const;
export type DeletionStep = (typeof DELETION_STEPS)[number];

/** One batch of a step: `after` is where the next batch starts, absent once the step is done. */
type StepOutcome = { after?: string };

export interface DeletionJob {
  accountId: string;
  step: string;
  after?: string | undefined;
  /**
   * Whether reports by and about the account, and the statuses unresolved ones name, stay for the moderators (as
   * Mastodon keeps them whenever it keeps the account's row). Absent means yes; a remote actor's own `Delete` says no.
   */
  keepReports?: boolean | undefined;
}

export async function deleteAccountJob(ctx: AppContext, job: DeletionJob, options: { runMs?: number } = {}): Promise<void> {
  const account = await findAccountById(ctx.db, job.accountId);
  // Marked deleted in the transaction that queued the first run; anything else is not ours to remove.
  if (!account || !account.deleted_at) return;
  let index = DELETION_STEPS.indexOf(job.step as DeletionStep);
  if (index < 0) return;
  let after = job.after;
  const started = Date.now();
  const keepReports = job.keepReports !== false;
  const run = new StepRunner(ctx, account, {
    reports: keepReports,
    statusIds: keepReports ? await deletion.reportedStatusIds(ctx.db, account.id) : [],
  });
  for (;;) {
    const outcome = await run.step(DELETION_STEPS[index]!, after);
    after = outcome.after;
    if (after === undefined) index += 1;
    if (index >= DELETION_STEPS.length) return;
    if (Date.now() - started >= (options.runMs ?? RUN_MS)) {
      const next = await addToOutbox(ctx.db, 'deleteAccount', {
        accountId: account.id, step: DELETION_STEPS[index]!, ...(after ? { after } : {}), ...(keepReports ? {} : { keepReports: false }),
      });
      await ctx.jobs.enqueue(next).catch(() => {}); // the sweeper queues it if Redis is away now
      return;
    }
  }
}

class StepRunner {
  private readonly ctx: AppContext;
  private readonly account: AccountRow;
  private readonly kept: deletion.KeptForModeration;
  private references: deletion.AccountReference[] | null = null;
  /** Shared inboxes sent to in this run: one delivery per server, whichever of its accounts came first. */
  private readonly sentInboxes = new Set<string>();

  constructor(ctx: AppContext, account: AccountRow, kept: deletion.KeptForModeration) {
    this.ctx = ctx;
    this.account = account;
    this.kept = kept;
  }

  step(step: DeletionStep, after: string | undefined): Promise<StepOutcome> {
    switch (step) {
      case 'deliver': return this.deliver(after);
      case 'statuses': return this.statuses(after);
      case 'media': return this.media();
      case 'favourites': return this.favourites();
      case 'follows': return this.follows(after);
      case 'feeds': return this.feeds(after);
      case 'archives': return this.archives();
      case 'references': return this.purgeReferences(after);
      case 'profile': return this.profile();
    }
  }

  /**
   * The `Delete` of a local actor, to every server that knows it: its followers' and followed accounts' servers,
   * those of follow requests either way, and of accounts that took part in its statuses (mentioned, replying,
   * favouriting, boosting), one delivery per shared inbox. Signed with the account's own key, which is handed to
   * Fedify directly: the actor (and so its key dispatcher) answers 410 Gone from the start. A remote account's
   * deletion sends nothing (its server deleted it, or an operator here did). `after` is `source:lastId`.
   */
  private async deliver(after: string | undefined): Promise<StepOutcome> {
    if (this.account.domain !== null) return {};
    const [sourceText, lastId] = (after ?? '0:0').split(':') as [string, string];
    const source = Number(sourceText);
    const sources: (() => Promise<{ lastId: string | null; accounts: AccountRow[] }>)[] = [
      () => deletion.remoteRelationsBatch(this.ctx.db, this.account.id, 'follows', 'followers', lastId, DELIVERY_BATCH),
      () => deletion.remoteRelationsBatch(this.ctx.db, this.account.id, 'follows', 'following', lastId, DELIVERY_BATCH),
      () => deletion.remoteRelationsBatch(this.ctx.db, this.account.id, 'follow_requests', 'followers', lastId, DELIVERY_BATCH),
      () => deletion.remoteRelationsBatch(this.ctx.db, this.account.id, 'follow_requests', 'following', lastId, DELIVERY_BATCH),
      async () => {
        const ids = await deletion.statusIdsBatch(this.ctx.db, this.account.id, lastId, DELIVERY_BATCH);
        return { lastId: ids.at(-1) ?? null, accounts: await deletion.remoteParticipants(this.ctx.db, ids) };
      },
    ];
    const load = sources[source];
    if (!load) return {};
    const batch = await load();
    await this.sendDelete(batch.accounts);
    if (batch.lastId === null) return source + 1 < sources.length ? { after: `${source + 1}:0` } : {};
    return { after: `${source}:${batch.lastId}` };
  }

  private async sendDelete(accounts: AccountRow[]): Promise<void> {
    const recipients: Recipient[] = [];
    for (const a of accounts) {
      const inbox = a.shared_inbox_url ?? a.inbox_url;
      if (!inbox || this.sentInboxes.has(inbox) || !(await deliverable(this.ctx, a))) continue;
      this.sentInboxes.add(inbox);
      recipients.push(recipientOf(this.ctx, a));
    }
    if (recipients.length === 0) return;
    const fed = this.ctx.federation.createContext(new URL(this.ctx.config.publicUrl), this.ctx);
    const actor = new URL(accountUri(this.ctx.render, this.account));
    const pairs = await this.ctx.keyRing.keyPairs(this.account.id);
    // Fedify's own key ids for an actor's pairs: the first is #main-key, the next #key-2 and so on.
    const keys = pairs.map((p, i) => ({ keyId: new URL(i === 0 ? '#main-key' : `#key-${i + 1}`, actor), privateKey: p.privateKey }));
    if (keys.length === 0) return;
    const activity = new Delete({ id: new URL(`${actor.href}#delete`), actor, object: actor, tos: [PUBLIC_COLLECTION] });
    await fed.sendActivity(keys, recipients, activity, { preferSharedInbox: true });
  }

  /**
   * A batch of its statuses: out of every feed and stream first, then their rows, then their files. Those kept for
   * the moderators leave feeds and streams too, on the step's first run.
   */
  private async statuses(after: string | undefined): Promise<StepOutcome> {
    if (after === undefined && this.kept.statusIds.length > 0) {
      for (let i = 0; i < this.kept.statusIds.length; i += STATUS_BATCH) {
        const kept = this.kept.statusIds.slice(i, i + STATUS_BATCH);
        const { mentionedIds } = await deletion.statusBatchDetails(this.ctx.db, kept);
        await removeStatusFromFeeds(this.ctx, kept, this.account.id, mentionedIds);
      }
      return { after: 'more' };
    }
    const ids = await deletion.statusIdsBatch(this.ctx.db, this.account.id, '0', STATUS_BATCH, this.kept.statusIds);
    if (ids.length === 0) return {};
    const { mentionedIds, fileKeys } = await deletion.statusBatchDetails(this.ctx.db, ids);
    await removeStatusFromFeeds(this.ctx, ids, this.account.id, mentionedIds);
    const touched = await transaction(this.ctx.db, (tx) => deletion.deleteStatuses(tx, this.account.id, ids));
    await this.removeFiles(fileKeys);
    await this.ctx.versions.bump({ statuses: [...ids, ...touched.statuses], accounts: touched.accounts });
    return { after: 'more' };
  }

  private async media(): Promise<StepOutcome> {
    const batch = await deletion.mediaBatch(this.ctx.db, this.account.id, MEDIA_BATCH, this.kept.statusIds);
    if (batch.ids.length === 0) return {};
    await deletion.deleteMedia(this.ctx.db, batch.ids);
    await this.removeFiles(batch.fileKeys);
    return { after: 'more' };
  }

  private async favourites(): Promise<StepOutcome> {
    const statuses = await transaction(this.ctx.db, (tx) => deletion.deleteFavouritesBatch(tx, this.account.id, ROW_BATCH));
    if (statuses.length === 0) return {};
    await this.ctx.versions.bump({ statuses });
    return { after: 'more' };
  }

  private async follows(after: string | undefined): Promise<StepOutcome> {
    const side = after === 'following' ? 'following' : 'followers';
    const others = await transaction(this.ctx.db, (tx) => deletion.deleteFollowsBatch(tx, this.account.id, side, ROW_BATCH));
    if (others.length > 0) await this.ctx.versions.bump({ accounts: others });
    if (others.length < ROW_BATCH) return side === 'followers' ? { after: 'following' } : {};
    return { after: side };
  }

  /** Its home feed and its lists' feeds (Redis), before the lists' rows go. `after` is the last list id. */
  private async feeds(after: string | undefined): Promise<StepOutcome> {
    const lists = await deletion.listIdsBatch(this.ctx.db, this.account.id, after ?? '0', ROW_BATCH);
    const keys = [...this.ctx.feeds.pageKeys(this.account.id), ...lists.flatMap((id) => this.ctx.listFeeds.pageKeys(id))];
    // One DEL on a single Redis; on a cluster one per feed bucket (a DEL's keys must share a slot).
    await Promise.all(groupsForCommand(this.ctx.redis, keys, (key) => key).map((group) => this.ctx.redis.del(...group)));
    return lists.length === ROW_BATCH ? { after: lists.at(-1)! } : {};
  }

  /**
   * Its archives (services/exports.ts): their parts on the file host first, then their rows, so that no part is left
   * unnamed. An account has a handful (one a week, each kept a week).
   */
  private async archives(): Promise<StepOutcome> {
    const rows = await accountArchives(this.ctx.db, this.account.id, ARCHIVE_BATCH);
    for (const a of rows) {
      await removeArchiveFiles(this.ctx, a);
      await deleteAccountArchive(this.ctx.db, a.id);
    }
    return rows.length === ARCHIVE_BATCH ? { after: 'more' } : {};
  }

  /** Every other row naming it, column by column as the catalogue lists them. `after` is the column's index. */
  private async purgeReferences(after: string | undefined): Promise<StepOutcome> {
    this.references ??= await deletion.accountReferences(this.ctx.db);
    const index = Number(after ?? 0);
    const ref = this.references[index];
    if (!ref) return {};
    const n = await deletion.purgeReferenceBatch(this.ctx.db, ref, this.account.id, ROW_BATCH, this.kept);
    return { after: String(n < ROW_BATCH ? index + 1 : index) };
  }

  private async profile(): Promise<StepOutcome> {
    const files = await deletion.emptyProfile(this.ctx.db, this.account.id);
    await this.removeFiles(files);
    await this.ctx.versions.bump({ accounts: [this.account.id] });
    return {};
  }

  /** Files go after their rows: a file left by a failure is only unused bytes, never a row pointing nowhere. */
  private async removeFiles(keys: string[]): Promise<void> {
    for (const key of keys) await this.ctx.fileHost.delete(key).catch(() => {});
  }
}
