import { Accept, Announce, Block, Create, Delete, Follow, Like, Mention, Note, Reject, Undo, Update, isActor } from '@fedify/vocab';
import type { Federation, InboxContext } from '@fedify/fedify';
import { pino } from 'pino';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { findAccountById } from '../storage/accounts.ts';
import { followByUri, hasLocalFollowers } from '../storage/follows.ts';
import { findStatus, findStatusByUri, type StatusRow, type Visibility } from '../storage/statuses.ts';
import { deleteStatus, editRemoteStatus } from '../services/statuses.ts';
import { transaction } from '../storage/db.ts';
import { canSee } from '../services/visibility.ts';
import { accountForActorUri, storeRemoteActor } from './remote-accounts.ts';
import { fetchNote, fetchObjectOnce, isPublic, localActor, receiveNote, remotePollOf, statusByUri, storeFetchedNote, visibilityOf } from './remote-statuses.ts';
import { isStatusObject, rawObjectOf, statusTextOf, type StatusObject } from './incoming-objects.ts';
import { Question } from '@fedify/vocab';
import { pollOfStatus } from '../storage/polls.ts';
import { receiveRemoteVote } from '../services/polls.ts';
import { INSTANCE_ACTOR } from './instance-actor.ts';
import { boundedItems } from './inbound-limits.ts';
import { blockByUri, blocksAccountOrDomain } from '../storage/blocks.ts';
import { queueDelivery } from '../services/deliveries.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { Flag, QuoteRequest } from '@fedify/vocab';
import { onQuoteAnswer, onQuoteRequest, onRemoteNoteUpdate, quotedUriOf } from './quotes.ts';
import { quoteByApprovalUri, revokeQuote } from '../storage/quotes.ts';
import { onFlag } from './flag.ts';
import { deleteRemoteActor } from '../services/account-deletion.ts';
import { Add, Remove } from '@fedify/vocab';
import { onAdd, onRemove } from './featured.ts';
import { Activity } from '@fedify/vocab';
import { dropInbound, dropUnavailable, trackedInboxListeners, typeName } from './drops.ts';
import { Move } from '@fedify/vocab';
import { onMove } from './move.ts';
import { arrivedThroughRelay, onRelayAnnounce, onRelayAnswer, onRelayFollow } from './relays.ts';
import { EmojiReact } from '@fedify/vocab';
import { onReaction, undoReaction, undoReactionById } from './reactions.ts';
import { receiveRemoteEmojis } from './emojis.ts';

type Fed = InboxContext<AppContext>;

/** The inbox's logger at its server's LOG_LEVEL (one a level: servers in one process, as in the tests, may differ). */
const logs = new Map<string, ReturnType<typeof pino>>();
function inboxLog(level: string) {
  let log = logs.get(level);
  if (!log) logs.set(level, (log = pino({ level }).child({ part: 'inbox' })));
  return log;
}

/**
 * Incoming activities (Fedify has checked the HTTP signature and that the signer is the activity's actor before any
 * of these run). Each is idempotent: the same activity twice has one effect, through unique ids and constraints.
 */
