import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type PeerDelivery, type StrictPeer } from '../helpers/strict-peer.ts';
import { runCli } from '../../cli/admin.ts';
import { pendingOutbox } from '../../storage/outbox.ts';
import { LITEPUB_CONTEXT, pleromaNote, pleromaRelayAnnounce } from './fixtures/other-software.ts';

// Relays (FEP-ae0c), with the strict peer as the relay's server: a Mastodon-style relay (its inbox is the peer's
// shared inbox, its actor `relay`) and a LitePub one (the actor `litepub`, followed as an actor, which follows back).
// `gus` is a third party on another strict peer (`authors`), whom nobody here follows.
let ours: Instance;
let peer: StrictPeer;
let authors: StrictPeer;
let alice: TestUser;
let gus: string;
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  // A small intake cap, so the last test can reach it; the tests before stay well under it.
  [ours, peer, authors] = await Promise.all([startHttpsInstance({ RELAY_INTAKE_PER_MINUTE: '6' }), startStrictPeer(), startStrictPeer()]);
  [[alice]] = await Promise.all([
    registerUsers(ours.app, 'alice'),
    peer.addActor('relay', { type: 'Application', locked: true, autoAccept: false }),
    peer.addActor('litepub', { type: 'Application' }),
    authors.addActor('gus').then((id) => { gus = id; }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close(), authors?.close()]);
});

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, ours.ctx.db, (l) => lines.push(l), async () => {}, { redis: ours.ctx.redis, redisPrefix: ours.config.redisPrefix, config: ours.config });
  return lines;
}

/** What a running server's outbox sweeper does with the rows the CLI wrote (it passes every 30 s). */
async function sweep(): Promise<void> {
  await ours.ctx.jobs.enqueueMany(await pendingOutbox(ours.ctx.db, 0, 100));
}

const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const publicTimeline = () => api('GET', '/api/v1/timelines/public?limit=40');
const instanceActor = () => `${ours.url}/users/instance.actor`;

function gusNote(id: string): Json {
  return {
    id: `${gus}/statuses/${id}`, type: 'Note', attributedTo: gus, content: `<p>${id}</p>`,
    published: new Date().toISOString(), to: [PUBLIC], cc: [`${gus}/followers`],
  };
}

