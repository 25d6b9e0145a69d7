import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { findStatusByUri } from '../../storage/statuses.ts';

// Quote posts with other servers, the parts after the first slice (FEP-044f as Mastodon 4.5 does it): remote posts'
// quote rules (`interactionPolicy.canQuote`), the Update of our Note once a quote is accepted, and remote stamps
// (QuoteAuthorization) that fail for good or only for now. Two instances of this server and the strict peer.
let a: Instance;
let b: Instance;
let peer: StrictPeer;
let alice: TestUser; // on a
let carol: TestUser; // on a
let bob: TestUser; // on b
let gus: string; // on the peer: the quoted author
let hal: string; // on the peer: a quoter
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
// The terms as Mastodon and GoToSocial define them, inline (nothing is fetched for them).
const CONTEXT = [AS, {
  gts: 'https://gotosocial.org/ns#',
  interactionPolicy: { '@id': 'gts:interactionPolicy', '@type': '@id' },
  canQuote: { '@id': 'gts:canQuote', '@type': '@id' },
  automaticApproval: { '@id': 'gts:automaticApproval', '@type': '@id' },
  manualApproval: { '@id': 'gts:manualApproval', '@type': '@id' },
  interactingObject: { '@id': 'gts:interactingObject', '@type': '@id' },
  interactionTarget: { '@id': 'gts:interactionTarget', '@type': '@id' },
  QuoteAuthorization: 'https://w3id.org/fep/044f#QuoteAuthorization',
  QuoteRequest: 'https://w3id.org/fep/044f#QuoteRequest',
  quote: { '@id': 'https://w3id.org/fep/044f#quote', '@type': '@id' },
  quoteAuthorization: { '@id': 'https://w3id.org/fep/044f#quoteAuthorization', '@type': '@id' },
}];

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (on: Instance, user: TestUser | null, method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await on.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const note = (author: string, id: string, extra: Json = {}): Json => ({
  '@context': CONTEXT, id: `${author}/statuses/${id}`, type: 'Note', attributedTo: author, content: `<p>${id}</p>`,
  published: new Date().toISOString(), to: [PUBLIC], cc: [`${author}/followers`], ...extra,
});
/** A peer post served to signed GETs, then looked up on a by alice (resolve): the status a shows her. */
const resolved = async (object: Json, viewer: TestUser = alice): Promise<Json> => {
  peer.publish(object.attributedTo === gus ? 'gus' : 'hal', object);
  const found = await api(a, viewer, 'GET', `/api/v2/search?q=${encodeURIComponent(object.id)}&resolve=true&type=statuses`);
  expect(found.status, JSON.stringify(found.body)).toBe(200);
  expect(found.body.statuses, object.id).toHaveLength(1);
  return found.body.statuses[0];
};
const withoutContext = ({ '@context': _, ...rest }: Json): Json => rest;
const peerPort = () => Number(peer.domain.split(':')[1]);

beforeAll(async () => {
  // The peer's actors (a key pair each) are made while the instances start and their users register.
  const started = startStrictPeer();
  const actors = started.then((p) => Promise.all([p.addActor('gus'), p.addActor('hal')]));
  actors.catch(() => {}); // awaited below; not unhandled should an instance fail first
  // a retries a stamp it could not fetch after 150 ms, then 300 ms, … (the last test), rather than 300 ms, 600 ms, ….
  [a, b, peer] = await Promise.all([startHttpsInstance({ DELIVERY_RETRY_BASE_MS: '150' }), startHttpsInstance(), started]);
  [[alice, carol], [bob], [gus, hal]] = await Promise.all([registerUsers(a.app, 'alice', 'carol'), registerUsers(b.app, 'bob'), actors]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), peer?.close()]);
});

