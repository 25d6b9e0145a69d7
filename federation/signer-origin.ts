import { signerHost } from './domain-policy.ts';

/**
 * Whether an inbox POST's HTTP signature may speak for the activity's actor. Fedify accepts a key document fetched
 * from the key id and trusts the owner it names, so a key served by one server could claim an actor of another.
 * A key on the actor's own host is what every server sends; a key elsewhere (a forwarded reply, a relay) is taken only
 * when the activity carries its own signature (Linked Data signature or integrity proof) whose key is on the actor's
 * host, which Fedify then verifies. Ids that are not http(s) URLs are left to Fedify.
 */
export function signerMaySpeakFor(headers: Record<string, string | string[] | undefined>, doc: Record<string, unknown> | null): boolean {
  const host = signerHost(headers);
  if (host === null || doc === null) return true; // unsigned, or not an activity: Fedify refuses or answers it
  const actorHost = hostOf(idOf(doc.actor));
  if (actorHost === null || actorHost === host.toLowerCase()) return true;
  const signature = doc.signature as Record<string, unknown> | undefined;
  const proofs = [doc.proof].flat() as (Record<string, unknown> | undefined)[];
  const embedded = [hostOf(idOf(signature?.creator)), ...proofs.map((p) => hostOf(idOf(p?.verificationMethod)))];
  return embedded.some((h) => h === actorHost);
}

function idOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string') return (value as { id: string }).id;
  return null;
}

function hostOf(id: string | null): string | null {
  if (!id || !/^https?:\/\//i.test(id) || !URL.canParse(id)) return null;
  return new URL(id).host.toLowerCase();
}
