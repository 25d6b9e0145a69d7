import { Note, PUBLIC_COLLECTION, Question, QuoteAuthorization, type QuoteRequest } from '@fedify/vocab';
import type { Context, InboxContext } from '@fedify/fedify';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import { fetchProblem } from './fetch-errors.ts';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { findAccountById } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import { acceptQuote, findQuote, insertQuote, quoteByActivityUri, quoteOfStatus, rejectQuote, revokeQuote, type QuoteState } from '../storage/quotes.ts';
import { transaction } from '../storage/db.ts';
import type { Accept, Reject } from '@fedify/vocab';
import { findStatus } from '../storage/statuses.ts';
import { notifyAccount } from '../services/notifications.ts';
import { encodeRemoteQuotePolicy, follows, policyNamesFollowers, quotePolicyFor, type QuotePolicyKey } from '../services/quotes.ts';
import { queueDelivery } from '../services/deliveries.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import { setRemoteQuotePolicy } from '../storage/quotes.ts';
import { signedLoader } from './instance-actor.ts';
import { canSee } from '../services/visibility.ts';
import { answerQuoteRequest } from '../services/statuses.ts';
import { fetchById } from './fetch-object.ts';
import { statusUri } from '../services/uris.ts';

/**
 * Quote posts between servers (FEP-044f, as Mastodon 4.5 does them): what a received Note quotes and whether the
 * quoted author approved it, and QuoteRequests for our posts.
 */

/** The post a Note names as quoted: `quote` (FEP-044f), else `quoteUrl`, `_misskey_quote` or `quoteUri` (Fedify reads these three as quoteUrl). */
export function quotedUriOf(note: Note | Question): URL | null {
  return note.quoteId ?? note.quoteUrl ?? null;
}

/**
 * A remote Note's quote rules (FEP-044f `interactionPolicy.canQuote`), as Mastodon's status parser reads them into
 * `quote_approval_policy`: Public and the author's followers collection by name, the author themselves ignored,
 * anyone else `unsupported_policy`; no policy at all is nobody (Mastodon's 0). Encoded as services/quotes.ts keeps it.
 */
export function quotePolicyOfNote(note: Pick<Note, 'interactionPolicy'>, author: AccountRow): string {
  const rule = note.interactionPolicy?.canQuote;
  const keysOf = (ids: URL[]): QuotePolicyKey[] => {
    const keys = new Set<QuotePolicyKey>();
    for (const id of ids) {
      if (id.href === PUBLIC_COLLECTION.href || id.href === 'as:Public' || id.href === 'Public') keys.add('public');
      else if (author.followers_url && id.href === author.followers_url) keys.add('followers');
      else if (id.href !== author.uri) keys.add('unsupported_policy');
    }
    return [...keys];
  };
  return encodeRemoteQuotePolicy(rule ? { automatic: keysOf(rule.automaticApprovals), manual: keysOf(rule.manualApprovals) } : { automatic: [], manual: [] });
}

/** What checking a stamp came to: approved, definitely not (`rejected`), or not known yet (try again later). */
export type StampVerdict = 'accepted' | 'rejected' | 'temporary';

/**
 * Fetches a remote stamp (QuoteAuthorization) and checks it as Mastodon's VerifyQuoteService does: it lives on the
 * quoted author's server, is attributed to them, and names the quoting Note (`interactingObject`) and the quoted post
 * (`interactionTarget`). A server that cannot be reached, times out or answers 5xx, 401, 408 or 429 leaves it
 * `temporary` (Mastodon's raise_on_error: :temporary); any other refusal (404, 410, another 4xx) or a document that
 * is not such a stamp is `rejected`.
 */
export async function checkRemoteStamp(fed: Context<AppContext>, stamp: URL, expected: { quotedAuthorUri: string; quotingUri: string; quotedUri: string }, loader: DocumentLoader): Promise<StampVerdict> {
  if (stamp.origin !== new URL(expected.quotedAuthorUri).origin) return 'rejected';
  let failure: unknown = null;
  const watching: DocumentLoader = async (url, options) => {
    try {
      return await loader(url, options);
    } catch (err) {
      failure ??= err; // the stamp's own fetch comes first
      throw err;
    }
  };
  let object;
  try {
    object = await fetchById(fed, stamp.href, watching);
  } catch {
    return 'temporary';
  }
  if (!object) {
    if (failure === null) return 'rejected'; // refused here (a suspended server), or not a document of its own id
    const problem = fetchProblem(failure);
    if (problem.kind === 'http') return problem.status! >= 500 && problem.status !== 501 ? 'temporary' : [401, 408, 429].includes(problem.status!) ? 'temporary' : 'rejected';
    return ['dns', 'connect', 'tls', 'timeout'].includes(problem.kind) ? 'temporary' : 'rejected';
  }
  const ok = object instanceof QuoteAuthorization
    && object.attributionId?.href === expected.quotedAuthorUri
    && object.interactingObjectId?.href === expected.quotingUri
    && object.interactionTargetId?.href === expected.quotedUri;
  return ok ? 'accepted' : 'rejected';
}

