// The pages of what a person muted and blocked (http/web/client-blocks.ts) and of one filtered notification request
// with the list's bulk accept and dismiss (client-notification-requests.ts): each lists what the API lists for the
// same person, each form needs the session's CSRF token and answers with a redirect, and bad input, others' things
// and unknown ids get a clear 4xx page with nothing changed.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let web: WebClient;
let bobWeb: WebClient;

const api = async (who: TestUser, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? (res.json() as unknown) : null };
};
const list = async (who: TestUser, url: string) => (await api(who, 'GET', url)).body as Json[];

/** A form with repeated fields (check boxes of one name), as a browser sends it. */
async function postForm(client: WebClient, url: string, fields: [string, string][], page: string) {
  const res = await client.app.inject({
    method: 'POST', url, payload: new URLSearchParams([['_csrf', csrfOf(page)], ...fields]).toString(),
    headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: client.jar.header() },
  });
  client.jar.take(res.headers['set-cookie']);
  return res;
}

beforeAll(async () => {
  s = await startTestServer();
  [alice, bob, carol, dave] = await registerUsers(s.app, 'alice', 'bob', 'carol', 'dave');
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
  bobWeb = new WebClient(s.app);
  expect((await bobWeb.signIn(bob.email, bob.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
});

describe('muted and blocked accounts', () => {
  it('lists the mutes with when they end and unmutes from the list, as GET /api/v1/mutes lists them', async () => {
    expect((await api(alice, 'POST', `/api/v1/accounts/${bob.id}/mute`, { duration: 3600, notifications: false })).status).toBe(200);
    expect((await api(alice, 'POST', `/api/v1/accounts/${carol.id}/mute`)).status).toBe(200);
    const page = await web.get('/mutes');
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    await expectValidHtml(page.body, '/mutes');
    const bobRow = page.body.slice(page.body.indexOf(`id="mute-${bob.id}"`));
    expect(bobRow.slice(0, bobRow.indexOf('</li>'))).toMatch(/Until <time datetime="[^"]+">[^<]+<\/time>, notifications still come/);
    const carolRow = page.body.slice(page.body.indexOf(`id="mute-${carol.id}"`));
    expect(carolRow.slice(0, carolRow.indexOf('</li>'))).toContain('Until you unmute, notifications hidden');
    expect(page.body).toContain(`action="/accounts/${bob.id}/unmute"`);
    // Bob's own list is his: alice's mutes are not on it.
    expect((await bobWeb.get('/mutes')).body).not.toContain(`id="mute-${carol.id}"`);

    const unmuted = await web.post(`/accounts/${bob.id}/unmute`, { return_to: '/mutes' }, page.body);
    expect([unmuted.statusCode, unmuted.headers.location]).toEqual([303, '/mutes']);
    expect((await list(alice, '/api/v1/mutes')).map((a) => a.id)).toEqual([carol.id]);
    expect((await web.get('/mutes')).body).not.toContain(`id="mute-${bob.id}"`);
    // Without the session's token nothing changes.
    expect((await web.post(`/accounts/${carol.id}/unmute`, { return_to: '/mutes' })).statusCode).toBe(403);
    expect((await list(alice, '/api/v1/mutes')).map((a) => a.id)).toEqual([carol.id]);
    await web.post(`/accounts/${carol.id}/unmute`, { return_to: '/mutes' }, page.body);
    expect((await web.get('/mutes')).body).toContain('You have muted no one.');
  });

  it('lists the blocks and unblocks from the list; an unknown account is a 404 page', async () => {
    expect((await api(alice, 'POST', `/api/v1/accounts/${dave.id}/block`)).status).toBe(200);
    const page = await web.get('/blocks');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/blocks');
    expect(page.body).toContain(`id="block-${dave.id}"`);
    expect(page.body).toContain(`action="/accounts/${dave.id}/unblock"`);
    const unknown = await web.post('/accounts/999999999/unblock', { return_to: '/blocks' }, page.body);
    expect(unknown.statusCode).toBe(404);
    const unblocked = await web.post(`/accounts/${dave.id}/unblock`, { return_to: '/blocks' }, page.body);
    expect([unblocked.statusCode, unblocked.headers.location]).toEqual([303, '/blocks']);
    expect(await list(alice, '/api/v1/blocks')).toEqual([]);
    expect((await web.get('/blocks')).body).toContain('You have blocked no one.');
  });

  it('sends a stranger to sign in', async () => {
    for (const path of ['/mutes', '/blocks', '/domain_blocks', '/notifications/requests/1']) {
      const res = await s.app.inject({ method: 'GET', url: path, headers: { accept: 'text/html' } });
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location, path).toMatch(/^\/auth\/sign_in/);
    }
    const form = await s.app.inject({ method: 'POST', url: '/domain_blocks', payload: 'domain=example.com', headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.statusCode).toBe(403);
  });
});

describe('blocked servers', () => {
  it('blocks a server typed or pasted as a link, lists it as the API does, and unblocks it', async () => {
    const page = await web.get('/domain_blocks');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/domain_blocks');
    expect(page.body).toContain('You have blocked no server.');
    const added = await web.post('/domain_blocks', { domain: 'https://Spam.Example/@someone' }, page.body);
    expect([added.statusCode, added.headers.location]).toEqual([303, '/domain_blocks']);
    await web.post('/domain_blocks', { domain: 'bücher.example' }, page.body);
    expect(((await list(alice, '/api/v1/domain_blocks')) as unknown as string[]).sort()).toEqual(['spam.example', 'xn--bcher-kva.example']);
    const listed = await web.get('/domain_blocks');
    await expectValidHtml(listed.body, '/domain_blocks with blocks');
    expect(listed.body).toContain('<span class="domain-name">spam.example</span>');
    expect(listed.body).toContain('name="domain" value="xn--bcher-kva.example"');
    // Bob blocked nothing.
    expect((await bobWeb.get('/domain_blocks')).body).not.toContain('spam.example');

    const removed = await web.post('/domain_blocks/remove', { domain: 'spam.example' }, listed.body);
    expect([removed.statusCode, removed.headers.location]).toEqual([303, '/domain_blocks']);
    expect(await list(alice, '/api/v1/domain_blocks')).toEqual(['xn--bcher-kva.example']);
    // Removing one not blocked changes nothing, as DELETE /api/v1/domain_blocks.
    expect((await web.post('/domain_blocks/remove', { domain: 'never.example' }, listed.body)).statusCode).toBe(303);
    await web.post('/domain_blocks/remove', { domain: 'xn--bcher-kva.example' }, listed.body);
    expect(await list(alice, '/api/v1/domain_blocks')).toEqual([]);
  });

  it('refuses a blank or malformed domain and this server itself, the form coming back with why (422)', async () => {
    const page = await web.get('/domain_blocks');
    const blank = await web.post('/domain_blocks', { domain: '  ' }, page.body);
    expect(blank.statusCode).toBe(422);
    expect(blank.body).toContain('Domain can&#39;t be blank');
    const bad = await web.post('/domain_blocks', { domain: 'not a <domain>' }, page.body);
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('Domain is not a valid domain name');
    expect(bad.body).toContain('value="not a &lt;domain&gt;"');
    expect(bad.body).toContain('aria-invalid="true"');
    await expectValidHtml(bad.body, '/domain_blocks refused');
    const own = await web.post('/domain_blocks', { domain: s.ctx.config.localDomain }, page.body);
    expect(own.statusCode).toBe(422);
    expect(own.body).toContain('Domain cannot be your own server');
    expect((await web.post('/domain_blocks/remove', { domain: '' }, page.body)).statusCode).toBe(422);
    // Longer than any domain, refused before it is read.
    expect((await web.post('/domain_blocks', { domain: 'x'.repeat(301) }, page.body)).statusCode).toBe(422);
    expect((await web.post('/domain_blocks', { domain: 'nope.example' })).statusCode).toBe(403);
    expect(await list(alice, '/api/v1/domain_blocks')).toEqual([]);
  });
});

describe('one filtered notification request, and several at once', () => {
  /** Bob's requests, once `n` are there. */
  const requestsOfBob = (n: number) => vi.waitFor(async () => {
    const rows = await list(bob, '/api/v1/notifications/requests');
    expect(rows.length).toBe(n);
    return rows;
  }, { timeout: 5000 });

  it('shows the notifications kept aside from one sender, with Accept and Dismiss; another\'s request is not found', async () => {
    expect((await api(bob, 'PUT', '/api/v2/notifications/policy', { for_not_following: 'filter' })).status).toBe(200);
    await api(carol, 'POST', '/api/v1/statuses', { status: '@bob first word from carol' });
    await api(carol, 'POST', '/api/v1/statuses', { status: '@bob second word from carol' });
    await api(dave, 'POST', '/api/v1/statuses', { status: '@bob a word from dave' });
    const [first] = await requestsOfBob(2);
    await vi.waitFor(async () => expect((await list(bob, '/api/v1/notifications/requests')).map((r) => r.notifications_count).sort()).toEqual(['1', '2']), { timeout: 5000 });
    const rows = await list(bob, '/api/v1/notifications/requests');
    const carols = rows.find((r) => r.account.id === carol.id)!;
    const daves = rows.find((r) => r.account.id === dave.id)!;
    expect(first).toBeTruthy();

    const listPage = await bobWeb.get('/notifications/requests');
    expect(listPage.body).toContain(`href="/notifications/requests/${carols.id}"`);
    const page = await bobWeb.get(`/notifications/requests/${carols.id}`);
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, 'a notification request');
    expect(page.body).toContain('first word from carol');
    expect(page.body).toContain('second word from carol');
    expect(page.body).not.toContain('a word from dave');
    expect(page.body).toContain('2 notifications kept aside');
    expect(page.body).toContain(`action="/notifications/requests/${carols.id}/accept"`);
    // Alice may not read bob's request; an unknown or malformed id is not found either.
    expect((await web.get(`/notifications/requests/${carols.id}`)).statusCode).toBe(404);
    expect((await bobWeb.get('/notifications/requests/999999999')).statusCode).toBe(404);
    expect((await bobWeb.get('/notifications/requests/x')).statusCode).toBe(404);

    // Accepting from its page leads back to the list; the page is then gone, the notifications in Notifications.
    const accepted = await bobWeb.post(`/notifications/requests/${carols.id}/accept`, { return_to: '/notifications/requests' }, page.body);
    expect([accepted.statusCode, accepted.headers.location]).toEqual([303, '/notifications/requests']);
    expect((await bobWeb.get(`/notifications/requests/${carols.id}`)).statusCode).toBe(404);
    expect((await bobWeb.get('/notifications')).body).toContain('second word from carol');
    expect((await list(bob, '/api/v1/notifications/requests')).map((r) => r.id)).toEqual([daves.id]);
  });

  it('accepts or dismisses the requests ticked on the list, passing over ids that are not the person\'s', async () => {
    const others = await registerUsers(s.app, 'erin', 'frank', 'gina');
    for (const o of others) await api(o, 'POST', '/api/v1/statuses', { status: `@bob hello from ${o.username}` });
    const rows = await requestsOfBob(4);
    const idOf = (who: TestUser) => rows.find((r) => r.account.id === who.id)!.id as string;
    const page = await bobWeb.get('/notifications/requests');
    expect(page.body).toContain('form="chosen-requests"');
    await expectValidHtml(page.body, '/notifications/requests with check boxes');

    // Alice has one request of her own, which bob's bulk form cannot touch.
    expect((await api(alice, 'PUT', '/api/v2/notifications/policy', { for_not_following: 'filter' })).status).toBe(200);
    await api(others[2], 'POST', '/api/v1/statuses', { status: '@alice hello alice' });
    const alices = await vi.waitFor(async () => {
      const r = await list(alice, '/api/v1/notifications/requests');
      expect(r.length).toBe(1);
      return r;
    }, { timeout: 5000 });

    const none = await postForm(bobWeb, '/notifications/requests/accept', [], page.body);
    expect(none.statusCode).toBe(422);
    expect(none.body).toContain('Choose the requests to accept.');
    await expectValidHtml(none.body, 'bulk form refused');

    const accepted = await postForm(bobWeb, '/notifications/requests/accept', [['id[]', idOf(others[0])], ['id[]', idOf(others[1])], ['id[]', alices[0]!.id]], page.body);
    expect([accepted.statusCode, accepted.headers.location]).toEqual([303, '/notifications/requests']);
    expect((await list(bob, '/api/v1/notifications/requests')).map((r) => r.account.id).sort()).toEqual([dave.id, others[2].id].sort());
    expect(await list(alice, '/api/v1/notifications/requests')).toHaveLength(1);
    const notes = (await bobWeb.get('/notifications')).body;
    expect(notes).toContain('hello from erin');
    expect(notes).toContain('hello from frank');

    const dismissed = await postForm(bobWeb, '/notifications/requests/dismiss', [['id[]', idOf(others[2])], ['id[]', idOf(dave)]], page.body);
    expect([dismissed.statusCode, dismissed.headers.location]).toEqual([303, '/notifications/requests']);
    expect(await list(bob, '/api/v1/notifications/requests')).toEqual([]);
    expect((await bobWeb.get('/notifications')).body).not.toContain('hello from gina');
    // Without the token, nothing is done.
    expect((await bobWeb.post('/notifications/requests/dismiss', { id: alices[0]!.id })).statusCode).toBe(403);
    expect(await list(alice, '/api/v1/notifications/requests')).toHaveLength(1);
  });
});