export function registerInboxListeners(federation: Federation<AppContext>): void {
  // Every activity is counted by type and outcome, and what is dropped is logged once with why (drops.ts).
  trackedInboxListeners(federation.setInboxListeners('/users/{identifier}/inbox', '/inbox'))
    .on(Follow, onFollow)
    .on(Accept, onAccept)
    .on(Reject, onReject)
    .on(Undo, onUndo)
    .on(Create, onCreate)
    .on(Update, onUpdate)
    .on(Delete, onDelete)
    .on(Like, (fed, like) => onReaction(fed, like, sender))
    .on(EmojiReact, (fed, react) => onReaction(fed, react, sender))
    .on(Announce, onAnnounce)
    .on(Block, onBlock)
    .on(Flag, onFlag)
    // Pins of remote accounts: Add to and Remove from their featured collection (federation/featured.ts).
    .on(Add, onAdd)
    .on(Remove, onRemove)
    // Quote posts (FEP-044f): a remote account asks to quote one of our posts (federation/quotes.ts).
    .on(QuoteRequest, onQuoteRequestActivity)
    // Account moves: a remote account moved to another that lists it as an alias (federation/move.ts).
    .on(Move, onMoveActivity)
    // What the shared inbox fetches (the sender's key and actor, objects named by id) is signed by the instance
    // actor; personal inboxes sign as their owner (Fedify). Servers in authorized-fetch mode refuse unsigned GETs.
    .setSharedKeyDispatcher(() => ({ identifier: INSTANCE_ACTOR }))
    .onError((fed, err) => inboxLog(fed.data.config.logLevel).warn({ err }, 'inbox activity failed'));
}

/** The sender's account (stored or fetched). Null when its actor cannot be had. */
async function sender(fed: Fed, activity: Activity): Promise<AccountRow | null> {
  if (!activity.actorId) return null;
  if (await domainPolicy(fed.data).refuses(activity.actorId.href)) { // a suspended server's, queued before
    dropInbound(fed.data, activity, 'refused', 'its server is suspended here');
    return null;
  }
  const account = await accountForActorUri(fed.data, fed, activity.actorId.href);
  if (!account) {
    dropUnavailable(fed.data, activity, 'actor', activity.actorId);
    return null;
  }
  // A deleted or suspended actor's late or retried activities change nothing (its key may still verify).
  if (account.suspended_at || account.deleted_at) {
    dropInbound(fed.data, activity, 'refused', `its actor ${activity.actorId.href} is suspended here or deleted`, { quiet: true });
    return null;
  }
  return account;
}

/** Ids a sender may mint: only under its own origin (another server's ids are not its to claim). */
function ownedBy(author: AccountRow, ...ids: (URL | null)[]): boolean {
  const origin = author.uri ? new URL(author.uri).origin : null;
  return origin !== null && ids.every((id) => id !== null && id.origin === origin);
}

async function onFollow(fed: Fed, follow: Follow): Promise<void> {
  if (!follow.id) return;
  if (await onRelayFollow(fed, follow)) return; // a LitePub relay following us back (federation/relays.ts)
  const target = await localActor(fed, follow.objectId);
  if (!target) return dropInbound(fed.data, follow, 'not_addressed', `it follows ${follow.objectId?.href ?? 'nobody'}, not an account here`);
  const follower = await sender(fed, follow);
  // A Follow's id is its sender's to mint: one naming another server's id could stand in for that server's Follow.
  if (!target || !follower || follower.domain === null || !ownedBy(follower, follow.id)) return;
  // Someone the target blocks (or whose server they block) is refused at once, as Mastodon's Follow handler does.
  if (await blocksAccountOrDomain(fed.data.db, target.id, follower.id)) {
    const delivery = await queueDelivery(fed.data.db, { activity: 'RejectFollow', accountId: target.id, requesterId: follower.id, followUri: follow.id.href });
    await fed.data.jobs.enqueue(delivery).catch(() => {});
    return;
  }
  const outcome = await fed.data.actors.ask(follower.id, { type: 'follow', targetId: target.id, options: { uri: follow.id.href } });
  // A locked account answers when its owner decides (actors/account.ts sends the Accept or Reject then).
  if (outcome !== 'requested') await fed.data.actors.ask(target.id, { type: 'acceptRemoteFollow', requesterId: follower.id, followUri: follow.id.href });
}

/**
 * The local account whose Follow an Accept or Reject from `remote` answers. The Follow is ours: it is found by its
 * id in our database (whether the other server embedded it or named it by id alone), and only when it was sent to
 * `remote`; the embedded copy is not fetched back nor trusted beyond its id.
 */
