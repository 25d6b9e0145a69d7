import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { closeContext, createContext } from '../../server.ts';
import { buildApp } from '../../http/app.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';

// What other servers (and browsers) read of this one: WebFinger, NodeInfo, actors, collections, statuses as Notes.
let s: TestServer;
let ida: TestUser;
let jon: TestUser;
const AP = { accept: 'application/activity+json' };

beforeAll(async () => {
  s = await startTestServer({ LOCAL_DOMAIN: 'fed.example' });
  [ida, jon] = await registerUsers(s.app, 'ida', 'jon');
});
afterAll(async () => s?.close());

const get = (url: string, headers: Record<string, string> = {}) => s.app.inject({ method: 'GET', url, headers });

describe('discovery', () => {
  it('answers WebFinger for local accounts, case-insensitively, and 404 for others', async () => {
    const res = await get('/.well-known/webfinger?resource=acct:IDA@fed.example');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      links: expect.arrayContaining([expect.objectContaining({ rel: 'self', type: 'application/activity+json', href: 'http://fed.example/users/ida' })]),
    });
    expect((await get('/.well-known/webfinger?resource=acct:nobody@fed.example')).statusCode).toBe(404);
    expect((await get('/.well-known/webfinger?resource=acct:ida@elsewhere.example')).statusCode).toBe(404);
  });

  it('publishes host-meta and NodeInfo 2.1 with real usage counts', async () => {
    const hostMeta = await get('/.well-known/host-meta');
    expect(hostMeta.statusCode).toBe(200);
    expect(hostMeta.body).toContain('http://fed.example/.well-known/webfinger?resource={uri}');
    const links = (await get('/.well-known/nodeinfo')).json();
    expect(links.links[0].href).toBe('http://fed.example/nodeinfo/2.1');
    await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ida.token), payload: { status: 'counted' } });
    const info = (await get('/nodeinfo/2.1')).json();
    expect(info).toMatchObject({ version: '2.1', protocols: ['activitypub'], software: { name: 'fedi-server' }, openRegistrations: true });
    expect(info.usage.users.total).toBe(2);
    expect(info.usage.localPosts).toBeGreaterThanOrEqual(1);
    expect(info.metadata.instanceActor).toBe('http://fed.example/users/instance.actor');
  });

  it('has an instance actor: an Application with its own key, found by the domain\'s handle, the same in every process', async () => {
    const jrd = (await get('/.well-known/webfinger?resource=acct:fed.example@fed.example')).json();
    expect(jrd.links).toContainEqual(expect.objectContaining({ rel: 'self', href: 'http://fed.example/users/instance.actor' }));
    const res = await get('/users/instance.actor', AP);
    expect(res.statusCode).toBe(200);
    const actor = res.json();
    expect(actor).toMatchObject({
      id: 'http://fed.example/users/instance.actor', type: 'Application', preferredUsername: 'fed.example', manuallyApprovesFollowers: true,
      inbox: 'http://fed.example/users/instance.actor/inbox', publicKey: { id: 'http://fed.example/users/instance.actor#main-key' },
    });
    expect(actor.publicKey.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    // A second process on the same database publishes the same key (made once, stored).
    const other = await createContext(s.config);
    const otherApp = await buildApp(other, { logger: false });
    try {
      const again = (await otherApp.inject({ method: 'GET', url: '/users/instance.actor', headers: AP })).json();
      expect(again.publicKey.publicKeyPem).toBe(actor.publicKey.publicKeyPem);
    } finally {
      await otherApp.close();
      await closeContext(other);
    }
    // The instance actor is no account: not in the API, not a user name anyone can take.
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=instance.actor' })).statusCode).toBe(404);
  });
});