/**
 * Whether a received quote stands approved, as Mastodon's VerifyQuoteService decides: a quote of one's own post always
 * does; otherwise only with a stamp (`quoteAuthorization`) that checkRemoteStamp accepts. A stamp for one of our posts
 * must be one we issued for this very Note. Without a stamp the quote is `pending` (Mastodon keeps Misskey-style
 * `_misskey_quote`/`quoteUrl` quotes so too, as legacy quotes); a stamp that definitely fails makes it `rejected`; one
 * that cannot be had right now leaves it pending and names it in `retryStamp`, for the quote-stamp job to try again.
 */
export async function verifyQuote(fed: Context<AppContext>, note: Note | Question, author: AccountRow, quoted: StatusRow, loader?: DocumentLoader): Promise<{ state: QuoteState; approvalUri: string | null; retryStamp?: string }> {
  if (quoted.account_id === author.id) return { state: 'accepted', approvalUri: null };
  const stamp = note.quoteAuthorizationId;
  if (!stamp || !note.id) return { state: 'pending', approvalUri: null };
  if (quoted.uri === null) {
    // Ours: the stamp is one of our URLs, for an accepted quote by this Note of this post.
    const m = new URL(stamp.href).origin === new URL(fed.data.config.publicUrl).origin ? /^\/users\/[^/]+\/quote_authorizations\/(\d+)$/.exec(stamp.pathname) : null;
    const issued = m ? await findQuote(fed.data.db, m[1]!) : null;
    const quoting = issued ? await quoteOfStatus(fed.data.db, issued.status_id) : null;
    const ok = issued?.state === 'accepted' && issued.quoted_status_id === quoted.id && quoting?.id === issued.id && issued.account_id === author.id;
    return { state: ok ? 'accepted' : 'pending', approvalUri: null };
  }
  const quotedAuthor = await findAccountById(fed.data.db, quoted.account_id);
  if (!quotedAuthor?.uri) return { state: 'pending', approvalUri: null };
  const verdict = await checkRemoteStamp(fed, stamp, { quotedAuthorUri: quotedAuthor.uri, quotingUri: note.id.href, quotedUri: quoted.uri }, loader ?? fed.documentLoader);
  if (verdict === 'accepted') return { state: 'accepted', approvalUri: stamp.href };
  if (verdict === 'rejected') return { state: 'rejected', approvalUri: null };
  return { state: 'pending', approvalUri: null, retryStamp: stamp.href };
}

/** How many times the quote-stamp job tries a stamp it could not fetch. */
export const QUOTE_STAMP_ATTEMPTS = 8;

/**
 * Queues the quote-stamp job (jobs/quote-stamps.ts) for a remote quote whose stamp could not be fetched: an outbox
 * row delayed by this attempt's backoff, which starts at DELIVERY_RETRY_BASE_MS (the wait before retrying another
 * server; 30 s) and doubles (30 s, 1 min, 2 min, … about two hours over the eight attempts), queued after commit.
 */
export async function queueStampRetry(app: AppContext, statusId: string, stampUri: string, attempt = 1): Promise<void> {
  if (attempt > QUOTE_STAMP_ATTEMPTS) return;
  const runAt = new Date(Date.now() + app.config.deliveryRetryBaseMs * 2 ** (attempt - 1)).toISOString();
  const row: OutboxRow = await addToOutbox(app.db, 'verifyQuoteStamp', { statusId, stampUri, attempt, runAt });
  await app.jobs.enqueue(row).catch(() => {}); // left out: the outbox sweeper queues it
}

/**
 * The quote-stamp job: a remote quote still pending whose stamp could not be fetched is checked again. Approved, it
 * becomes accepted (its local quoted author told); definitely not, rejected; still unreachable, tried again later
 * until the attempts run out, when it stays pending (as Mastodon leaves it).
 */
