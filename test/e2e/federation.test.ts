import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

// Two instances of this server with different domains, separate databases and Redis prefixes, federating over
// real https on loopback. Every step is observed through each side's Mastodon API.
let a: Instance;
let b: Instance;
let alice: TestUser; // on a
let bob: TestUser; // on b
let carol: TestUser; // on b, locked

beforeAll(async () => {
  [a, b] = await Promise.all([startHttpsInstance(), startHttpsInstance()]);
  [[alice], [bob, carol]] = await Promise.all([registerUsers(a.app, 'alice'), registerUsers(b.app, 'bob', 'carol')]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (on: Instance, user: TestUser | null, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await on.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};

describe('two servers federating', () => {
  let bobOnA: Json; // bob as alice's server knows him
  let postOnB: Json; // bob's status, on b
  let postOnA: Json; // the same status, as a received it

  it('finds a remote account by its handle (WebFinger over https) and follows it', async () => {
    const found = await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=bob@${b.domain}`);
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expectEntity('Account', found.body);
    expect(found.body).toMatchObject({ username: 'bob', acct: `bob@${b.domain}`, url: `${b.url}/@bob` });
    bobOnA = found.body;

    const follow = await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/follow`);
    expect(follow.status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${bobOnA.id}`)).body[0], (r) => r.following === true, 'a: alice follows bob');
    const followers = await until(async () => (await api(b, bob, 'GET', `/api/v1/accounts/${bob.id}/followers`)).body as Json[], (l) => l.length === 1, 'b: bob has a follower');
    expect(followers[0]).toMatchObject({ acct: `alice@${a.domain}` });
  });

  it('delivers a post to the follower\'s home timeline', async () => {
    postOnB = (await api(b, bob, 'POST', '/api/v1/statuses', { status: `Hello from b, @alice@${a.domain} #federation`, visibility: 'public' })).body;
    const home = await until(async () => (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === postOnB.uri), 'a: bob\'s post in alice\'s home');
    postOnA = home.find((s) => s.uri === postOnB.uri)!;
    expectEntity('Status', postOnA);
    expect(postOnA).toMatchObject({ account: { acct: `bob@${b.domain}` }, visibility: 'public' });
    expect(postOnA.content).toContain('Hello from b');
    const mentions = await api(a, alice, 'GET', '/api/v1/notifications?types[]=mention');
    expect(mentions.body.some((n: Json) => n.status?.uri === postOnB.uri)).toBe(true);
  });

  it('threads a reply on both sides, and carries favourites and reblogs back', async () => {
    const reply = (await api(a, alice, 'POST', '/api/v1/statuses', { status: `@bob@${b.domain} hello back`, in_reply_to_id: postOnA.id })).body;
    expect(reply.in_reply_to_id).toBe(postOnA.id);
    const contextOnB = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${postOnB.id}/context`)).body, (c) => c.descendants?.length === 1, 'b: the reply in context');
    expect(contextOnB.descendants[0]).toMatchObject({ uri: reply.uri, in_reply_to_id: postOnB.id, account: { acct: `alice@${a.domain}` } });
    const contextOnA = (await api(a, alice, 'GET', `/api/v1/statuses/${postOnA.id}/context`)).body;
    expect(contextOnA.descendants.map((s: Json) => s.id)).toEqual([reply.id]);

    expect((await api(a, alice, 'POST', `/api/v1/statuses/${postOnA.id}/favourite`)).status).toBe(200);
    expect((await api(a, alice, 'POST', `/api/v1/statuses/${postOnA.id}/reblog`)).status).toBe(200);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${postOnB.id}`)).body, (s) => s.favourites_count === 1 && s.reblogs_count === 1 && s.replies_count === 1, 'b: counts');
    const kinds = (await api(b, bob, 'GET', '/api/v1/notifications')).body.map((n: Json) => n.type);
    expect(kinds).toEqual(expect.arrayContaining(['favourite', 'reblog', 'mention', 'follow']));
  });

  it('takes a deleted status away on the other side', async () => {
    expect((await api(b, bob, 'DELETE', `/api/v1/statuses/${postOnB.id}`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/statuses/${postOnA.id}`)).status, (s) => s === 404, 'a: the status is gone');
    const home = (await api(a, alice, 'GET', '/api/v1/timelines/home')).body as Json[];
    expect(home.some((s) => s.uri === postOnB.uri || s.reblog?.uri === postOnB.uri)).toBe(false);
  });

  it('follows a locked account by request, accepted when its owner authorizes', async () => {
    expect((await api(b, carol, 'PATCH', '/api/v1/accounts/update_credentials', { locked: true })).status).toBe(200);
    const carolOnA = (await api(a, alice, 'GET', `/api/v1/accounts/lookup?acct=carol@${b.domain}`)).body;
    expect(carolOnA.locked).toBe(true);
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${carolOnA.id}/follow`)).body).toMatchObject({ following: false, requested: true });
    const requests = await until(async () => (await api(b, carol, 'GET', '/api/v1/follow_requests')).body as Json[], (l) => l.length === 1, 'b: carol has a request');
    expect(requests[0]).toMatchObject({ acct: `alice@${a.domain}` });
    expect((await api(b, carol, 'POST', `/api/v1/follow_requests/${requests[0]!.id}/authorize`)).status).toBe(200);
    await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/relationships?id[]=${carolOnA.id}`)).body[0], (r) => r.following === true && r.requested === false, 'a: alice follows carol');
  });

  it('shows a profile update on the other side', async () => {
    expect((await api(b, bob, 'PATCH', '/api/v1/accounts/update_credentials', { display_name: 'Bob of B', note: 'Now with a bio' })).status).toBe(200);
    const updated = await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/${bobOnA.id}`)).body, (acc) => acc.display_name === 'Bob of B', 'a: bob\'s new name');
    expect(updated.note).toContain('Now with a bio');
  });

  it('unfollows across servers', async () => {
    expect((await api(a, alice, 'POST', `/api/v1/accounts/${bobOnA.id}/unfollow`)).status).toBe(200);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/accounts/${bob.id}/followers`)).body as Json[], (l) => l.length === 0, 'b: bob has no followers');
  });
});
