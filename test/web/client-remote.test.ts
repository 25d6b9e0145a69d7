// A signed-in person finds an account and a post of another server from the search page, follows from there, and reads
// the remote profile and the post's thread on this server's pages. The other server is the strict peer
// (test/helpers/strict-peer.ts), which signs and checks as GoToSocial does and accepts follows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { repliesFetchedAt } from '../../storage/thread-backfill.ts';

const AS = 'https://www.w3.org/ns/activitystreams';

let a: Instance;
let peer: StrictPeer;
let reader: TestUser;
let web: WebClient;

beforeAll(async () => {
  [a, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  await peer.addActor('hal');
  [reader] = await registerUsers(a.app, 'reader');
  web = new WebClient(a.app);
  expect((await web.signIn(reader.email, reader.password)).statusCode).toBe(303);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), peer?.close()]);
});

describe('another server from the search page', () => {
  it('resolves a handle, follows it, and shows the remote profile with Unfollow', async () => {
    const found = await web.get(`/search?q=${encodeURIComponent(`@hal@${peer.domain}`)}`);
    expect(found.statusCode).toBe(200);
    expect(found.body).toContain(`@hal@${peer.domain}`);
    const hal = (await a.app.inject({ method: 'GET', url: `/api/v1/accounts/lookup?acct=hal@${peer.domain}` })).json() as { id: string };
    expect(found.body).toContain(`action="/accounts/${hal.id}/follow"`);
    expect(found.body).toContain(`href="/@hal@${peer.domain}"`);

    const followed = await web.post(`/accounts/${hal.id}/follow`, { return_to: `/search?q=@hal@${peer.domain}` }, found.body);
    expect(followed.statusCode).toBe(303);
    // The peer got a signed Follow, accepted it, and the API says so.
    await until(async () => peer.followers('hal'), (f) => f.some((id) => id.endsWith('/users/reader')), 'the peer lists the follower');
    await until(async () => (await a.app.inject({ method: 'GET', url: `/api/v1/accounts/relationships?id[]=${hal.id}`, headers: bearer(reader.token) })).json()[0].following, (f) => f === true, 'following');
    const profile = await web.get(`/@hal@${peer.domain}`);
    expect(profile.statusCode).toBe(200);
    expect(profile.body).toContain(`action="/accounts/${hal.id}/unfollow"`);
    expect(profile.body).toContain(`href="${peer.url}/@hal"`);
  });

  it('resolves a post by its link and shows its thread with a reply form', async () => {
    const id = `${peer.url}/users/hal/statuses/101`;
    peer.publish('hal', {
      '@context': AS, id, type: 'Note', attributedTo: peer.actorId('hal'), content: '<p>A post from the peer</p>',
      published: new Date(Date.now() - 3600_000).toISOString(), to: [`${AS}#Public`], cc: [`${peer.actorId('hal')}/followers`], url: `${peer.url}/@hal/101`,
    });
    const found = await web.get(`/search?q=${encodeURIComponent(id)}`);
    expect(found.statusCode).toBe(200);
    expect(found.body).toContain('A post from the peer');
    const thread = /href="(\/@hal@[^"/]+\/\d+)"/.exec(found.body)![1]!;
    const page = await web.get(thread);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('A post from the peer');
    expect(page.body).toContain(`@hal@${peer.domain} </textarea>`);
    // Opening it starts fetching its missing replies, as opening it through the API's context does.
    expect(await repliesFetchedAt(a.ctx.db, thread.split('/').at(-1)!)).not.toBeNull();
    // A stranger has no page of another server's post here (the public pages show local posts only).
    expect((await new WebClient(a.app).get(thread)).statusCode).toBe(404);
  });
});
