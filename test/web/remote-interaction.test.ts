import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { WebClient } from '../helpers/web.ts';

// Remote interaction both ways: a visitor from another server (the strict peer, whose WebFinger answers carry a
// subscribe template or FEP-3b86 intents) is sent to their server; someone of ours, sent here by another server,
// follows from /authorize_interaction.
let ours: Instance;
let closed: TestServer; // private addresses not allowed, as in production
let peer: StrictPeer;
let alice: TestUser;
let bob: TestUser;
const SUBSCRIBE = 'http://ostatus.org/schema/1.0/subscribe';
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  [ours, closed, peer] = await Promise.all([startHttpsInstance(), startTestServer(), startStrictPeer()]);
  [[alice, bob]] = await Promise.all([
    registerUsers(ours.app, 'alice', 'bob'), registerUsers(closed.app, 'alice'),
    peer.addActor('gus'), peer.addActor('hal'), peer.addActor('ida'),
  ]);
  // gus's server offers Mastodon's template; hal's FEP-3b86 intents (and a subscribe template it prefers less); ida's nothing.
  peer.webFingerLinks('gus', [{ rel: SUBSCRIBE, template: `${peer.url}/authorize_interaction?uri={uri}` }]);
  peer.webFingerLinks('hal', [
    { rel: SUBSCRIBE, template: `${peer.url}/authorize_interaction?uri={uri}` },
    { rel: 'https://w3id.org/fep/3b86/Follow', template: `${peer.url}/intents/follow?object={object}` },
    { rel: 'https://w3id.org/fep/3b86/Like', template: `${peer.url}/intents/like?object={object}` },
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), closed?.close(), peer?.close()]);
});

const aliceUri = () => `${ours.url}/users/alice`;

describe('our WebFinger', () => {
  it('advertises the subscribe template and FEP-3b86 intents leading to /authorize_interaction', async () => {
    const res = await ours.app.inject({ method: 'GET', url: `/.well-known/webfinger?resource=acct:alice@${ours.domain}` });
    expect(res.statusCode).toBe(200);
    const links = res.json().links as Json[];
    expect(links).toContainEqual({ rel: SUBSCRIBE, template: `${ours.url}/authorize_interaction?uri={uri}` });
    expect(links).toContainEqual({ rel: 'https://w3id.org/fep/3b86/Follow', template: `${ours.url}/authorize_interaction?uri={object}` });
    expect(links.find((l) => l.rel === 'self')?.href).toBe(aliceUri());
  });
});

describe('a visitor from another server', () => {
  it('following from a profile gives their handle and is sent to their server\'s subscribe template', async () => {
    const visitor = new WebClient(ours.app);
    const start = await visitor.get('/users/alice/remote_follow');
    expect(start.statusCode).toBe(303);
    const form = await visitor.get(String(start.headers.location));
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('action="/remote_interaction"');
    expect(form.headers['content-security-policy']).not.toContain('form-action');
    const res = await visitor.post('/remote_interaction', { uri: aliceUri(), intent: 'follow', acct: `@gus@${peer.domain}` }, form.body);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe(`${peer.url}/authorize_interaction?uri=${encodeURIComponent(aliceUri())}`);
    expect(peer.gets.some((g) => g.path.startsWith('/.well-known/webfinger?resource=acct%3Agus%40'))).toBe(true);
  });

  it('is sent to the FEP-3b86 intent for the action where their server offers one', async () => {
    const post = (await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'like me from afar' } })).json();
    const visitor = new WebClient(ours.app);
    const form = await visitor.get(`/remote_interaction?uri=${encodeURIComponent(post.uri)}&intent=favourite`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('like me from afar');
    const like = await visitor.post('/remote_interaction', { uri: post.uri, intent: 'favourite', acct: `hal@${peer.domain}` }, form.body);
    expect(like.headers.location).toBe(`${peer.url}/intents/like?object=${encodeURIComponent(post.uri)}`);
    // No intent for boosts there: the subscribe template serves.
    const boost = await visitor.post('/remote_interaction', { uri: post.uri, intent: 'reblog', acct: `hal@${peer.domain}` }, form.body);
    expect(boost.headers.location).toBe(`${peer.url}/authorize_interaction?uri=${encodeURIComponent(post.uri)}`);
    // The post page links to it.
    const page = await visitor.get(`/@alice/${post.id}`);
    expect(page.body).toContain(`/remote_interaction?uri=${encodeURIComponent(post.uri)}&amp;intent=reply`);
  });

  it('is told plainly when their server offers nothing, or the handle is no handle; private posts are nobody\'s to ask about', async () => {
    const visitor = new WebClient(ours.app);
    const form = await visitor.get(`/remote_interaction?uri=${encodeURIComponent(aliceUri())}`);
    const none = await visitor.post('/remote_interaction', { uri: aliceUri(), intent: 'follow', acct: `ida@${peer.domain}` }, form.body);
    expect(none.statusCode).toBe(422);
    expect(none.body).toContain('does not offer');
    const bad = await visitor.post('/remote_interaction', { uri: aliceUri(), intent: 'follow', acct: 'not a handle' }, form.body);
    expect(bad.statusCode).toBe(422);
    const unknown = await visitor.post('/remote_interaction', { uri: aliceUri(), intent: 'follow', acct: `nobody@${peer.domain}` }, form.body);
    expect(unknown.statusCode).toBe(422);
    // Without the form's token: refused.
    expect((await visitor.post('/remote_interaction', { uri: aliceUri(), intent: 'follow', acct: `gus@${peer.domain}` })).statusCode).toBe(403);
    const secret = (await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'followers only', visibility: 'private' } })).json();
    expect((await visitor.get(`/remote_interaction?uri=${encodeURIComponent(secret.uri)}`)).statusCode).toBe(404);
    expect((await visitor.get(`/remote_interaction?uri=${encodeURIComponent(`${peer.url}/users/gus`)}`)).statusCode).toBe(404);
  });

  it('with a handle on a private address is refused, nothing fetched, where private addresses are not allowed', async () => {
    const visitor = new WebClient(closed.app);
    const uri = `${closed.config.publicUrl}/users/alice`;
    const form = await visitor.get(`/remote_interaction?uri=${encodeURIComponent(uri)}&intent=follow`);
    expect(form.statusCode).toBe(200);
    const before = peer.gets.length;
    const res = await visitor.post('/remote_interaction', { uri, intent: 'follow', acct: `gus@${peer.domain}` }, form.body);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('not a public address');
    expect(peer.gets.length).toBe(before);
  });
});