async function answeredFollower(fed: Fed, answer: Accept | Reject, remote: AccountRow): Promise<AccountRow | null> {
  const id = answer.objectId;
  const follow = id ? await followByUri(fed.data.db, id.href, { targetId: remote.id }) : null;
  if (!follow || follow.targetId !== remote.id) return null;
  const local = await findAccountById(fed.data.db, follow.accountId);
  return local && local.domain === null ? local : null;
}

/** Accept of our Follow: the pending request becomes a follow. */
async function onAccept(fed: Fed, accept: Accept): Promise<void> {
  if (await onRelayAnswer(fed, accept, true)) return; // a relay's answer to our subscription (federation/relays.ts)
  const remote = await sender(fed, accept);
  if (!remote || remote.domain === null) return;
  if (await onQuoteAnswer(fed, accept, remote, true)) return; // an answer to our QuoteRequest (federation/quotes.ts)
  const local = await answeredFollower(fed, accept, remote);
  if (local) await fed.data.actors.ask(remote.id, { type: 'authorizeFollowRequest', requesterId: local.id });
}

/** Reject of our Follow (or of one accepted before): neither a request nor a follow remains. */
async function onReject(fed: Fed, reject: Reject): Promise<void> {
  if (await onRelayAnswer(fed, reject, false)) return;
  const remote = await sender(fed, reject);
  if (!remote || remote.domain === null) return;
  if (await onQuoteAnswer(fed, reject, remote, false)) return;
  const local = await answeredFollower(fed, reject, remote);
  if (!local) return;
  await fed.data.actors.ask(remote.id, { type: 'rejectFollowRequest', requesterId: local.id });
  await fed.data.actors.ask(local.id, { type: 'unfollow', targetId: remote.id, federate: false });
}

async function onUndo(fed: Fed, undo: Undo): Promise<void> {
  const remote = await sender(fed, undo);
  if (!remote || remote.domain === null || !undo.objectId) return;
  // Some servers name what they undo by its id alone; as Mastodon does, a boost or a follow of theirs that we hold
  // under that id is what is meant (and, beyond Mastodon, a Like or EmojiReact: Pleroma's and Akkoma's Undo). Only then is the object fetched (an inlined one costs nothing).
  if (await undoByReference(fed, remote, undo.objectId)) return;
  let object;
  try {
    object = await undo.getObject();
  } catch {
    return; // named by an id we do not know and cannot fetch: there is nothing of it here to undo
  }
  if (!object) return;
  // Only the actor of what is undone may undo it.
  const actorId = 'actorId' in object ? (object.actorId as URL | null) : null;
  if (actorId?.href !== remote.uri) return;
  if (object instanceof Follow) {
    const local = await localActor(fed, object.objectId);
    if (local) await fed.data.actors.ask(remote.id, { type: 'unfollow', targetId: local.id });
  } else if (await undoReaction(fed, remote, object)) {
    // a Like or an EmojiReact (federation/reactions.ts)
  } else if (object instanceof Announce && object.id) {
    await undoAnnounce(fed, remote, object.id);
  } else if (object instanceof Block) {
    const local = await localActor(fed, object.objectId);
    if (local) await fed.data.actors.ask(remote.id, { type: 'unblock', targetId: local.id });
  }
}

/** Undoes the sender's boost, reaction, block or follow stored under this id; false when it names none of them. */
async function undoByReference(fed: Fed, remote: AccountRow, id: URL): Promise<boolean> {
  if (await undoAnnounce(fed, remote, id)) return true;
  if (await undoReactionById(fed, remote, id)) return true;
  const block = await blockByUri(fed.data.db, id.href, remote.id);
  if (block) {
    await fed.data.actors.ask(remote.id, { type: 'unblock', targetId: block.targetId });
    return true;
  }
  const follow = await followByUri(fed.data.db, id.href, { accountId: remote.id });
  if (!follow || follow.accountId !== remote.id) return false;
  await fed.data.actors.ask(remote.id, { type: 'unfollow', targetId: follow.targetId });
  return true;
}

