import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { expectEntity } from '../helpers/schema.ts';

// Blocks across servers, against a peer that verifies every signature it gets (test/helpers/strict-peer.ts).
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let bob: TestUser;
let gus: string;
let hal: string;
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice, bob] = await registerUsers(ours.app, 'alice', 'bob');
  gus = await peer.addActor('gus');
  hal = await peer.addActor('hal');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

const api = async (user: TestUser, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object): Promise<any> => {
  const res = await ours.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json();
};
const actorOf = (user: TestUser) => `${ours.url}/users/${user.username}`;
const idOf = (o: unknown) => (typeof o === 'string' ? o : (o as Json | undefined)?.id);
let seq = 0;
const next = (actor: string) => `${actor}/things/${++seq}`;
const lookup = (user: TestUser, name: string) => api(user, 'GET', `/api/v1/accounts/lookup?acct=${name}@${peer.domain}`) as Promise<Json>;
const relationship = async (user: TestUser, id: string) => {
  const [r] = await api(user, 'GET', `/api/v1/accounts/relationships?id[]=${id}`);
  expectEntity('Relationship', r);
  return r as Json;
};
const follow = async (actor: string, name: string, target: TestUser) => {
  const id = next(actor);
  expect(await peer.send(name, `${actorOf(target)}/inbox`, { '@context': AS, id, type: 'Follow', actor, object: actorOf(target) })).toBe(202);
  return id;
};
const mention = async (actor: string, name: string, target: TestUser, text: string) => {
  const id = `${actor}/statuses/${++seq}`;
  const object = { id, type: 'Note', attributedTo: actor, content: `<p>@${target.username} ${text}</p>`, published: new Date().toISOString(), to: [PUBLIC], cc: [actorOf(target)], tag: [{ type: 'Mention', href: actorOf(target), name: `@${target.username}@${ours.domain}` }] };
  expect(await peer.send(name, `${ours.url}/inbox`, { '@context': AS, id: `${id}/activity`, type: 'Create', actor, object, to: [PUBLIC], cc: [actorOf(target)] })).toBe(202);
  return id;
};
const mentionsOf = async (user: TestUser) => ((await api(user, 'GET', '/api/v1/notifications?types[]=mention')) as Json[]).map((n) => n.status.uri as string);

