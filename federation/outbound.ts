import { Accept, Announce, Block, Create, Delete, Follow, Like, Move, PUBLIC_COLLECTION, Reject, Undo, Update, type Add, type Recipient, type Remove } from '@fedify/vocab';
import { Note, QuoteRequest } from '@fedify/vocab';
import { StatusCreate, StatusQuoteRequest, StatusUpdate } from './media-terms.ts';
import { findQuote, quoteOfStatus } from '../storage/quotes.ts';
import { Temporal } from '@js-temporal/polyfill';
import type { Context } from '@fedify/fedify';
import type { AppContext } from '../context.ts';
import type { Delivery } from '../services/deliveries.ts';
import { findAccountById, findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import { findStatus, findStatusRecord } from '../storage/statuses.ts';
import { findPoll, ownVotes } from '../storage/polls.ts';
import { remoteFollowersBatch } from '../storage/follows.ts';
import { accountUri, statusUri } from '../services/uris.ts';
import { deliverable } from './deliverable.ts';
import { announceOf, audienceOf, personOf, quoteAuthorizationUri, recipientOf, statusObjectOf, tombstoneOf } from './objects.ts';
import { flagOf } from './flag.ts';
import { INSTANCE_ACTOR } from './instance-actor.ts';
import { pinActivityOf } from './featured.ts';
import { deliverRelayActivity, sendToRelays } from './relays.ts';

const BATCH = 1000;

/**
 * Sends what a Delivery reports, signed by the local account it is from, to the remote accounts it concerns.
 * Fedify queues one message per inbox (shared inboxes preferred) on the federation queue, which retries them.
 * Deliveries that concern no remote account send nothing.
 */
export async function deliverActivity(app: AppContext, d: Delivery): Promise<void> {
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  switch (d.activity) {
    case 'Follow':
    case 'UndoFollow': {
      const [me, target] = await pair(app, d.accountId, d.targetId);
      if (!me || !target || me.domain !== null || target.domain === null) return;
      const follow = new Follow({ id: d.followUri ? new URL(d.followUri) : null, actor: actorId(app, me), object: actorId(app, target) });
      const activity = d.activity === 'Follow' ? follow : new Undo({ id: new URL(`${d.followUri ?? actorId(app, me).href}#undo`), actor: actorId(app, me), object: follow });
      await sendTo(app, fed, me, target, activity);
      return;
    }
    case 'AcceptFollow':
    case 'RejectFollow': {
      const [me, requester] = await pair(app, d.accountId, d.requesterId);
      if (!me || !requester || me.domain !== null || requester.domain === null) return;
      const follow = new Follow({ id: d.followUri ? new URL(d.followUri) : null, actor: actorId(app, requester), object: actorId(app, me) });
      const Answer = d.activity === 'AcceptFollow' ? Accept : Reject;
      const id = new URL(`${actorId(app, me).href}#${d.activity === 'AcceptFollow' ? 'accepts' : 'rejects'}/follows/${requester.id}/${Date.now()}`);
      await sendTo(app, fed, me, requester, new Answer({ id, actor: actorId(app, me), object: follow }));
      return;
    }
    case 'Create':
    case 'Delete': {
      const status = await findStatusRecord(app.db, d.statusId);
      const author = status ? await findAccountById(app.db, status.account_id) : null;
      if (!status || !author || author.domain !== null || status.reblog_of_id) return;
      // A status deleted before its Create went out is not announced at all.
      if (d.activity === 'Create' && status.deleted_at) return;
      const { note, mentioned } = await statusObjectOf(fed, author, status);
      const { to, cc } = audienceOf(fed, author, status, mentioned);
      const uri = new URL(statusUri(app.render, status, author.username));
      const activity = d.activity === 'Create'
        ? new StatusCreate({ id: new URL(`${uri.href}/activity`), actor: actorId(app, author), object: note, tos: to, ccs: cc, published: note.published })
        : new Delete({ id: new URL(`${uri.href}#delete`), actor: actorId(app, author), object: tombstoneOf(app, author, status), tos: to, ccs: cc });
      // The author replied to hears of the reply too (unless it is direct and they are not mentioned), as in Mastodon;
      // so does the author quoted (whose server verifies the quote).
      const parent = status.in_reply_to_account_id && status.visibility !== 'direct' ? await findAccountById(app.db, status.in_reply_to_account_id) : null;
      const quote = status.visibility !== 'direct' ? await quoteOfStatus(app.db, status.id) : null;
      const quotedAuthor = quote?.quoted_account_id && quote.quoted_account_id !== author.id ? await findAccountById(app.db, quote.quoted_account_id) : null;
      await sendToAudience(app, fed, author, status.visibility !== 'direct', [...mentioned, ...(parent ? [parent] : []), ...(quotedAuthor ? [quotedAuthor] : [])], activity, uri.href);
      await sendToRelays(app, fed, author, status, activity, uri.href);
      return;
    }
    case 'QuoteRequest': {
      // As Mastodon asks: the QuoteRequest's id is the quote's activity_uri, its object the quoted post, its
      // instrument the quoting Note inlined; to the quoted author alone. Only while the quote waits for an answer.
      const status = await findStatus(app.db, d.statusId);
      const quote = status ? await quoteOfStatus(app.db, status.id) : null;
      const quoted = quote?.quoted_status_id ? await findStatusRecord(app.db, quote.quoted_status_id) : null;
      const [me, target] = status && quoted ? await pair(app, status.account_id, quoted.account_id) : [null, null];
      if (!status || !quote || !quoted?.uri || !me || !target || quote.state !== 'pending' || !quote.activity_uri || me.domain !== null || target.domain === null) return;
      const { note } = await statusObjectOf(fed, me, status);
      const request = new StatusQuoteRequest({ id: new URL(quote.activity_uri), actor: actorId(app, me), object: new URL(quoted.uri), instrument: note });
      await sendTo(app, fed, me, target, request);
      return;
    }
    case 'Update': {
      // The status as it is now: edited text (with `updated`), or a poll's latest counts.
      const status = await findStatus(app.db, d.statusId);
      const author = status ? await findAccountById(app.db, status.account_id) : null;
      if (!status || !author || author.domain !== null || status.reblog_of_id) return;
      const { note, mentioned } = await statusObjectOf(fed, author, status);
      const { to, cc } = audienceOf(fed, author, status, mentioned);
      const uri = new URL(statusUri(app.render, status, author.username));
      const update = new StatusUpdate({ id: new URL(`${uri.href}#updates/${Date.now()}`), actor: actorId(app, author), object: note, tos: to, ccs: cc, published: note.updated ?? null });
      const parent = status.in_reply_to_account_id && status.visibility !== 'direct' ? await findAccountById(app.db, status.in_reply_to_account_id) : null;
      // The author quoted hears of it too, as of the Create (an accepted quote's Update carries their stamp).
      const quote = status.visibility !== 'direct' ? await quoteOfStatus(app.db, status.id) : null;
      const quotedAuthor = quote?.quoted_account_id && quote.quoted_account_id !== author.id ? await findAccountById(app.db, quote.quoted_account_id) : null;
      await sendToAudience(app, fed, author, status.visibility !== 'direct', [...mentioned, ...(parent ? [parent] : []), ...(quotedAuthor ? [quotedAuthor] : [])], update, uri.href);
      await sendToRelays(app, fed, author, status, update, uri.href);
      return;
    }
    case 'Vote': {
      // As Mastodon votes on another server's poll: a Note per choice, named by the option, answering the Question,
      // to its author alone.
      const poll = await findPoll(app.db, d.pollId);
      const status = poll ? await findStatus(app.db, poll.status_id) : null;
      const [me, author] = poll ? await pair(app, d.accountId, poll.account_id) : [null, null];
      if (!poll || !status?.uri || !me || !author || me.domain !== null || author.domain === null) return;
      const choices = (await ownVotes(app.db, me.id, [poll.id])).get(poll.id) ?? [];
      const authorId = actorId(app, author);
      for (const choice of choices) {
        const id = new URL(`${actorId(app, me).href}#votes/${poll.id}/${choice}`);
        const vote = new Note({ id, attribution: actorId(app, me), name: poll.options[choice] ?? '', replyTarget: new URL(status.uri), tos: [authorId] });
        await sendTo(app, fed, me, author, new Create({ id: new URL(`${id.href}/activity`), actor: actorId(app, me), object: vote, tos: [authorId], published: Temporal.Now.instant() }));
      }
      return;
    }
    case 'Like':
    case 'UndoLike': {
      const status = await findStatus(app.db, d.statusId);
      const [me, author] = status ? await pair(app, d.accountId, status.account_id) : [null, null];
      if (!status || !me || !author || me.domain !== null || author.domain === null) return;
      const object = new URL(statusUri(app.render, status, author.username));
      const like = new Like({ id: new URL(`${actorId(app, me).href}#likes/${d.likeId ?? status.id}`), actor: actorId(app, me), object });
      const activity = d.activity === 'Like' ? like : new Undo({ id: new URL(`${actorId(app, me).href}#likes/${status.id}/undo/${Date.now()}`), actor: actorId(app, me), object: like });
      await sendTo(app, fed, me, author, activity);
      return;
    }
    case 'Announce':
    case 'UndoAnnounce': {
      const reblog = await findStatusRecord(app.db, d.reblogId);
      const original = reblog?.reblog_of_id ? await findStatusRecord(app.db, reblog.reblog_of_id) : null;
      const [me, author] = reblog && original ? await pair(app, reblog.account_id, original.account_id) : [null, null];
      if (!reblog || !original || !me || !author || me.domain !== null) return;
      const announce = announceOf(fed, me, reblog, author, original);
      const id = announce.id!;
      const activity = d.activity === 'Announce' ? announce : new Undo({ id: new URL(`${id.href}#undo`), actor: actorId(app, me), object: announce });
      await sendToAudience(app, fed, me, true, [author], activity, id.href);
      return;
    }
    case 'Block':
    case 'UndoBlock': {
      const [me, target] = await pair(app, d.accountId, d.targetId);
      if (!me || !target || me.domain !== null || target.domain === null) return;
      const id = new URL(d.blockUri ?? `${actorId(app, me).href}#blocks/${target.id}`);
      const block = new Block({ id, actor: actorId(app, me), object: actorId(app, target) });
      const activity = d.activity === 'Block' ? block : new Undo({ id: new URL(`${id.href}#undo`), actor: actorId(app, me), object: block });
      await sendTo(app, fed, me, target, activity);
      return;
    }
    case 'Flag': {
      const built = await flagOf(fed, d.reportId);
      if (built && (await deliverable(app, built.target))) {
        await fed.sendActivity({ identifier: INSTANCE_ACTOR }, recipientOf(app, built.target), built.flag, { preferSharedInbox: true });
      }
      return;
    }
    case 'DeleteActor': {
      // Signed by the account itself: a suspended account's key is still published (federation/index.ts).
      const me = await findAccountById(app.db, d.accountId);
      if (!me || me.domain !== null || !me.suspended_at) return;
      const id = actorId(app, me);
      const del = new Delete({ id: new URL(`${id.href}#delete`), actor: id, object: id, tos: [PUBLIC_COLLECTION] });
      await sendToAudience(app, fed, me, true, [], del, null);
      return;
    }
    case 'AddPin':
    case 'RemovePin': {
      // To the account's followers' servers, as Mastodon sends pins; only public and unlisted statuses are pinned.
      const status = await findStatusRecord(app.db, d.statusId);
      const me = await findAccountById(app.db, d.accountId);
      if (!status || !me || me.domain !== null || status.account_id !== me.id) return;
      if (d.activity === 'AddPin' && status.deleted_at) return;
      await sendToAudience(app, fed, me, true, [], pinActivityOf(fed, me, status, d.activity), null);
      return;
    }
    case 'AcceptQuote':
    case 'RejectQuote': {
      // As Mastodon answers a QuoteRequest: the request as received (its id, actor, object and instrument), and for an
      // Accept our stamp as `result`.
      const [me, requester] = await pair(app, d.accountId, d.requesterId);
      const quoted = await findStatusRecord(app.db, d.quotedStatusId);
      if (!me || !requester || !quoted || me.domain !== null || requester.domain === null) return;
      const request = new StatusQuoteRequest({
        id: new URL(d.requestUri), actor: actorId(app, requester), object: new URL(statusUri(app.render, quoted, me.username)), instrument: new URL(d.instrumentUri),
      });
      const accept = d.activity === 'AcceptQuote';
      if (accept && !d.quoteId) return;
      const id = new URL(`${actorId(app, me).href}#${accept ? 'accepts' : 'rejects'}/quote_requests/${d.quoteId ?? quoted.id}/${Date.now()}`);
      const answer = accept
        ? new Accept({ id, actor: actorId(app, me), object: request, result: quoteAuthorizationUri(app, me, d.quoteId!) })
        : new Reject({ id, actor: actorId(app, me), object: request });
      await sendTo(app, fed, me, requester, answer);
      return;
    }
    case 'DeleteQuoteAuthorization': {
      const [me, quoter] = await pair(app, d.accountId, d.requesterId);
      const quote = await findQuote(app.db, d.quoteId);
      if (!me || !quoter || !quote || me.domain !== null || quoter.domain === null || quote.state !== 'revoked') return;
      const stamp = quoteAuthorizationUri(app, me, quote.id);
      await sendTo(app, fed, me, quoter, new Delete({ id: new URL(`${stamp.href}#delete`), actor: actorId(app, me), object: stamp, tos: [actorId(app, quoter)] }));
      return;
    }
    case 'RelayFollow':
    case 'UndoRelayFollow':
      await deliverRelayActivity(app, d);
      return;
    case 'Collection':
      // Collections' activities are JSON Fedify's vocabulary cannot hold; signed and sent there.
      await (await import('./collections.ts')).deliverCollectionActivity(app, d);
      return;
    case 'Move': {
      // As Mastodon's MoveDistributionWorker: actor and object the account, to its followers' servers; not once the
      // move is cancelled or replaced.
      const [me, target] = await pair(app, d.accountId, d.targetId);
      if (!me || !target || me.domain !== null || me.moved_to_account_id !== target.id) return;
      const id = actorId(app, me);
      const move = new Move({ id: new URL(`${id.href}#moves/${d.moveId}`), actor: id, object: id, target: actorId(app, target), tos: [fed.getFollowersUri(me.username)] });
      await sendToAudience(app, fed, me, true, [], move, null);
      return;
    }
    case 'UpdatePerson': {
      const me = await findAccountById(app.db, d.accountId);
      if (!me || me.domain !== null) return;
      const person = await personOf(fed, me);
      const update = new Update({ id: new URL(`${actorId(app, me).href}#updates/${Date.now()}`), actor: actorId(app, me), object: person, tos: [PUBLIC_COLLECTION] });
      await sendToAudience(app, fed, me, true, [], update, null);
      return;
    }
  }
}

/**
 * Sends to one remote account, if its inboxes may be delivered to. Signed with the RSA key alone (HTTP Signature and
 * Fedify's Linked Data signature): an activity for one inbox is never relayed, so the Object Integrity Proof an
 * Ed25519 key would add (a canonicalisation of the activity each time) buys nothing; Mastodon makes none either.
 */
async function sendTo(app: AppContext, fed: Context<AppContext>, sender: AccountRow, to: AccountRow, activity: Follow | Undo | Accept | Reject | Like | Block | Create | Delete | QuoteRequest): Promise<void> {
  if (!(await deliverable(app, to))) return;
  const pairs = await app.keyRing.keyPairs(sender.id);
  // Fedify's key ids are by position among the pairs: the first is #main-key, the next #key-2.
  const index = pairs.findIndex((p) => p.privateKey.algorithm.name === 'RSASSA-PKCS1-v1_5');
  const me = actorId(app, sender);
  const keys = index < 0 ? null : [{ keyId: new URL(index === 0 ? '#main-key' : `#key-${index + 1}`, me), privateKey: pairs[index]!.privateKey }];
  await fed.sendActivity(keys ?? { identifier: sender.username }, recipientOf(app, to), activity);
}

function actorId(app: AppContext, a: AccountRow): URL {
  return new URL(accountUri(app.render, a));
}

async function pair(app: AppContext, a: string, b: string): Promise<[AccountRow | null, AccountRow | null]> {
  const rows = await findAccountsByIds(app.db, [a, b]);
  return [rows.find((r) => r.id === a) ?? null, rows.find((r) => r.id === b) ?? null];
}

/**
 * Sends to the sender's remote followers (not for direct statuses) and the remote accounts named, a thousand
 * followers at a time, each account once. The ordering key keeps a Delete behind its Create.
 */
async function sendToAudience(app: AppContext, fed: Context<AppContext>, sender: AccountRow, toFollowers: boolean, named: AccountRow[], activity: Create | Delete | Announce | Undo | Update | Add | Remove | Move, orderingKey: string | null): Promise<void> {
  const options = { preferSharedInbox: true, ...(orderingKey ? { orderingKey } : {}) };
  const seen = new Set<string>();
  // A shared inbox takes one delivery for all its server's followers, across batches too.
  const sharedInboxes = new Set<string>();
  const send = async (accounts: AccountRow[]) => {
    const recipients: Recipient[] = [];
    for (const a of accounts) {
      if (a.domain === null || seen.has(a.id) || (a.shared_inbox_url && sharedInboxes.has(a.shared_inbox_url))) continue;
      seen.add(a.id);
      if (a.shared_inbox_url) sharedInboxes.add(a.shared_inbox_url);
      if (await deliverable(app, a)) recipients.push(recipientOf(app, a));
    }
    if (recipients.length > 0) await fed.sendActivity({ identifier: sender.username }, recipients, activity, options);
  };
  if (toFollowers) {
    let after = '0';
    for (;;) {
      const batch = await remoteFollowersBatch(app.db, sender.id, after, BATCH);
      if (batch.length === 0) break;
      after = batch.at(-1)!.followId;
      await send(batch.map((b) => b.account));
    }
  }
  await send(named);
}

