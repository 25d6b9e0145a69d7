import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { exportSpki, signJsonLd, signRequest, type generateCryptoKeyPair, verifyRequestDetailed, type HttpMessageSignaturesSpec, type KeyCache } from '@fedify/fedify';
import type { CryptographicKey, Multikey } from '@fedify/vocab';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import { freePort } from './listen.ts';

/**
 * A fake fediverse server that behaves like the strict real ones (GoToSocial 0.19, snac 2.94), so our server is tested
 * against their rules rather than against itself:
 * - every GET of an ActivityPub document needs a draft-cavage HTTP signature (GoToSocial's authorized fetch); unsigned
 *   or RFC 9421-only GETs get 401. Only discovery (WebFinger, host-meta, NodeInfo), the key documents and the instance
 *   actor are public, which is what lets two such servers verify each other without a loop;
 * - requests without a User-Agent get 418 (GoToSocial);
 * - inbox POSTs get 202 at once, and are checked afterwards (snac): draft-cavage only, Digest must match the body, the
 *   key must belong to the activity's actor. Results are in `received`;
 * - a verified Follow of an unlocked, auto-accepting actor is answered with an Accept embedding the Follow.
 *
 * Key documents: `/users/<u>/main-key` serves GoToSocial's stub Person (id = the actor, type, preferredUsername,
 * publicKey), not a bare `{id, owner, publicKeyPem}`: Fedify's fetchKey rejects an untyped key document (it parses as
 * a plain Object) and accepts either a `CryptographicKey`-typed one or an actor holding a key with the requested id.
 * Not imitated: Fedify's draft-cavage `(request-target)` is the path without the query string, on both signing and
 * verifying sides; GoToSocial includes the query, so a signed GET with a query that passes here may fail there.
 */

type Json = Record<string, unknown>;
type Spec = 'draft-cavage' | 'rfc9421' | 'none';
export interface PeerGet { path: string; /** carried a draft-cavage signature (status says whether it verified) */ signed: boolean; keyId: string | null; spec: Spec; status: number }
export interface PeerDelivery { inbox: string; activity: Json; verified: boolean; reason?: string; spec: Spec }
/** Outgoing deliveries; status 0 with `error` when it could not be made (e.g. the follower's inbox was not found). */
export interface PeerSent { inbox: string; activity: Json; status: number; error?: string }
/**
 * `fields`: profile fields, published as Mastodon does (`PropertyValue` attachments, the value HTML); `type`: relays'
 * actors are Applications, a Lemmy community or a PeerTube channel a Group; `extra`: more of the actor document (icon, image…), as that server would serve it.
 * `at`: the actor's path when it is not `/users/<name>` (Pleroma's relay actor is `/relay`); such an actor's key is
 * `<actor>#main-key`, in its actor document, as Pleroma's and Mastodon's are.
 */
export interface PeerActorOptions { locked?: boolean; autoAccept?: boolean; fields?: PeerField[]; type?: ActorType; extra?: Json; at?: string }
export interface PeerField { name: string; value: string }
type ActorType = 'Person' | 'Group' | 'Service' | 'Application';
interface Actor { username: string; path: string; type: ActorType; keys: RsaKeyPair; pem: string; locked: boolean; autoAccept: boolean; followers: Set<string>; fields: PeerField[]; extra: Json }

const AS = 'https://www.w3.org/ns/activitystreams';
const CONTEXT = [AS, 'https://w3id.org/security/v1'];
const AP_TYPE = 'application/activity+json';
const INSTANCE = 'peer.internal';
const CAVAGE: HttpMessageSignaturesSpec = 'draft-cavage-http-signatures-12';

export type RsaKeyPair = Awaited<ReturnType<typeof generateCryptoKeyPair>>;

/**
 * An RSASSA-PKCS1-v1_5 (SHA-256) key pair as Fedify's generateCryptoKeyPair makes it, but 2048-bit as Mastodon's and
 * GoToSocial's actors' keys are (and ours, federation/keys.ts), not Fedify's 4096: a 4096-bit key takes a CPU-second
 * or more to make on a busy machine, and suites make dozens.
 */