describe('actors', () => {
  it('serves a Person with keys, inbox, collections and shared inbox to ActivityPub clients', async () => {
    await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(jon.token), payload: { locked: true, display_name: 'Jon <b>Doe</b>' } });
    const res = await get('/users/jon', AP);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/activity\+json/);
    const person = res.json();
    expect(person).toMatchObject({
      id: 'http://fed.example/users/jon', type: 'Person', preferredUsername: 'jon', name: 'Jon <b>Doe</b>',
      inbox: 'http://fed.example/users/jon/inbox', outbox: 'http://fed.example/users/jon/outbox',
      followers: 'http://fed.example/users/jon/followers', following: 'http://fed.example/users/jon/following',
      featured: 'http://fed.example/users/jon/collections/featured',
      endpoints: { sharedInbox: 'http://fed.example/inbox' }, manuallyApprovesFollowers: true, url: 'http://fed.example/@jon',
      publicKey: { id: 'http://fed.example/users/jon#main-key', owner: 'http://fed.example/users/jon' },
    });
    expect(person.publicKey.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(person.assertionMethod.length).toBe(2); // RSA and Ed25519, as Fedify publishes them
    expect((await get('/users/nobody', AP)).statusCode).toBe(404);
  });

  it('pages the followers collection with counts', async () => {
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${ida.id}/follow`, headers: bearer(jon.token) });
    const collection = (await get('/users/ida/followers', AP)).json();
    expect(collection).toMatchObject({ type: 'OrderedCollection', totalItems: 1 });
    const first = (await get(new URL(collection.first).pathname + new URL(collection.first).search, AP)).json();
    expect(first.orderedItems).toEqual(['http://fed.example/users/jon']);
  });

  it('sends browsers to a readable page, with what users typed escaped', async () => {
    const redirect = await get('/users/jon', { accept: 'text/html' });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('/@jon');
    const page = await get('/@jon', { accept: 'text/html' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('Jon &lt;b&gt;Doe&lt;/b&gt;');
    expect(page.body).not.toContain('<b>Doe</b>');
  });

  it('does not show accounts waiting for approval', async () => {
    const held = await startTestServer({ LOCAL_DOMAIN: 'held.example', REGISTRATIONS_MODE: 'approved' });
    try {
      const client = await createApp(held.app);
      const token = (await held.app.inject({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: 'write:accounts' } })).json().access_token;
      const reg = await held.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: bearer(token), payload: { username: 'waiting', email: 'w@example.com', password: 'a long password', agreement: true, locale: 'en', reason: 'hello' } });
      expect(reg.statusCode, reg.body).toBe(200);
      expect((await held.app.inject({ method: 'GET', url: '/users/waiting', headers: AP })).statusCode).toBe(404);
      expect((await held.app.inject({ method: 'GET', url: '/.well-known/webfinger?resource=acct:waiting@held.example' })).statusCode).toBe(404);
    } finally {
      await held.close();
    }
  });
});

describe('outbox', () => {
  it('lists public and unlisted statuses as Create activities, newest first, with the count', async () => {
    const [ola] = await registerUsers(s.app, 'ola');
    const post = async (status: string, visibility: string) => (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ola!.token), payload: { status, visibility } })).json();
    const open = await post('out in the open', 'public');
    const quiet = await post('quietly', 'unlisted');
    await post('for followers', 'private');
    const collection = (await get('/users/ola/outbox', AP)).json();
    expect(collection).toMatchObject({ type: 'OrderedCollection', totalItems: 3 });
    const first = (await get(new URL(collection.first).pathname + new URL(collection.first).search, AP)).json();
    expect(first.orderedItems.map((a: { type: string; object: { id: string } }) => [a.type, a.object.id])).toEqual([['Create', quiet.uri], ['Create', open.uri]]);
    expect(JSON.stringify(first)).not.toContain('for followers');
  });

  it('lists reblogs as Announces addressed by their own visibility', async () => {
    const [pam, quin] = await registerUsers(s.app, 'pam', 'quin');
    const original = (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(quin!.token), payload: { status: 'worth sharing' } })).json();
    const reblog = async (visibility: string) => {
      const res = await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${original.id}/reblog`, headers: bearer(pam!.token), payload: { visibility } });
      expect(res.statusCode, res.body).toBe(200);
    };
    await reblog('unlisted');
    const collection = (await get('/users/pam/outbox', AP)).json();
    const first = (await get(new URL(collection.first).pathname + new URL(collection.first).search, AP)).json();
    const followers = 'http://fed.example/users/pam/followers';
    const PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
    const asList = (x: unknown) => (Array.isArray(x) ? x : [x]);
    expect(first.orderedItems).toHaveLength(1);
    const announce = first.orderedItems[0];
    expect(announce).toMatchObject({ type: 'Announce', object: original.uri });
    expect(asList(announce.to)).toEqual([followers]);
    expect(asList(announce.cc)).toEqual(expect.arrayContaining(['http://fed.example/users/quin', PUBLIC]));

    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${original.id}/unreblog`, headers: bearer(pam!.token) });
    await reblog('public');
    const again = (await get(new URL(collection.first).pathname + new URL(collection.first).search, AP)).json();
    expect(asList(again.orderedItems[0].to)).toEqual([PUBLIC]);
    expect(asList(again.orderedItems[0].cc)).toEqual(expect.arrayContaining(['http://fed.example/users/quin', followers]));
  });
});

describe('bad paging and ids', () => {
  it('answers a bad cursor or an id beyond 64 bits without a 500', async () => {
    for (const url of ['/users/ida/followers?cursor=abc', '/users/ida/following?cursor=1%27', '/users/ida/outbox?cursor=99999999999999999999']) {
      expect((await get(url, AP)).statusCode, url).toBeLessThan(500);
    }
    for (const url of ['/users/ida/statuses/99999999999999999999', '/@ida/99999999999999999999']) {
      expect((await get(url, AP)).statusCode, url).toBe(404);
      expect((await get(url, { accept: 'text/html' })).statusCode, url).toBe(404);
    }
  });
});

describe('statuses as Notes', () => {
  it('serves public statuses at their uri, and nothing for private or deleted ones', async () => {
    const post = async (payload: object) => (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ida.token), payload })).json();
    const open = await post({ status: 'hello #world', spoiler_text: 'cw', visibility: 'public' });
    const path = new URL(open.uri).pathname;
    const note = (await get(path, AP)).json();
    expect(note).toMatchObject({
      id: open.uri, type: 'Note', attributedTo: 'http://fed.example/users/ida', summary: 'cw', sensitive: true,
      to: 'https://www.w3.org/ns/activitystreams#Public', url: `http://fed.example/@ida/${open.id}`,
    });
    expect(note.content).toContain('hello');
    expect(JSON.stringify(note)).not.toMatch(/deleted/i);
    const browser = await get(path, { accept: 'text/html' });
    expect(browser.statusCode).toBe(302);

    const closed = await post({ status: 'followers only', visibility: 'private' });
    expect((await get(new URL(closed.uri).pathname, AP)).statusCode).toBe(404);
    await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${open.id}`, headers: bearer(ida.token) });
    expect((await get(path, AP)).statusCode).toBe(404);
  });

  it('carries FEP-044f quotes and who may quote, as Mastodon 4.5 writes them, and serves the stamp', async () => {
    const post = async (user: TestUser, payload: object) => (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload })).json();
    const AS_PUBLIC = ['as:Public', 'https://www.w3.org/ns/activitystreams#Public'];
    const asArray = (v: unknown) => (Array.isArray(v) ? v : [v]);
    const quoted = await post(ida, { status: 'quote me', quote_approval_policy: 'public' });
    const followersOnly = await post(ida, { status: 'followers may quote', quote_approval_policy: 'followers' });
    const nobody = await post(ida, { status: 'nobody may quote', quote_approval_policy: 'nobody' });
    const doc = async (uri: string) => (await get(new URL(uri).pathname, AP)).json();
    const plain = await doc(quoted.uri);
    expect(AS_PUBLIC).toContain(asArray(plain.interactionPolicy.canQuote.automaticApproval)[0]);
    expect(plain.quote).toBeUndefined();
    expect(asArray((await doc(followersOnly.uri)).interactionPolicy.canQuote.automaticApproval)).toEqual(['http://fed.example/users/ida/followers']);
    expect(asArray((await doc(nobody.uri)).interactionPolicy.canQuote.automaticApproval)).toEqual(['http://fed.example/users/ida']);
    // The context defines the terms as Mastodon's does (GoToSocial's namespace for the policy, FEP-044f for quotes).
    expect(JSON.stringify(plain['@context'])).toContain('https://gotosocial.org/ns');

    const quoting = await post(jon, { status: 'look at this', quoted_status_id: quoted.id });
    const note = await doc(quoting.uri);
    const stamp = note.quoteAuthorization as string;
    expect(note).toMatchObject({ quote: quoted.uri, _misskey_quote: quoted.uri, quoteUri: quoted.uri });
    expect(stamp).toMatch(/^http:\/\/fed\.example\/users\/ida\/quote_authorizations\/\d+$/);
    expect(JSON.stringify(note['@context'])).toContain('https://w3id.org/fep/044f#quote');
    const authorization = await get(new URL(stamp).pathname, AP);
    expect(authorization.statusCode).toBe(200);
    expect(authorization.json()).toMatchObject({
      id: stamp, type: 'QuoteAuthorization', attributedTo: 'http://fed.example/users/ida', interactingObject: quoting.uri, interactionTarget: quoted.uri,
    });
    // Revoked: the stamp is gone, and the Note no longer names one.
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${quoted.id}/quotes/${quoting.id}/revoke`, headers: bearer(ida.token) })).statusCode).toBe(200);
    expect((await get(new URL(stamp).pathname, AP)).statusCode).toBe(404);
    expect((await doc(quoting.uri)).quoteAuthorization).toBeUndefined();
  });
});