describe('a Mastodon-style relay', () => {
  let follow: PeerDelivery;

  it('is followed from the instance actor with a Follow of the public collection at its inbox, and stays pending', async () => {
    expect(await cli('relay', 'add', `${peer.url}/inbox`)).toEqual([expect.stringContaining('is pending')]);
    await sweep();
    follow = await peer.waitFor((d) => d.inbox === '/inbox' && d.activity.type === 'Follow');
    expect(follow.verified, follow.reason).toBe(true);
    expect(follow.activity).toMatchObject({ actor: instanceActor(), object: PUBLIC });
    expect(typeof follow.activity.id).toBe('string');
    expect(await cli('relay', 'list')).toEqual([`${peer.url}/inbox  pending  mastodon`]);
    // Adding it twice is refused.
    await expect(cli('relay', 'add', `${peer.url}/inbox`)).rejects.toThrow(/already a relay/);
    await expect(cli('relay', 'add', 'ftp://relay.example/inbox')).rejects.toThrow(/http\(s\)/);
    await expect(cli('relay', 'add')).rejects.toThrow(/one URL/);
  });

  it('is accepted by the relay\'s signed Accept; then our public posts reach its inbox, others do not', async () => {
    // An Accept from another actor on another server is not the relay's.
    expect(await authors.send('gus', `${ours.url}/inbox`, { '@context': AS, id: `${gus}#accepts/forged`, type: 'Accept', actor: gus, object: follow.activity.id })).toBe(202);
    expect(await peer.send('relay', `${ours.url}/inbox`, {
      '@context': AS, id: `${peer.actorId('relay')}#accepts/1`, type: 'Accept', actor: peer.actorId('relay'), object: follow.activity,
    })).toBe(202);
    await until(() => cli('relay', 'list'), (l) => l[0] === `${peer.url}/inbox  accepted  mastodon`, 'the relay accepted');

    await api('POST', '/api/v1/statuses', { status: 'unlisted, not for relays', visibility: 'unlisted' });
    await api('POST', '/api/v1/statuses', { status: 'followers only', visibility: 'private' });
    const post = await api('POST', '/api/v1/statuses', { status: 'hello relay', visibility: 'public' });
    const create = await peer.waitFor((d) => d.inbox === '/inbox' && d.activity.type === 'Create');
    expect(create.verified, create.reason).toBe(true);
    expect(create.activity.object).toMatchObject({ id: post.uri, attributedTo: `${ours.url}/users/alice` });
    // Signed as its author, so a relay's subscribers may trust the copy it forwards.
    expect(create.activity.signature).toMatchObject({ type: 'RsaSignature2017', creator: expect.stringContaining(`${ours.url}/users/alice`) });
    const deleted = await api('POST', `/api/v1/statuses`, { status: 'to be deleted', visibility: 'public' });
    const del = await ours.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${deleted.id}`, headers: bearer(alice.token) });
    expect(del.statusCode).toBe(200);
    await peer.waitFor((d) => d.inbox === '/inbox' && d.activity.type === 'Delete');
    const atRelay = peer.received.filter((d) => d.inbox === '/inbox' && d.activity.type === 'Create').map((d) => String((d.activity.object as Json).content));
    expect(atRelay.some((c) => c.includes('unlisted') || c.includes('followers only'))).toBe(false);
  });

  it('brings a third party\'s public Create, forwarded with its author\'s signature, into the federated timeline only', async () => {
    const create = { '@context': [AS, 'https://w3id.org/security/v1'], id: `${gus}/statuses/relayed/activity`, type: 'Create', actor: gus, object: gusNote('relayed'), to: [PUBLIC], cc: [`${gus}/followers`] };
    expect(await peer.send('relay', `${ours.url}/inbox`, await authors.signLd('gus', create))).toBe(202);
    const timeline = await until(publicTimeline, (t) => t.some((s: Json) => s.uri === `${gus}/statuses/relayed`), 'the relayed post in the federated timeline');
    expect(timeline.find((s: Json) => s.uri === `${gus}/statuses/relayed`)).toMatchObject({ account: { acct: `gus@${authors.domain}` }, reblog: null });
    const home = await api('GET', '/api/v1/timelines/home');
    expect(home.some((s: Json) => s.uri === `${gus}/statuses/relayed`)).toBe(false);

    // The same author's Create sent by themself, through no relay, concerns nobody here: dropped as before.
    const direct = { '@context': AS, id: `${gus}/statuses/direct/activity`, type: 'Create', actor: gus, object: gusNote('direct'), to: [PUBLIC] };
    expect(await authors.send('gus', `${ours.url}/inbox`, direct)).toBe(202);
    // A relayed one sent after it arrives; by then the direct one has been dealt with (one queue, in order).
    const later = { '@context': [AS, 'https://w3id.org/security/v1'], id: `${gus}/statuses/later/activity`, type: 'Create', actor: gus, object: gusNote('later'), to: [PUBLIC] };
    expect(await peer.send('relay', `${ours.url}/inbox`, await authors.signLd('gus', later))).toBe(202);
    const after = await until(publicTimeline, (t) => t.some((s: Json) => s.uri === `${gus}/statuses/later`), 'the later relayed post');
    expect(after.some((s: Json) => s.uri === `${gus}/statuses/direct`)).toBe(false);
  });

  it('takes nothing from a stranger naming the relay\'s key: its signature must verify (Fedify checks only the author\'s)', async () => {
    const forged = await authors.signLd('gus', { '@context': [AS, 'https://w3id.org/security/v1'], id: `${gus}/statuses/forged/activity`, type: 'Create', actor: gus, object: gusNote('forged'), to: [PUBLIC] });
    const headers = { 'content-type': 'application/activity+json', 'user-agent': peer.userAgent };
    // The relay's signature of another body: its Digest and signature do not match what is sent.
    const signed = await peer.sign('relay', new Request(`${ours.url}/inbox`, { method: 'POST', body: '{"type":"Like"}', headers }));
    const res = await fetch(`${ours.url}/inbox`, { method: 'POST', headers: signed.headers, body: JSON.stringify(forged) });
    expect(res.status).toBe(401);
    await new Promise((r) => setTimeout(r, 500));
    expect((await publicTimeline()).some((s: Json) => s.uri === `${gus}/statuses/forged`)).toBe(false);
  });

  it('is left with an Undo of our Follow, and is sent nothing more', async () => {
    expect(await cli('relay', 'remove', `${peer.url}/inbox`)).toEqual([expect.stringContaining('removed')]);
    await sweep();
    const undo = await peer.waitFor((d) => d.inbox === '/inbox' && d.activity.type === 'Undo');
    expect(undo.verified, undo.reason).toBe(true);
    expect(undo.activity).toMatchObject({ actor: instanceActor(), object: { type: 'Follow', id: follow.activity.id, object: PUBLIC } });
    expect(await cli('relay', 'list')).toEqual(['no relays']);
    const before = peer.received.filter((d) => d.inbox === '/inbox').length;
    await api('POST', '/api/v1/statuses', { status: 'after leaving', visibility: 'public' });
    await new Promise((r) => setTimeout(r, 1000));
    expect(peer.received.filter((d) => d.inbox === '/inbox').length).toBe(before);
    await expect(cli('relay', 'remove', `${peer.url}/inbox`)).rejects.toThrow(/not a relay/);
  });
});

describe('a relay that refuses', () => {
  it('is recorded as rejected by its Reject, and sent nothing', async () => {
    const inbox = `${peer.actorId('relay')}/inbox`;
    await cli('relay', 'add', inbox);
    await sweep();
    const follow = await peer.waitFor((d) => d.inbox === '/users/relay/inbox' && d.activity.type === 'Follow');
    expect(follow.activity.object).toBe(PUBLIC);
    expect(await peer.send('relay', `${ours.url}/inbox`, { '@context': AS, id: `${peer.actorId('relay')}#rejects/1`, type: 'Reject', actor: peer.actorId('relay'), object: follow.activity.id })).toBe(202);
    await until(() => cli('relay', 'list'), (l) => l.includes(`${inbox}  rejected  mastodon`), 'rejected');
    await api('POST', '/api/v1/statuses', { status: 'not for a relay that refused', visibility: 'public' });
    await new Promise((r) => setTimeout(r, 1000));
    expect(peer.received.some((d) => d.inbox === '/users/relay/inbox' && d.activity.type === 'Create')).toBe(false);
    await cli('relay', 'remove', inbox);
  });
});

