import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';

// The shapes other servers give their activities, all meaning what Mastodon takes them to mean: objects inlined or
// named by id, one value or an array of one, "public" written three ways, a bare activitystreams @context, and keys
// served as documents of their own (the peer's keyId is /users/<name>/main-key, as GoToSocial's).
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  gus = await peer.addActor('gus');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  return res.json();
};
const aliceId = () => `${ours.url}/users/alice`;
let seq = 0;
const next = () => `${gus}/things/${++seq}`;
/** A Note by gus, pushed in a Create whose addressing is given by `to` and `cc` as they are (string or array). */
const pushNote = async (text: string, addressing: Json, extra: Json = {}, context: unknown = AS) => {
  const id = `${gus}/statuses/${++seq}`;
  const object = { id, type: 'Note', attributedTo: gus, content: `<p>${text}</p>`, published: new Date().toISOString(), ...addressing, ...extra };
  expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': context, id: `${id}/activity`, type: 'Create', actor: gus, object, ...addressing })).toBe(202);
  return id;
};
const statusByUri = (uri: string) => until(async () => (await api('GET', `/api/v2/search?q=${encodeURIComponent(uri)}&type=statuses`)).statuses as Json[], (l) => l.length === 1, `status ${uri}`).then((l) => l[0]!);

describe('activities in the shapes other servers send', () => {
  it('takes a Follow with its actor inlined and its object as an array of one, fetching the key from its own document', async () => {
    const follow = { '@context': AS, id: next(), type: 'Follow', actor: { id: gus, type: 'Person' }, object: [aliceId()] };
    expect(await peer.send('gus', `${aliceId()}/inbox`, follow)).toBe(202);
    await until(async () => (await api('GET', `/api/v1/accounts/${alice.id}/followers`)) as Json[], (l) => l.length === 1, 'gus follows alice');
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);
    expect(peer.gets.some((g) => g.path === '/users/gus/main-key' && g.status === 200)).toBe(true);
    // alice follows back, so gus's posts concern this server
    const gusHere = (await api('GET', `/api/v1/accounts/lookup?acct=gus@${peer.domain}`)) as Json;
    await api('POST', `/api/v1/accounts/${gusHere.id}/follow`);
    await until(async () => (await api('GET', `/api/v1/accounts/relationships?id[]=${gusHere.id}`))[0], (r) => r.following === true, 'alice follows gus');
  });

  it('reads "public" as the full IRI, as:Public or Public, alone or in an array, in to or cc', async () => {
    const cases: [Json, string][] = [
      [{ to: PUBLIC, cc: `${gus}/followers` }, 'public'],
      [{ to: 'as:Public' }, 'public'],
      [{ to: ['Public'], cc: [] }, 'public'],
      [{ to: [`${gus}/followers`], cc: 'as:Public' }, 'unlisted'],
      [{ to: `${gus}/followers`, cc: ['Public'] }, 'unlisted'],
      [{ to: [`${gus}/followers`] }, 'private'],
    ];
    for (const [addressing, visibility] of cases) {
      const uri = await pushNote(`addressed ${JSON.stringify(addressing)}`, addressing);
      const status = await statusByUri(uri);
      expect(status.visibility, JSON.stringify(addressing)).toBe(visibility);
    }
  });

  it('takes a Note whose author is an array of one and whose @context is activitystreams alone', async () => {
    const uri = await pushNote('bare context', { to: [PUBLIC] }, { attributedTo: [gus], tag: [{ type: 'Mention', href: aliceId(), name: `@alice@${ours.domain}` }] });
    const status = await statusByUri(uri);
    expect(status.account.acct).toBe(`gus@${peer.domain}`);
    expect(status.mentions.map((m: Json) => m.acct)).toEqual(['alice']);
  });

  it('takes Like, Announce and Undo with their objects inlined or named, and a Delete with a Tombstone', async () => {
    const post = await api('POST', '/api/v1/statuses', { status: 'like me' });
    const like = { '@context': AS, id: next(), type: 'Like', actor: [gus], object: { id: post.uri, type: 'Note' } };
    expect(await peer.send('gus', `${aliceId()}/inbox`, like)).toBe(202);
    await until(() => api('GET', `/api/v1/statuses/${post.id}`), (s) => s.favourites_count === 1, 'liked');
    const announce = { '@context': AS, id: next(), type: 'Announce', actor: gus, object: [{ id: post.uri, type: 'Note' }], to: PUBLIC, cc: [aliceId()] };
    expect(await peer.send('gus', `${ours.url}/inbox`, announce)).toBe(202);
    await until(() => api('GET', `/api/v1/statuses/${post.id}`), (s) => s.reblogs_count === 1, 'boosted');
    expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: next(), type: 'Undo', actor: gus, object: like })).toBe(202);
    expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: next(), type: 'Undo', actor: gus, object: announce.id })).toBe(202);
    await until(() => api('GET', `/api/v1/statuses/${post.id}`), (s) => s.favourites_count === 0 && s.reblogs_count === 0, 'undone');

    const uri = await pushNote('to be deleted', { to: PUBLIC });
    await statusByUri(uri);
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': AS, id: next(), type: 'Delete', actor: gus, object: { id: uri, type: 'Tombstone' }, to: PUBLIC })).toBe(202);
    await until(async () => (await api('GET', `/api/v2/search?q=${encodeURIComponent(uri)}&type=statuses`)).statuses as Json[], (l) => l.length === 0, 'deleted');
  });
});
