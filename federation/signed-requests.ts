import { Temporal } from '@js-temporal/polyfill';
import { verifyRequest, type KeyCache, type KvStore, type RequestContext } from '@fedify/fedify';
import { CryptographicKey, Multikey } from '@fedify/vocab';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { INSTANCE_ACTOR, signedLoader } from './instance-actor.ts';
import { accountForActorUri } from './remote-accounts.ts';
import { RedisKvStore } from './kv.ts';

const KEY_TTL_MS = 24 * 3600 * 1000;

/** Remote public keys that signed GETs to us, kept a day (a key that stops verifying is fetched again by Fedify). */
class SignedGetKeyCache implements KeyCache {
  private readonly kv: KvStore;
  private readonly loader: DocumentLoader;
  private readonly contextLoader: DocumentLoader;

  constructor(kv: KvStore, loader: DocumentLoader, contextLoader: DocumentLoader) {
    this.kv = kv;
    this.loader = loader;
    this.contextLoader = contextLoader;
  }

  async get(keyId: URL): Promise<CryptographicKey | Multikey | undefined> {
    const stored = await this.kv.get(['signed-get-key', keyId.href]);
    if (stored == null) return undefined;
    const options = { documentLoader: this.loader, contextLoader: this.contextLoader };
    return CryptographicKey.fromJsonLd(stored, options).catch(() => Multikey.fromJsonLd(stored, options)).catch(() => undefined);
  }

  async set(keyId: URL, key: CryptographicKey | Multikey | null): Promise<void> {
    if (key === null) return; // an unavailable key is asked for again next time
    await this.kv.set(['signed-get-key', keyId.href], await key.toJsonLd({ contextLoader: this.contextLoader }), { ttl: Temporal.Duration.from({ milliseconds: KEY_TTL_MS }) });
  }
}

const requesters = new WeakMap<Request, Promise<AccountRow | null>>();

/**
 * The account that signed a GET to us (HTTP Signatures, draft-cavage or RFC 9421), stored or fetched, or null when
 * the request is unsigned, badly signed, or its signer cannot be had or is suspended. The signer's key and actor are
 * fetched signed by our instance actor, since the signer's server may itself insist on signed fetches.
 */
export function signedRequester(fed: RequestContext<AppContext>): Promise<AccountRow | null> {
  let pending = requesters.get(fed.request);
  if (!pending) {
    pending = findSigner(fed);
    requesters.set(fed.request, pending);
  }
  return pending;
}

async function findSigner(fed: RequestContext<AppContext>): Promise<AccountRow | null> {
  if (!fed.request.headers.has('signature')) return null;
  try {
    const loader = await signedLoader(fed, null);
    const key = await verifyRequest(fed.request, {
      documentLoader: loader,
      contextLoader: fed.contextLoader,
      keyCache: new SignedGetKeyCache(new RedisKvStore(fed.data.redis, fed.data.config.redisPrefix), loader, fed.contextLoader),
    });
    // A key speaks for an actor of its own server only.
    const owner = key?.ownerId;
    if (!key?.id || !owner || owner.origin !== key.id.origin) return null;
    if (owner.origin === new URL(fed.data.config.publicUrl).origin) {
      const parsed = fed.parseUri(owner);
      if (parsed?.type !== 'actor' || parsed.identifier === INSTANCE_ACTOR) return null;
      return findAccountByUsername(fed.data.db, parsed.identifier, null);
    }
    const account = await accountForActorUri(fed.data, fed, owner.href, loader);
    return account && !account.suspended_at ? account : null;
  } catch {
    return null;
  }
}