async function undoAnnounce(fed: Fed, remote: AccountRow, id: URL): Promise<boolean> {
  const reblog = await findStatusByUri(fed.data.db, id.href);
  const original = reblog?.reblog_of_id ? await findStatus(fed.data.db, reblog.reblog_of_id) : null;
  // Only the boost this Undo names, and only while it stands (a late Undo of an earlier boost changes nothing).
  if (!reblog || !original || reblog.account_id !== remote.id) return false;
  if (!reblog.deleted_at) await fed.data.actors.ask(remote.id, { type: 'unreblog', status: original });
  return true;
}

/** A remote account blocks someone here: as Mastodon, follows both ways end, and what it posts is kept from them. */
async function onBlock(fed: Fed, block: Block): Promise<void> {
  const remote = await sender(fed, block);
  const local = remote ? await localActor(fed, block.objectId) : null;
  if (!remote || !local || remote.domain === null || (block.id && !ownedBy(remote, block.id))) return;
  await fed.data.actors.ask(remote.id, { type: 'block', targetId: local.id, uri: block.id?.href ?? null });
}

async function onCreate(fed: Fed, create: Create): Promise<void> {
  const note = await create.getObject().catch(() => undefined);
  if (note === undefined) return dropUnavailable(fed.data, create, 'object', create.objectId);
  // Notes and Questions, and what Mastodon converts (Article, Page, Video, Event, Image, Audio: incoming-objects.ts).
  if (!isStatusObject(note) || !note.id) return dropUnsupported(fed, create, note);
  const author = await sender(fed, create);
  if (!author || author.domain === null) return;
  // A post is its author's to create: a Create that puts words in another actor's mouth, or names its object with
  // another server's id (to take that id before the real one arrives), is ignored. (PeerTube attributes a Video to
  // its account and its channel: the sender must be one of them.)
  if (!note.attributionIds.some((a) => a.href === author.uri) || !ownedBy(author, create.id, note.id)) return;
  if (note instanceof Note && (await onVote(fed, note, author))) return;
  if (!(await concernsUs(fed, note, author)) && !(await relayedPublicNote(fed, create, note, author))) return dropInbound(fed.data, create, 'not_addressed', 'it concerns nobody here (no follower, mention, address or reply here)');
  await receiveNote(fed, note, author);
}

