import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { expectEntity } from '../helpers/schema.ts';

// Pins across servers, against a peer that verifies every signature (test/helpers/strict-peer.ts): ours are our
// actor's featured collection and go out as Add/Remove; a remote account's featured collection is its pinned posts.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string, hal: string; // actors on the peer (their keys made while our server starts)
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  const peerWithActors = async () => {
    const p = await startStrictPeer();
    [gus, hal] = await Promise.all([p.addActor('gus'), p.addActor('hal')]);
    return p;
  };
  [ours, peer] = await Promise.all([startHttpsInstance(), peerWithActors()]);
  [alice] = await registerUsers(ours.app, 'alice');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<any> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json();
};
const actorOf = (user: TestUser) => `${ours.url}/users/${user.username}`;
const idOf = (o: unknown) => (typeof o === 'string' ? o : (o as Json | undefined)?.id);

describe('pins across servers', () => {
  it('our pins are our actor\'s featured collection, sent to followers\' servers as Add and Remove', async () => {
    expect(await peer.send('gus', `${actorOf(alice)}/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: actorOf(alice) })).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);
    await until(() => api('GET', `/api/v1/accounts/${alice.id}`), (a) => a.followers_count === 1, 'gus follows alice');

    const status = await api('POST', '/api/v1/statuses', { status: 'pinned for the world' });
    const pinned = await api('POST', `/api/v1/statuses/${status.id}/pin`);
    expectEntity('Status', pinned);
    expect(pinned.pinned).toBe(true);
    const add = await peer.waitFor((d) => d.activity.type === 'Add' && d.verified);
    expect(add.activity).toMatchObject({ actor: actorOf(alice), object: status.uri, target: `${actorOf(alice)}/collections/featured` });

    const actor = await peer.signedGet('gus', actorOf(alice));
    expect(actor.json?.featured).toBe(`${actorOf(alice)}/collections/featured`);
    const featured = await peer.signedGet('gus', `${actorOf(alice)}/collections/featured`);
    expect(featured.status).toBe(200);
    expect((featured.json!.orderedItems as Json[]).map((n) => [n.type, n.id])).toEqual([['Note', status.uri]]);

    await api('POST', `/api/v1/statuses/${status.id}/unpin`);
    const remove = await peer.waitFor((d) => d.activity.type === 'Remove' && d.verified);
    expect(remove.activity).toMatchObject({ object: status.uri, target: `${actorOf(alice)}/collections/featured` });
    expect((await peer.signedGet('gus', `${actorOf(alice)}/collections/featured`)).json!.orderedItems ?? []).toEqual([]);
  });

  it('reads a remote account\'s featured collection as its pinned posts, and takes its Add and Remove', async () => {
    const note = (n: number) => ({ '@context': AS, id: `${hal}/statuses/${n}`, type: 'Note', attributedTo: hal, content: `<p>hal's post ${n}</p>`, published: new Date(Date.now() - 1000 * (10 - n)).toISOString(), to: [PUBLIC], cc: [`${hal}/followers`] });
    for (const n of [1, 2, 3]) peer.publish('hal', note(n));
    // Newest first: one inlined, one by id.
    peer.feature('hal', [note(2), `${hal}/statuses/1`]);

    const halHere = await api('GET', `/api/v1/accounts/lookup?acct=hal@${peer.domain}`);
    const pinnedOf = async () => ((await api('GET', `/api/v1/accounts/${halHere.id}/statuses?pinned=true`)) as Json[]);
    const pins = await until(pinnedOf, (l) => l.length === 2, 'hal\'s featured posts are read');
    expect(pins.map((p) => p.uri)).toEqual([`${hal}/statuses/2`, `${hal}/statuses/1`]);
    for (const p of pins) expectEntity('Status', p);
    expect(pins[0]!.pinned).toBeUndefined(); // not alice's own
    expect(peer.gets.filter((g) => g.path === '/users/hal/collections/featured').every((g) => g.signed && g.status === 200)).toBe(true);

    // Add and Remove naming hal's featured collection change its pins; one naming another collection does not.
    const target = `${hal}/collections/featured`;
    expect(await peer.send('hal', `${ours.url}/inbox`, { '@context': AS, id: `${hal}#adds/3`, type: 'Add', actor: hal, object: `${hal}/statuses/3`, target })).toBe(202);
    await until(pinnedOf, (l) => l.length === 3, 'hal pins a third post');
    expect(await peer.send('hal', `${ours.url}/inbox`, { '@context': AS, id: `${hal}#removes/2`, type: 'Remove', actor: hal, object: `${hal}/statuses/2`, target: `${hal}/collections/other` })).toBe(202);
    expect(await peer.send('hal', `${ours.url}/inbox`, { '@context': AS, id: `${hal}#removes/1`, type: 'Remove', actor: hal, object: `${hal}/statuses/1`, target })).toBe(202);
    const after = await until(pinnedOf, (l) => l.length === 2, 'hal unpins a post');
    expect(after.map((p) => idOf(p.uri)).sort()).toEqual([`${hal}/statuses/2`, `${hal}/statuses/3`]);
  });
});