describe('Pleroma (or Akkoma) as a LitePub relay', () => {
  // A Pleroma server: its relay actor is an Application at /relay (key `/relay#main-key`), its posts at /objects/<uuid>.
  let pleroma: StrictPeer;
  let relay: string;
  let lain: string;
  const context = () => `${pleroma.url}/schemas/litepub-0.1.jsonld`;
  beforeAll(async () => {
    pleroma = await startStrictPeer();
    pleroma.publishOpenly('/schemas/litepub-0.1.jsonld', LITEPUB_CONTEXT);
    [relay, lain] = await Promise.all([
      pleroma.addActor('relay', { type: 'Application', at: '/relay', extra: {
        '@context': [AS, `${pleroma.url}/schemas/litepub-0.1.jsonld`, { '@language': 'und' }], invisible: true, discoverable: false, name: null, summary: '',
      } }),
      pleroma.addActor('lain'),
    ]);
  });
  afterAll(() => pleroma?.close());

  it('is followed as its actor at /relay/inbox, and its Accept makes the subscription accepted', async () => {
    await cli('relay', 'add', relay);
    await sweep();
    const follow = await pleroma.waitFor((d) => d.inbox === '/relay/inbox' && d.activity.type === 'Follow');
    expect(follow.verified, follow.reason).toBe(true);
    expect(follow.activity).toMatchObject({ actor: instanceActor(), object: relay });
    expect([follow.activity.to].flat()).toEqual([relay]);
    await until(() => cli('relay', 'list'), (l) => l.includes(`${relay}  accepted  litepub  inbox ${relay}/inbox`), 'accepted');
  });

  it("brings the public post its relay actor announces by id (fetched from Pleroma, signed) into the federated timeline", async () => {
    const note = `${pleroma.url}/objects/7d1f0e52-6a5b-4c3d-9e8f-0a1b2c3d4e5f`;
    pleroma.publish('lain', pleromaNote({ user: lain, id: note, html: 'hello from <b>pleroma</b>', text: 'hello from pleroma', context: context() }));
    const announce = pleromaRelayAnnounce({ relay, admin: `${pleroma.url}/users/admin`, id: `${pleroma.url}/activities/e24e46a2-8926-4a20-9f5f-638e06102159`, object: note, context: context() });
    expect(await pleroma.send('relay', `${ours.url}/inbox`, announce)).toBe(202);
    const timeline = await until(publicTimeline, (t) => t.some((s: Json) => s.uri === note), 'the relayed post in the federated timeline');
    expect(timeline.find((s: Json) => s.uri === note)).toMatchObject({ account: { acct: `lain@${pleroma.domain}` }, reblog: null, content: 'hello from <b>pleroma</b>', visibility: 'public' });
    expect(timeline.some((s: Json) => s.reblog?.uri === note)).toBe(false);
    expect((await api('GET', '/api/v1/timelines/home')).some((s: Json) => (s.reblog ?? s).uri === note)).toBe(false);
    expect(pleroma.gets.find((g) => g.path === new URL(note).pathname)).toMatchObject({ signed: true, status: 200 });

  });

  it('gets our public posts at the relay actor\'s inbox, and an Undo when removed', async () => {
    const post = await api('POST', '/api/v1/statuses', { status: 'hello pleroma relay', visibility: 'public' });
    const create = await pleroma.waitFor((d) => d.inbox === '/relay/inbox' && d.activity.type === 'Create');
    expect(create.verified, create.reason).toBe(true);
    expect(create.activity.object).toMatchObject({ id: post.uri });
    await cli('relay', 'remove', relay);
    await sweep();
    const undo = await pleroma.waitFor((d) => d.inbox === '/relay/inbox' && d.activity.type === 'Undo');
    expect(undo.verified, undo.reason).toBe(true);
    expect(undo.activity).toMatchObject({ actor: instanceActor(), object: { type: 'Follow', object: relay } });
  });
});