export async function rsaKeyPair(): Promise<RsaKeyPair> {
  return crypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true, ['sign', 'verify'],
  );
}

export async function startStrictPeer(): Promise<StrictPeer> {
  const cert = process.env.TEST_TLS_CERT_FILE, key = process.env.TEST_TLS_KEY_FILE;
  if (!cert || !key) throw new Error('TEST_TLS_CERT_FILE / TEST_TLS_KEY_FILE unset: run under vitest (test/helpers/tls.ts)');
  const port = await freePort();
  const peer = new StrictPeer(port, readFileSync(cert), readFileSync(key));
  await peer.addActor(INSTANCE, { locked: true, autoAccept: false });
  await new Promise<void>((resolve) => peer.server.listen(port, '127.0.0.1', resolve));
  return peer;
}

export class StrictPeer {
  readonly domain: string;
  readonly url: string;
  readonly gets: PeerGet[] = [];
  readonly received: PeerDelivery[] = [];
  readonly sent: PeerSent[] = [];
  readonly server: Server;
  readonly userAgent: string;
  private readonly actors = new Map<string, Actor>();
  private readonly objects = new Map<string, Json>();
  private readonly extraLinks = new Map<string, Json[]>();
  private readonly openDocuments = new Map<string, Json>();
  /** Actors' featured collections (pinned posts), when set: ids or inlined objects, newest first. */
  private readonly featuredOf = new Map<string, unknown[]>();
  // Successes only: Fedify would otherwise remember a failed fetch (null) and never try that key again.
  private readonly keys = new Map<string, CryptographicKey | Multikey>();
  private readonly keyCache: KeyCache = {
    get: async (id) => this.keys.get(id.href),
    set: async (id, k) => { if (k) this.keys.set(id.href, k); },
  };

  constructor(port: number, cert: Buffer, key: Buffer) {
    this.domain = `localhost:${port}`;
    this.url = `https://${this.domain}`;
    this.userAgent = `strict-peer/1.0 (+${this.url}; like GoToSocial 0.19 and snac 2.94)`;
    this.server = createServer({ cert, key }, (req, res) => {
      this.handle(req, res).catch((e: unknown) => { if (!res.headersSent) reply(res, 500, { error: String(e) }); });
    });
  }

  actorId(username: string): string { return `${this.url}${this.actors.get(username)?.path ?? `/users/${username}`}`; }
  keyId(username: string): string {
    const a = this.actors.get(username);
    return a && a.path !== `/users/${username}` ? `${this.actorId(username)}#main-key` : `${this.actorId(username)}/main-key`;
  }
  get instanceActorId(): string { return this.actorId(INSTANCE); }
  followers(username: string): string[] { return [...this.actor(username).followers]; }

  async addActor(username: string, { locked = false, autoAccept = true, fields = [], type: asked, extra = {}, at }: PeerActorOptions = {}): Promise<string> {
    const keys = await rsaKeyPair();
    const type = asked ?? (username === INSTANCE ? 'Application' : 'Person');
    this.actors.set(username, { username, path: at ?? `/users/${username}`, type, keys, pem: await exportSpki(keys.publicKey), locked, autoAccept, followers: new Set(), fields, extra });
    return this.actorId(username);
  }

  /** Changes an actor's profile fields (what its next actor document says). */
  setFields(username: string, fields: PeerField[]): void {
    this.actor(username).fields = fields;
  }

  /** An actor's profile page (its `url`). */
  profileUrl(username: string): string { return `${this.url}/@${username}`; }

  /** Links added to an actor's WebFinger answer (a remote-interaction template, FEP-3b86 intents). */
  webFingerLinks(username: string, links: Json[]): void {
    this.actor(username);
    this.extraLinks.set(username, links);
  }

  /** The activity with a Linked Data signature by the actor's key (RsaSignature2017, as Mastodon signs what relays forward). */
  async signLd(username: string, activity: Json): Promise<Json> {
    return await signJsonLd(activity, this.actor(username).keys.privateKey, new URL(this.keyId(username)), {}) as unknown as Json;
  }

