import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { rsaKeyPair, startStrictPeer, type RsaKeyPair, type PeerDelivery, type StrictPeer } from '../helpers/strict-peer.ts';
import { exportSpki, signRequest } from '@fedify/fedify';

// Our server (in authorized-fetch mode) against a peer that behaves like GoToSocial and snac: it answers 401 to
// unsigned GETs, takes deliveries with 202 and checks them afterwards (draft-cavage only), and serves its keys as
// separate documents. Everything must work with it in both directions, and each delivery must verify there.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string; // an actor on the peer
let hal: string; // another, known to us only through a boost
let stranger: StrictPeer; // a server none of whose actors follows alice, with its actor eve
let looseKey: RsaKeyPair; // a key pair no actor lists
const AS = 'https://www.w3.org/ns/activitystreams';

beforeAll(async () => {
  // The peers' keys are made while our server starts.
  const peerWithActors = async (...names: string[]) => {
    const p = await startStrictPeer();
    return { p, ids: await Promise.all(names.map((n) => p.addActor(n))) };
  };
  let peers: { p: StrictPeer; ids: string[] }[];
  [ours, looseKey, ...peers] = await Promise.all([startHttpsInstance({ AUTHORIZED_FETCH: 'true' }), rsaKeyPair(), peerWithActors('gus', 'hal'), peerWithActors('eve')]);
  peer = peers[0]!.p;
  [gus, hal] = peers[0]!.ids as [string, string];
  stranger = peers[1]!.p;
  [alice] = await registerUsers(ours.app, 'alice');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close(), stranger?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const aliceId = () => `${ours.url}/users/alice`;
/** A delivery from us of this type, which the peer verified (draft-cavage, Digest, key of the actor). */
const delivered = async (type: string, match: (a: Json) => boolean = () => true): Promise<PeerDelivery> => {
  const d = await peer.waitFor((r) => r.activity.type === type && match(r.activity));
  expect(d, JSON.stringify(d)).toMatchObject({ verified: true, spec: 'draft-cavage' });
  return d;
};
const note = (id: string, extra: Json = {}) => ({
  '@context': AS, id: `${peer.url}/users/gus/statuses/${id}`, type: 'Note', attributedTo: gus, content: `<p>note ${id}</p>`,
  published: new Date().toISOString(), to: [`${AS}#Public`], cc: [`${gus}/followers`], ...extra,
});

describe('federating with a strict server (GoToSocial and snac behaviour)', () => {
  let gusOnOurs: Json;

  it('serves our instance actor unsigned, and everything else only to signed requests', async () => {
    const instance = await peer.unsignedGet(`${ours.url}/users/instance.actor`);
    expect(instance.status).toBe(200);
    expect(instance.json).toMatchObject({ type: 'Application', preferredUsername: 'localhost' });
    expect((await peer.unsignedGet(aliceId())).status).toBe(401);
    expect((await peer.unsignedGet(`${aliceId()}/followers`)).status).toBe(401);
    const signed = await peer.signedGet('gus', aliceId());
    expect(signed.status).toBe(200);
    expect(signed.json).toMatchObject({ type: 'Person', preferredUsername: 'alice' });
  });

  it('resolves an account whose server refuses unsigned fetches, and follows it', async () => {
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`@gus@${peer.domain}`)}&resolve=true`);
    expect(found.status).toBe(200);
    expect(found.body.accounts).toHaveLength(1);
    gusOnOurs = found.body.accounts[0];
    expectEntity('Account', gusOnOurs);
    expect(gusOnOurs.acct).toBe(`gus@${peer.domain}`);
    // Every GET of a protected document was signed and answered.
    expect(peer.gets.filter((g) => g.path === '/users/gus')).not.toHaveLength(0);
    expect(peer.gets.filter((g) => g.status === 401)).toEqual([]);

    expect((await api('POST', `/api/v1/accounts/${gusOnOurs.id}/follow`)).status).toBe(200);
    const follow = await delivered('Follow');
    expect(follow.activity).toMatchObject({ actor: aliceId(), object: gus });
    await until(async () => (await api('GET', `/api/v1/accounts/relationships?id[]=${gusOnOurs.id}`)).body[0], (r) => r.following === true, 'the peer accepted');
  });

  it('is followed from the strict server, fetching the follower signed, and answers with a verified Accept', async () => {
    const followId = `${gus}/follows/1`;
    expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: followId, type: 'Follow', actor: gus, object: aliceId() })).toBe(202);
    const accept = await delivered('Accept');
    expect(accept.activity.object).toMatchObject({ id: followId });
    const followers = await until(async () => (await api('GET', `/api/v1/accounts/${alice.id}/followers`)).body as Json[], (l) => l.length === 1, 'gus follows alice');
    expect(followers[0]!.acct).toBe(`gus@${peer.domain}`);
  });

  it('takes posts (to the shared inbox) and delivers a post and a reply that the strict server verifies', async () => {
    const theirs = note('1');
    peer.publish('gus', theirs);
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': AS, id: `${theirs.id}/activity`, type: 'Create', actor: gus, object: theirs, to: theirs.to, cc: theirs.cc })).toBe(202);
    const home = await until(async () => (await api('GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === theirs.id), 'gus\'s post at home');
    const theirsHere = home.find((s) => s.uri === theirs.id)!;

    const post = (await api('POST', '/api/v1/statuses', { status: 'Hello, strict world' })).body;
    const create = await delivered('Create', (a) => a.object?.id === post.uri);
    expect((create.activity.object as Json).content).toContain('Hello, strict world');

    const reply = (await api('POST', '/api/v1/statuses', { status: `@gus@${peer.domain} a reply`, in_reply_to_id: theirsHere.id })).body;
    const replied = await delivered('Create', (a) => a.object?.id === reply.uri);
    expect((replied.activity.object as Json).inReplyTo).toBe(theirs.id);

    expect((await api('POST', `/api/v1/statuses/${theirsHere.id}/favourite`)).status).toBe(200);
    expect((await delivered('Like')).activity.object).toBe(theirs.id);
    expect((await api('POST', `/api/v1/statuses/${theirsHere.id}/reblog`)).status).toBe(200);
    expect((await delivered('Announce')).activity.object).toBe(theirs.id);

    expect((await api('DELETE', `/api/v1/statuses/${post.id}`)).status).toBe(200);
    const del = await delivered('Delete', (a) => (a.object?.id ?? a.object) === post.uri);
    expect(JSON.stringify(del.activity)).not.toMatch(/deleted_at|deleted"/);
  });

  it('keeps signing draft-cavage after a fetch that failed both ways (no RFC 9421 remembered for the server)', async () => {
    // A 404 makes Fedify knock again with RFC 9421; left to itself it would then sign everything to this server so.
    const missing = await api('GET', `/api/v2/search?q=${encodeURIComponent(`${peer.url}/users/gus/statuses/missing`)}&resolve=true`);
    expect(missing.body.statuses).toEqual([]);
    expect(peer.gets.filter((g) => g.path === '/users/gus/statuses/missing').map((g) => g.spec)).toContain('rfc9421');
    expect((await api('PATCH', '/api/v1/accounts/update_credentials', { note: 'still draft-cavage' })).status).toBe(200);
    await delivered('Update', (a) => a.object?.summary?.includes('still draft-cavage'));
  });

  it('sends a profile update the strict server verifies', async () => {
    expect((await api('PATCH', '/api/v1/accounts/update_credentials', { display_name: 'Alice Strict' })).status).toBe(200);
    const update = await delivered('Update', (a) => a.object?.type === 'Person' && a.object.name === 'Alice Strict');
    expect(update.activity.object).toMatchObject({ id: aliceId(), name: 'Alice Strict' });
  });

  it('fetches a boosted post it has not seen, and its author, with signed GETs from the shared inbox', async () => {
    const halsNote = { ...note('hal-1'), id: `${peer.url}/users/hal/statuses/1`, attributedTo: hal, cc: [`${hal}/followers`] };
    peer.publish('hal', halsNote);
    const boost = { '@context': AS, id: `${gus}/boosts/1`, type: 'Announce', actor: gus, object: halsNote.id, to: [`${AS}#Public`], cc: [`${gus}/followers`] };
    expect(await peer.send('gus', `${ours.url}/inbox`, boost)).toBe(202);
    const home = await until(async () => (await api('GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.reblog?.uri === halsNote.id), 'the boost at home');
    expect(home.find((s) => s.reblog?.uri === halsNote.id)!.reblog.account.acct).toBe(`hal@${peer.domain}`);
    const fetched = peer.gets.filter((g) => g.path === '/users/hal/statuses/1' || g.path === '/users/hal');
    expect(fetched.length).toBeGreaterThan(0);
    expect(fetched.every((g) => g.status === 200 && g.signed)).toBe(true);
  });

  it('resolves a link to a post on the strict server by a signed fetch', async () => {
    const linked = note('2', { content: '<p>found by its link</p>' });
    peer.publish('gus', linked);
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(linked.id)}&resolve=true&type=statuses`);
    expect(found.status).toBe(200);
    expect(found.body.statuses.map((s: Json) => s.uri)).toEqual([linked.id]);
    expectEntity('Status', found.body.statuses[0]);
  });

  it('shows a followers-only post to a signed fetch by a follower or its server, and to nobody else', async () => {
    const priv = (await api('POST', '/api/v1/statuses', { status: 'for followers', visibility: 'private' })).body;
    await delivered('Create', (a) => a.object?.id === priv.uri);
    expect((await peer.signedGet('gus', priv.uri)).status).toBe(200);
    expect((await peer.signedGet(null, priv.uri)).json).toMatchObject({ id: priv.uri, content: expect.stringContaining('for followers') });
    expect((await peer.unsignedGet(priv.uri)).status).toBe(404);
    expect((await stranger.signedGet('eve', priv.uri)).status).toBe(404);
  });

  it('stores nothing under an id its URL does not answer with, and no actor its server does not vouch for', async () => {
    // An "upload" naming itself gus, with another inbox: what is stored is what gus's own URL says.
    peer.publishAt('/files/impostor.json', { '@context': ['https://www.w3.org/ns/activitystreams', 'https://w3id.org/security/v1'], id: gus, type: 'Person', preferredUsername: 'gus', inbox: 'https://evil.example/inbox' });
    await api('GET', `/api/v2/search?q=${encodeURIComponent(`${peer.url}/files/impostor.json`)}&resolve=true`);
    const stored = await ours.ctx.db.query('SELECT inbox_url FROM accounts WHERE uri = $1', [gus]);
    expect(stored.rows[0].inbox_url).toBe(`${gus}/inbox`);
    // An upload that calls itself an actor, under its own URL: WebFinger for gus names another id, so it is refused.
    const self = `${peer.url}/files/self.json`;
    peer.publishAt('/files/self.json', { '@context': ['https://www.w3.org/ns/activitystreams', 'https://w3id.org/security/v1'], id: self, type: 'Person', preferredUsername: 'gus', inbox: 'https://evil.example/inbox' });
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(self)}&resolve=true`);
    expect(found.body.accounts).toEqual([]);
    expect((await ours.ctx.db.query('SELECT 1 FROM accounts WHERE uri = $1', [self])).rowCount).toBe(0);
  });

  it('refuses a signed GET whose key is a document claiming an owner that does not list it', async () => {
    const priv = (await api('POST', '/api/v1/statuses', { status: 'gus may read this', visibility: 'private' })).body;
    await delivered('Create', (a) => (a.object as Json)?.id === priv.uri);
    const pair = looseKey;
    const keyId = `${peer.url}/files/key.json`;
    peer.publishAt('/files/key.json', { '@context': 'https://w3id.org/security/v1', id: keyId, type: 'CryptographicKey', owner: gus, publicKeyPem: await exportSpki(pair.publicKey) });
    const request = await signRequest(new Request(priv.uri, { headers: { accept: 'application/activity+json', 'user-agent': peer.userAgent } }), pair.privateKey, new URL(keyId), { spec: 'draft-cavage-http-signatures-12' });
    expect((await fetch(request)).status).toBe(404);
    // gus's own key reads it, and the answer is not for shared caches.
    const res = await fetch(await peer.sign('gus', new Request(priv.uri, { headers: { accept: 'application/activity+json', 'user-agent': peer.userAgent } })));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toContain('private');
    expect(res.headers.get('vary')).toMatch(/Signature/);
  });

  it('takes draft-cavage signatures that cover the query string (snac, Mastodon 4.3+) on paged collections', async () => {
    const page = `${aliceId()}/outbox?cursor=`;
    expect((await peer.signedGetWithQuery('gus', page)).status).toBe(200);
    expect((await peer.signedGet('gus', page)).status).toBe(200); // Fedify's way: the path alone
    expect((await peer.unsignedGet(page)).status).toBe(401);
  });
});