/** An activity whose object is of a type we do not take (a ChatMessage, an unknown type): logged once, answered 2xx. */
function dropUnsupported(fed: Fed, activity: Activity, object: unknown): void {
  const type = object && typeof object === 'object' ? ((object.constructor as { typeId?: URL }).typeId?.href.split(/[#/]/).pop() ?? 'object') : 'nothing';
  dropInbound(fed.data, activity, 'unsupported', `its object is a ${type}, which is not shown here`, { quiet: object === null });
}

/**
 * A vote on one of our polls, as Mastodon sends it: a Note with a `name` (the option) and no content, answering the
 * Question. True when the Note was one (counted or not), so that it is not stored as a reply.
 */
async function onVote(fed: Fed, note: Note, voter: AccountRow): Promise<boolean> {
  if (!note.name || !note.replyTargetId || note.content) return false;
  const status = await statusByUri(fed, note.replyTargetId);
  const poll = status && status.uri === null ? await pollOfStatus(fed.data.db, status.id) : null;
  if (!status || !poll) return false;
  if (await canSee(fed.data.db, voter.id, status)) await receiveRemoteVote(fed.data.actors.deps, poll.id, voter.id, String(note.name), note.id!.href);
  return true;
}

/**
 * Whether a pushed Note is any of this server's business (Mastodon's "related to local activity"): its author has a
 * follower here, or it is addressed to or mentions someone here, or it answers a post by someone here or by someone
 * followed from here. Anything else is unsolicited (spam would otherwise reach the federated timeline).
 */
async function concernsUs(fed: Fed, note: StatusObject, author: AccountRow): Promise<boolean> {
  const db = fed.data.db;
  if (await hasLocalFollowers(db, author.id)) return true;
  const addressed = [...note.toIds, ...note.ccIds].slice(0, 50);
  for (const uri of addressed) if (fed.parseUri(uri)?.type === 'actor' && (await localActor(fed, uri))) return true;
  for (const tag of await boundedItems((o) => note.getTags(o), 50, fed.documentLoader)) {
    if (tag instanceof Mention && tag.href && (await localActor(fed, tag.href))) return true;
  }
  // A quote of one of our posts (Mastodon counts it as local activity too).
  const quoted = note instanceof Note || note instanceof Question ? await statusByUri(fed, quotedUriOf(note)) : null;
  if (quoted && quoted.uri === null) return true;
  const parent = await statusByUri(fed, note.replyTargetId);
  if (!parent) return false;
  if (parent.uri === null) return true; // a post of ours
  return hasLocalFollowers(db, parent.account_id);
}

/** A public Note forwarded by an accepted relay (federation/relays.ts): a relay subscription makes it our business. */
async function relayedPublicNote(fed: Fed, create: Create, note: StatusObject, author: AccountRow): Promise<boolean> {
  return visibilityOf(note, author) === 'public' && (await arrivedThroughRelay(fed, create.id));
}

async function onUpdate(fed: Fed, update: Update): Promise<void> {
  // An object named by id that cannot be fetched is nothing to update (retrying would not bring it).
  const object = await update.getObject().catch(() => null);
  const remote = await sender(fed, update);
  if (!remote || remote.domain === null || !object) return;
  if (isActor(object)) {
    if (object.id?.href === remote.uri) await storeRemoteActor(fed.data, object);
  } else if (isStatusObject(object)) {
    await updateStatusFrom(fed, object, remote);
  }
}

/** An edit of a remote status by its author (an Update, or one relayed by a group), read as a Create's object is. */
async function updateStatusFrom(fed: Fed, object: StatusObject, remote: AccountRow): Promise<void> {
  if (!object.id) return;
  const status = await findStatusByUri(fed.data.db, object.id.href);
  if (!status || status.account_id !== remote.id) return;
  const question = object instanceof Question;
  await receiveRemoteEmojis(fed.data, object, remote.domain);
  const text = statusTextOf(object, rawObjectOf(object));
  await editRemoteStatus(fed.data.actors.deps, status, {
    content: text.content,
    spoilerText: text.spoilerText,
    sensitive: object.sensitive ?? false,
    // A Question updated without `updated` only brings its poll's counts (Mastodon's Update after votes).
    editedAt: object.updated ? new Date(object.updated.epochMilliseconds) : question ? null : new Date(),
    poll: question ? await remotePollOf(object) : null,
  });
  if (object instanceof Note || object instanceof Question) await onRemoteNoteUpdate(fed, object, remote, status);
}

async function onDelete(fed: Fed, del: Delete): Promise<void> {
  const remote = await sender(fed, del);
  const objectId = del.objectId;
  if (!remote || remote.domain === null || !objectId) return;
  if (objectId.href === remote.uri) {
    // The actor itself is gone: what we hold of it is removed by the deletion job; its row stays as a tombstone.
    await deleteRemoteActor(fed.data, remote);
    return;
  }
  // A stamp (QuoteAuthorization) withdrawn by the quoted author: the quote it approved is revoked (FEP-044f).
  const stamped = await quoteByApprovalUri(fed.data.db, objectId.href);
  if (stamped?.quoted_status_id && stamped.quoted_account_id === remote.id) {
    await transaction(fed.data.db, (tx) => revokeQuote(tx, stamped.quoted_status_id!, stamped.status_id));
    await fed.data.versions.bump({ statuses: [stamped.status_id, stamped.quoted_status_id] });
    return;
  }
  const status = await findStatusByUri(fed.data.db, objectId.href);
  if (!status || status.account_id !== remote.id || status.deleted_at) return;
  await deleteStatus(fed.data.actors.deps, remote.id, status.id).catch(() => {});
}

async function onQuoteRequestActivity(fed: Fed, request: QuoteRequest): Promise<void> {
  const remote = await sender(fed, request);
  if (!remote || remote.domain === null) return;
  await onQuoteRequest(fed, request, remote, { statusByUri, receiveNote, fetchNote: (f, id) => fetchNote(f, id) });
}

async function onMoveActivity(fed: Fed, move: Move): Promise<void> {
  const origin = await sender(fed, move);
  if (!origin || origin.domain === null) return;
  await onMove(fed, move, origin);
}

async function onAnnounce(fed: Fed, announce: Announce): Promise<void> {
  if (!announce.id) return;
  if (await onRelayAnnounce(fed, announce)) return; // a relay's Announce brings in the post, not a boost
  const remote = await sender(fed, announce);
  if (!remote || remote.domain === null || !ownedBy(remote, announce.id)) return;
  let status = await statusByUri(fed, announce.objectId);
  // As Mastodon, a boost is this server's business only when someone here follows its sender or it boosts a post of
  // ours; anything else would bring strangers' posts in unasked (and fetch them on their word).
  if (!(status && status.uri === null) && !(await hasLocalFollowers(fed.data.db, remote.id))) {
    return dropInbound(fed.data, announce, 'not_addressed', 'it concerns nobody here (no follower of its sender, and no post of ours)');
  }
  if (!status) {
    // What is announced: a post (a boost, a PeerTube channel's Video), or an activity that a group relays to its
    // followers (FEP-1b12: Lemmy's and others' communities announce their members' Create, Update, Delete, Like…,
    // inlined). Fedify gives an inlined object of the sender's own origin as it is, and one of another origin only as
    // fetched from that origin: what the sender says another server wrote is never taken on its word.
    const inlined = await announce.getObject({ documentLoader: refuseFetch }).catch(() => null);
    // Inlined from another origin, or named by its id alone (groups may relay an activity so, FEP-1b12; PeerTube
    // channels name their videos so): fetched from its id (signed, once), and taken as what it turns out to be. What
    // is fetched is its own server's word: fetchById takes only a document whose id is the URL it was fetched from,
    // and an activity must be of its actor's origin (onRelayed), a post of its author's (storeFetchedNote).
    const fetched = !inlined && announce.objectId ? await fetchObjectOnce(fed, announce.objectId) : null;
    const object = inlined ?? fetched;
    if (object instanceof Activity && !(object instanceof Question)) return onRelayed(fed, announce, remote, object);
    if (object && !isStatusObject(object)) return dropUnsupported(fed, announce, object);
    // A boost of a post we have not seen (a third server's, usually) brings the post in first, from its own server.
    if (fetched) status = isStatusObject(fetched) ? await storeFetchedNote(fed, fetched) : null;
    else status = await fetchNote(fed, announce.objectId);
  }
  if (!status) return dropUnavailable(fed.data, announce, 'object', announce.objectId);
  await reblogAs(fed, announce, remote, status);
}

/** The sender's boost of a stored status, addressed as its Announce is (public, unlisted or followers only). */
async function reblogAs(fed: Fed, announce: Announce, remote: AccountRow, status: StatusRow): Promise<void> {
  if (status.deleted_at || status.reblog_of_id) return;
  if (status.visibility !== 'public' && status.visibility !== 'unlisted') return;
  const audience = [...announce.toIds, ...announce.ccIds];
  const visibility: Visibility = announce.toIds.some((u) => isPublic(u, announce.id)) ? 'public'
    : audience.some((u) => isPublic(u, announce.id)) ? 'unlisted' : 'private';
  await fed.data.actors.ask(remote.id, { type: 'reblog', status, visibility, uri: announce.id!.href });
}

/** A loader for reading only what an activity inlines. */
const refuseFetch = (url: string) => Promise.reject(new Error(`not fetched here: ${url}`));

/**
 * An activity a group relays (FEP-1b12). Its authenticity is its origin's: it was inlined by the group's own server
 * (which speaks for its own accounts) or fetched from its id, and its actor must be of its id's origin, as its object
 * must be of its author's. As Mastodon does, a relayed Create is shown as the group's boost of the post; a relayed
 * Update or Delete changes the post as its author's own would; the rest (votes, moderation) is not shown here.
 */
async function onRelayed(fed: Fed, announce: Announce, group: AccountRow, activity: Activity): Promise<void> {
  if (!activity.id || !activity.actorId || activity.actorId.origin !== activity.id.origin) {
    return dropInbound(fed.data, announce, 'refused', `the activity it relays (${activity.id?.href ?? 'no id'}) is not its actor's own`);
  }
  if (activity instanceof Announce) return dropInbound(fed.data, announce, 'unsupported', 'it announces an Announce', { quiet: true });
  if (!(activity instanceof Create || activity instanceof Update || activity instanceof Delete)) {
    return dropInbound(fed.data, announce, 'unsupported', `it relays a ${typeName(activity)}, which is not shown here`, { quiet: true });
  }
  // As Mastodon takes an Announce only when it concerns someone here: a group nobody here follows relays nothing.
  if (activity instanceof Create && !(await hasLocalFollowers(fed.data.db, group.id))) {
    return dropInbound(fed.data, announce, 'not_addressed', 'its group has no follower here');
  }
  if (!(await withinRelayBudget(fed, group))) {
    return dropInbound(fed.data, announce, 'refused', `its group relays more than ${fed.data.config.relayedPerMinute} activities a minute`);
  }
  if (activity instanceof Delete) {
    const author = await accountForActorUri(fed.data, fed, activity.actorId.href);
    const status = activity.objectId ? await findStatusByUri(fed.data.db, activity.objectId.href) : null;
    if (!author || !status || status.account_id !== author.id || status.deleted_at) return;
    await deleteStatus(fed.data.actors.deps, author.id, status.id).catch(() => {});
    return;
  }
  const object = await activity.getObject({ documentLoader: fed.documentLoader }).catch(() => undefined);
  if (object === undefined) return dropUnavailable(fed.data, announce, 'object', activity.objectId);
  if (!isStatusObject(object) || !object.id) return dropUnsupported(fed, announce, object);
  // The relayed post must be its relaying author's, and of their origin (storeFetchedNote checks the latter).
  if (!object.attributionIds.some((a) => a.href === activity.actorId!.href)) {
    return dropInbound(fed.data, announce, 'refused', `${object.id.href} is not attributed to ${activity.actorId.href}`);
  }
  if (activity instanceof Update) {
    const author = await accountForActorUri(fed.data, fed, activity.actorId.href);
    if (author && author.domain !== null) await updateStatusFrom(fed, object, author);
    return;
  }
  const status = (await statusByUri(fed, object.id)) ?? (await storeFetchedNote(fed, object));
  if (!status) return dropUnavailable(fed.data, announce, 'object', object.id);
  await reblogAs(fed, announce, group, status);
}

/**
 * Counts a group's relayed activity in this minute's budget (Redis, shared by every process): each may cost fetches
 * from other servers and a stored post, so a group that floods is cut off for the rest of the minute.
 */
async function withinRelayBudget(fed: Fed, group: AccountRow): Promise<boolean> {
  const key = `${fed.data.config.redisPrefix}relayed:${group.id}:${Math.floor(Date.now() / 60_000)}`;
  const count = await fed.data.redis.incr(key);
  if (count === 1) await fed.data.redis.pexpire(key, 120_000);
  return count <= fed.data.config.relayedPerMinute;
}