describe('a LitePub relay', () => {
  const relayInbox = () => '/users/litepub/inbox';

  it('is followed as its actor, accepts, follows us back and is accepted', async () => {
    await cli('relay', 'add', peer.actorId('litepub'));
    await sweep();
    const follow = await peer.waitFor((d) => d.inbox === relayInbox() && d.activity.type === 'Follow');
    expect(follow.verified, follow.reason).toBe(true);
    expect(follow.activity).toMatchObject({ actor: instanceActor(), object: peer.actorId('litepub') });
    // The strict peer accepts at once (an unlocked actor), as activityrelay does.
    await until(() => cli('relay', 'list'), (l) => l[0] === `${peer.actorId('litepub')}  accepted  litepub  inbox ${peer.actorId('litepub')}/inbox`, 'accepted');
    expect(peer.sent.filter((s) => s.activity.type === 'Accept').at(-1)?.status).toBe(202);

    expect(await peer.send('litepub', `${ours.url}/users/instance.actor/inbox`, {
      '@context': AS, id: `${peer.actorId('litepub')}#follows/1`, type: 'Follow', actor: peer.actorId('litepub'), object: instanceActor(),
    })).toBe(202);
    const accept = await peer.waitFor((d) => d.inbox === relayInbox() && d.activity.type === 'Accept');
    expect(accept.verified, accept.reason).toBe(true);
    expect(accept.activity).toMatchObject({ actor: instanceActor(), object: { type: 'Follow', id: `${peer.actorId('litepub')}#follows/1` } });
  });

  it('its Announce of a public Note brings the Note (fetched from its author) into the federated timeline, not a boost', async () => {
    authors.publish('gus', { '@context': AS, ...gusNote('announced') });
    expect(await peer.send('litepub', `${ours.url}/inbox`, {
      '@context': AS, id: `${peer.actorId('litepub')}#announces/1`, type: 'Announce', actor: peer.actorId('litepub'), object: `${gus}/statuses/announced`, to: [`${peer.actorId('litepub')}/followers`],
    })).toBe(202);
    const timeline = await until(publicTimeline, (t) => t.some((s: Json) => s.uri === `${gus}/statuses/announced`), 'the announced post');
    expect(timeline.find((s: Json) => s.uri === `${gus}/statuses/announced`)).toMatchObject({ account: { acct: `gus@${authors.domain}` } });
    expect(timeline.some((s: Json) => s.reblog?.uri === `${gus}/statuses/announced`)).toBe(false);
  });

  it('that floods is refused with 429 past its intake a minute', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10 && !statuses.includes(429); i++) {
      statuses.push(await peer.send('litepub', `${ours.url}/inbox`, {
        '@context': AS, id: `${peer.actorId('litepub')}#announces/flood-${i}`, type: 'Announce', actor: peer.actorId('litepub'), object: `${gus}/statuses/announced`, to: [PUBLIC],
      }));
    }
    expect(statuses).toContain(429);
    // Others are not held back by it.
    expect(await authors.send('gus', `${ours.url}/inbox`, { '@context': AS, id: `${gus}#likes/1`, type: 'Like', actor: gus, object: `${ours.url}/users/alice/statuses/1` })).toBe(202);
  });
});
