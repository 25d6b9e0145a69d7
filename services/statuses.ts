import type { PoolClient } from 'pg';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import { queueWebhookEvent } from './webhooks.ts';
import { inSavepoint, transaction, TransactionAborted, type Db } from '../storage/db.ts';
import type { HomeFeeds } from '../storage/feeds.ts';
import type { JobQueues } from '../jobs/queues.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import * as statuses from '../storage/statuses.ts';
import { findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { removeNotification } from '../storage/notifications.ts';
import { notifyAccount } from './notifications.ts';
import { blockedEitherWay } from '../storage/blocks.ts';
import { streamChannels, type StreamEvents } from './stream-events.ts';
import { parseStatusText, renderStatusText, mentionKey, type ResolvedMention } from '../text/status.ts';
import { ApiError, notFound, unprocessable, UnexpectedMentions } from '../errors.ts';
import { canSee } from './visibility.ts';
import { queueDelivery } from './deliveries.ts';
import { claimScheduledStatus } from '../storage/scheduled-statuses.ts';
import { attachMedia, insertRemoteMedia, mediaOfStatuses, reattachMedia, updateMediaDetails, type RemoteMedia } from '../storage/media.ts';
import { createLocalPoll, validatePoll, type PollParams } from './polls.ts';
import * as polls from '../storage/polls.ts';
import { hasEdits, insertStatusEdit } from '../storage/status-edits.ts';
import { unavailableDependency } from '../storage/dependencies.ts';
import type { StatusLoader } from './hydrate.ts';
import { firstCardLink, ownHosts, storedCardWillDo } from './preview-cards.ts';
import { findCardByUrl, type PreviewCardRow } from '../storage/preview-cards.ts';
import { effectiveQuotePolicy, quotableStatus } from './quotes.ts';
import { checkAttachable } from './attachments.ts';
import * as quotes from '../storage/quotes.ts';

export interface StatusDeps {
  db: Db;
  feeds: HomeFeeds;
  /** List feeds, by list id (storage/feeds.ts under the `list` kind). */
  listFeeds: HomeFeeds;
  jobs: JobQueues;
  config: Config;
  versions: CacheVersions;
  /**
   * Finds an account of another server by WebFinger and a fetch signed by the account posting
   * (federation/remote-accounts.ts); absent, unknown ones stay text.
   */
  resolveRemote?: (username: string, domain: string, actingAccountId: string) => Promise<AccountRow | null>;
  /** Live events for streaming sockets (services/stream-events.ts). */
  events: StreamEvents;
  /** This process's status cache (services/hydrate.ts): told of new posts, so that their first rendering reads nothing. */
  statusLoader?: Pick<StatusLoader, 'rememberNew'>;
}

export interface PostParams {
  text: string;
  spoilerText: string;
  sensitive: boolean;
  visibility: statuses.Visibility | undefined;
  language: string | null;
  inReplyToId: string | null;
  mediaIds: string[];
  idempotencyKey: string | null;
  applicationId: string | null;
  /** Publishing this scheduled status (services/scheduled-statuses.ts): its media are its own, and its row is taken. */
  scheduledStatusId?: string | null;
  poll?: PollParams | null;
  /** Account ids the post may mention (Mastodon's `allowed_mentions`): any other mention refuses the post. */
  allowedMentions?: string[] | null;
  /** The status this one quotes (Mastodon 4.5's `quoted_status_id`), and who may quote this one (absent: the author's default). */
  quotedStatusId?: string | null;
  quotePolicy?: string | null;
}

/** PUT /api/v1/statuses/:id: the status as it is to be (what is left out goes, as in Mastodon; the language stays). */
export interface EditParams {
  text: string;
  spoilerText: string;
  sensitive: boolean;
  language: string | null | undefined;
  mediaIds: string[];
  /** Descriptions and focal points of attachments, changed with the edit. */
  mediaAttributes: { id: string; description?: string | undefined; focusX?: number | undefined; focusY?: number | undefined }[];
  poll: PollParams | null;
  /** A new quote policy (`quote_approval_policy`); absent: unchanged. */
  quotePolicy?: string | undefined;
}

/** What posting and editing refuse alike: too many attachments, media with a poll, blank or too long text. */
export function checkContent(config: Config, p: { text: string; spoilerText: string; poll?: PollParams | null | undefined }, mediaIds: string[]): void {
  if (mediaIds.length > 4) throw unprocessable('Cannot attach more than 4 files');
  if (p.poll && mediaIds.length > 0) throw unprocessable('Validation failed: Cannot attach files to a status with a poll');
  if (p.poll) validatePoll(p.poll);
  if (p.text.trim() === '' && mediaIds.length === 0) throw unprocessable("Validation failed: Text can't be blank");
  if (statusLength(p.text, p.spoilerText) > config.maxStatusChars) {
    throw unprocessable(`Validation failed: Text character limit of ${config.maxStatusChars} exceeded`);
  }
}

/** Mastodon counts every URL as 23 characters, whatever its length. */
const URL_IN_TEXT = /https?:\/\/[^\s<>"]+/gi;
export function statusLength(text: string, spoiler: string): number {
  const urls = text.replace(URL_IN_TEXT, 'x'.repeat(23));
  return [...urls].length + [...spoiler].length;
}

/** Queues the jobs of outbox rows just committed; if that fails, the outbox sweeper queues them later. */
async function enqueueAll(jobs: Pick<JobQueues, 'enqueueMany'> | null, rows: OutboxRow[]): Promise<void> {
  // Without a queue (the command line), a running server's outbox sweeper queues the rows.
  if (jobs) await jobs.enqueueMany(rows).catch(() => {});
}

/** The accounts a text mentions, with what rendering needs to link them, and its hashtags. */
export async function resolveMentions(db: Db, config: Config, text: string, actingAccountId: string, resolveRemote?: StatusDeps['resolveRemote']): Promise<{ accounts: AccountRow[]; map: Map<string, ResolvedMention>; tags: string[] }> {
  const parsed = parseStatusText(text);
  const map = new Map<string, ResolvedMention>();
  const accounts: AccountRow[] = [];
  for (const ref of parsed.mentions.slice(0, 50)) {
    const local = ref.domain === null || ref.domain === config.localDomain.toLowerCase();
    // A remote account not known yet is looked up by WebFinger; one that cannot be found stays plain text.
    const account = local
      ? await findAccountByUsername(db, ref.username, null)
      : ((await findAccountByUsername(db, ref.username, ref.domain)) ?? (await resolveRemote?.(ref.username, ref.domain!, actingAccountId).catch(() => null)) ?? null);
    if (!account || account.suspended_at) continue;
    accounts.push(account);
    const url = account.domain === null ? `${config.publicUrl}/@${account.username}` : (account.url ?? account.uri ?? '');
    map.set(mentionKey(ref.username, ref.domain, config.localDomain), {
      id: account.id, url, username: account.username, acct: account.domain === null ? account.username : `${account.username}@${account.domain}`,
    });
  }
  return { accounts, map, tags: parsed.tags.slice(0, 50) };
}

/** A post checked and resolved outside the transaction (services/statuses.ts preparePost), ready to be written. */
interface PreparedPost {
  p: PostParams;
  mediaIds: string[];
  parent: statuses.StatusRow | null;
  quoted: statuses.StatusRow | null;
  row: Parameters<typeof statuses.insertPost>[1];
  extras: statuses.PostExtras;
  localMentions: AccountRow[];
  tags: string[];
  /**
   * Nothing beside its row (no media, poll, scheduled row, local mention or quote): it is one statement, and the
   * status cache can hold it as written.
   */
  plain: boolean;
  /** Its link's card, stored already and fresh: attached with it (extras.card), shown in the answer at once. */
  card: PreviewCardRow | null;
}

/** What postStatuses answers for each post, in the order given: its status id, or the error that refused it. */
export type PostOutcome = { ok: string } | { error: unknown };

/**
 * The part of a post done before its transaction: the Idempotency-Key looked up (`existing`: the status it made
 * already), the content checked, media, parent and quote judged, mentions and tags resolved, the text rendered.
 */
async function preparePost(deps: StatusDeps, accountId: string, p: PostParams): Promise<{ existing: string } | PreparedPost> {
  const { db, config } = deps;
  if (p.idempotencyKey) {
    const existing = await statuses.findIdempotentStatus(db, accountId, p.idempotencyKey);
    if (existing) return { existing };
  }
  const mediaIds = [...new Set(p.mediaIds)];
  checkContent(config, p, mediaIds);
  await checkAttachable(db, accountId, mediaIds, { scheduledId: p.scheduledStatusId ?? null });
  let parent: statuses.StatusRow | null = null;
  if (p.inReplyToId) {
    parent = await statuses.findStatus(db, p.inReplyToId);
    if (!parent || parent.reblog_of_id || !(await canSee(db, accountId, parent))) throw notFound();
  }
  // A quote (Mastodon 4.5): of a status the author may see and its policy lets them quote, else a 404.
  let quoted: statuses.StatusRow | null = null;
  let visibility = p.visibility;
  if (p.quotedStatusId) {
    quoted = await quotableStatus(db, accountId, p.quotedStatusId);
    visibility ??= (await db.query<{ v: statuses.Visibility }>(`SELECT default_privacy AS v FROM users WHERE account_id = $1`, [accountId])).rows[0]?.v ?? 'public';
    // A quote of a private post (its author's own) is private too, as in Mastodon's PostStatusService.
    if (quoted.visibility === 'private' && (visibility === 'public' || visibility === 'unlisted')) visibility = 'private';
  }
  const { accounts: mentioned, map, tags } = await resolveMentions(db, config, p.text, accountId, deps.resolveRemote);
  if (quoted && visibility === 'direct' && quoted.account_id !== accountId && !mentioned.some((a) => a.id === quoted.account_id)) {
    throw unprocessable('Validation failed: Cannot quote a non-mentioned user in a Private mention post');
  }
  if (p.allowedMentions) {
    const allowed = new Set(p.allowedMentions);
    const unexpected = mentioned.filter((a) => !allowed.has(a.id)).map((a) => a.id);
    if (unexpected.length > 0) throw new UnexpectedMentions(unexpected);
  }
  const content = renderStatusText(p.text, { publicUrl: config.publicUrl, localDomain: config.localDomain, mentions: map });
  const row = {
    accountId, text: p.text, content, spoilerText: p.spoilerText, sensitive: p.sensitive || p.spoilerText !== '',
    language: p.language, inReplyToId: parent?.id ?? null, inReplyToAccountId: parent?.account_id ?? null, applicationId: p.applicationId,
  };
  const extras: statuses.PostExtras = {
    visibility: visibility ?? null,
    quotePolicy: p.quotePolicy ?? null,
    idempotencyKey: p.idempotencyKey,
    mentionIds: mentioned.map((a) => a.id),
    tagIds: await statuses.tagIds(db, tags),
    // Both rows get the status's id from insertPost.
    outbox: [{ kind: 'fanOutStatus', payload: {} }, { kind: 'deliver', payload: { activity: 'Create' }, remoteOnly: true }],
  };
  // Its link's preview card; none for posts with media, as in Mastodon. A card stored for the link already and fresh
  // is attached with the post (what Mastodon's FetchLinkCardService ends up doing, without the job: a popular link
  // costs its posts no job and no fetch, and the answer shows the card); otherwise the link-card job fetches it.
  const link = mediaIds.length === 0 ? firstCardLink(content, ownHosts(config)) : null;
  const stored = link ? await findCardByUrl(db, link) : null;
  const card = stored && storedCardWillDo(stored) ? stored : null;
  if (card) extras.card = { id: card.id, url: link! };
  else if (link) extras.outbox.push({ kind: 'fetchLinkCard', payload: {} });
  const localMentions = mentioned.filter((a) => a.domain === null);
  // A card crediting an account is rendered with that account: such a post is read back rather than cached as written.
  const plain = mediaIds.length === 0 && !p.poll && !p.scheduledStatusId && localMentions.length === 0 && !quoted && !card?.author_account_id;
  return { p, mediaIds, parent, quoted, row, extras, localMentions, tags, plain, card };
}

/**
 * The part of a post written in its transaction: one statement (storage/statuses.ts insertPost), and beside it its
 * attachments, a poll, a scheduled post's row, its quote and notifications of local accounts. Null when its
 * Idempotency-Key is held by another post (written meanwhile, or earlier in the same batch): nothing was written.
 */
async function writePost(deps: StatusDeps, tx: PoolClient, accountId: string, w: PreparedPost): Promise<{ status: statuses.StatusRow; outbox: OutboxRow[] } | null> {
  const { p, mediaIds, quoted } = w;
  const made = await statuses.insertPost(tx, w.row, w.extras);
  if (!made) return null;
  const { status, outbox } = made;
  // Attached in the post's transaction: media that another post took meanwhile fails this one, whole.
  if ((await attachMedia(tx, status.id, accountId, mediaIds, p.scheduledStatusId ?? null)) !== mediaIds.length) {
    throw unprocessable('Validation failed: media_ids names media already attached to a status');
  }
  // A scheduled status is published once: whoever takes its row publishes it, another publisher finds it gone.
  if (p.scheduledStatusId && !(await claimScheduledStatus(tx, accountId, p.scheduledStatusId))) throw notFound();
  for (const a of w.localMentions) await notifyAccount(deps, tx, a.id, accountId, 'mention', status.id);
  if (p.poll) outbox.push((await createLocalPoll(tx, status.id, accountId, p.poll)).outbox);
  // The quote and the quoted status's count, in the post's transaction. A local author's policy was checked above,
  // so the quote is accepted at once (Mastodon's attach_quote!), and the quoted author told.
  // A remote author is asked instead (FEP-044f QuoteRequest): the quote stays pending until their server answers
  // with an Accept carrying a stamp (federation/quotes.ts), as in Mastodon.
  if (quoted && quoted.uri !== null && quoted.account_id !== accountId) {
    const activityUri = `${deps.config.publicUrl}/quote_requests/${randomUUID()}`;
    await quotes.insertQuote(tx, { statusId: status.id, accountId, quotedStatusId: quoted.id, quotedAccountId: quoted.account_id, state: 'pending', activityUri });
    outbox.push(await queueDelivery(tx, { activity: 'QuoteRequest', statusId: status.id }));
  } else if (quoted) {
    await quotes.insertQuote(tx, { statusId: status.id, accountId, quotedStatusId: quoted.id, quotedAccountId: quoted.account_id, state: 'accepted' });
    if (quoted.account_id !== accountId) await notifyAccount(deps, tx, quoted.account_id, accountId, 'quote', status.id);
  }
  return made;
}

/**
 * What follows the commit of posts, all of them at once, in one write to Redis (auto-pipelining): cache versions
 * bumped once, the author's own feed (one ZADD), their home stream (an event per post, in order), and the jobs of
 * every outbox row (one enqueueMany).
 */
async function afterPosts(deps: StatusDeps, accountId: string, written: { w: PreparedPost; status: statuses.StatusRow; outbox: OutboxRow[] }[]): Promise<void> {
  for (const { w, status } of written) {
    if (w.plain) deps.statusLoader?.rememberNew(status, w.extras.mentionIds, w.tags.map((t) => t.toLowerCase()), w.card);
  }
  const ids = written.map((x) => x.status.id);
  await Promise.all([
    deps.versions.bump({ accounts: [accountId], statuses: written.flatMap(({ w }) => [w.parent?.id, w.quoted?.id]) }),
    deps.feeds.addIfAccepting(accountId, ids),
    ...ids.map((statusId) => deps.events.publish(streamChannels.home(accountId), { event: 'update', statusId, accountId })),
    enqueueAll(deps.jobs, written.flatMap((x) => x.outbox)),
  ]).catch((err: unknown) => {
    // Redis went away since the commit: the posts are made and are answered as made (a 503 would say they were not,
    // and a retry would post them twice); their jobs are queued again from the outbox once Redis is back (jobs/worker.ts).
    if (!unavailableDependency(err)) throw err;
  });
}

type Written = { status: statuses.StatusRow; outbox: OutboxRow[] } | null | { error: unknown };

/** A post written without a savepoint failed (postStatuses): its transaction is lost. */
class PostFailed extends Error {
  readonly index: number;
  constructor(index: number, cause: unknown) {
    super('a post of the batch failed', { cause });
    this.index = index;
  }
}

/**
 * Writes posts in the transaction `tx`, in order, each in a savepoint of its own (a post that fails is rolled back
 * alone and answered with its error) except, unless `safe`, those that are one statement: one of those failing throws
 * PostFailed. A post alone is written as it is: if it fails, so does the transaction, and it was all there was.
 */
async function writePosts(deps: StatusDeps, tx: PoolClient, accountId: string, ws: PreparedPost[], safe: boolean): Promise<Written[]> {
  if (ws.length === 1) return [await writePost(deps, tx, accountId, ws[0]!)];
  const out: Written[] = [];
  for (const [k, w] of ws.entries()) {
    if (w.plain && !safe) {
      try {
        out.push(await writePost(deps, tx, accountId, w));
      } catch (error) {
        if (unavailableDependency(error)) throw error;
        throw new PostFailed(k, error);
      }
      continue;
    }
    try {
      out.push(await inSavepoint(tx, () => writePost(deps, tx, accountId, w)));
    } catch (error) {
      // PostgreSQL or the connection gone: the transaction is lost, and every post of it with it.
      if (unavailableDependency(error) || error instanceof TransactionAborted) throw error;
      out.push({ error });
    }
  }
  return out;
}

/** POST /api/v1/statuses, inside the author's actor: a batch of one (postStatuses). Returns the new (or, for a repeated Idempotency-Key, the first) status id. */
export async function postStatus(deps: StatusDeps, accountId: string, p: PostParams): Promise<string> {
  const [outcome] = await postStatuses(deps, accountId, [p]);
  if ('error' in outcome!) throw outcome.error;
  return outcome!.ok;
}

/**
 * Posts of one account gathered by its actor (actors/registry.ts), written in the order given with one transaction
 * and one commit for all. Each is prepared on its own outside the transaction (preparePost), then written inside it
 * (writePosts) so that one that fails (media taken meanwhile, a constraint) is rolled back alone and answered with its
 * own error while the others commit: in its own savepoint, or, for a post of one statement, by writing the others
 * again without it (a second transaction, only then). Status ids increase in the order given. The transaction is the
 * guarded one of storage/db.ts: a PostgreSQL that hangs and wakes up later does not apply posts whose clients were
 * answered 503 meanwhile. Two posts of the batch with the same Idempotency-Key make one status, and both are answered with it.
 * Each post's answer is its status id or its error, in the order given; none is answered before the commit.
 */
export async function postStatuses(deps: StatusDeps, accountId: string, ps: PostParams[]): Promise<PostOutcome[]> {
  const { db } = deps;
  const outcomes: PostOutcome[] = new Array(ps.length);
  const prepared = await Promise.all(ps.map((p) => preparePost(deps, accountId, p).catch((error: unknown) => ({ error }))));
  const toWrite: { i: number; w: PreparedPost }[] = [];
  prepared.forEach((x, i) => {
    if ('error' in x) outcomes[i] = { error: x.error };
    else if ('existing' in x) outcomes[i] = { ok: x.existing };
    else toWrite.push({ i, w: x });
  });
  if (toWrite.length === 0) return outcomes;
  let list = toWrite;
  let results: Written[] | null = null;
  // At first, a post that is one statement (most are) is written without a savepoint of its own, a round trip fewer.
  // If such a statement fails, the transaction is lost: that post is answered with its error, and the others are
  // written again in a new transaction, each in its own savepoint.
  for (let safe = false; results === null; safe = true) {
    try {
      results = await transaction(db, (tx: PoolClient) => writePosts(deps, tx, accountId, list.map((x) => x.w), safe));
    } catch (error) {
      if (error instanceof PostFailed && !safe) {
        outcomes[list[error.index]!.i] = { error: error.cause };
        list = list.filter((_, k) => k !== error.index);
        if (list.length === 0) return outcomes;
        continue;
      }
      for (const { i } of list) outcomes[i] = { error };
      return outcomes;
    }
  }
  const written: { i: number; w: PreparedPost; status: statuses.StatusRow; outbox: OutboxRow[] }[] = [];
  for (let k = 0; k < list.length; k++) {
    const { i, w } = list[k]!;
    const r = results[k]!;
    if (r === null) {
      // Another request (or a post before it in this batch) took the key between our check and our insert: answer
      // with its status.
      try {
        const winner = await statuses.findIdempotentStatus(db, accountId, w.p.idempotencyKey!);
        outcomes[i] = winner ? { ok: winner } : { error: new ApiError(409, 'A request with this Idempotency-Key is being processed') };
      } catch (error) {
        outcomes[i] = { error };
      }
    } else if ('error' in r) {
      outcomes[i] = { error: r.error };
    } else {
      written.push({ i, w, ...r });
      outcomes[i] = { ok: r.status.id };
    }
  }
  if (written.length > 0) {
    try {
      await afterPosts(deps, accountId, written);
    } catch (error) {
      for (const { i } of written) outcomes[i] = { error };
    }
  }
  return outcomes;
}

/** What deleting a status needs; the command line has no job queue (null). */
export type DeleteStatusDeps = Pick<StatusDeps, 'db' | 'versions'> & { jobs: Pick<JobQueues, 'enqueueMany'> | null };

/** DELETE /api/v1/statuses/:id: flags it (and reblogs of it) deleted and queues its removal from feeds. */
export async function deleteStatus(deps: DeleteStatusDeps, accountId: string, statusId: string): Promise<statuses.StatusRow> {
  const status = await statuses.findStatus(deps.db, statusId);
  if (!status || status.account_id !== accountId) throw notFound();
  const reblogs: statuses.StatusRow[] = [];
  let quote: quotes.QuoteRow | null = null;
  const outbox = await transaction(deps.db, async (tx) => {
    if (!(await statuses.markStatusDeleted(tx, status))) throw notFound();
    // Its quote stops counting on what it quoted.
    quote = await quotes.forgetQuoteOf(tx, status.id);
    const mentions = (await statuses.mentionsOf(tx, [status.id])).get(status.id) ?? [];
    const rows = [
      await addToOutbox(tx, 'removeStatus', { statusId: status.id, authorId: accountId, mentionedIds: mentions }),
      await queueDelivery(tx, status.reblog_of_id ? { activity: 'UndoAnnounce', reblogId: status.id } : { activity: 'Delete', statusId: status.id }),
    ];
    // Reblogs of a deleted status go with it, as in Mastodon.
    const { rows: found } = await tx.query<statuses.StatusRow>(
      `SELECT * FROM statuses WHERE reblog_of_id = $1 AND deleted_at IS NULL LIMIT 10000`, [status.id],
    );
    for (const r of found) {
      reblogs.push(r);
      await statuses.markStatusDeleted(tx, r);
      rows.push(await addToOutbox(tx, 'removeStatus', { statusId: r.id, authorId: r.account_id, mentionedIds: [] }));
    }
    return rows;
  });
  // Statuses quoting it now show their quote as `deleted`.
  const quoters = await quotes.quotingStatusIds(deps.db, status.id);
  await deps.versions.bump({
    statuses: [status.id, status.in_reply_to_id, status.reblog_of_id, ...reblogs.map((r) => r.id), (quote as quotes.QuoteRow | null)?.quoted_status_id, ...quoters.map((q) => q.statusId)],
    accounts: [accountId, ...reblogs.map((r) => r.account_id)],
    // Their "reblogged" flag for the deleted status (and the author's, for a deleted reblog) changes too.
    viewers: [accountId, ...reblogs.map((r) => r.account_id)],
  });
  await enqueueAll(deps.jobs, outbox);
  return status;
}

/** Mastodon's StatusPolicy#favourite? and #reblog?: not between an author and someone either blocks. */
async function refuseBlocked(deps: StatusDeps, accountId: string, status: statuses.StatusRow): Promise<void> {
  if (status.account_id !== accountId && (await blockedEitherWay(deps.db, accountId, status.account_id))) throw new ApiError(403, 'This action is not allowed');
}

/** `uri`: the id of a remote account's Like or EmojiReact (kept so that an Undo naming only it finds the favourite). */
export async function favouriteStatus(deps: StatusDeps, accountId: string, status: statuses.StatusRow, uri: string | null = null): Promise<void> {
  await refuseBlocked(deps, accountId, status);
  const delivery = await transaction(deps.db, async (tx) => {
    if (!(await statuses.favourite(tx, accountId, status.id, uri))) return null;
    await notifyAccount(deps, tx, status.account_id, accountId, 'favourite', status.id);
    return queueDelivery(tx, { activity: 'Like', accountId, statusId: status.id, likeId: await statuses.favouriteId(tx, accountId, status.id) });
  });
  await deps.versions.bump({ statuses: [status.id], viewers: [accountId] });
  if (delivery) await enqueueAll(deps.jobs, [delivery]);
}

export async function unfavouriteStatus(deps: StatusDeps, accountId: string, status: statuses.StatusRow): Promise<void> {
  const delivery = await transaction(deps.db, async (tx) => {
    const likeId = await statuses.favouriteId(tx, accountId, status.id);
    if (!(await statuses.unfavourite(tx, accountId, status.id))) return null;
    await removeNotification(tx, status.account_id, accountId, 'favourite', status.id);
    return queueDelivery(tx, { activity: 'UndoLike', accountId, statusId: status.id, likeId });
  });
  await deps.versions.bump({ statuses: [status.id], viewers: [accountId] });
  if (delivery) await enqueueAll(deps.jobs, [delivery]);
}

/** Reblogs a status once; reblogging again returns the same reblog. Returns the reblog's id. */
export async function reblogStatus(deps: StatusDeps, accountId: string, status: statuses.StatusRow, visibility: statuses.Visibility, uri: string | null = null): Promise<string> {
  if (status.visibility === 'direct' || (status.visibility === 'private' && status.account_id !== accountId)) {
    throw new ApiError(403, 'This action is not allowed');
  }
  const existing = await statuses.findReblog(deps.db, accountId, status.id);
  if (existing) return existing.id;
  await refuseBlocked(deps, accountId, status);
  try {
    const { reblog, outbox } = await transaction(deps.db, async (tx) => {
      const reblog = await statuses.insertStatus(tx, {
        accountId, text: '', content: '', spoilerText: '', sensitive: false,
        visibility: status.visibility === 'private' ? 'private' : visibility, language: null,
        inReplyToId: null, inReplyToAccountId: null, reblogOfId: status.id, applicationId: null, uri,
      });
      await notifyAccount(deps, tx, status.account_id, accountId, 'reblog', status.id);
      return {
        reblog,
        outbox: [await addToOutbox(tx, 'fanOutStatus', { statusId: reblog.id }), await queueDelivery(tx, { activity: 'Announce', reblogId: reblog.id })],
      };
    });
    await deps.versions.bump({ statuses: [status.id, reblog.id], accounts: [accountId], viewers: [accountId] });
    await deps.feeds.addIfAccepting(accountId, [reblog.id]);
    await deps.events.publish(streamChannels.home(accountId), { event: 'update', statusId: reblog.id, accountId });
    await enqueueAll(deps.jobs, outbox);
    return reblog.id;
  } catch (err) {
    const constraint = (err as { constraint?: string }).constraint;
    if (constraint === 'statuses_one_reblog' || constraint === 'statuses_uri') {
      const winner = (await statuses.findReblog(deps.db, accountId, status.id)) ?? (uri ? await statuses.findStatusByUri(deps.db, uri) : null);
      if (winner) return winner.id;
    }
    throw err;
  }
}

export async function unreblogStatus(deps: StatusDeps, accountId: string, status: statuses.StatusRow): Promise<void> {
  const reblog = await statuses.findReblog(deps.db, accountId, status.id);
  if (!reblog) return;
  const outbox = await transaction(deps.db, async (tx) => {
    if (!(await statuses.markStatusDeleted(tx, reblog))) return null;
    await removeNotification(tx, status.account_id, accountId, 'reblog', status.id);
    return [
      await addToOutbox(tx, 'removeStatus', { statusId: reblog.id, authorId: accountId, mentionedIds: [] }),
      await queueDelivery(tx, { activity: 'UndoAnnounce', reblogId: reblog.id }),
    ];
  });
  await deps.versions.bump({ statuses: [status.id, reblog.id], accounts: [accountId], viewers: [accountId] });
  if (outbox) await enqueueAll(deps.jobs, outbox);
}

/** After a follow: the followed account's recent statuses join the follower's feed (if built). */
export async function mergeIntoHomeFeed(deps: StatusDeps, accountId: string, targetId: string): Promise<void> {
  if (!(await deps.feeds.accepts(accountId))) return;
  const ids = await statuses.accountStatusIds(deps.db, targetId, { visibilities: ['public', 'unlisted', 'private'] }, { limit: 40 });
  await deps.feeds.add(accountId, ids);
}

/** After an unfollow: the account's statuses leave the former follower's feed. */
export async function unmergeFromHomeFeed(deps: StatusDeps, accountId: string, targetId: string): Promise<void> {
  if (!(await deps.feeds.accepts(accountId))) return;
  const ids = await statuses.accountStatusIds(deps.db, targetId, { visibilities: ['public', 'unlisted', 'private', 'direct'] }, { limit: 800 });
  await deps.feeds.remove([accountId], ids);
}


/** A status received from another server, as its Note said it. */
export interface RemoteStatus {
  accountId: string;
  uri: string;
  url: string | null;
  content: string;
  spoilerText: string;
  sensitive: boolean;
  visibility: statuses.Visibility;
  language: string | null;
  parent: statuses.StatusRow | null;
  mentioned: AccountRow[];
  tags: string[];
  media: RemoteMedia[];
  createdAt: Date | null;
  poll?: RemotePoll | null;
  /** What it quotes (FEP-044f), as verified on arrival (federation/quotes.ts). */
  quote?: { quoted: statuses.StatusRow; state: quotes.QuoteState; approvalUri: string | null } | null;
}

/**
 * Stores a remote status (once: a second Create of the same uri finds the first) with its mentions (local accounts
 * are notified) and tags, and fans it out to its author's local followers like any other status.
 */
export async function receiveRemoteStatus(deps: StatusDeps, r: RemoteStatus): Promise<string | null> {
  try {
    const { status, outbox } = await transaction(deps.db, async (tx) => {
      const row = {
        accountId: r.accountId, text: '', content: r.content, spoilerText: r.spoilerText, sensitive: r.sensitive || r.spoilerText !== '',
        visibility: r.visibility, language: r.language, inReplyToId: r.parent?.id ?? null, inReplyToAccountId: r.parent?.account_id ?? null,
        reblogOfId: null, applicationId: null, uri: r.uri, url: r.url, createdAt: r.createdAt,
      };
      // Its author's (and parent's) counters are moved last, below: they lock those rows until the commit.
      const status = await statuses.insertStatus(tx, row, { countLater: true });
      await statuses.insertMentions(tx, status.id, r.mentioned.map((a) => a.id));
      await statuses.insertTags(tx, status.id, r.tags);
      await insertRemoteMedia(tx, status.id, r.accountId, r.media);
      if (r.poll) {
        await polls.insertPoll(tx, {
          statusId: status.id, accountId: r.accountId, options: r.poll.options, multiple: r.poll.multiple, hideTotals: false,
          expiresAt: r.poll.expiresAt, tallies: r.poll.tallies, votersCount: r.poll.votersCount,
        });
      }
      for (const a of r.mentioned) if (a.domain === null) await notifyAccount(deps, tx, a.id, r.accountId, 'mention', status.id);
      if (r.quote) {
        const { quoted, state, approvalUri } = r.quote;
        await quotes.insertQuote(tx, { statusId: status.id, accountId: r.accountId, quotedStatusId: quoted.id, quotedAccountId: quoted.account_id, state, approvalUri });
        // A local author hears of an approved quote of their post (one awaiting their approval, once it is given).
        if (state === 'accepted' && quoted.uri === null && quoted.account_id !== r.accountId) await notifyAccount(deps, tx, quoted.account_id, r.accountId, 'quote', status.id);
      }
      const outbox = [await addToOutbox(tx, 'fanOutStatus', { statusId: status.id })];
      // Its attachments copied here, so readers never load them from its server (services/remote-media.ts).
      if (r.media.some((m) => m.type !== 'unknown')) outbox.push(await addToOutbox(tx, 'cacheRemoteMedia', { statusId: status.id }));
      if (r.media.length === 0 && firstCardLink(r.content, ownHosts(deps.config))) outbox.push(await addToOutbox(tx, 'fetchLinkCard', { statusId: status.id }));
      await statuses.countNewStatus(tx, row);
      return { status, outbox };
    });
    await deps.versions.bump({ accounts: [r.accountId], statuses: [r.parent?.id, r.quote?.state === 'accepted' ? r.quote.quoted.id : null] });
    await enqueueAll(deps.jobs, outbox);
    return status.id;
  } catch (err) {
    if ((err as { constraint?: string }).constraint === 'statuses_uri') return null; // the same Create, raced
    throw err;
  }
}

/** A status's current version as a history row (status_edits), dated `at`. */
async function snapshot(tx: PoolClient, status: statuses.StatusRow, at: Date): Promise<void> {
  const [media, poll] = await Promise.all([mediaOfStatuses(tx, [status.id]), polls.pollOfStatus(tx, status.id)]);
  await insertStatusEdit(tx, {
    statusId: status.id, accountId: status.account_id, text: status.text, content: status.content, spoilerText: status.spoiler_text,
    sensitive: status.sensitive, media: (media.get(status.id) ?? []).map((m) => ({ id: m.id, description: m.description })),
    pollOptions: poll?.options ?? null, createdAt: at,
  });
}

/** Records an edit in the history: the first edit also keeps the version as first posted. `apply` makes the edit. */
async function withHistory(tx: PoolClient, before: statuses.StatusRow, apply: () => Promise<statuses.StatusRow | null>): Promise<statuses.StatusRow | null> {
  if (!(await hasEdits(tx, before.id))) await snapshot(tx, before, before.created_at);
  const after = await apply();
  if (after) await snapshot(tx, after, after.edited_at ?? new Date());
  return after;
}

/**
 * PUT /api/v1/statuses/:id, inside the author's actor: the status takes its new text (mentions and hashtags parsed
 * again), warnings, attachments and poll, its previous version kept in its history. A poll whose options or
 * kind change starts over (its votes go), as in Mastodon. Newly mentioned local accounts are notified, local
 * accounts that reblogged it get an `update` notification; other servers get an Update, open streams
 * `status.update`.
 */
export async function editStatus(deps: StatusDeps, accountId: string, statusId: string, p: EditParams): Promise<void> {
  const { db, config } = deps;
  const status = await statuses.findStatus(db, statusId);
  if (!status || status.account_id !== accountId || status.reblog_of_id) throw notFound();
  const mediaIds = [...new Set(p.mediaIds)];
  checkContent(config, p, mediaIds);
  await checkAttachable(db, accountId, mediaIds, { statusId: status.id });
  const { accounts: mentioned, map, tags } = await resolveMentions(db, config, p.text, accountId, deps.resolveRemote);
  const content = renderStatusText(p.text, { publicUrl: config.publicUrl, localDomain: config.localDomain, mentions: map });
  const outbox = await transaction(db, async (tx) => {
    const outbox: OutboxRow[] = [];
    const edited = await withHistory(tx, status, async () => {
      if ((await reattachMedia(tx, status.id, accountId, mediaIds)) !== mediaIds.length) {
        throw unprocessable('Validation failed: media_ids names media that does not exist or is attached to another status');
      }
      for (const m of p.mediaAttributes) {
        if (!mediaIds.includes(m.id)) continue;
        await updateMediaDetails(tx, m.id, accountId, { description: m.description?.slice(0, 1500), focusX: m.focusX, focusY: m.focusY });
      }
      const previous = await polls.pollOfStatus(tx, status.id);
      const samePoll = previous && p.poll && p.poll.multiple === previous.multiple && p.poll.options.join('\u0000') === previous.options.join('\u0000');
      if (previous && !samePoll) await polls.deletePollOfStatus(tx, status.id);
      if (p.poll && !samePoll) outbox.push((await createLocalPoll(tx, status.id, accountId, p.poll)).outbox);
      if (samePoll && previous.hide_totals !== p.poll!.hideTotals) await tx.query(`UPDATE polls SET hide_totals = $2 WHERE id = $1`, [previous.id, p.poll!.hideTotals]);
      if (p.quotePolicy !== undefined) await statuses.setQuotePolicy(tx, status.id, effectiveQuotePolicy(status.visibility, p.quotePolicy));
      return statuses.updateLocalStatus(tx, status.id, {
        text: p.text, content, spoilerText: p.spoilerText, sensitive: p.sensitive || p.spoilerText !== '',
        language: p.language === undefined ? status.language : p.language,
      });
    });
    if (!edited) throw notFound();
    const added = await statuses.replaceMentions(tx, status.id, mentioned.map((a) => a.id));
    await statuses.replaceTags(tx, status.id, tags);
    for (const a of mentioned) if (a.domain === null && added.includes(a.id)) await notifyAccount(deps, tx, a.id, accountId, 'mention', status.id);
    // Each edit notifies afresh (one notification per reblogger and status, the latest).
    for (const reblogger of await statuses.localRebloggers(tx, status.id)) {
      await removeNotification(tx, reblogger, accountId, 'update', status.id);
      await notifyAccount(deps, tx, reblogger, accountId, 'update', status.id);
    }
    // Local accounts whose quotes of it stand hear of the edit (Mastodon's quoted_update), the latest edit only.
    for (const q of await quotes.quotingStatusIds(tx, status.id)) {
      if (q.state !== 'accepted') continue;
      await removeNotification(tx, q.accountId, accountId, 'quoted_update', status.id);
      await notifyAccount(deps, tx, q.accountId, accountId, 'quoted_update', status.id);
    }
    outbox.push(await addToOutbox(tx, 'fanOutStatus', { statusId: status.id, edit: true }), await queueDelivery(tx, { activity: 'Update', statusId: status.id }));
    outbox.push(...(await queueWebhookEvent(tx, 'status.updated', status.id)));
    // The card follows the text: fetched for a new link, taken away with the old one.
    const own = ownHosts(config);
    if (firstCardLink(content, own) || firstCardLink(status.content, own)) {
      outbox.push(await addToOutbox(tx, 'fetchLinkCard', { statusId: status.id }));
    }
    return outbox;
  });
  await deps.versions.bump({ statuses: [status.id, ...(await quotes.quotingStatusIds(db, status.id)).map((q) => q.statusId)] });
  await deps.events.publish(streamChannels.home(accountId), { event: 'status.update', statusId: status.id });
  await enqueueAll(deps.jobs, outbox);
}

/**
 * An Update of a remote Note or Question: an edit (its `updated` is later than the last we have) changes its text and
 * warnings in place, the version before kept in its history, and its local rebloggers are notified; a poll's counts
 * are refreshed whether it was edited or not. Readers see it at once.
 */
export async function editRemoteStatus(deps: StatusDeps, status: statuses.StatusRow, u: { content: string; spoilerText: string; sensitive: boolean; editedAt: Date | null; poll?: RemotePoll | null }): Promise<void> {
  const outbox = await transaction(deps.db, async (tx) => {
    if (u.poll) {
      const poll = await polls.pollOfStatus(tx, status.id);
      if (poll) await polls.updateRemoteTallies(tx, poll.id, u.poll.tallies, u.poll.votersCount, u.poll.expiresAt);
    }
    if (!u.editedAt) return null;
    const editedAt = u.editedAt;
    const edited = await withHistory(tx, status, () => statuses.updateRemoteStatus(tx, status.id, { ...u, editedAt }));
    if (!edited) return null;
    for (const reblogger of await statuses.localRebloggers(tx, status.id)) {
      await removeNotification(tx, reblogger, status.account_id, 'update', status.id);
      await notifyAccount(deps, tx, reblogger, status.account_id, 'update', status.id);
    }
    const rows = [await addToOutbox(tx, 'fanOutStatus', { statusId: status.id, edit: true })];
    // The card follows the text (jobs/link-cards.ts).
    const own = ownHosts(deps.config);
    if (firstCardLink(u.content, own) || firstCardLink(status.content, own)) rows.push(await addToOutbox(tx, 'fetchLinkCard', { statusId: status.id }));
    return rows;
  });
  await deps.versions.bump({ statuses: [status.id] });
  if (outbox) await enqueueAll(deps.jobs, outbox);
}

/** A poll of another server as its Question says it. */
export interface RemotePoll {
  options: string[];
  tallies: number[];
  multiple: boolean;
  votersCount: number | null;
  expiresAt: Date | null;
}

/**
 * POST /api/v1/statuses/:id/quotes/:quoting_status_id/revoke, inside the quoted author's actor: the quote becomes
 * `revoked` and stops counting. 404 unless that status quotes the quoted one; 403 when the quoted one is not theirs.
 */
export async function revokeQuote(deps: StatusDeps, accountId: string, quotedStatusId: string, quotingStatusId: string): Promise<void> {
  const quoted = await statuses.findStatus(deps.db, quotedStatusId);
  if (!quoted) throw notFound();
  const existing = await quotes.quoteOfStatus(deps.db, quotingStatusId);
  if (!existing || existing.quoted_status_id !== quoted.id) throw notFound();
  // Mastodon's QuotePolicy#revoke?: the quoted post's author only.
  if (quoted.account_id !== accountId) throw new ApiError(403, 'This action is not allowed');
  const delivery = await transaction(deps.db, async (tx) => {
    const revoked = await quotes.revokeQuote(tx, quoted.id, quotingStatusId);
    // A remote quoter's server hears that the stamp is withdrawn (Mastodon sends a Delete of the QuoteAuthorization).
    const quoter = revoked ? await statuses.findStatus(tx, quotingStatusId) : null;
    return revoked && quoter?.uri ? queueDelivery(tx, { activity: 'DeleteQuoteAuthorization', accountId, quoteId: revoked.id, requesterId: revoked.account_id }) : null;
  });
  await deps.versions.bump({ statuses: [quoted.id, quotingStatusId] });
  if (delivery) await enqueueAll(deps.jobs, [delivery]);
}

/** PUT /api/v1/statuses/:id/interaction_policy, inside the author's actor: who may quote it from now on. */
export async function setQuotePolicy(deps: StatusDeps, accountId: string, statusId: string, policy: string): Promise<void> {
  const status = await statuses.findStatus(deps.db, statusId);
  if (!status || status.account_id !== accountId || status.reblog_of_id) throw notFound();
  await statuses.setQuotePolicy(deps.db, status.id, effectiveQuotePolicy(status.visibility, policy));
  await deps.versions.bump({ statuses: [status.id] });
}

/**
 * A remote account's QuoteRequest for a local post (FEP-044f), inside the quoted author's actor: allowed by the post's
 * policy (checked by the caller), its quote becomes accepted with the request's id, the author is told, and an Accept
 * carrying our stamp goes back; refused, the quote (if stored) is rejected and a Reject goes back.
 */
export async function answerQuoteRequest(deps: StatusDeps, accountId: string, r: { quotingStatusId: string | null; requesterId: string; requestUri: string; quotedStatusId: string; instrumentUri: string; allow: boolean }): Promise<void> {
  const delivery = await transaction(deps.db, async (tx) => {
    let quote: quotes.QuoteRow | null = null;
    if (r.allow && r.quotingStatusId) {
      quote = await quotes.acceptQuote(tx, r.quotingStatusId, { activityUri: r.requestUri });
      if (quote) await notifyAccount(deps, tx, accountId, r.requesterId, 'quote', r.quotingStatusId);
      quote ??= await quotes.quoteOfStatus(tx, r.quotingStatusId);
      if (quote?.state !== 'accepted') return null; // revoked since: no stamp
    } else if (r.quotingStatusId) {
      quote = await quotes.rejectQuote(tx, r.quotingStatusId, r.requestUri);
    }
    return queueDelivery(tx, {
      activity: r.allow ? 'AcceptQuote' : 'RejectQuote', accountId, requesterId: r.requesterId, requestUri: r.requestUri,
      quotedStatusId: r.quotedStatusId, instrumentUri: r.instrumentUri, quoteId: quote?.id ?? null,
    });
  });
  if (r.quotingStatusId) await deps.versions.bump({ statuses: [r.quotedStatusId, r.quotingStatusId] });
  if (delivery) await enqueueAll(deps.jobs, [delivery]);
}
