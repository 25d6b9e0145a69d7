import type { KvKey, KvStore, KvStoreListEntry, KvStoreSetOptions } from '@fedify/fedify';

/** Where Fedify remembers, per origin, which HTTP Signatures spec a server took (its default key prefix). */
const SPEC_PREFIX = ['_fedify', 'httpMessageSignaturesSpec'];

const isSpecKey = (key: KvKey) => key.length === SPEC_PREFIX.length + 1 && key[0] === SPEC_PREFIX[0] && key[1] === SPEC_PREFIX[1];

/**
 * Fedify's store, minus its memory of signature specs, so that every request to another server is signed
 * draft-cavage first (FederationOptions.firstKnock), and RFC 9421 is used only when a server refuses draft-cavage
 * (or asks for RFC 9421 with Accept-Signature) in that very exchange.
 *
 * Why not let Fedify remember: its double-knock retries with the other spec after any error status, and stores the
 * spec of the retry unless that too was a 400 or 401. A 404 or 410 on a GET (a deleted post) therefore records RFC
 * 9421 for the whole server; snac then answers our deliveries with 202 and drops them, since it verifies later and
 * knows only draft-cavage. Choices stored by earlier versions (RFC 9421 was then the first knock) are removed when
 * read. The cost: a server that takes only RFC 9421 gets a refused knock before each request.
 */
export class CavageFirstKvStore implements KvStore {
  private readonly inner: KvStore;
  /** Told the spec a server just took from us (Fedify stores it after every signed request that succeeded). */
  private readonly onSpec: ((origin: string, spec: string) => void) | undefined;

  constructor(inner: KvStore, onSpec?: (origin: string, spec: string) => void) {
    this.inner = inner;
    this.onSpec = onSpec;
  }

  async get<T = unknown>(key: KvKey): Promise<T | undefined> {
    if (!isSpecKey(key)) return this.inner.get<T>(key);
    if ((await this.inner.get(key)) !== undefined) await this.inner.delete(key);
    return undefined;
  }

  async set(key: KvKey, value: unknown, options?: KvStoreSetOptions): Promise<void> {
    if (!isSpecKey(key)) await this.inner.set(key, value, options);
    else if (typeof value === 'string') this.onSpec?.(String(key[2]), value);
  }

  delete(key: KvKey): Promise<void> {
    return this.inner.delete(key);
  }

  cas = (key: KvKey, expectedValue: unknown, newValue: unknown, options?: KvStoreSetOptions): Promise<boolean> => {
    if (isSpecKey(key)) return Promise.resolve(false);
    return this.inner.cas!(key, expectedValue, newValue, options);
  };

  list(prefix?: KvKey): AsyncIterable<KvStoreListEntry> {
    return this.inner.list!(prefix);
  }
}
