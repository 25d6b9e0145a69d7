import type { AppContext } from '../context.ts';
import { domainPolicy } from '../services/domain-policy.ts';

/**
 * Where instance-wide domain blocks meet federation: a suspended server (or, in limited federation mode, one not
 * allowed) is neither listened to, delivered to, nor fetched from. See services/domain-policy.ts for the rules.
 */

/** The host that signed a request: the keyId of a draft-cavage `Signature` or an RFC 9421 `Signature-Input`. */
export function signerHost(headers: Record<string, string | string[] | undefined>): string | null {
  const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(',') : (v ?? ''));
  const keyId = /keyId="([^"]+)"/i.exec(header(headers.signature))?.[1] ?? /keyid="([^"]+)"/i.exec(header(headers['signature-input']))?.[1];
  if (!keyId) return null;
  // Mastodon also takes `acct:user@host` key ids.
  if (keyId.startsWith('acct:')) return keyId.split('@').at(-1) || null;
  return URL.canParse(keyId) ? new URL(keyId).host : null;
}

/**
 * Whether an inbox POST comes from a server we refuse, judged by its signature's key id before anything is read,
 * fetched or verified (Mastodon answers 403 there too, before fetching the key).
 */
export async function refusedInboxPost(ctx: AppContext, headers: Parameters<typeof signerHost>[0]): Promise<boolean> {
  const host = signerHost(headers);
  return host !== null && (await domainPolicy(ctx).refuses(host));
}

/** The actor of a queued activity, by its id (a string, or an object with one). */
function actorIdOf(activity: unknown): string | null {
  if (activity === null || typeof activity !== 'object') return null;
  const actor = (activity as { actor?: unknown }).actor;
  const first = Array.isArray(actor) ? actor[0] : actor;
  if (typeof first === 'string') return first;
  if (first && typeof first === 'object' && typeof (first as { id?: unknown }).id === 'string') return (first as { id: string }).id;
  return null;
}

/**
 * Whether a message of Fedify's queue is to be dropped: a delivery to an inbox of a refused server (queued before
 * its block), or a received activity of a refused server's actor (accepted before its block).
 */
export async function refusedDelivery(ctx: AppContext, message: unknown): Promise<boolean> {
  if (message === null || typeof message !== 'object') return false;
  const m = message as { type?: unknown; inbox?: unknown; activity?: unknown };
  if (m.type === 'outbox' && typeof m.inbox === 'string') return domainPolicy(ctx).refuses(m.inbox);
  if (m.type === 'inbox') return domainPolicy(ctx).refuses(actorIdOf(m.activity));
  return false;
}
