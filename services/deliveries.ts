import type { Queryable } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';

/**
 * What is to be sent to other servers, written to the outbox in the transaction of the change it reports, so a
 * crash after commit loses nothing (the outbox sweeper queues it again). The delivery job (federation/outbound.ts)
 * builds the activity from the rows as they are then, and sends only what concerns remote accounts.
 */
export type Delivery =
  | { activity: 'Follow' | 'UndoFollow'; accountId: string; targetId: string; followUri: string | null }
  | { activity: 'AcceptFollow' | 'RejectFollow'; accountId: string; requesterId: string; followUri: string | null }
  | { activity: 'Create' | 'Delete'; statusId: string }
  /** A local status as it now is: an edit (Update of its Note, with `updated`), or its poll's counts (of its Question). */
  | { activity: 'Update'; statusId: string }
  /** A local account's vote on another server's poll: a Note per choice, to the poll's author only. */
  | { activity: 'Vote'; accountId: string; pollId: string }
  | { activity: 'Like' | 'UndoLike'; accountId: string; statusId: string; /** Makes each like's id its own, so a like after an unlike is not taken for a repeat. */ likeId?: string | null }
  | { activity: 'Announce' | 'UndoAnnounce'; reblogId: string }
  | { activity: 'UpdatePerson'; accountId: string }
  /** A local account moved to another: a Move to its followers' servers; `moveId` (its migration) makes the id. */
  | { activity: 'Move'; accountId: string; targetId: string; moveId: string }
  /** A report forwarded to the reported account's server, signed by the instance actor (federation/flag.ts). */
  | { activity: 'Flag'; reportId: string }
  /** A suspended local account, sent to its followers' servers as a Delete of its actor. */
  | { activity: 'DeleteActor'; accountId: string }
  | { activity: 'Block' | 'UndoBlock'; accountId: string; targetId: string; blockUri: string | null }
  /** A local account's pin or unpin, sent to its followers' servers as an Add to (Remove from) its featured collection. */
  | { activity: 'AddPin' | 'RemovePin'; accountId: string; statusId: string }
  /** A local author's answer to a remote QuoteRequest (FEP-044f): Accept with our stamp as `result`, or Reject. */
  | { activity: 'AcceptQuote' | 'RejectQuote'; accountId: string; requesterId: string; requestUri: string; quotedStatusId: string; instrumentUri: string; quoteId: string | null }
  /** A local author revokes a remote account's quote: Delete of the stamp, to the quoter. */
  /** A local account asks a remote author to approve its quote of their post (the quoting Note inlined as `instrument`). */
  | { activity: 'QuoteRequest'; statusId: string }
  | { activity: 'DeleteQuoteAuthorization'; accountId: string; quoteId: string; requesterId: string }
  /** The instance actor's Follow of a relay, or its Undo once the relay is removed (federation/relays.ts). */
  | { activity: 'RelayFollow'; relayId: string }
  | { activity: 'UndoRelayFollow'; relayKind: 'mastodon' | 'litepub'; inboxUrl: string; actorUri: string | null; followUri: string }
  | CollectionDelivery;

/**
 * A collection activity of a local account (federation/collections.ts): Add, Update or Remove of a collection, Add or
 * Remove of an item, a FeatureRequest to a remote account, an answer to a remote owner's FeatureRequest, or the
 * withdrawal of one's FeatureAuthorization. What is gone by the time it is sent travels as uris and account ids.
 */
export type CollectionDelivery = {
  activity: 'Collection';
  /** Not `kind`: the outbox row's job takes that name. */
  action: 'Add' | 'Update' | 'Remove' | 'AddItem' | 'RemoveItem' | 'FeatureRequest' | 'AcceptFeature' | 'RejectFeature' | 'DeleteAuthorization';
  accountId: string;
  collectionId: string;
  collectionUri?: string;
  itemId?: string;
  itemUri?: string;
  /** Remote accounts that were in what was removed (their servers hear of it too). */
  accountIds?: string[];
  /** The remote owner whose FeatureRequest is answered, or whose collection one leaves. */
  requesterId?: string;
  requestUri?: string;
};

export function queueDelivery(db: Queryable, delivery: Delivery): Promise<OutboxRow> {
  return addToOutbox(db, 'deliver', delivery);
}