export async function recheckQuoteStamp(fed: Context<AppContext>, statusId: string, stampUri: string, attempt: number): Promise<StampVerdict | null> {
  const app = fed.data;
  const quote = await quoteOfStatus(app.db, statusId);
  if (quote?.state !== 'pending' || !quote.quoted_status_id || !URL.canParse(stampUri)) return null;
  const [quoting, quoted] = await Promise.all([findStatus(app.db, statusId), findStatus(app.db, quote.quoted_status_id)]);
  const quotedAuthor = quoted ? await findAccountById(app.db, quoted.account_id) : null;
  if (!quoting?.uri || quoting.deleted_at || !quoted?.uri || quoted.deleted_at || !quotedAuthor?.uri) return null;
  const verdict = await checkRemoteStamp(fed, new URL(stampUri), { quotedAuthorUri: quotedAuthor.uri, quotingUri: quoting.uri, quotedUri: quoted.uri }, await signedLoader(fed));
  if (verdict === 'temporary') {
    await queueStampRetry(app, statusId, stampUri, attempt + 1);
    return verdict;
  }
  const changed = verdict === 'accepted' ? await acceptQuote(app.db, statusId, { approvalUri: stampUri }) : await rejectQuote(app.db, statusId, null);
  if (changed) await app.versions.bump({ statuses: [statusId, quoted.id] });
  return verdict;
}

/**
 * A QuoteRequest for one of our posts, as Mastodon's handler takes it: the request is its sender's (its id under the
 * sender's origin), the post is ours and public or unlisted; the quoting Note (`instrument`) is found, taken inlined
 * from the request when it is the sender's own, or fetched; then the post's policy decides (the same rule as a local
 * quote: services/quotes.ts), and an Accept with our stamp or a Reject goes back (services/statuses.ts).
 */
export async function onQuoteRequest(fed: InboxContext<AppContext>, request: QuoteRequest, requester: AccountRow, deps: {
  statusByUri: (fed: Context<AppContext>, uri: URL | null) => Promise<StatusRow | null>;
  receiveNote: (fed: Context<AppContext>, note: Note | Question, author: AccountRow) => Promise<StatusRow | null>;
  fetchNote: (fed: Context<AppContext>, id: URL | null) => Promise<StatusRow | null>;
}): Promise<void> {
  const app = fed.data;
  const instrumentId = request.instrumentId;
  if (!request.id || !requester.uri || request.id.origin !== new URL(requester.uri).origin || !instrumentId) return;
  const quoted = await deps.statusByUri(fed, request.objectId);
  if (!quoted || quoted.uri !== null || quoted.deleted_at || quoted.reblog_of_id || (quoted.visibility !== 'public' && quoted.visibility !== 'unlisted')) return;
  let quoting = await deps.statusByUri(fed, instrumentId);
  // Inlined (Mastodon and Hollo inline it): taken as the sender's own Note, as Mastodon imports it.
  const inlined = instrumentId.origin === request.id.origin ? await request.getInstrument({ crossOrigin: 'ignore' }).catch(() => null) : null;
  const own = (inlined instanceof Note || inlined instanceof Question) && inlined.id?.href === instrumentId.href && inlined.attributionId?.href === requester.uri ? inlined : null;
  if (!quoting && own) quoting = await deps.receiveNote(fed, own, requester);
  quoting ??= await deps.fetchNote(fed, instrumentId);
  let quote = quoting ? await quoteOfStatus(app.db, quoting.id) : null;
  if (quoting && !quote && own && quoting.account_id === requester.id && (await deps.statusByUri(fed, quotedUriOf(own)))?.id === quoted.id) {
    // Hollo leaves a quote out of its Note until it is approved, so the Note its followers here were sent (a Create
    // ahead of the request) named no quote; the request's copy does: the quote is recorded now, pending this answer.
    quote = await insertQuote(app.db, { statusId: quoting.id, accountId: requester.id, quotedStatusId: quoted.id, quotedAccountId: quoted.account_id, state: 'pending' }).catch(() => null)
      ?? (await quoteOfStatus(app.db, quoting.id));
  }
  // Sanity, as Mastodon's: the Note is the requester's and quotes this very post.
  const matches = quoting !== null && quote !== null && quoting.account_id === requester.id && quote.quoted_status_id === quoted.id;
  const following = policyNamesFollowers(quoted) ? await follows(app.db, requester.id, quoted.account_id) : false;
  const mayQuote = (await canSee(app.db, requester.id, quoted)) && quotePolicyFor(quoted, requester.id, following) !== 'denied';
  // Allowed, but for a Note we could not have or one that quotes something else: nothing is answered (as Mastodon).
  if (mayQuote && !matches) return;
  const allow = mayQuote;
  await answerQuoteRequest(app.actors.deps, quoted.account_id, {
    quotingStatusId: matches ? quoting!.id : null, requesterId: requester.id, requestUri: request.id.href,
    quotedStatusId: quoted.id, instrumentUri: instrumentId.href, allow,
  });
}

