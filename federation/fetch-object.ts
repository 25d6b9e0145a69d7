import type { Context } from '@fedify/fedify';
import type { Object as APObject, Actor } from '@fedify/vocab';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { isStorable } from '../text/storable.ts';
import { observedLoader } from './observed-loader.ts';

/** How long one remote fetch may take before it is given up (a slow server must not hold a request or a job). */
export const FETCH_TIMEOUT_MS = 10_000;

const AP_TYPES = ['application/activity+json', 'application/ld+json'];

/**
 * An object fetched by its id, as Mastodon's fetch_resource does. A document may name itself by another id of its
 * origin (a profile page, an upload that calls itself someone's actor); then that id is fetched in turn and must
 * name itself, so nothing is ever stored under an id its own URL does not answer with.
 */
export async function fetchById(fed: Context<AppContext>, url: string, loader: DocumentLoader): Promise<APObject | null> {
  if (await domainPolicy(fed.data).refuses(url)) return null; // nothing is fetched from a suspended server
  // Failures are remembered with what the server answered (health.ts), so whoever gives up can say why.
  const documentLoader = observedLoader(fed.data, loader);
  const lookup = (u: string) => fed.lookupObject(u, { documentLoader, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  const first = await lookup(url);
  if (!first?.id) return null;
  if (first.id.href === url) return first;
  if (await domainPolicy(fed.data).refuses(first.id.href)) return null;
  const again = await lookup(first.id.href);
  return again?.id?.href === first.id.href ? again : null;
}

/** The ActivityPub id a WebFinger handle names (its `self` link), or null. */
export async function webFingerSelf(fed: Context<AppContext>, acct: string): Promise<string | null> {
  if (await domainPolicy(fed.data).refuses(acct.split('@').at(-1))) return null;
  const jrd = await fed.lookupWebFinger(acct, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  const self = jrd?.links?.find((l) => l.rel === 'self' && (!l.type || AP_TYPES.some((t) => l.type!.startsWith(t))));
  // WebFinger is fetched apart from Fedify's document loaders (federation/storable-documents.ts): a link holding text
  // PostgreSQL cannot store names nothing.
  return self?.href && isStorable(self.href) ? self.href : null;
}

/**
 * Whether WebFinger on the actor's host, for its username there, names this very actor (Mastodon's check_webfinger):
 * a document that merely sits on a server (an upload) and calls itself an actor is not one of its accounts.
 */
export async function confirmedByWebFinger(fed: Context<AppContext>, actor: Actor): Promise<boolean> {
  if (!actor.id || !actor.preferredUsername) return false;
  try {
    return (await webFingerSelf(fed, `acct:${String(actor.preferredUsername)}@${actor.id.host}`)) === actor.id.href;
  } catch {
    return false;
  }
}