  /** Serves `object` at its id's path (signed GETs only). */
  publish(username: string, object: Json): void {
    this.actor(username);
    const id = new URL(String(object.id));
    if (id.origin !== this.url) throw new Error(`${id.href} is not under ${this.url}`);
    this.objects.set(id.pathname, object);
  }

  /** Gives an actor a featured collection (`/users/<u>/collections/featured`) of these items, served to signed GETs. */
  feature(username: string, items: unknown[]): void {
    this.actor(username);
    this.featuredOf.set(username, items);
  }

  /** Serves a document to anyone, signed or not (a JSON-LD context such as Akkoma's `/schemas/litepub-0.1.jsonld`). */
  publishOpenly(path: string, document: Json): void {
    this.openDocuments.set(path, document);
  }

  /** Serves `object` at a path of its own, whatever its id says (an upload, say), to signed GETs only. */
  publishAt(path: string, object: Json): void {
    this.objects.set(path, object);
  }

  /** Signs with an actor's key (null: the instance actor), keyId `…/main-key`; draft-cavage adds Date, Host and Digest. */
  async sign(username: string | null, request: Request, spec: HttpMessageSignaturesSpec = CAVAGE): Promise<Request> {
    const name = username ?? INSTANCE;
    return signRequest(request, this.actor(name).keys.privateKey, new URL(this.keyId(name)), { spec });
  }

  async send(username: string, inbox: string, activity: Json): Promise<number> {
    const body = JSON.stringify(activity);
    const req = new Request(inbox, { method: 'POST', body, headers: { 'content-type': AP_TYPE, accept: AP_TYPE, 'user-agent': this.userAgent } });
    const res = await fetch(await this.sign(username, req));
    await res.arrayBuffer();
    this.sent.push({ inbox, activity, status: res.status });
    return res.status;
  }

  async signedGet(username: string | null, url: string): Promise<{ status: number; json: Json | null }> {
    return readJson(await fetch(await this.sign(username, this.getRequest(url))));
  }

  /** A GET signed as snac and Mastodon 4.3+ sign it: draft-cavage with the query string in `(request-target)`. */
  async signedGetWithQuery(username: string, url: string): Promise<{ status: number; json: Json | null }> {
    const u = new URL(url);
    const date = new Date().toUTCString();
    const message = `(request-target): get ${u.pathname}${u.search}\nhost: ${u.host}\ndate: ${date}`;
    const sig = Buffer.from(await crypto.subtle.sign('RSASSA-PKCS1-v1_5', this.actor(username).keys.privateKey, new TextEncoder().encode(message))).toString('base64');
    const signature = `keyId="${this.keyId(username)}",algorithm="rsa-sha256",headers="(request-target) host date",signature="${sig}"`;
    return readJson(await fetch(url, { headers: { accept: AP_TYPE, 'user-agent': this.userAgent, date, signature } }));
  }

  async unsignedGet(url: string): Promise<{ status: number; json: Json | null }> {
    return readJson(await fetch(this.getRequest(url)));
  }

