// Every write route, fed malformed and mistyped bodies: always a 4xx with Mastodon's error entity, never a 500, nothing written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';

let s: TestServer;
let eve: TestUser;
let fay: TestUser;
let app: string;

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app);
  [eve, fay] = await Promise.all([registerUser(s.app, client, 'eve'), registerUser(s.app, client, 'fay')]);
  app = await appToken(s.app, client);
});
afterAll(async () => s?.close());

async function snapshot() {
  const { rows } = await s.ctx.db.query(`SELECT
    (SELECT count(*) FROM accounts)::int AS accounts, (SELECT count(*) FROM users)::int AS users,
    (SELECT count(*) FROM follows)::int AS follows, (SELECT count(*) FROM follow_requests)::int AS requests,
    (SELECT count(*) FROM oauth_applications)::int AS apps, (SELECT count(*) FROM oauth_access_tokens)::int AS tokens,
    (SELECT count(*) FROM statuses)::int AS statuses, (SELECT count(*) FROM markers)::int AS markers,
    (SELECT string_agg(display_name || note_source || locked::text || bot::text, ',' ORDER BY id) FROM accounts) AS profiles`);
  return rows[0];
}

const routes = () => [
  { method: 'POST' as const, url: '/api/v1/apps', token: undefined },
  { method: 'POST' as const, url: '/api/v1/accounts', token: app },
  { method: 'PATCH' as const, url: '/api/v1/accounts/update_credentials', token: eve.token },
  { method: 'POST' as const, url: `/api/v1/accounts/${fay.id}/follow`, token: eve.token },
  { method: 'POST' as const, url: `/api/v1/accounts/${fay.id}/unfollow`, token: eve.token },
  { method: 'POST' as const, url: `/api/v1/follow_requests/${fay.id}/authorize`, token: eve.token },
  { method: 'POST' as const, url: '/api/v1/statuses', token: eve.token },
  { method: 'POST' as const, url: '/api/v1/markers', token: eve.token },
  { method: 'POST' as const, url: '/oauth/token', token: undefined },
  { method: 'POST' as const, url: '/oauth/revoke', token: undefined },
];

describe('bad input on every write route', () => {
  it('answers malformed JSON with 400', async () => {
    const before = await snapshot();
    for (const r of routes()) {
      const res = await s.app.inject({ method: r.method, url: r.url, headers: { 'content-type': 'application/json', ...(r.token ? bearer(r.token) : {}) }, payload: '{"oops": ' });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(400);
      expect(typeof res.json().error, `${r.method} ${r.url}`).toBe('string');
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answers wrong types and strange content types with a 4xx', async () => {
    const before = await snapshot();
    const bodies: [string, string][] = [
      ['application/json', '[1,2,3]'],
      ['application/json', '"a string"'],
      ['application/json', '{"locked":"maybe","reblogs":"maybe","agreement":"maybe","client_name":{"a":1},"redirect_uris":42,"username":["x"],"display_name":{"x":1},"status":{"a":1},"sensitive":"maybe","home":"x"}'],
      ['text/plain', 'hello'],
      // `home[]` for markers (a form naming no timeline at all saves nothing and is answered {}, as by Mastodon).
      ['application/x-www-form-urlencoded', 'fields_attributes[0][name][deep]=1&locked[]=true&reblogs=perhaps&home[]=1'],
      ['multipart/form-data; boundary=nope', '--broken'],
    ];
    // Routes that take parameters in the body (unfollow and authorize take none, and ignore what is sent).
    for (const r of routes().filter((r) => !/unfollow|authorize/.test(r.url))) {
      for (const [type, payload] of bodies) {
        const res = await s.app.inject({ method: r.method, url: r.url, headers: { 'content-type': type, ...(r.token ? bearer(r.token) : {}) }, payload });
        const where = `${r.method} ${r.url} ${type} ${payload}`;
        expect(res.statusCode, where).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, where).toBeLessThan(500);
        expect(typeof res.json().error, where).toBe('string');
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answers oversized JSON with 413', async () => {
    const res = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { 'content-type': 'application/json', ...bearer(eve.token) }, payload: JSON.stringify({ note: 'x'.repeat(2 * 1024 * 1024) }) });
    expect(res.statusCode).toBe(413);
    expect(typeof res.json().error).toBe('string');
  });
});
