import type { Db } from '../storage/db.ts';
import type { HomeFeeds } from '../storage/feeds.ts';
import type { ActorRegistry } from '../actors/registry.ts';
import { findStatusForFanOut, findStatusRecord, tagsOf, type StatusRow } from '../storage/statuses.ts';
import { localFollowersBatch, whoFollow } from '../storage/follows.ts';
import { listsAlsoHolding, listsWithMember } from '../storage/lists.ts';
import { mediaOfStatuses } from '../storage/media.ts';
import { publicChannelsOf, streamChannels, type StreamEvents, type StreamMessage, type StreamView } from '../services/stream-events.ts';
import { addDirectStatus, removeDirectStatus } from '../services/conversations.ts';
import { fanOutToTagFollowers } from './tag-fanout.ts';
import { BatchViews } from './batch-views.ts';

const BATCH = 1000;
const IN_FLIGHT = 4;

export interface FanOutDeps {
  db: Db;
  feeds: HomeFeeds;
  actors: ActorRegistry;
  events: StreamEvents;
  /**
   * A status as most of its live receivers see it (http/serializers/stream-payloads.ts), carried in its stream
   * messages; without it, each streaming process reads the status itself.
   */
  renderStreamView?: (statusId: string, authorId: string) => Promise<StreamView | null>;
}

/** Whether a status goes out on the public streams, as Mastodon decides: public, not a boost, not a reply to another. */
function broadcastable(s: StatusRow): boolean {
  return s.visibility === 'public' && !s.reblog_of_id && (!s.in_reply_to_account_id || s.in_reply_to_account_id === s.account_id);
}

async function publicChannels(db: Db, s: StatusRow): Promise<string[]> {
  const [tags, media] = await Promise.all([tagsOf(db, [s.id]), mediaOfStatuses(db, [s.id])]);
  return publicChannelsOf({ local: s.uri === null, hasMedia: (media.get(s.id) ?? []).length > 0, tags: tags.get(s.id) ?? [] });
}

/**
 * Each follower's actor adds the status to its own feed; the job ends when all of them have. Their home streams are
 * told before (by the caller, in one pipeline): an app inserts the status it is sent without reading the feed, and
 * waiting for a thousand actors' writes would put their time between the post and every socket.
 */
async function addToFeeds(actors: ActorRegistry, accountIds: string[], statusId: string, edit = false): Promise<void> {
  // An edited status is in the feeds it was put in: only the streams hear of it.
  if (accountIds.length === 0 || edit) return;
  await actors.addToHomeFeeds(accountIds, statusId);
}

/**
 * Puts a new status into the home feeds of the author's local followers (DESIGN.md, "The flow of a post"),
 * a thousand followers per query, through each follower's actor. Feeds that take no statuses (not built) are
 * skipped, found in one Redis round trip per batch: they are rebuilt from PostgreSQL when next read. Adding is
 * idempotent, so a retried job does no harm. Returns how many feeds it was added to (none for an edit, which only
 * tells the streams).
 */