describe('remote posts\' quote rules (interactionPolicy.canQuote)', () => {
  it('are stored as the Note says and shown in quote_approval as Mastodon computes it', async () => {
    const open = await resolved(note(gus, 'p-public', { interactionPolicy: { canQuote: { automaticApproval: PUBLIC } } }));
    expect(open.quote_approval).toEqual({ automatic: ['public'], manual: [], current_user: 'automatic' });
    // Hollo writes the compact `as:Public`.
    const compact = await resolved(note(gus, 'p-as-public', { interactionPolicy: { canQuote: { automaticApproval: 'as:Public' } } }));
    expect(compact.quote_approval.automatic).toEqual(['public']);
    const manual = await resolved(note(gus, 'p-manual', { interactionPolicy: { canQuote: { automaticApproval: gus, manualApproval: PUBLIC } } }));
    expect(manual.quote_approval).toEqual({ automatic: [], manual: ['public'], current_user: 'manual' });
    const odd = await resolved(note(gus, 'p-odd', { interactionPolicy: { canQuote: { automaticApproval: [gus, `${peer.url}/users/hal`] } } }));
    expect(odd.quote_approval).toEqual({ automatic: ['unsupported_policy'], manual: [], current_user: 'unknown' });
    const silent = await resolved(note(gus, 'p-silent'));
    expect(silent.quote_approval).toEqual({ automatic: [], manual: [], current_user: 'denied' });
    // Anonymous viewers may quote nothing.
    expect((await api(a, null, 'GET', `/api/v1/statuses/${open.id}`)).body.quote_approval.current_user).toBe('denied');
  });

  it('a followers-only rule lets the author\'s followers quote, once they follow', async () => {
    const post = await resolved(note(gus, 'p-followers', { interactionPolicy: { canQuote: { automaticApproval: `${gus}/followers` } } }), carol);
    expect(post.quote_approval).toEqual({ automatic: ['followers'], manual: [], current_user: 'denied' });
    expect((await api(a, carol, 'POST', '/api/v1/statuses', { status: 'not yet', quoted_status_id: post.id })).status).toBe(404);
    const gusOnA = (await api(a, carol, 'GET', `/api/v1/accounts/lookup?acct=gus@${peer.domain}`)).body;
    expect((await api(a, carol, 'POST', `/api/v1/accounts/${gusOnA.id}/follow`)).status).toBe(200);
    await until(async () => (await api(a, carol, 'GET', `/api/v1/statuses/${post.id}`)).body, (s) => s.quote_approval.current_user === 'automatic', 'carol may quote');
    const quoting = await api(a, carol, 'POST', '/api/v1/statuses', { status: 'now I may', quoted_status_id: post.id });
    expect(quoting.status, JSON.stringify(quoting.body)).toBe(200);
    expect(quoting.body.quote).toMatchObject({ state: 'pending' });
    await peer.waitFor((d) => d.activity.type === 'QuoteRequest' && d.activity.object === post.uri);
  });

  it('a post that lets nobody quote it (or says nothing) is refused as Mastodon refuses it, and an Update can open it', async () => {
    const closed = await resolved(note(gus, 'p-closed', { interactionPolicy: { canQuote: { automaticApproval: gus } } }));
    expect(closed.quote_approval).toEqual({ automatic: [], manual: [], current_user: 'denied' });
    const refused = await api(a, alice, 'POST', '/api/v1/statuses', { status: 'may I?', quoted_status_id: closed.id });
    expect(refused).toEqual({ status: 404, body: { error: 'The post you are trying to quote does not appear to exist.' } });
    const silent = await resolved(note(gus, 'p-silent-2'));
    expect((await api(a, alice, 'POST', '/api/v1/statuses', { status: 'may I?', quoted_status_id: silent.id })).status).toBe(404);
    // The Update of the Note is read again: now Public may quote it.
    const updated = note(gus, 'p-silent-2', { interactionPolicy: { canQuote: { automaticApproval: PUBLIC } }, updated: new Date().toISOString() });
    expect(await peer.send('gus', `${a.url}/inbox`, { '@context': CONTEXT, id: `${updated.id}#update-1`, type: 'Update', actor: gus, object: updated, to: updated.to })).toBe(202);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/statuses/${silent.id}`)).body, (s) => s.quote_approval.current_user === 'automatic', 'opened by the Update');
    expect((await api(a, alice, 'POST', '/api/v1/statuses', { status: 'now', quoted_status_id: silent.id })).status).toBe(200);
  });
});

describe('an accepted quote of ours is sent again', () => {
  it('as an Update of our Note carrying the stamp, to those the Note went to (and the quoted author)', async () => {
    // gus follows alice, so the peer is among those her posts go to.
    expect(await peer.send('gus', `${a.url}/users/alice/inbox`, { '@context': AS, id: `${gus}/follows/alice`, type: 'Follow', actor: gus, object: `${a.url}/users/alice` })).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept' && JSON.stringify(d.activity.object).includes(`${gus}/follows/alice`));
    const original = (await api(b, bob, 'POST', '/api/v1/statuses', { status: 'bob on b', visibility: 'public' })).body;
    const onA = (await api(a, alice, 'GET', `/api/v2/search?q=${encodeURIComponent(original.uri)}&resolve=true&type=statuses`)).body.statuses[0];
    expect(onA.quote_approval).toEqual({ automatic: ['public'], manual: [], current_user: 'automatic' });

    const quoting = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'alice quotes bob', quoted_status_id: onA.id })).body;
    const objectOf = (d: { activity: Json }) => d.activity.object as Json | undefined;
    const create = await peer.waitFor((d) => d.activity.type === 'Create' && objectOf(d)?.id === quoting.uri);
    expect(objectOf(create)!.quoteAuthorization).toBeUndefined();
    const update = await peer.waitFor((d) => d.activity.type === 'Update' && objectOf(d)?.id === quoting.uri);
    expect(update).toMatchObject({ verified: true });
    expect(objectOf(update)!.quoteAuthorization).toMatch(new RegExp(`^${b.url}/users/bob/quote_authorizations/\\d+$`));
    expect(objectOf(update)!.quote).toBe(original.uri);
    expect({ to: update.activity.to, cc: update.activity.cc }).toEqual({ to: create.activity.to, cc: create.activity.cc });
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${quoting.id}`)).body.quote.state).toBe('accepted');
    // b took it too (it carries b's own stamp): the quote stands there.
    const listed = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${original.id}/quotes`)).body as Json[], (l) => l.length === 1, 'b lists it');
    expect(listed[0]).toMatchObject({ uri: quoting.uri, quote: { state: 'accepted' } });
  });
});

describe('remote stamps (QuoteAuthorization) of remote quotes', () => {
  let quoted: Json; // gus's post, on a
  let n = 0;
  beforeAll(async () => {
    quoted = await resolved(note(gus, 'q-target', { interactionPolicy: { canQuote: { automaticApproval: PUBLIC } } }));
    // alice follows hal, so hal's posts reach a (and a has hal's key).
    const halOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=hal@${peer.domain}`)).body;
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${halOnA.id}/follow`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${halOnA.id}`)).body[0], (r) => r.following === true, 'alice follows hal');
  });
  /** hal's quote of gus's post with this stamp, sent to a; the quote as alice sees it once stored. */
  const quoteWith = async (stamp: (noteId: string) => string | null, stampObject?: (noteId: string, stampId: string) => Json | null): Promise<{ noteId: string; statusId: string }> => {
    n += 1;
    const id = `${hal}/statuses/quote-${n}`;
    const stampId = stamp(id);
    const object = stampObject && stampId ? stampObject(id, stampId) : null;
    if (object) peer.publish(object.attributedTo === hal ? 'hal' : 'gus', object);
    const quoting = note(hal, `quote-${n}`, { quote: quoted.uri, ...(stampId ? { quoteAuthorization: stampId } : {}) });
    expect(await peer.send('hal', `${a.url}/inbox`, { '@context': CONTEXT, id: `${id}/activity`, type: 'Create', actor: hal, object: quoting, to: quoting.to, cc: quoting.cc })).toBe(202);
    const stored = await until(() => findStatusByUri(a.ctx.db, id), (s) => s !== null, `a stored ${id}`);
    return { noteId: id, statusId: stored!.id };
  };
  const stampOf = (by: string, interacting: string, target: string) => (_: string, stampId: string): Json => ({
    '@context': CONTEXT, id: stampId, type: 'QuoteAuthorization', attributedTo: by, interactingObject: interacting, interactionTarget: target,
  });
  const stateOf = async (statusId: string) => (await api(a, alice, 'GET', `/api/v1/statuses/${statusId}`)).body.quote?.state;

  it('a QuoteRequest whose Note arrived before without its quote (Hollo hides it until approved) is answered', async () => {
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'alice, quotable', visibility: 'public' })).body;
    const bare = note(hal, 'hollo-style');
    expect(await peer.send('hal', `${a.url}/inbox`, { '@context': CONTEXT, id: `${bare.id}#create`, type: 'Create', actor: hal, object: bare, to: bare.to, cc: bare.cc })).toBe(202);
    const stored = await until(() => findStatusByUri(a.ctx.db, bare.id), (x) => x !== null, 'the bare Note stored');
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${stored!.id}`)).body.quote).toBeNull();
    const requestId = `${bare.id}#quote-request`;
    expect(await peer.send('hal', `${a.url}/inbox`, { '@context': CONTEXT, id: requestId, type: 'QuoteRequest', actor: hal, object: post.uri, instrument: { ...withoutContext(bare), quote: post.uri } })).toBe(202);
    const accept = await peer.waitFor((d) => d.activity.type === 'Accept' && JSON.stringify(d.activity.object).includes(requestId));
    expect(accept.activity.result).toMatch(new RegExp(`^${a.url}/users/alice/quote_authorizations/\\d+$`));
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${stored!.id}`)).body.quote).toMatchObject({ state: 'accepted', quoted_status: { id: post.id } });
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${post.id}`)).body.quotes_count).toBe(1);
  });

  it('a stamp that checks out makes the quote accepted', async () => {
    const { statusId } = await quoteWith((id) => `${gus}/stamps/${id.split('/').pop()}`, (id, s) => stampOf(gus, id, quoted.uri)(id, s));
    expect(await stateOf(statusId)).toBe('accepted');
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${quoted.id}`)).body.quotes_count).toBe(1);
  });

  it('a stamp that is not there (404), names another Note or post, is someone else\'s, or lives elsewhere: rejected', async () => {
    const missing = await quoteWith((id) => `${gus}/stamps/none-${id.split('/').pop()}`);
    const otherNote = await quoteWith((id) => `${gus}/stamps/${id.split('/').pop()}`, (_, s) => stampOf(gus, `${hal}/statuses/something-else`, quoted.uri)(_, s));
    const otherPost = await quoteWith((id) => `${gus}/stamps/${id.split('/').pop()}`, (id, s) => stampOf(gus, id, `${gus}/statuses/p-public`)(id, s));
    const notGus = await quoteWith((id) => `${hal}/stamps/${id.split('/').pop()}`, (id, s) => stampOf(hal, id, quoted.uri)(id, s));
    const elsewhere = await quoteWith(() => `${b.url}/users/bob/quote_authorizations/1`);
    for (const q of [missing, otherNote, otherPost, notGus, elsewhere]) expect(await stateOf(q.statusId), q.noteId).toBe('rejected');
    expect((await api(a, alice, 'GET', `/api/v1/statuses/${quoted.id}`)).body.quotes_count).toBe(1);
  });

  it('a quote rejected for its stamp is approved by an Update of its Note carrying a good one', async () => {
    const { noteId, statusId } = await quoteWith((id) => `${gus}/stamps/gone-${id.split('/').pop()}`);
    expect(await stateOf(statusId)).toBe('rejected');
    const stampId = `${gus}/stamps/fixed-${noteId.split('/').pop()}`;
    peer.publish('gus', stampOf(gus, noteId, quoted.uri)(noteId, stampId));
    const fixed = note(hal, noteId.split('/').pop()!, { quote: quoted.uri, quoteAuthorization: stampId, updated: new Date().toISOString() });
    expect(await peer.send('hal', `${a.url}/inbox`, { '@context': CONTEXT, id: `${noteId}#update-1`, type: 'Update', actor: hal, object: fixed, to: fixed.to, cc: fixed.cc })).toBe(202);
    await until(() => stateOf(statusId), (x) => x === 'accepted', 'accepted by the Update');
  });

  it('a stamp that cannot be fetched now is tried again later, with backoff, until it can', async () => {
    // (The first retry waits DELIVERY_RETRY_BASE_MS, 150 ms on a here, then doubles.)
    try {
      // The peer is down when the Note arrives (its key is known on a already).
      await new Promise<void>((resolve) => { peer.server.close(() => resolve()); peer.server.closeAllConnections(); });
      let stampId = '';
      const { noteId, statusId } = await quoteWith((id) => (stampId = `${gus}/stamps/${id.split('/').pop()}`));
      expect(await stateOf(statusId)).toBe('pending');
      // Still down for the first retry: wait until it has run and failed (it queued the second attempt, a delayed outbox
      // row); then back, with the stamp.
      await until(async () => (await a.ctx.db.query(
        `SELECT 1 FROM outbox WHERE kind = 'verifyQuoteStamp' AND payload->>'statusId' = $1 AND (payload->>'attempt')::int >= 2`, [statusId],
      )).rowCount, (found) => found! > 0, 'the first retry failed', 20_000);
      expect(await stateOf(statusId)).toBe('pending');
      peer.publish('gus', stampOf(gus, noteId, quoted.uri)(noteId, stampId));
      await new Promise<void>((resolve) => peer.server.listen(peerPort(), '127.0.0.1', () => resolve()));
      await until(() => stateOf(statusId), (s) => s === 'accepted', 'accepted on a retry', 20_000);
    } finally {
      if (!peer.server.listening) await new Promise<void>((resolve) => peer.server.listen(peerPort(), '127.0.0.1', () => resolve()));
    }
  });
});