describe('blocks across servers', () => {
  it('sends a Block (and ends the remote follow with a Reject), refuses the blocked account\'s Follow, keeps its mentions quiet, and sends Undo Block', async () => {
    const followId = await follow(gus, 'gus', alice);
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);
    const gusHere = await lookup(alice, 'gus');
    await until(() => relationship(alice, gusHere.id), (r) => r.followed_by === true, 'gus follows alice');

    const rel = await api(alice, 'POST', `/api/v1/accounts/${gusHere.id}/block`);
    expect(rel).toMatchObject({ blocking: true, followed_by: false });
    const block = await peer.waitFor((d) => d.activity.type === 'Block' && d.verified);
    expect(block.activity).toMatchObject({ actor: actorOf(alice), object: gus });
    expect(block.inbox).toBe("/users/gus/inbox");
    const reject = await peer.waitFor((d) => d.activity.type === 'Reject' && d.verified);
    expect(idOf(reject.activity.object)).toBe(followId);

    // A mention from the blocked account makes no notification; a Follow is refused with a Reject of that Follow.
    const quiet = await mention(gus, 'gus', alice, 'can you hear me');
    const again = await follow(gus, 'gus', alice);
    const refused = await peer.waitFor((d) => d.activity.type === 'Reject' && idOf(d.activity.object) === again);
    expect(refused.verified).toBe(true);
    // The mention was taken (bob, who is not blocking anyone, would be told of it in the same way): it is the
    // notification, not the post, that the block stops.
    const loud = await mention(gus, 'gus', bob, 'hello bob');
    await until(() => mentionsOf(bob), (l) => l.includes(loud), 'bob is told of the mention');
    expect(await mentionsOf(alice)).not.toContain(quiet);
    expect((await api(alice, 'GET', `/api/v1/accounts/${alice.id}/followers`)) as Json[]).toEqual([]);

    await api(alice, 'POST', `/api/v1/accounts/${gusHere.id}/unblock`);
    const undo = await peer.waitFor((d) => d.activity.type === 'Undo' && (d.activity.object as Json | undefined)?.type === 'Block' && d.verified);
    expect(idOf(undo.activity.object)).toBe(block.activity.id);
  });

  it('takes a Block from another server: follows end both ways and the blocker\'s posts are hidden; Undo by id lifts it', async () => {
    const halHere = await lookup(bob, 'hal');
    await api(bob, 'POST', `/api/v1/accounts/${halHere.id}/follow`);
    const ourFollow = await peer.waitFor((d) => d.activity.type === 'Follow' && d.activity.object === hal);
    await peer.accept('hal', ourFollow.activity);
    await until(() => relationship(bob, halHere.id), (r) => r.following === true, 'bob follows hal');
    const note = `${hal}/statuses/${++seq}`;
    const object = { id: note, type: 'Note', attributedTo: hal, content: '<p>from hal</p>', published: new Date().toISOString(), to: [PUBLIC] };
    expect(await peer.send('hal', `${ours.url}/inbox`, { '@context': AS, id: `${note}/activity`, type: 'Create', actor: hal, object, to: [PUBLIC] })).toBe(202);
    const found = () => api(bob, 'GET', `/api/v2/search?q=${encodeURIComponent(note)}&type=statuses`).then((r) => (r.statuses as Json[]).length);
    await until(found, (count) => count === 1, 'hal\'s note arrives');

    const blockId = next(hal);
    expect(await peer.send('hal', `${actorOf(bob)}/inbox`, { '@context': AS, id: blockId, type: 'Block', actor: hal, object: actorOf(bob) })).toBe(202);
    const r = await until(() => relationship(bob, halHere.id), (x) => x.blocked_by === true, 'hal blocks bob');
    expect(r).toMatchObject({ following: false, requested: false, blocking: false });
    const follow = await ours.app.inject({ method: 'POST', url: `/api/v1/accounts/${halHere.id}/follow`, headers: bearer(bob.token) });
    expect(follow.statusCode).toBe(403);
    expect(await found()).toBe(0);

    expect(await peer.send('hal', `${actorOf(bob)}/inbox`, { '@context': AS, id: `${blockId}/undo`, type: 'Undo', actor: hal, object: blockId })).toBe(202);
    await until(() => relationship(bob, halHere.id), (x) => x.blocked_by === false, 'hal unblocks bob');
    expect(await found()).toBe(1);
  });

  it('a person\'s domain block: their followers there are removed, its posts and mentions are kept from them', async () => {
    const [carol] = await registerUsers(ours.app, 'carol');
    const gusHere = await lookup(carol, 'gus');
    await follow(gus, 'gus', carol);
    await until(() => relationship(carol, gusHere.id), (r) => r.followed_by === true, 'gus follows carol');
    const before = await mention(gus, 'gus', carol, 'before the block');
    await until(() => mentionsOf(carol), (l) => l.includes(before), 'carol is told');

    expect(await api(carol, 'POST', '/api/v1/domain_blocks', { domain: peer.domain })).toEqual({});
    expect(await api(carol, 'GET', '/api/v1/domain_blocks')).toEqual([peer.domain]);
    const r = await relationship(carol, gusHere.id);
    expect(r).toMatchObject({ domain_blocking: true, followed_by: false, blocking: false });
    await peer.waitFor((d) => d.activity.type === 'Reject' && d.activity.actor === actorOf(carol) && d.verified);
    // The earlier notification is hidden, a new mention makes none, and the domain's posts leave public timelines.
    expect(await mentionsOf(carol)).toEqual([]);
    const after = await mention(gus, 'gus', carol, 'after the block');
    const loud = await mention(gus, 'gus', bob, 'bob hears this');
    await until(() => mentionsOf(bob), (l) => l.includes(loud), 'bob is told');
    expect(await mentionsOf(carol)).toEqual([]);
    const publicUris = ((await api(carol, 'GET', '/api/v1/timelines/public?limit=40')) as Json[]).map((s) => s.uri);
    expect(publicUris).not.toContain(after);
    expect(((await api(bob, 'GET', '/api/v1/timelines/public?limit=40')) as Json[]).map((s) => s.uri)).toContain(after);

    expect(await api(carol, 'DELETE', '/api/v1/domain_blocks', { domain: peer.domain })).toEqual({});
    expect((await relationship(carol, gusHere.id)).domain_blocking).toBe(false);
    expect(await mentionsOf(carol)).toEqual([before]);
  });
  it('forwards a report to the reported account\'s server as a Flag signed by the instance actor', async () => {
    const gusHere = await lookup(bob, 'gus');
    const res = await ours.app.inject({ method: 'POST', url: '/api/v1/reports', headers: bearer(bob.token), payload: { account_id: gusHere.id, comment: 'spam from gus', forward: true } });
    expect(res.statusCode, res.body).toBe(200);
    expectEntity('Report', res.json());
    const flag = await peer.waitFor((d) => d.activity.type === 'Flag');
    expect(flag.verified).toBe(true);
    expect(flag.activity).toMatchObject({ actor: `${ours.url}/users/instance.actor`, content: 'spam from gus' });
    expect([flag.activity.object].flat()).toContain(gus);
  });
});
