import { signRequest, type HttpMessageSignaturesSpec } from '@fedify/fedify';
import { CryptographicKey, Multikey, Object as APObject, isActor } from '@fedify/vocab';
import { getDocumentLoader, validatePublicUrl, type DocumentLoader } from '@fedify/vocab-runtime';
import type { webcrypto } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Queryable } from '../storage/db.ts';
import { AccountKeyRing } from './keys.ts';
import { INSTANCE_ACTOR } from './instance-actor.ts';
import { excerpt } from './health.ts';
import { fetchProblem, type FetchProblem } from './fetch-errors.ts';

/**
 * An operator's check of another server (`npm run cli -- federation check`): WebFinger for a handle, then the actor
 * or post fetched unsigned and signed by our instance actor, parsed as JSON-LD, and the keys found. Only GETs; nothing
 * is sent, and nothing is stored. Each step says what failed in the words one would search for (DNS, TLS, a 401 on an
 * unsigned GET, 404, bad JSON-LD).
 */

const AP_ACCEPT = 'application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams"';
const TIMEOUT_MS = 10_000;
const SPECS: HttpMessageSignaturesSpec[] = ['draft-cavage-http-signatures-12', 'rfc9421'];

export interface CheckLine { step: string; ok: boolean; detail: string }
export interface CheckDeps { db: Queryable; config: Config }

type Answer = { status: number; body: string; url: string } | { problem: FetchProblem };

class Checker {
  readonly lines: CheckLine[] = [];
  private readonly config: Config;
  private readonly db: Queryable;
  private readonly userAgent: string;
  private signer: Promise<{ privateKey: webcrypto.CryptoKey; keyId: URL }> | null = null;
  readonly contextLoader: DocumentLoader;

  constructor({ db, config }: CheckDeps) {
    this.db = db;
    this.config = config;
    this.userAgent = `fedi-server/${config.softwareVersion} (+${config.publicUrl}; federation check)`;
    this.contextLoader = getDocumentLoader({ allowPrivateAddress: config.allowPrivateAddresses, userAgent: this.userAgent });
  }

  say(step: string, ok: boolean, detail: string): void {
    this.lines.push({ step, ok, detail });
  }

  private instanceKey(): Promise<{ privateKey: webcrypto.CryptoKey; keyId: URL }> {
    this.signer ??= new AccountKeyRing(this.db).instanceKeyPairs().then(({ pairs }) => ({
      privateKey: pairs[0]!.privateKey,
      keyId: new URL(`/users/${INSTANCE_ACTOR}#main-key`, this.config.publicUrl),
    }));
    return this.signer;
  }

  /** One GET (redirects followed, each checked against the private-address guard), signed with `spec` if given. */
  async get(url: string, accept: string, spec?: HttpMessageSignaturesSpec): Promise<Answer> {
    let current = url;
    for (let hop = 0; hop < 5; hop++) {
      try {
        if (!/^https?:\/\//i.test(current)) return { problem: { kind: 'other', status: null, detail: `not an http(s) URL: ${current}` } };
        // The same guard every fetch of the server has: loopback and private addresses only with ALLOW_PRIVATE_ADDRESSES.
        if (!this.config.allowPrivateAddresses) await validatePublicUrl(current);
        let request = new Request(current, { headers: { accept, 'user-agent': this.userAgent }, redirect: 'manual' });
        if (spec) {
          const { privateKey, keyId } = await this.instanceKey();
          request = await signRequest(request, privateKey, keyId, { spec });
        }
        const response = await fetch(request, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'manual' });
        const location = response.headers.get('location');
        if (response.status >= 300 && response.status < 400 && location) {
          await response.body?.cancel();
          current = new URL(location, current).href;
          continue;
        }
        return { status: response.status, body: (await response.text()).slice(0, 1024 * 1024), url: current };
      } catch (err) {
        const problem = fetchProblem(err);
        if (problem.kind === 'private-address') problem.detail = `refused: ${new URL(current).host} is a loopback or private address (set ALLOW_PRIVATE_ADDRESSES=true only for tests)`;
        return { problem };
      }
    }
    return { problem: { kind: 'other', status: null, detail: 'too many redirects' } };
  }

  /** `acct:user@domain` to the actor's id, through WebFinger (never signed: no server asks for that). */
  async webFinger(handle: string): Promise<string | null> {
    const [user, domain] = handle.replace(/^acct:/, '').replace(/^@/, '').split('@') as [string, string | undefined];
    if (!user || !domain) {
      this.say('webfinger', false, `not a handle: ${handle} (expected user@domain)`);
      return null;
    }
    const resource = `acct:${user}@${domain}`;
    const url = `https://${domain}/.well-known/webfinger?resource=${encodeURIComponent(resource)}`;
    const answer = await this.get(url, 'application/jrd+json, application/json');
    if ('problem' in answer) {
      this.say('webfinger', false, `${url}: ${answer.problem.detail}`);
      return null;
    }
    if (answer.status === 404 || answer.status === 410) {
      this.say('webfinger', false, `no account ${resource} on ${domain} (HTTP ${answer.status})`);
      return null;
    }
    if (answer.status !== 200) {
      this.say('webfinger', false, `${url}: HTTP ${answer.status}: ${excerpt(answer.body)}`);
      return null;
    }
    let jrd: { links?: { rel?: string; type?: string; href?: string }[] };
    try {
      jrd = JSON.parse(answer.body) as typeof jrd;
    } catch {
      this.say('webfinger', false, `${url}: not JSON: ${excerpt(answer.body)}`);
      return null;
    }
    const self = jrd.links?.find((l) => l.rel === 'self' && (!l.type || /activity\+json|ld\+json/.test(l.type)))?.href;
    if (!self) {
      this.say('webfinger', false, `${resource}: no ActivityPub "self" link in the answer`);
      return null;
    }
    this.say('webfinger', true, `${resource} -> ${self}`);
    return self;
  }

