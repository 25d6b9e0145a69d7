import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';

// A post from another server with a hashtag someone here follows reaches their home, though they do not follow
// its author (who is followed by someone else here, so the post is this server's business, as in Mastodon).
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let bob: TestUser;
let gus: string;
const AS = 'https://www.w3.org/ns/activitystreams';
// As Mastodon writes it: Hashtag is not in the activitystreams context.
const CONTEXT = [AS, { Hashtag: 'as:Hashtag' }];

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice, bob] = await registerUsers(ours.app, 'alice', 'bob');
  gus = await peer.addActor('gus');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (who: TestUser, method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> => {
  const res = await ours.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return res.json();
};

describe('followed hashtags across servers', () => {
  it("puts another server's public post with a followed tag in the follower's home", async () => {
    const gusHere = await api(bob, 'GET', `/api/v1/accounts/lookup?acct=gus@${peer.domain}`);
    await api(bob, 'POST', `/api/v1/accounts/${gusHere.id}/follow`);
    await until(async () => (await api(bob, 'GET', `/api/v1/accounts/relationships?id[]=${gusHere.id}`))[0], (r) => r.following === true, 'bob follows gus');
    await api(alice, 'POST', '/api/v1/tags/fediverse/follow');
    await api(alice, 'GET', '/api/v1/timelines/home'); // alice's feed exists, so fan-out fills it

    const note = (n: number, tag: string) => ({
      id: `${gus}/statuses/${n}`, type: 'Note', attributedTo: gus, content: `<p>hello <a href="${gus}/tags/${tag}" rel="tag">#${tag}</a></p>`,
      published: new Date().toISOString(), to: [`${AS}#Public`], cc: [`${gus}/followers`], tag: [{ type: 'Hashtag', name: `#${tag}`, href: `${gus}/tags/${tag}` }],
    });
    for (const [n, tag] of [[1, 'Fediverse'], [2, 'elsewhere']] as const) {
      const object = note(n, tag);
      expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': CONTEXT, id: `${object.id}/activity`, type: 'Create', actor: gus, object, to: object.to, cc: object.cc })).toBe(202);
    }
    const home = await until(() => api(alice, 'GET', '/api/v1/timelines/home'), (l) => (l as Json[]).length > 0, 'the tagged post in alice\'s home');
    expect((home as Json[]).map((st) => st.uri)).toEqual([`${gus}/statuses/1`]);
    // bob, who follows gus, has both.
    await until(() => api(bob, 'GET', '/api/v1/timelines/home'), (l) => (l as Json[]).length === 2, "both posts in bob's home");
  });
});
