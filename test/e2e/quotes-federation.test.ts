import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type PeerDelivery, type StrictPeer } from '../helpers/strict-peer.ts';
import { findStatusByUri } from '../../storage/statuses.ts';

// Quote posts between servers (FEP-044f, as Mastodon 4.5 does them): two instances of this server over https on
// loopback, and the strict peer speaking as Mastodon (QuoteRequest) and as Misskey (`_misskey_quote`) would.
let a: Instance;
let b: Instance;
let peer: StrictPeer;
let alice: TestUser; // on a
let bob: TestUser; // on b
let gus: string; // on the peer
const AS = 'https://www.w3.org/ns/activitystreams';
// What Mastodon's and Misskey's contexts define for these terms (sent inline: nothing is fetched for them).
const CONTEXT = [AS, {
  QuoteRequest: 'https://w3id.org/fep/044f#QuoteRequest',
  quote: { '@id': 'https://w3id.org/fep/044f#quote', '@type': '@id' },
  quoteAuthorization: { '@id': 'https://w3id.org/fep/044f#quoteAuthorization', '@type': '@id' },
  misskey: 'https://misskey-hub.net/ns#', _misskey_quote: 'misskey:_misskey_quote', quoteUrl: 'as:quoteUrl',
}];

beforeAll(async () => {
  [a, b, peer] = await Promise.all([startHttpsInstance(), startHttpsInstance({ AUTHORIZED_FETCH: 'true' }), startStrictPeer()]);
  [[alice], [bob]] = await Promise.all([registerUsers(a.app, 'alice'), registerUsers(b.app, 'bob')]);
  gus = await peer.addActor('gus');
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), peer?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (on: Instance, user: TestUser, method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await on.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const delivered = async (type: string, match: (a: Json) => boolean = () => true): Promise<PeerDelivery> => {
  const d = await peer.waitFor((r) => r.activity.type === type && match(r.activity));
  expect(d, JSON.stringify(d)).toMatchObject({ verified: true });
  return d;
};
const idOf = (v: unknown): string | undefined => (typeof v === 'string' ? v : (v as Json | undefined)?.id);

describe('quote posts between two servers', () => {
  it('a quote from a of a post on b is asked for with a QuoteRequest, approved by b with a stamp, and revoked', async () => {
    const bobOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=bob@${b.domain}`)).body;
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/follow`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${bobOnA.id}`)).body[0], (r) => r.following === true, 'alice follows bob');
    const original = (await api(b, bob, 'POST', '/api/v1/statuses', { status: 'quote me if you like', visibility: 'public' })).body;
    const home = await until(async () => (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === original.uri), 'bob\'s post on a');
    const originalOnA = home.find((s) => s.uri === original.uri)!;

    const quoting = await api(a, alice, 'POST', '/api/v1/statuses', { status: 'well said', quoted_status_id: originalOnA.id });
    expect(quoting.status, JSON.stringify(quoting.body)).toBe(200);
    // Pending until b answers; then accepted, with b's stamp in alice's Note.
    const accepted = await until(async () => (await api(a, alice, 'GET', `/api/v1/statuses/${quoting.body.id}`)).body, (s) => s.quote?.state === 'accepted', 'a: the quote accepted');
    expect(accepted.quote.quoted_status).toMatchObject({ uri: original.uri });
    const note = await (await fetch(quoting.body.uri, { headers: { accept: 'application/activity+json' } })).json() as Json;
    expect(note).toMatchObject({ quote: original.uri, _misskey_quote: original.uri, quoteUri: original.uri });
    expect(note.quoteAuthorization).toMatch(new RegExp(`^${b.url}/users/bob/quote_authorizations/\\d+$`));

    // On b: a quote of bob's post, accepted, listed and notified.
    const quotes = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${original.id}/quotes`)).body as Json[], (l) => l.length === 1, 'b: the quote listed');
    expect(quotes[0]).toMatchObject({ uri: quoting.body.uri, quote: { state: 'accepted', quoted_status: { id: original.id } } });
    const notes = (await api(b, bob, 'GET', '/api/v1/notifications?types[]=quote')).body as Json[];
    expect(notes.some((n) => n.status?.uri === quoting.body.uri)).toBe(true);
    expect((await api(b, bob, 'GET', `/api/v1/statuses/${original.id}`)).body.quotes_count).toBe(1);

    // bob takes it back: b sends a Delete of the stamp, and a shows the quote revoked.
    expect((await api(b, bob, 'POST', `/api/v1/statuses/${original.id}/quotes/${quotes[0]!.id}/revoke`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/statuses/${quoting.body.id}`)).body, (s) => s.quote?.state === 'revoked', 'a: the quote revoked');
  });
});

describe('quote posts from other software (the strict peer)', () => {
  let post: Json; // alice's, quoted by gus
  const note = (id: string, extra: Json) => ({
    id: `${peer.url}/users/gus/statuses/${id}`, type: 'Note', attributedTo: gus, content: `<p>note ${id}</p>`,
    published: new Date().toISOString(), to: [`${AS}#Public`], cc: [`${gus}/followers`], ...extra,
  });
  const statusOnA = (uri: string) => until(() => findStatusByUri(a.ctx.db, uri), (s) => s !== null, `a: ${uri} stored`);

  beforeAll(async () => {
    post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'alice says', visibility: 'public' })).body;
  });

  it('takes a Misskey-style quote (`_misskey_quote`, `quoteUrl`, no stamp) as a quote awaiting approval, as Mastodon does', async () => {
    const misskey = note('mk1', { _misskey_quote: post.uri, quoteUrl: post.uri });
    expect(await peer.send('gus', `${a.url}/inbox`, { '@context': CONTEXT, id: `${misskey.id}/activity`, type: 'Create', actor: gus, object: misskey, to: misskey.to })).toBe(202);
    const stored = (await statusOnA(misskey.id))!;
    const shown = (await api(a, alice, 'GET', `/api/v1/statuses/${stored.id}`)).body;
    expect(shown.quote).toMatchObject({ state: 'pending' });
  });

  it('answers a QuoteRequest for a post its policy lets the requester quote with an Accept and a stamp it serves', async () => {
    const quoting = note('q1', { quote: post.uri });
    const requestId = `${gus}/quote_requests/1`;
    expect(await peer.send('gus', `${a.url}/users/alice/inbox`, {
      '@context': CONTEXT, id: requestId, type: 'QuoteRequest', actor: gus, object: post.uri, instrument: quoting,
    })).toBe(202);
    const accept = await delivered('Accept', (x) => idOf(x.object) === requestId);
    expect(accept.activity.object).toMatchObject({ type: 'QuoteRequest', actor: gus, object: post.uri, instrument: quoting.id });
    const stamp = accept.activity.result as string;
    expect(stamp).toMatch(new RegExp(`^${a.url}/users/alice/quote_authorizations/\\d+$`));
    const fetched = await peer.signedGet('gus', stamp);
    expect(fetched.status).toBe(200);
    expect(fetched.json).toMatchObject({ id: stamp, type: 'QuoteAuthorization', attributedTo: `${a.url}/users/alice`, interactingObject: quoting.id, interactionTarget: post.uri });
    const stored = (await statusOnA(quoting.id))!;
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${stored.id}`)).body.quote).toMatchObject({ state: 'accepted', quoted_status: { id: post.id } });
    const notes = (await api(a, alice, 'GET', '/api/v1/notifications?types[]=quote')).body as Json[];
    expect(notes.some((n) => n.status?.uri === quoting.id)).toBe(true);

    // alice revokes it: the peer is sent a Delete of the stamp, which is no longer served.
    expect((await api(a, alice, 'POST', `/api/v1/statuses/${post.id}/quotes/${stored.id}/revoke`)).status).toBe(200);
    await delivered('Delete', (x) => idOf(x.object) === stamp);
    expect((await peer.signedGet('gus', stamp)).status).toBe(404);
  });

  it('rejects a QuoteRequest for a post nobody else may quote', async () => {
    const closed = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'mine alone', visibility: 'public', quote_approval_policy: 'nobody' })).body;
    const quoting = note('q2', { quote: closed.uri });
    const requestId = `${gus}/quote_requests/2`;
    expect(await peer.send('gus', `${a.url}/users/alice/inbox`, {
      '@context': CONTEXT, id: requestId, type: 'QuoteRequest', actor: gus, object: closed.uri, instrument: quoting,
    })).toBe(202);
    const reject = await delivered('Reject', (x) => idOf(x.object) === requestId);
    expect(reject.activity.result).toBeUndefined();
    const stored = (await statusOnA(quoting.id))!;
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${stored.id}`)).body.quote).toMatchObject({ state: 'rejected' });
  });
});
