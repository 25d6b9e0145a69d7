import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { WebClient } from '../helpers/web.ts';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { freePort } from '../helpers/listen.ts';

// Account moves across servers: two instances of this server over https, and a strict peer (its followers
// hear of the Move, its actors send Moves here).
let a: Instance;
let b: Instance;
let peer: StrictPeer;
let alice: TestUser, dan: TestUser, erin: TestUser, frank: TestUser, gail: TestUser; // on a
let bob: TestUser, carol: TestUser; // on b
let gus: string, hal: string; // on the peer
let gtsPem: string; // the GoToSocial-like actor's key
const AS = 'https://www.w3.org/ns/activitystreams';
const METRICS_TOKEN = 'metrics-token-for-move-tests';
const generateRsa = promisify(generateKeyPair);

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  // Each server's users registered as soon as it is up, with its instance actor asked for meanwhile (which makes the
  // key pairs that sign its fetches, once, as the first fetch would); the peer's actors (each with its key pairs) and
  // the GoToSocial-like actor's key made meanwhile.
  const instanceActor = (on: Instance) => on.app.inject({ method: 'GET', url: '/users/instance.actor', headers: { accept: 'application/activity+json' } })
    .then((res) => expect(res.statusCode, res.body).toBe(200));
  await Promise.all([
    startHttpsInstance({ METRICS_TOKEN }).then(async (started) => {
      a = started;
      [[alice, dan, erin, frank, gail]] = await Promise.all([registerUsers(a.app, 'alice', 'dan', 'erin', 'frank', 'gail'), instanceActor(a)]);
    }),
    startHttpsInstance().then(async (started) => {
      b = started;
      [[bob, carol]] = await Promise.all([registerUsers(b.app, 'bob', 'carol'), instanceActor(b)]);
    }),
    startStrictPeer().then(async (started) => {
      peer = started;
      [gus, hal] = await Promise.all([peer.addActor('gus'), peer.addActor('hal')]);
    }),
    generateRsa('rsa', { modulusLength: 2048 }).then((pair) => { gtsPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(); }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), peer?.close()]);
});

const api = async (on: Instance, user: TestUser, method: 'GET' | 'POST', url: string, payload?: object, status = 200): Promise<any> => {
  const res = await on.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.json();
};
const lookup = async (on: Instance, user: TestUser, acct: string) => (await api(on, user, 'GET', `/api/v1/accounts/lookup?acct=${acct}`)) as Json;
const relationship = async (on: Instance, user: TestUser, id: string) => ((await api(on, user, 'GET', `/api/v1/accounts/relationships?id[]=${id}`)) as Json[])[0]!;
const following = (on: Instance, user: TestUser, id: string, yes: boolean, what: string) => until(() => relationship(on, user, id), (r) => r.following === yes, what);
const browserOf = async (on: Instance, user: TestUser) => {
  const browser = new WebClient(on.app);
  expect((await browser.signIn(user.email, user.password)).statusCode).toBe(303);
  return browser;
};
const submit = async (browser: WebClient, action: string, fields: Record<string, string>, status = 303) => {
  const res = await browser.submit('/settings/migration', action, fields);
  expect(res.statusCode, res.body.slice(0, 3000)).toBe(status);
  return res;
};
const refusedDrops = async () => {
  const res = await a.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return Number(/fedi_inbound_dropped_total\{reason="refused"\} (\d+)/.exec(res.body)?.[1] ?? 0);
};
const uriOn = (on: Instance, user: TestUser) => `${on.url}/users/${user.username}`;

