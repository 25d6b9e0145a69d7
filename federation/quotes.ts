import { Note, Question, QuoteAuthorization, type QuoteRequest } from '@fedify/vocab';
import type { Context, InboxContext } from '@fedify/fedify';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { findAccountById } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import { acceptQuote, findQuote, quoteByActivityUri, quoteOfStatus, rejectQuote, revokeQuote, type QuoteState } from '../storage/quotes.ts';
import { transaction } from '../storage/db.ts';
import type { Accept, Reject } from '@fedify/vocab';
import { findStatus } from '../storage/statuses.ts';
import { notifyAccount } from '../services/notifications.ts';
import { follows, quotePolicyFor } from '../services/quotes.ts';
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
 * Whether a received quote stands approved, as Mastodon's VerifyQuoteService decides: a quote of one's own post always
 * does; otherwise only with a stamp (`quoteAuthorization`), fetched from the quoted author's server, attributed to the
 * quoted author, naming the quoting Note as `interactingObject` and the quoted post as `interactionTarget`. A stamp
 * for one of our posts must be one we issued for this very Note. Without one the quote is `pending` (Mastodon keeps
 * Misskey-style `_misskey_quote`/`quoteUrl` quotes so too, as legacy quotes); a stamp that cannot be had leaves it
 * pending as well (Mastodon rejects on a definite failure and retries later otherwise; we do not retry).
 */
export async function verifyQuote(fed: Context<AppContext>, note: Note | Question, author: AccountRow, quoted: StatusRow, loader?: DocumentLoader): Promise<{ state: QuoteState; approvalUri: string | null }> {
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
  if (!quotedAuthor?.uri || stamp.origin !== new URL(quotedAuthor.uri).origin) return { state: 'pending', approvalUri: null };
  let object;
  try {
    object = await fetchById(fed, stamp.href, loader ?? fed.documentLoader);
  } catch {
    return { state: 'pending', approvalUri: null };
  }
  const ok = object instanceof QuoteAuthorization
    && object.attributionId?.href === quotedAuthor.uri
    && object.interactingObjectId?.href === note.id.href
    && object.interactionTargetId?.href === quoted.uri;
  return ok ? { state: 'accepted', approvalUri: stamp.href } : { state: 'pending', approvalUri: null };
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
  if (!quoting && instrumentId.origin === request.id.origin) {
    // Inlined (Mastodon and Hollo inline it): taken as the sender's own Note, as Mastodon imports it.
    const inlined = await request.getInstrument({ crossOrigin: 'ignore' }).catch(() => null);
    if ((inlined instanceof Note || inlined instanceof Question) && inlined.id?.href === instrumentId.href && inlined.attributionId?.href === requester.uri) {
      quoting = await deps.receiveNote(fed, inlined, requester);
    }
  }
  quoting ??= await deps.fetchNote(fed, instrumentId);
  const quote = quoting ? await quoteOfStatus(app.db, quoting.id) : null;
  // Sanity, as Mastodon's: the Note is the requester's and quotes this very post.
  const matches = quoting !== null && quote !== null && quoting.account_id === requester.id && quote.quoted_status_id === quoted.id;
  const following = quoted.quote_approval_policy === 'followers' ? await follows(app.db, requester.id, quoted.account_id) : false;
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
 * An Update of a remote Note whose quote is still pending: the stamp it may now carry (Mastodon sends the Note again
 * once the quoted author accepted) is verified, and an approved quote becomes accepted (its local author told).
 */
export async function reverifyQuote(fed: Context<AppContext>, note: Note | Question, author: AccountRow, status: StatusRow): Promise<void> {
  const quote = await quoteOfStatus(fed.data.db, status.id);
  const quotedUri = quotedUriOf(note);
  if (quote?.state !== 'pending' || !quote.quoted_status_id || !quotedUri) return;
  const quoted = await findStatus(fed.data.db, quote.quoted_status_id);
  if (!quoted || quoted.deleted_at) return;
  const { state, approvalUri } = await verifyQuote(fed, note, author, quoted);
  if (state !== 'accepted') return;
  const deps = fed.data.actors.deps;
  const accepted = await acceptQuote(fed.data.db, status.id, { approvalUri });
  if (accepted && quoted.uri === null && quoted.account_id !== author.id) await notifyAccount(deps, fed.data.db, quoted.account_id, author.id, 'quote', status.id);
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
    await acceptQuote(fed.data.db, quoting.id, { approvalUri: stamp.href });
  }
  await fed.data.versions.bump({ statuses: [quoting.id, quoted.id] });
  return true;
}