  /** The document at `url`, fetched unsigned and signed; the parsed object (from the signed answer if any). */
  async document(url: string, label: string): Promise<APObject | null> {
    const unsigned = await this.get(url, AP_ACCEPT);
    let json: string | null = null;
    if ('problem' in unsigned) {
      // No answer at all (DNS, TLS, refused, timeout, guard): a signature would change nothing.
      this.say(`${label} GET`, false, `${url}: ${unsigned.problem.detail}`);
      return null;
    } else if (unsigned.status === 401 || unsigned.status === 403) {
      this.say(`${label} unsigned GET`, false, `HTTP ${unsigned.status} on unsigned GET: the server refuses unsigned fetches (authorized fetch); signed ones are needed`);
    } else if (unsigned.status !== 200) {
      this.say(`${label} unsigned GET`, false, `HTTP ${unsigned.status}${unsigned.status === 404 || unsigned.status === 410 ? ' (not found)' : ''}: ${excerpt(unsigned.body)}`);
    } else {
      this.say(`${label} unsigned GET`, true, 'HTTP 200');
      json = unsigned.body;
    }

    let signedOk = false;
    const refusals: string[] = [];
    for (const spec of SPECS) {
      const signed = await this.get(url, AP_ACCEPT, spec);
      if ('problem' in signed) {
        refusals.push(`${spec}: ${signed.problem.detail}`);
        break; // no answer at all: the other spec will not get one either
      }
      if (signed.status === 200) {
        this.say(`${label} signed GET`, true, `HTTP 200, signed ${spec} as ${new URL(`/users/${INSTANCE_ACTOR}`, this.config.publicUrl).href}`);
        json = signed.body;
        signedOk = true;
        break;
      }
      refusals.push(`${spec}: HTTP ${signed.status}: ${excerpt(signed.body).slice(0, 120)}`);
      if (signed.status === 404 || signed.status === 410) break; // not a signature matter
    }
    if (!signedOk) this.say(`${label} signed GET`, false, refusals.join('; '));
    if (json === null) return null;

    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      this.say(`${label} document`, false, `not JSON: ${excerpt(json)}`);
      return null;
    }
    try {
      const object = await APObject.fromJsonLd(parsed, { documentLoader: this.contextLoader, contextLoader: this.contextLoader });
      const type = (parsed as { type?: unknown }).type;
      const idNote = object.id?.href === url ? '' : ` (its id is ${object.id?.href ?? 'missing'}, not the URL fetched)`;
      this.say(`${label} document`, true, `${String(type)} ${object.id?.href ?? ''}${idNote}`);
      return object;
    } catch (err) {
      this.say(`${label} document`, false, `bad JSON-LD: ${(err as Error).message}`);
      return null;
    }
  }

  /** The keys an actor document lists, and whether each names the actor as its owner. */
  async keys(actor: APObject): Promise<void> {
    if (!isActor(actor)) return;
    let found = 0;
    const options = { documentLoader: this.contextLoader, contextLoader: this.contextLoader, suppressError: true };
    for await (const key of actor.getPublicKeys(options)) {
      found++;
      const owner = key.ownerId?.href === actor.id?.href ? 'owner matches' : `owner ${key.ownerId?.href ?? 'missing'} is not the actor`;
      const algorithm = key instanceof CryptographicKey ? (key.publicKey?.algorithm.name ?? 'unreadable key') : 'Multikey';
      this.say('key', key instanceof CryptographicKey && key.ownerId?.href === actor.id?.href, `${key.id?.href ?? '(no id)'} (${algorithm}, HTTP Signatures), ${owner}`);
    }
    for await (const method of actor.getAssertionMethods(options)) {
      if (!(method instanceof Multikey)) continue;
      found++;
      this.say('key', method.controllerId?.href === actor.id?.href, `${method.id?.href ?? '(no id)'} (Multikey, Object Integrity Proofs), controller ${method.controllerId?.href === actor.id?.href ? 'matches' : (method.controllerId?.href ?? 'missing')}`);
    }
    if (found === 0) this.say('key', false, 'no public key: signatures from this actor cannot be checked');
    const inbox = actor.inboxId?.href;
    const shared = actor.endpoints?.sharedInbox?.href;
    this.say('inbox', inbox !== undefined, inbox ? `${inbox}${shared ? ` (shared: ${shared})` : ''}` : 'no inbox: nothing can be delivered to it');
  }
}

/** Runs the check of a handle (`user@domain`) or an https URL (an actor or a post); returns what it found. */
export async function checkRemote(deps: CheckDeps, target: string): Promise<CheckLine[]> {
  const c = new Checker(deps);
  const isUrl = /^https?:\/\//i.test(target);
  const url = isUrl ? target : await c.webFinger(target);
  if (!url) return c.lines;
  const object = await c.document(url, isUrl ? 'object' : 'actor');
  if (!object) return c.lines;
  if (isActor(object)) {
    await c.keys(object);
  } else if (object.attributionId) {
    // A post: its author is what signs it and what our server would fetch next.
    const author = await c.document(object.attributionId.href, 'author');
    if (author) await c.keys(author);
  }
  return c.lines;
}