describe('moving between servers', () => {
  let aliceBrowser: WebClient;
  let bobBrowser: WebClient;
  let bobOnA: Json;
  let aliceOnB: Json;

  it('moves alice (a) to bob (b): a Move to her followers\' servers, her followers on both servers follow bob', async () => {
    [aliceBrowser, bobBrowser] = await Promise.all([browserOf(a, alice), browserOf(b, bob)]);
    // bob says he is also alice (resolved through WebFinger and her actor on a).
    await submit(bobBrowser, '/settings/migration/aliases', { acct: `alice@${a.domain}` });

    // Followers: dan on a, carol on b, gus on the peer.
    await api(a, dan, 'POST', `/api/v1/accounts/${alice.id}/follow`);
    aliceOnB = await lookup(b, carol, `alice@${a.domain}`);
    await api(b, carol, 'POST', `/api/v1/accounts/${aliceOnB.id}/follow`);
    await following(b, carol, aliceOnB.id, true, 'carol follows alice');
    expect(await peer.send('gus', `${uriOn(a, alice)}/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: uriOn(a, alice) })).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);

    await submit(aliceBrowser, '/settings/migration', { acct: `bob@${b.domain}`, current_password: alice.password });

    const move = await peer.waitFor((d) => d.activity.type === 'Move');
    expect(move.verified).toBe(true);
    expect(move.activity).toMatchObject({ actor: uriOn(a, alice), object: uriOn(a, alice), target: uriOn(b, bob) });

    bobOnA = await lookup(a, dan, `bob@${b.domain}`);
    await following(a, dan, bobOnA.id, true, 'dan (a) follows bob (b)');
    await following(a, dan, alice.id, false, 'dan no longer follows alice');
    await following(b, carol, bob.id, true, 'carol (b) follows bob');
    await following(b, carol, aliceOnB.id, false, 'carol no longer follows alice');
    expect((await api(a, dan, 'GET', `/api/v1/accounts/${alice.id}`)).moved).toMatchObject({ acct: `bob@${b.domain}` });
    await until(() => api(b, carol, 'GET', `/api/v1/accounts/${aliceOnB.id}`), (x) => x.moved?.id === bob.id, 'b shows alice moved to bob');
    await api(a, alice, 'POST', '/api/v1/statuses', { status: 'still here?' }, 403);
  });

  it('moves back: alice lists bob, bob moves to alice, and alice is in use again with her followers back', async () => {
    await submit(aliceBrowser, '/settings/migration/aliases', { acct: `bob@${b.domain}` });
    await submit(bobBrowser, '/settings/migration', { acct: `alice@${a.domain}`, current_password: bob.password });

    // b's Move reaches a (dan follows bob): a checks alice's aliases, and dan follows alice again.
    await following(a, dan, alice.id, true, 'dan follows alice again');
    await following(a, dan, bobOnA.id, false, 'dan no longer follows bob');
    await following(b, carol, aliceOnB.id, true, 'carol follows alice again');
    await until(() => api(a, dan, 'GET', `/api/v1/accounts/${bobOnA.id}`), (x) => x.moved?.id === alice.id, 'a shows bob moved to alice');
    expect((await api(a, dan, 'GET', `/api/v1/accounts/${alice.id}`)).moved).toBeUndefined();
    await api(a, alice, 'POST', '/api/v1/statuses', { status: 'back home' });
    await api(b, bob, 'POST', '/api/v1/statuses', { status: 'moved away' }, 403);
  });

  it('refuses a Move whose target does not list the mover (or that moves someone else), and takes it once the alias is there', async () => {
    const halOnA = await lookup(a, erin, `hal@${peer.domain}`);
    await api(a, erin, 'POST', `/api/v1/accounts/${halOnA.id}/follow`);
    const ourFollow = await peer.waitFor((d) => d.activity.type === 'Follow' && d.activity.object === hal);
    await peer.accept('hal', ourFollow.activity);
    await following(a, erin, halOnA.id, true, 'erin follows hal');

    const before = await refusedDrops();
    const moveOf = (n: number, object: string) => ({ '@context': AS, id: `${hal}/moves/${n}`, type: 'Move', actor: hal, object, target: uriOn(a, frank) });
    expect(await peer.send('hal', `${a.url}/inbox`, moveOf(1, hal))).toBe(202); // frank has no alias yet
    expect(await peer.send('hal', `${a.url}/inbox`, moveOf(2, gus))).toBe(202); // not hal's to move
    await until(refusedDrops, (n) => n >= before + 2, 'both Moves refused');
    expect((await relationship(a, erin, halOnA.id)).following).toBe(true);
    expect((await api(a, erin, 'GET', `/api/v1/accounts/${halOnA.id}`)).moved).toBeUndefined();
    expect((await relationship(a, erin, frank.id)).following).toBe(false);

    await submit(await browserOf(a, frank), '/settings/migration/aliases', { acct: `hal@${peer.domain}` });
    expect(await peer.send('hal', `${a.url}/inbox`, moveOf(3, hal))).toBe(202);
    await following(a, erin, frank.id, true, 'erin follows frank');
    // The peer is sent the Undo of erin's follow of hal.
    await peer.waitFor((d) => d.activity.type === 'Undo' && (d.activity.object as Json)?.object === hal && d.verified);
    expect((await api(a, erin, 'GET', `/api/v1/accounts/${halOnA.id}`)).moved).toMatchObject({ id: frank.id });
  });
});

/**
 * An actor as GoToSocial 0.19 serves it: `alsoKnownAs` defined in its own context without `"@type": "@id"`, so
 * JSON-LD takes the aliases for plain strings (Mastodon reads them as served). Signed GETs are not checked here.
 */
async function gtsLikeHost(aliases: string[]): Promise<{ server: Server; domain: string; close(): Promise<void> }> {
  const port = await freePort();
  const domain = `localhost:${port}`;
  const actor = `https://${domain}/users/gts`;
  const pem = gtsPem;
  const server = createServer({ cert: readFileSync(process.env.TEST_TLS_CERT_FILE!), key: readFileSync(process.env.TEST_TLS_KEY_FILE!) }, (req, res) => {
    const url = new URL(req.url ?? '/', `https://${domain}`);
    const send = (status: number, body: unknown, type = 'application/activity+json') => { res.writeHead(status, { 'content-type': type }); res.end(JSON.stringify(body)); };
    if (req.method === 'POST') { req.resume(); return send(202, {}); }
    if (url.pathname === '/.well-known/webfinger') {
      return send(200, { subject: `acct:gts@${domain}`, links: [{ rel: 'self', type: 'application/activity+json', href: actor }] }, 'application/jrd+json');
    }
    if (url.pathname !== '/users/gts') return send(404, { error: 'not found' }, 'application/json');
    send(200, {
      '@context': ['https://w3id.org/security/v1', 'https://www.w3.org/ns/activitystreams', { alsoKnownAs: 'as:alsoKnownAs', toot: 'http://joinmastodon.org/ns#' }],
      alsoKnownAs: aliases, id: actor, type: 'Person', preferredUsername: 'gts', inbox: `${actor}/inbox`, outbox: `${actor}/outbox`,
      followers: `${actor}/followers`, publicKey: { id: `${actor}/main-key`, owner: actor, publicKeyPem: pem },
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { server, domain, close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }) };
}

describe('moving to a GoToSocial account', () => {
  it('reads the aliases of an actor whose context makes them plain strings', async () => {
    const gts = await gtsLikeHost([uriOn(a, gail)]);
    try {
      await submit(await browserOf(a, gail), '/settings/migration', { acct: `gts@${gts.domain}`, current_password: gail.password });
      expect((await api(a, dan, 'GET', `/api/v1/accounts/${gail.id}`)).moved).toMatchObject({ acct: `gts@${gts.domain}` });
    } finally {
      await gts.close();
    }
  });
});