describe('inbox', () => {
  it('refuses an unsigned activity with 401 and a body over the limit with 413', async () => {
    const activity = { '@context': 'https://www.w3.org/ns/activitystreams', id: 'https://evil.example/a/1', type: 'Follow', actor: 'https://evil.example/users/x', object: 'http://fed.example/users/ida' };
    const res = await s.app.inject({ method: 'POST', url: '/users/ida/inbox', headers: { 'content-type': 'application/activity+json' }, payload: JSON.stringify(activity) });
    expect(res.statusCode).toBe(401);
    const big = await s.app.inject({ method: 'POST', url: '/inbox', headers: { 'content-type': 'application/activity+json' }, payload: 'x'.repeat(2 * 1024 * 1024) });
    expect(big.statusCode).toBe(413);
    const { rows } = await s.ctx.db.query(`SELECT count(*)::int AS n FROM accounts WHERE domain IS NOT NULL`);
    expect(rows[0].n).toBe(0);
  });
});


describe('operators', () => {
  it('shows queue depths and failures to operators who may view devops only (the Owner)', async () => {
    const client = await createApp(s.app, 'read write follow push admin:read');
    const admin = await registerUser(s.app, client, 'operator', 'read admin:read');
    const plain = await registerUser(s.app, client, 'plain', 'read admin:read');
    await s.ctx.db.query("UPDATE users SET role_id = (SELECT id FROM user_roles WHERE name = 'Owner') WHERE account_id = $1", [admin.id]);
    const res = await get('/admin/queues', bearer(admin.token));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ fanout: { waiting: expect.any(Number), failed: expect.any(Number) }, pull: { waiting: expect.any(Number), active: expect.any(Number), recent_failures: [] }, federation: { queued: expect.any(Number) } });
    expect((await get('/admin/queues', bearer(plain.token))).statusCode).toBe(403);
    expect((await get('/admin/queues', bearer(ida.token))).statusCode).toBe(403); // no admin:read scope
    expect((await get('/admin/queues')).statusCode).toBe(401);
  });
});
