import { Temporal } from '@js-temporal/polyfill';
import { fetchKey, getKeyOwner, verifyRequest, type KeyCache, type KvStore, type RequestContext } from '@fedify/fedify';
import { CryptographicKey, Multikey } from '@fedify/vocab';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { INSTANCE_ACTOR, signedLoader } from './instance-actor.ts';
import { accountForActorUri } from './remote-accounts.ts';
import { RedisKvStore } from './kv.ts';
import { FETCH_TIMEOUT_MS } from './fetch-object.ts';
import { domainPolicy } from '../services/domain-policy.ts';

const DAY = Temporal.Duration.from({ hours: 24 });
/** A key or signer that could not be had is not asked for again this soon (each try is work a stranger can cause). */
const FAILURE_TTL = Temporal.Duration.from({ minutes: 5 });

/** Remote public keys that signed GETs to us, kept a day (a key that stops verifying is fetched again by Fedify). */
class SignedGetKeyCache implements KeyCache {
  private readonly kv: KvStore;
  private readonly options: { documentLoader: DocumentLoader; contextLoader: DocumentLoader };

  constructor(kv: KvStore, documentLoader: DocumentLoader, contextLoader: DocumentLoader) {
    this.kv = kv;
    this.options = { documentLoader, contextLoader };
  }

  async get(keyId: URL): Promise<CryptographicKey | Multikey | undefined> {
    const stored = await this.kv.get(['signed-get-key', keyId.href]);
    if (stored == null) return undefined;
    return CryptographicKey.fromJsonLd(stored, this.options).catch(() => Multikey.fromJsonLd(stored, this.options)).catch(() => undefined);
  }

  async set(keyId: URL, key: CryptographicKey | Multikey | null): Promise<void> {
    if (key === null) return; // failures are remembered per signer instead (findSigner)
    await this.kv.set(['signed-get-key', keyId.href], await key.toJsonLd({ contextLoader: this.options.contextLoader }), { ttl: DAY });
  }
}

/** A loader that gives up after FETCH_TIMEOUT_MS. */
const withTimeout = (loader: DocumentLoader): DocumentLoader => (url, options) => loader(url, { ...options, signal: options?.signal ?? AbortSignal.timeout(FETCH_TIMEOUT_MS) });

const requesters = new WeakMap<Request, Promise<AccountRow | null>>();

/**
 * The account that signed a GET to us (HTTP Signatures, draft-cavage or RFC 9421), or null when the request is
 * unsigned, badly signed, or its signer cannot be had or is suspended. As Mastodon does, the key counts only when
 * its owner's own actor document lists it, and the owner only when WebFinger on its server names it
 * (remote-accounts.ts): a key document uploaded to some server cannot speak for that server's users. Keys and
 * actors are fetched signed by our instance actor, since the signer's server may itself insist on signed fetches.
 */
export function signedRequester(fed: RequestContext<AppContext>): Promise<AccountRow | null> {
  let pending = requesters.get(fed.request);
  if (!pending) {
    pending = findSigner(fed).catch(() => null);
    requesters.set(fed.request, pending);
  }
  return pending;
}

async function findSigner(fed: RequestContext<AppContext>): Promise<AccountRow | null> {
  const request = fed.request;
  if (!request.headers.has('signature')) return null;
  const kv = new RedisKvStore(fed.data.redis, fed.data.config.redisPrefix);
  const keyId = /keyId="([^"]+)"/i.exec(request.headers.get('signature') ?? '')?.[1] ?? /keyid="([^"]+)"/i.exec(request.headers.get('signature-input') ?? '')?.[1];
  if (!keyId || !URL.canParse(keyId)) return null;
  if (await domainPolicy(fed.data).refuses(keyId)) return null; // a suspended server's signature counts for nothing
  if (await kv.get(['signed-get-failed', keyId])) return null;

  const loader = withTimeout(await signedLoader(fed, null));
  const keyCache = new SignedGetKeyCache(kv, loader, fed.contextLoader);
  const key = (await verifyRequest(request, { documentLoader: loader, contextLoader: fed.contextLoader, keyCache }))
    ?? (await verifyCavageWithQuery(request, loader, fed.contextLoader, keyCache));
  if (!key?.id) return null;

  const ownerUri = await confirmedOwner(kv, key, loader, fed.contextLoader);
  if (!ownerUri) {
    await kv.set(['signed-get-failed', keyId], true, { ttl: FAILURE_TTL });
    return null;
  }
  const owner = new URL(ownerUri);
  if (owner.origin === new URL(fed.data.config.publicUrl).origin) {
    const parsed = fed.parseUri(owner);
    if (parsed?.type !== 'actor' || parsed.identifier === INSTANCE_ACTOR) return null;
    return findAccountByUsername(fed.data.db, parsed.identifier, null);
  }
  const account = await accountForActorUri(fed.data, fed, ownerUri, loader);
  if (!account) await kv.set(['signed-get-failed', keyId], true, { ttl: FAILURE_TTL });
  return account && !account.suspended_at ? account : null;
}

/** The actor a key belongs to, when that actor's document lists the key (remembered a day). */
async function confirmedOwner(kv: KvStore, key: CryptographicKey | Multikey, loader: DocumentLoader, contextLoader: DocumentLoader): Promise<string | null> {
  const remembered = await kv.get<string>(['signed-get-owner', key.id!.href]);
  if (remembered) return remembered;
  const owner = await getKeyOwner(key instanceof CryptographicKey ? key : key.id!, { documentLoader: loader, contextLoader }).catch(() => null);
  if (!owner?.id || owner.id.origin !== key.id!.origin) return null;
  await kv.set(['signed-get-owner', key.id!.href], owner.id.href, { ttl: DAY });
  return owner.id.href;
}

/**
 * draft-cavage signatures whose `(request-target)` covers the query string. Fedify 2.3 signs and checks the path
 * alone; snac, and Mastodon since 4.3, sign the path with its query, so their signed GETs of paged collections
 * (`/outbox?cursor=…`) would otherwise fail. Only the signing string differs; the key is fetched and the signature
 * checked with Fedify's fetchKey and WebCrypto, with the same one-hour clock window.
 */
async function verifyCavageWithQuery(request: Request, documentLoader: DocumentLoader, contextLoader: DocumentLoader, keyCache: KeyCache): Promise<CryptographicKey | null> {
  const url = new URL(request.url);
  const header = request.headers.get('signature');
  if (url.search === '' || !header) return null;
  const params = new Map([...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!.toLowerCase(), m[2]!]));
  const names = (params.get('headers') ?? 'date').toLowerCase().split(/\s+/);
  const keyId = params.get('keyid');
  const signature = params.get('signature');
  const date = request.headers.get('date');
  if (!keyId || !signature || !date || !names.includes('(request-target)') || !names.includes('date')) return null;
  if (Math.abs(Date.now() - Date.parse(date)) > 3600_000) return null;
  const message = names.map((name) => `${name}: ${
    name === '(request-target)' ? `${request.method.toLowerCase()} ${url.pathname}${url.search}`
      : name === 'host' ? (request.headers.get('host') ?? url.host) : (request.headers.get(name) ?? '')}`).join('\n');
  const { key } = await fetchKey(keyId, CryptographicKey, { documentLoader, contextLoader, keyCache });
  if (!key) return null;
  const ok = await crypto.subtle.verify('RSASSA-PKCS1-v1_5', key.publicKey, Buffer.from(signature, 'base64'), new TextEncoder().encode(message));
  return ok ? key : null;
}