describe('/authorize_interaction', () => {
  it('sends a stranger to sign in first, and brings them back', async () => {
    const res = await new WebClient(ours.app).get(`/authorize_interaction?uri=${encodeURIComponent(`${peer.url}/users/gus`)}`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/auth/sign_in?return_to=${encodeURIComponent(`/authorize_interaction?uri=${encodeURIComponent(`${peer.url}/users/gus`)}`)}`);
  });

  it('shows a signed-in person the remote account resolved, with a follow form that follows it', async () => {
    const browser = new WebClient(ours.app);
    expect((await browser.signIn(bob.email, bob.password)).statusCode).toBe(303);
    const gus = `${peer.url}/users/gus`;
    const page = await browser.get(`/authorize_interaction?uri=${encodeURIComponent(gus)}`);
    expect(page.statusCode, page.body).toBe(200);
    expect(page.body).toContain(`@gus@${peer.domain}`);
    const followed = await browser.post('/authorize_interaction', { uri: gus, action: 'follow' }, page.body);
    expect(followed.statusCode).toBe(303);
    expect(followed.headers.location).toMatch(/^\/authorize_interaction\?uri=.+&done=(follow|requested)$/);
    expect((await browser.get(followed.headers.location as string)).body).toMatch(new RegExp(`You (follow|asked to follow) @gus@${peer.domain.replace(/\./g, '\\.')}`));
    const follow = await peer.waitFor((d) => d.activity.type === 'Follow' && d.activity.actor === `${ours.url}/users/bob`);
    expect(follow.verified, follow.reason).toBe(true);
    const found = (await ours.app.inject({ method: 'GET', url: `/api/v1/accounts/lookup?acct=gus@${peer.domain}`, headers: bearer(bob.token) })).json();
    await until(async () => (await ours.app.inject({ method: 'GET', url: `/api/v1/accounts/relationships?id[]=${found.id}`, headers: bearer(bob.token) })).json()[0],
      (r: Json) => r.following === true, 'bob follows gus');
    // A handle works too, and a local account; the page then offers to unfollow.
    const byHandle = await browser.get(`/authorize_interaction?uri=${encodeURIComponent(`acct:gus@${peer.domain}`)}`);
    expect(byHandle.body).toContain('Unfollow');
    const local = await browser.get(`/authorize_interaction?uri=${encodeURIComponent(aliceUri())}`);
    await browser.post('/authorize_interaction', { uri: aliceUri(), action: 'follow' }, local.body);
    const aliceId = (await ours.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=alice', headers: bearer(bob.token) })).json().id;
    const rel = (await ours.app.inject({ method: 'GET', url: `/api/v1/accounts/relationships?id[]=${aliceId}`, headers: bearer(bob.token) })).json()[0];
    expect(rel.following).toBe(true);
    // Nothing to be found: 404, not a 500.
    expect((await browser.get(`/authorize_interaction?uri=${encodeURIComponent(`${peer.url}/users/nobody`)}`)).statusCode).toBe(404);
  });
});
