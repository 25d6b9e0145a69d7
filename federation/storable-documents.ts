import { pino } from 'pino';
import type { Federation, MessageQueue, MessageQueueEnqueueOptions } from '@fedify/fedify';
import type { AuthenticatedDocumentLoaderFactory, DocumentLoader, DocumentLoaderFactory } from '@fedify/vocab-runtime';
import { makeStorable } from '../text/storable.ts';
import { rememberFetchedJson } from './received-json.ts';
import { defineUndeclaredTypes } from './sender-terms.ts';
import { MAX_DOCUMENT_CHARS, MAX_NESTING, documentChars, valueNesting } from './inbound-limits.ts';

/**
 * Other servers' JSON enters through two doors: activities POSTed to our inboxes (queued by Fedify once their
 * signature is checked) and documents we fetch (actors, notes, collections, keys). Both are made storable here
 * (text/storable.ts: U+0000 removed, unpaired surrogates replaced), so nothing further in, whatever field it reads,
 * hands PostgreSQL text it refuses. Removing rather than refusing keeps the rest of a post; each removal is a warning
 * (a peer's oddity, not our error).
 */
const log = pino({ level: process.env.LOG_LEVEL ?? 'info' }).child({ part: 'federation' });

function idOf(doc: unknown): unknown {
  return doc !== null && typeof doc === 'object' && 'id' in doc ? (doc as { id: unknown }).id : undefined;
}

/** A document loader whose documents are storable. */
function storableLoader(loader: DocumentLoader): DocumentLoader {
  return async (url, options) => {
    const remote = await loader(url, options);
    // Refused like a failed fetch: Fedify's JSON-LD processing would recurse through every level.
    if (valueNesting(remote.document) > MAX_NESTING) throw new Error(`${url}: nested deeper than ${MAX_NESTING} levels`);
    // Larger than any activity we take in an inbox POST (federation/mount.ts): refused as Mastodon refuses a fetched
    // document over 1 MB, so a post with megabytes of content is neither stored nor half-stored.
    if (documentChars(remote.document) > MAX_DOCUMENT_CHARS) throw new Error(`${url}: larger than ${MAX_DOCUMENT_CHARS} characters`);
    if (makeStorable(remote.document)) log.warn({ url, id: idOf(remote.document) }, 'removed characters PostgreSQL cannot store from a fetched document');
    // The terms Fedify drops are read from the document as sent (federation/received-json.ts).
    rememberFetchedJson(remote.documentUrl ?? url, remote.document);
    return remote;
  };
}

interface InboxMessage { type: 'inbox'; activity: unknown; normalizedActivity?: unknown }
const isInboxMessage = (m: unknown): m is InboxMessage => m !== null && typeof m === 'object' && (m as { type?: unknown }).type === 'inbox';

function storableMessage(message: unknown): unknown {
  if (!isInboxMessage(message)) return message;
  // The signature was checked on the bytes as received (Fedify does so before queueing), so changing them now is safe.
  const changed = makeStorable(message.activity);
  if (makeStorable(message.normalizedActivity) || changed) {
    log.warn({ activity: idOf(message.activity) }, 'removed characters PostgreSQL cannot store from a received activity');
  }
  // Types a sender uses without defining them (snac's EmojiReact): defined here, or Fedify drops the activity.
  if (message.normalizedActivity == null) defineUndeclaredTypes(message.activity);
  return message;
}

/** A queue whose received activities are made storable as they are queued, before any listener runs. */
function storableInbox(queue: MessageQueue): MessageQueue {
  return {
    nativeRetrial: queue.nativeRetrial,
    enqueue: (message: unknown, options?: MessageQueueEnqueueOptions) => queue.enqueue(storableMessage(message), options),
    ...(queue.enqueueMany ? { enqueueMany: (messages: readonly unknown[], options?: MessageQueueEnqueueOptions) => queue.enqueueMany!(messages.map(storableMessage), options) } : {}),
    listen: (handler, options) => queue.listen(handler, options),
    ...(queue.getDepth ? { getDepth: () => queue.getDepth!() } : {}),
  };
}

interface FedifyInternals {
  documentLoaderFactory: DocumentLoaderFactory;
  authenticatedDocumentLoaderFactory: AuthenticatedDocumentLoaderFactory;
  inboxQueue: MessageQueue | undefined;
}

/**
 * Makes both doors storable: the queue received activities wait in, and the loaders every Fedify context fetches with
 * (its own, `getDocumentLoader`'s signed ones, and those that lookups and `get…()` calls use). Fedify 2.3 takes
 * custom loader factories only without `userAgent` and `allowPrivateAddress`, which we need, so what it built is
 * wrapped in place; Fedify is pinned, this throws at start-up if its fields move, and
 * test/federation/inbox-fuzz.test.ts checks both doors.
 */
export function storableRemoteInput<T>(federation: Federation<T>): void {
  const impl = federation as unknown as Partial<FedifyInternals>;
  if (typeof impl.documentLoaderFactory !== 'function' || typeof impl.authenticatedDocumentLoaderFactory !== 'function' || !impl.inboxQueue) {
    throw new Error('Fedify no longer keeps its loader factories and inbox queue where expected (federation/storable-documents.ts)');
  }
  const plain = impl.documentLoaderFactory.bind(impl);
  const signed = impl.authenticatedDocumentLoaderFactory.bind(impl);
  impl.documentLoaderFactory = (options) => storableLoader(plain(options));
  impl.authenticatedDocumentLoaderFactory = (identity, options) => storableLoader(signed(identity, options));
  impl.inboxQueue = storableInbox(impl.inboxQueue);
}