  /** The first delivery matching `predicate`, waiting for it (verification runs after the 202). */
  async waitFor(predicate: (d: PeerDelivery) => boolean, timeoutMs = 15_000): Promise<PeerDelivery> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(predicate);
      if (found) return found;
      if (Date.now() > end) throw new Error(`strict peer ${this.domain}: no matching delivery; received: ${JSON.stringify(this.received.map((d) => ({ inbox: d.inbox, type: d.activity.type, verified: d.verified, reason: d.reason })))}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Accepts a Follow (embedded as received) on behalf of `username`, delivering to the follower's inbox. */
  async accept(username: string, follow: Json): Promise<number> {
    const follower = idOf(follow.actor);
    if (!follower) throw new Error('Follow without actor');
    this.actor(username).followers.add(follower);
    const { json } = await this.signedGet(username, follower);
    const inbox = typeof json?.inbox === 'string' ? json.inbox : null;
    if (!inbox) throw new Error(`no inbox for ${follower}`);
    return this.send(username, inbox, { '@context': AS, id: `${this.actorId(username)}/accepts/${randomUUID()}`, type: 'Accept', actor: this.actorId(username), object: follow });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => { this.server.close(() => resolve()); this.server.closeAllConnections(); });
  }

  /** The actor whose document is at this path. */
  private actorAt(path: string): Actor | undefined {
    for (const a of this.actors.values()) if (a.path === path) return a;
    return undefined;
  }

  private actor(username: string): Actor {
    const a = this.actors.get(username);
    if (!a) throw new Error(`strict peer: no actor ${username}`);
    return a;
  }

  private getRequest(url: string): Request {
    return new Request(url, { headers: { accept: AP_TYPE, 'user-agent': this.userAgent } });
  }

  /** Signs its key fetches with the instance key: the signer's server may itself require signed GETs. */
  private readonly loader: DocumentLoader = async (url) => {
    const { status, json } = await this.signedGet(null, url);
    if (status !== 200 || !json) throw new Error(`GET ${url}: HTTP ${status}`);
    return { contextUrl: null, documentUrl: url, document: json };
  };

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const path = url.pathname;
    const sig = inspectSignature(req);
    const logGet = (status: number) => { if (req.method === 'GET') this.gets.push({ path: url.pathname + url.search, signed: sig.spec === 'draft-cavage', keyId: sig.keyId, spec: sig.spec, status }); };
    if (!req.headers['user-agent']) { logGet(418); return reply(res, 418, { error: 'no User-Agent' }); }

    if (req.method === 'POST') {
      const inbox = path === '/inbox' || (path.endsWith('/inbox') && this.actorAt(path.slice(0, -'/inbox'.length)) !== undefined);
      if (!inbox) return reply(res, 404, { error: 'not found' });
      const body = await readBody(req);
      reply(res, 202, null); // snac: accepted first, checked later
      return this.process(req, path, body, sig.spec);
    }
    if (req.method !== 'GET') return reply(res, 405, { error: 'method not allowed' });

    const open = this.publicDocument(path, url.searchParams);
    if (open) { logGet(open.status); return reply(res, open.status, open.body, open.type); }
    const doc = this.protectedDocument(path);
    if (!doc) { logGet(404); return reply(res, 404, { error: 'not found' }); }
    const check = sig.spec === 'draft-cavage' ? await this.verify(req, null) : { ok: false as const, reason: sig.spec === 'rfc9421' ? 'RFC 9421 alone is not accepted' : 'unsigned' };
    logGet(check.ok ? 200 : 401);
    return check.ok ? reply(res, 200, doc, AP_TYPE) : reply(res, 401, { error: `signature required (draft-cavage): ${check.reason}` });
  }

  private publicDocument(path: string, query: URLSearchParams): { status: number; body: unknown; type: string } | null {
    const jrd = 'application/jrd+json';
    if (path === '/.well-known/webfinger') {
      const resource = query.get('resource') ?? '';
      const username = [...this.actors.keys()].find((u) => [`acct:${u}@${this.domain}`, this.actorId(u), `${this.url}/@${u}`].includes(resource));
      if (!username) return { status: 404, body: { error: 'not found' }, type: jrd };
      const id = this.actorId(username);
      return { status: 200, type: jrd, body: { subject: `acct:${username}@${this.domain}`, aliases: [id], links: [
        { rel: 'self', type: AP_TYPE, href: id }, { rel: 'http://webfinger.net/rel/profile-page', type: 'text/html', href: `${this.url}/@${username}` },
        ...(this.extraLinks.get(username) ?? [])] } };
    }
    if (path === '/.well-known/host-meta') {
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0"><Link rel="lrdd" type="application/xrd+xml" template="${this.url}/.well-known/webfinger?resource={uri}"/></XRD>`;
      return { status: 200, body: xml, type: 'application/xrd+xml' };
    }
    const open = this.openDocuments.get(path);
    if (open) return { status: 200, body: open, type: 'application/ld+json' };
    if (path === '/.well-known/nodeinfo') return { status: 200, type: 'application/json', body: { links: [{ rel: 'http://nodeinfo.diaspora.software/ns/schema/2.1', href: `${this.url}/nodeinfo/2.1` }] } };
    if (path === '/nodeinfo/2.1') {
      return { status: 200, type: 'application/json; profile="http://nodeinfo.diaspora.software/ns/schema/2.1#"', body: {
        version: '2.1', software: { name: 'strict-peer', version: '1.0.0' }, protocols: ['activitypub'], services: { inbound: [], outbound: [] },
        openRegistrations: false, usage: { users: { total: this.actors.size - 1 }, localPosts: this.objects.size }, metadata: {} } };
    }
    const key = path.endsWith('/main-key') ? this.actorAt(path.slice(0, -'/main-key'.length)) : undefined;
    if (key) return { status: 200, body: this.keyStub(key), type: AP_TYPE };
    const a = this.actorAt(path);
    if (a?.type === 'Application') return { status: 200, body: this.actorDocument(a), type: AP_TYPE };
    return null;
  }

  private protectedDocument(path: string): Json | null {
    const m = /^(.*?)(?:\/(outbox|followers|following))?$/.exec(path)!;
    const a = this.actorAt(m[1]!);
    const featured = /^\/users\/([^/]+)\/collections\/featured$/.exec(path)?.[1];
    if (featured && this.featuredOf.has(featured)) {
      const items = this.featuredOf.get(featured)!;
      return { '@context': AS, id: `${this.actorId(featured)}/collections/featured`, type: 'OrderedCollection', totalItems: items.length, orderedItems: items };
    }
    if (!a) return this.objects.get(path) ?? null;
    if (!m[2]) return this.actorDocument(a);
    const items = m[2] === 'followers' ? [...a.followers] : m[2] === 'outbox' ? [...this.objects.values()].filter((o) => idOf(o.attributedTo) === this.actorId(a.username)) : [];
    return { '@context': AS, id: `${this.actorId(a.username)}/${m[2]}`, type: 'OrderedCollection', totalItems: items.length, orderedItems: items };
  }

  private actorDocument(a: Actor): Json {
    const id = this.actorId(a.username);
    const terms = {
      ...(this.featuredOf.has(a.username) ? { toot: 'http://joinmastodon.org/ns#', featured: { '@id': 'toot:featured', '@type': '@id' } } : {}),
      // Mastodon's terms for profile fields.
      ...(a.fields.length > 0 ? { schema: 'http://schema.org#', PropertyValue: 'schema:PropertyValue', value: 'schema:value' } : {}),
    };
    return {
      // Mastodon's term for it: `featured` is not in the ActivityStreams context.
      '@context': Object.keys(terms).length > 0 ? [...CONTEXT, terms] : CONTEXT,
      id, type: a.type, preferredUsername: a.username, name: a.username,
      inbox: `${id}/inbox`, outbox: `${id}/outbox`, followers: `${id}/followers`, following: `${id}/following`,
      endpoints: { sharedInbox: `${this.url}/inbox` }, manuallyApprovesFollowers: a.locked, url: `${this.url}/@${a.username}`,
      publicKey: { id: this.keyId(a.username), owner: id, publicKeyPem: a.pem },
      ...(this.featuredOf.has(a.username) ? { featured: `${id}/collections/featured` } : {}),
      ...(a.fields.length > 0 ? { attachment: a.fields.map((f) => ({ type: 'PropertyValue', name: f.name, value: f.value })) } : {}),
      ...a.extra,
    };
  }

  /** GoToSocial's answer at the key URL: a Person reduced to what verifying needs. */
  private keyStub(a: Actor): Json {
    const id = this.actorId(a.username);
    return { '@context': CONTEXT, id, type: a.type, preferredUsername: a.username, publicKey: { id: this.keyId(a.username), owner: id, publicKeyPem: a.pem } };
  }

  private async verify(req: IncomingMessage, body: Buffer | null): Promise<{ ok: true; owner: string | null } | { ok: false; reason: string }> {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const request = new Request(`${this.url}${req.url ?? '/'}`, { method: req.method, headers, ...(body ? { body: new Uint8Array(body) } : {}) });
    const result = await verifyRequestDetailed(request, { spec: CAVAGE, documentLoader: this.loader, keyCache: this.keyCache });
    if (result.verified) return { ok: true, owner: result.key.ownerId?.href ?? null };
    const r = result.reason;
    return { ok: false, reason: r.type === 'keyFetchError' ? `could not fetch key ${r.keyId.href}: ${'status' in r.result ? `HTTP ${r.result.status}` : r.result.error.message}`
      : r.type === 'invalidSignature' ? `invalid signature${r.keyId ? ` (keyId ${r.keyId.href})` : ''}` : 'no signature' };
  }

  private async process(req: IncomingMessage, inbox: string, body: Buffer, spec: Spec): Promise<void> {
    let activity: Json;
    try { activity = JSON.parse(body.toString('utf8')) as Json; } catch { activity = {}; }
    const reason = await (async (): Promise<string | undefined> => {
      if (typeof activity.type !== 'string') return 'body is not an activity';
      if (spec === 'rfc9421') return 'only an RFC 9421 signature; draft-cavage required';
      if (spec === 'none') return 'unsigned';
      const digest = [req.headers.digest ?? []].flat().join(',');
      if (!digest) return 'no Digest header';
      const sha = createHash('sha256').update(body).digest('base64');
      if (!digest.split(',').some((d) => { const i = d.indexOf('='); return d.slice(0, i).trim().toLowerCase() === 'sha-256' && d.slice(i + 1).trim() === sha; })) return 'Digest does not match the body';
      const check = await this.verify(req, body);
      if (!check.ok) return check.reason;
      if (check.owner !== idOf(activity.actor)) return `key owner ${check.owner} is not the actor ${String(idOf(activity.actor))}`;
      return undefined;
    })().catch((e: unknown) => `error while checking: ${String(e)}`);
    this.received.push({ inbox, activity, verified: !reason, spec, ...(reason ? { reason } : {}) });
    if (reason) return;
    const target = (id: unknown) => { const s = idOf(id); return s?.startsWith(`${this.url}/`) ? this.actorAt(new URL(s).pathname) : undefined; };
    if (activity.type === 'Follow') {
      const a = target(activity.object);
      if (a && a.autoAccept && !a.locked) {
        await this.accept(a.username, activity).catch((e: unknown) => { this.sent.push({ inbox: String(idOf(activity.actor)), activity, status: 0, error: String(e) }); });
      }
    } else if (activity.type === 'Undo' && typeof activity.object === 'object' && activity.object && (activity.object as Json).type === 'Follow') {
      const a = target((activity.object as Json).object);
      const actor = idOf(activity.actor);
      if (a && actor) a.followers.delete(actor);
    }
  }
}

function idOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as Json).id === 'string') return (value as Json).id as string;
  return undefined;
}

/** Which kind of signature a request carries: draft-cavage puts keyId= in `Signature`; RFC 9421 adds `Signature-Input`. */
function inspectSignature(req: IncomingMessage): { spec: Spec; keyId: string | null } {
  const cavage = /keyId="([^"]*)"/.exec(String(req.headers.signature ?? ''));
  if (cavage) return { spec: 'draft-cavage', keyId: cavage[1]! };
  const input = req.headers['signature-input'];
  if (input) return { spec: 'rfc9421', keyId: /keyid="([^"]*)"/.exec(String(input))?.[1] ?? null };
  return { spec: 'none', keyId: null };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function readJson(res: Response): Promise<{ status: number; json: Json | null }> {
  const text = await res.text();
  try { return { status: res.status, json: JSON.parse(text) as Json }; } catch { return { status: res.status, json: null }; }
}

function reply(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  if (body === null) { res.writeHead(status).end(); return; }
  res.writeHead(status, { 'content-type': type }).end(typeof body === 'string' ? body : JSON.stringify(body));
}