export async function fanOutStatus({ db, feeds, actors, events, renderStreamView }: FanOutDeps, statusId: string, edit = false): Promise<number> {
  // The status and its author's first thousand local followers, in one round trip.
  const found = await findStatusForFanOut(db, statusId, BATCH);
  if (!found) return 0;
  const { status } = found;
  const idsOnly = { event: edit ? 'status.update' : 'update', statusId, accountId: status.account_id } as const;
  // A new status's view is rendered with the first batch of followers. Its messages go only to those who may see
  // it: a followers-only status's to followers' homes (it is on no public stream). A direct status, seen by few, is
  // rendered where their sockets are; so is an edit (receivers may have bookmarked it, voted in its poll or muted its
  // thread, which a view for all cannot show) and a boost (its counts are above 0: receivers' flags must be read).
  const views = renderStreamView && !edit && !status.reblog_of_id && status.visibility !== 'direct' ? new BatchViews(() => renderStreamView(statusId, status.account_id)) : null;
  const messageFor = (view: string | undefined): StreamMessage => (view === undefined ? idsOnly : { ...idsOnly, view });
  // The public streams are told together with the first followers' homes, in one pipeline: a streaming process
  // holding both kinds of sockets gets them in one read and renders them as one batch (one load of the status, one
  // query of its receivers' flags, one read of their versions), where two batches a few milliseconds apart would
  // cost it all twice. A limited (silenced) author, or one of a silenced server, is kept off the public streams as
  // off public timelines.
  let publicChannels = broadcastable(status) && !found.authorLimited ? publicChannelsOf({ local: status.uri === null, hasMedia: found.hasMedia, tags: found.tagNames }) : [];
  const tellPublic = async (message: StreamMessage) => {
    const channels = publicChannels;
    publicChannels = [];
    if (channels.length > 0) await events.publish(channels, message);
  };
  let delivered = 0;
  if (status.visibility === 'direct') {
    // Direct statuses reach the home feeds of mentioned accounts that follow the author.
    const { rows } = await db.query<{ account_id: string }>(`SELECT account_id FROM mentions WHERE status_id = $1`, [statusId]);
    const followers = await whoFollow(db, rows.map((r) => r.account_id), status.account_id);
    await events.publishToHomes(followers, idsOnly);
    const accepting = edit ? [] : await feeds.acceptingAmong([...followers]);
    await addToFeeds(actors, accepting, statusId, edit);
    // And their conversations (services/conversations.ts).
    await addDirectStatus({ db, events }, status);
    return accepting.length;
  }
  // A reply to someone else reaches only followers who follow that someone too, as in Mastodon.
  const replyToOther = status.in_reply_to_account_id && status.in_reply_to_account_id !== status.account_id ? status.in_reply_to_account_id : null;
  let after = '0';
  // A batch's feeds are being written while the next batch is read: at most IN_FLIGHT batches' writes at once.
  const writing: Promise<void>[] = [];
  for (;;) {
    const reading = after === '0' ? found.firstFollowers : localFollowersBatch(db, status.account_id, after, BATCH);
    const [batch, view] = await Promise.all([reading, views?.forBatch()]);
    const message = messageFor(view);
    if (batch.length === 0) {
      await tellPublic(message); // no local followers
      break;
    }
    after = batch.at(-1)!.followId;
    let targets = batch.filter((f) => !status.reblog_of_id || f.showReblogs).map((f) => f.accountId);
    if (replyToOther) {
      const alsoFollow = await whoFollow(db, targets, replyToOther);
      targets = targets.filter((id) => alsoFollow.has(id) || id === replyToOther);
    }
    // Their streams before their feeds: whoever listens has a built feed (subscribing builds it), and a channel
    // nobody listens to costs Redis next to nothing, so there is no need to wait for the feeds' check.
    await Promise.all([tellPublic(message), events.publishToHomes(targets, message)]);
    // An edit leaves the feeds as they are: which of them take statuses need not be asked.
    const accepting = edit ? [] : await feeds.acceptingAmong(targets);
    const written = addToFeeds(actors, accepting, statusId, edit);
    written.catch(() => {}); // awaited below; not an unhandled rejection meanwhile
    writing.push(written);
    if (writing.length >= IN_FLIGHT) await writing.shift();
    delivered += accepting.length;
    if (batch.length < BATCH) break;
  }
  await Promise.all(writing);
  if (!edit && found.inLists) await fanOutToLists(db, actors, status);
  // Local accounts following one of its hashtags (jobs/tag-fanout.ts).
  if (!edit && found.tagFollowed) {
    delivered += await fanOutToTagFollowers({ db, feeds, actors, events }, status, { tagIds: found.tagIds, authorHidden: found.authorLimited || found.authorSuspended });
  }
  return delivered;
}

/**
 * Puts a status into the feeds of the lists its author is in, through each list owner's actor, with Mastodon's
 * replies policies: a reply to someone else goes to a list only when it answers the list's owner, or under `followed`
 * (members are followed), or under `list` when the one answered is in the list too; never under `none`.
 */
