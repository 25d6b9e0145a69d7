import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let mo: TestUser;
let ned: TestUser;
let ola: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [mo, ned, ola] = await registerUsers(s.app, 'mo', 'ned', 'ola');
});
afterAll(async () => s?.close());

const req = (method: 'GET' | 'POST', url: string, user: TestUser, payload?: object | string, headers: Record<string, string> = {}) =>
  s.app.inject({ method, url, headers: { ...bearer(user.token), ...headers }, ...(payload !== undefined ? { payload } : {}) });

describe('markers', () => {
  it('saves positions from JSON and forms, raising the version on each update', async () => {
    expect((await req('GET', '/api/v1/markers?timeline[]=home&timeline[]=notifications', mo)).json()).toEqual({});
    const first = await req('POST', '/api/v1/markers', mo, { home: { last_read_id: '100' } });
    expect(first.statusCode).toBe(200);
    expectEntity('Marker', first.json().home);
    expect(first.json().home).toMatchObject({ last_read_id: '100', version: 0 });
    const form = await req('POST', '/api/v1/markers', mo, 'home[last_read_id]=200&notifications[last_read_id]=5', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.json().home).toMatchObject({ last_read_id: '200', version: 1 });
    expect(form.json().notifications).toMatchObject({ last_read_id: '5', version: 0 });
    const both = await req('GET', '/api/v1/markers?timeline[]=home&timeline[]=notifications', mo);
    expect(Object.keys(both.json()).sort()).toEqual(['home', 'notifications']);
    expect((await req('GET', '/api/v1/markers?timeline=home', mo)).json().home.last_read_id).toBe('200');
  });

  it('counts two concurrent updates both', async () => {
    await Promise.all([req('POST', '/api/v1/markers', mo, { home: { last_read_id: '300' } }), req('POST', '/api/v1/markers', mo, { home: { last_read_id: '301' } })]);
    expect((await req('GET', '/api/v1/markers?timeline[]=home', mo)).json().home.version).toBe(3);
  });

  it('refuses bad markers with 422, changing nothing', async () => {
    for (const payload of [{ home: { last_read_id: 'abc' } }, { home: {} }]) {
      expect((await req('POST', '/api/v1/markers', mo, payload)).statusCode, JSON.stringify(payload)).toBe(422);
    }
    // No timeline Mastodon knows: nothing to save, an empty map as Mastodon answers.
    for (const payload of [{}, { feed: { last_read_id: '1' } }]) {
      expect((await req('POST', '/api/v1/markers', mo, payload)).json(), JSON.stringify(payload)).toEqual({});
    }
    expect((await req('GET', '/api/v1/markers?timeline[]=bogus', mo)).statusCode).toBe(422);
    expect((await req('GET', '/api/v1/markers?timeline[]=home', mo)).json().home).toMatchObject({ version: 3 });
  });
});

describe('notifications', () => {
  it('notifies of follows, mentions, favourites and reblogs, and filters them', async () => {
    await req('POST', `/api/v1/accounts/${mo.id}/follow`, ned);
    const st = (await req('POST', '/api/v1/statuses', mo, { status: 'hello' })).json();
    await req('POST', `/api/v1/statuses/${st.id}/favourite`, ned);
    await req('POST', `/api/v1/statuses/${st.id}/favourite`, ned);
    await req('POST', `/api/v1/statuses/${st.id}/reblog`, ola);
    await req('POST', '/api/v1/statuses', ola, { status: 'hey @mo' });
    await req('POST', `/api/v1/statuses/${st.id}/favourite`, mo); // one's own favourite notifies nobody

    const all = await req('GET', '/api/v1/notifications', mo);
    expect(all.statusCode).toBe(200);
    for (const n of all.json()) expectEntity('Notification', n);
    expect(all.json().map((n: { type: string }) => n.type)).toEqual(['mention', 'reblog', 'favourite', 'follow']);
    expect(all.json()[2].status.id).toBe(st.id);
    expect(all.json()[3]).not.toHaveProperty('status');

    const only = await req('GET', '/api/v1/notifications?types[]=favourite&types[]=reblog', mo);
    expect(only.json().map((n: { type: string }) => n.type)).toEqual(['reblog', 'favourite']);
    const without = await req('GET', '/api/v1/notifications?exclude_types[]=mention', mo);
    expect(without.json().map((n: { type: string }) => n.type)).toEqual(['reblog', 'favourite', 'follow']);
    const fromNed = await req('GET', `/api/v1/notifications?account_id=${ned.id}`, mo);
    expect(fromNed.json().map((n: { type: string }) => n.type)).toEqual(['favourite', 'follow']);
    expect((await req('GET', '/api/v1/notifications?types[]=nonsense', mo)).statusCode).toBe(422);

    const one = await req('GET', `/api/v1/notifications/${all.json()[0].id}`, mo);
    expect(one.json().type).toBe('mention');
    expect((await req('GET', `/api/v1/notifications/${all.json()[0].id}`, ned)).statusCode).toBe(404);
  });

  it('counts unread notifications against the marker', async () => {
    const list = (await req('GET', '/api/v1/notifications', mo)).json();
    expect((await req('GET', '/api/v1/notifications/unread_count', mo)).json()).toEqual({ count: 4 });
    await req('POST', '/api/v1/markers', mo, { notifications: { last_read_id: list[1].id } });
    expect((await req('GET', '/api/v1/notifications/unread_count', mo)).json()).toEqual({ count: 1 });
  });

  it('dismisses one and clears all, only one\'s own', async () => {
    const list = (await req('GET', '/api/v1/notifications', mo)).json();
    expect((await req('POST', `/api/v1/notifications/${list[0].id}/dismiss`, ned)).statusCode).toBe(404);
    expect((await req('POST', `/api/v1/notifications/${list[0].id}/dismiss`, mo)).statusCode).toBe(200);
    expect((await req('GET', '/api/v1/notifications', mo)).json()).toHaveLength(list.length - 1);
    expect((await req('POST', '/api/v1/notifications/clear', mo)).statusCode).toBe(200);
    expect((await req('GET', '/api/v1/notifications', mo)).json()).toEqual([]);
  });

  it('notifies locked accounts of follow requests', async () => {
    await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(ola.token), payload: { locked: true } });
    await req('POST', `/api/v1/accounts/${ola.id}/follow`, mo);
    const list = (await req('GET', '/api/v1/notifications?types[]=follow_request', ola)).json();
    expect(list.map((n: { account: { id: string } }) => n.account.id)).toEqual([mo.id]);
  });
});