/**
 * An Update of a remote Note (its edit already stored): its quote rules are read again (Mastodon updates
 * quote_approval_policy with each Update), and a quote still pending has the stamp it may now carry checked (Mastodon
 * sends the Note again once the quoted author accepted), or a rejected one: approved, it becomes accepted (its local author told);
 * definitely not, rejected; unreachable, the quote-stamp job tries again.
 */
export async function onRemoteNoteUpdate(fed: Context<AppContext>, note: Note | Question, author: AccountRow, status: StatusRow): Promise<void> {
  if (await setRemoteQuotePolicy(fed.data.db, status.id, quotePolicyOfNote(note, author))) await fed.data.versions.bump({ statuses: [status.id] });
  const quote = await quoteOfStatus(fed.data.db, status.id);
  const quotedUri = quotedUriOf(note);
  // A rejected one too: a stamp sent later (a fixed one) may still approve it, as acceptQuote allows.
  if ((quote?.state !== 'pending' && quote?.state !== 'rejected') || !quote.quoted_status_id || !quotedUri) return;
  const quoted = await findStatus(fed.data.db, quote.quoted_status_id);
  if (!quoted || quoted.deleted_at) return;
  const { state, approvalUri, retryStamp } = await verifyQuote(fed, note, author, quoted);
  if (retryStamp) return queueStampRetry(fed.data, status.id, retryStamp);
  if (state === 'pending') return;
  const deps = fed.data.actors.deps;
  const changed = state === 'accepted' ? await acceptQuote(fed.data.db, status.id, { approvalUri }) : await rejectQuote(fed.data.db, status.id, null);
  if (changed && state === 'accepted' && quoted.uri === null && quoted.account_id !== author.id) await notifyAccount(deps, fed.data.db, quoted.account_id, author.id, 'quote', status.id);
  await fed.data.versions.bump({ statuses: [status.id, quoted.id] });
}

/**
 * The quoted author's answer to our QuoteRequest (named by its id, or inlined with it): an Accept whose `result` is a
 * stamp that checks out (fetched from their server: theirs, for our Note and their post) makes the quote accepted with
 * that stamp; a Reject makes it rejected (revoked, if it stood). False when the answer is not about a quote of ours.
 */
export async function onQuoteAnswer(fed: Context<AppContext>, answer: Accept | Reject, remote: AccountRow, accepted: boolean): Promise<boolean> {
  const id = answer.objectId;
  const quote = id ? await quoteByActivityUri(fed.data.db, id.href) : null;
  if (!quote) return false;
  if (quote.quoted_account_id !== remote.id || !quote.quoted_status_id) return true;
  const [quoting, quoted] = await Promise.all([findStatus(fed.data.db, quote.status_id), findStatus(fed.data.db, quote.quoted_status_id)]);
  const quoter = quoting ? await findAccountById(fed.data.db, quoting.account_id) : null;
  if (!quoting || !quoted?.uri || !quoter || quoter.domain !== null) return true;
  if (!accepted) {
    await transaction(fed.data.db, (tx) => (quote.state === 'accepted' ? revokeQuote(tx, quoted.id, quoting.id) : rejectQuote(tx, quoting.id, null)));
  } else {
    const stamp = answer.resultId;
    if (!stamp || !remote.uri || stamp.origin !== new URL(remote.uri).origin) return true;
    const object = await fetchById(fed, stamp.href, fed.documentLoader).catch(() => null);
    const ours = statusUri(fed.data.render, quoting, quoter.username);
    const ok = object instanceof QuoteAuthorization && object.attributionId?.href === remote.uri
      && object.interactingObjectId?.href === ours && object.interactionTargetId?.href === quoted.uri;
    if (!ok) return true;
    // As Mastodon 4.5 does on an accepted quote: our Note is sent again (an Update) to those it went to, now with
    // the stamp in `quoteAuthorization`, so third servers can verify the quote too.
    const update = await transaction(fed.data.db, async (tx) => {
      const done = await acceptQuote(tx, quoting.id, { approvalUri: stamp.href });
      return done && !quoting.deleted_at ? queueDelivery(tx, { activity: 'Update', statusId: quoting.id }) : null;
    });
    if (update) await fed.data.jobs.enqueue(update).catch(() => {}); // left out: the outbox sweeper queues it
  }
  await fed.data.versions.bump({ statuses: [quoting.id, quoted.id] });
  return true;
}