async function fanOutToLists(db: Db, actors: ActorRegistry, status: StatusRow): Promise<void> {
  const replyTo = status.in_reply_to_account_id && status.in_reply_to_account_id !== status.account_id ? status.in_reply_to_account_id : null;
  let after = '0';
  for (;;) {
    const batch = await listsWithMember(db, status.account_id, after, BATCH);
    if (batch.length === 0) break;
    after = batch.at(-1)!.id;
    const replyTargetIn = replyTo ? await listsAlsoHolding(db, batch.filter((l) => l.repliesPolicy === 'list').map((l) => l.id), replyTo) : new Set<string>();
    const byOwner = new Map<string, string[]>();
    for (const l of batch) {
      const shown = !replyTo || replyTo === l.ownerId || l.repliesPolicy === 'followed' || replyTargetIn.has(l.id);
      if (shown) byOwner.set(l.ownerId, [...(byOwner.get(l.ownerId) ?? []), l.id]);
    }
    await Promise.all([...byOwner].map(([ownerId, listIds]) => actors.ask(ownerId, { type: 'addToListFeeds', listIds, statusId: status.id })));
    if (batch.length < BATCH) break;
  }
}

/**
 * Takes statuses purged together (other servers' posts past the retention period: none mentions anyone here) out of
 * the home feeds of their authors' local followers, each follower's actor asked once with the ids of the authors it
 * follows, and tells the list streams of lists holding an author. `byAuthor`: status ids by author id.
 */
export async function removePurgedFromFeeds({ db, actors, events }: FanOutDeps, byAuthor: Record<string, string[]>): Promise<void> {
  const byFollower = new Map<string, string[]>();
  for (const [authorId, statusIds] of Object.entries(byAuthor)) {
    for (let after = '0'; ;) {
      const batch = await localFollowersBatch(db, authorId, after, BATCH);
      if (batch.length === 0) break;
      after = batch.at(-1)!.followId;
      for (const f of batch) byFollower.set(f.accountId, [...(byFollower.get(f.accountId) ?? []), ...statusIds]);
      if (batch.length < BATCH) break;
    }
    await tellListsOfDeletion({ db, events }, authorId, statusIds);
  }
  const followers = [...byFollower];
  for (let i = 0; i < followers.length; i += BATCH) {
    await Promise.all(followers.slice(i, i + BATCH).map(([id, statusIds]) => actors.ask(id, { type: 'removeFromHomeFeed', statusIds })));
  }
}

/** The streams of the lists that have the author tell of their statuses' deletion (list feeds keep the ids; reads leave deleted statuses out). */
async function tellListsOfDeletion({ db, events }: Pick<FanOutDeps, 'db' | 'events'>, authorId: string, statusIds: string[]): Promise<void> {
  for (let after = '0'; ;) {
    const lists = await listsWithMember(db, authorId, after, BATCH);
    if (lists.length === 0) break;
    after = lists.at(-1)!.id;
    for (const statusId of statusIds) await events.publish(lists.map((l) => streamChannels.list(l.id)), { event: 'delete', statusId });
    if (lists.length < BATCH) break;
  }
}

/** Takes a deleted status (and its reblogs) out of every local feed it may be in, through each owner's actor. */
export async function removeStatusFromFeeds({ db, actors, events }: FanOutDeps, statusIds: string[], authorId: string, mentionedIds: string[]): Promise<void> {
  for (const statusId of statusIds) {
    const status = await findStatusRecord(db, statusId);
    if (status && broadcastable(status)) await events.publish(await publicChannels(db, status), { event: 'delete', statusId });
  }
  const removeFrom = (accountIds: string[]) => Promise.all(accountIds.map((id) => actors.ask(id, { type: 'removeFromHomeFeed', statusIds })));
  await removeFrom([...new Set([authorId, ...mentionedIds])]);
  // The list streams that had it hear of its deletion (list feeds keep the id; reads leave deleted statuses out).
  await tellListsOfDeletion({ db, events }, authorId, statusIds);
  for (const statusId of statusIds) await removeDirectStatus(db, [...new Set([authorId, ...mentionedIds])], statusId);
  let after = '0';
  for (;;) {
    const batch = await localFollowersBatch(db, authorId, after, BATCH);
    if (batch.length === 0) break;
    after = batch.at(-1)!.followId;
    await removeFrom(batch.map((f) => f.accountId));
    if (batch.length < BATCH) break;
  }
}
