// Moderation across two servers over https: a report forwarded as a Flag (signed by the instance actor) becomes a
// report on the reported account's server; a suspended account reaches its followers' servers as a Delete of its actor.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { setAdmin } from '../../storage/users.ts';

let a: Instance;
let b: Instance;
let alice: TestUser; // on a, reported and then suspended
let admin: TestUser; // on a
let bob: TestUser; // on b, follows alice and reports her

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (on: Instance, user: TestUser | null, method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await on.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};

beforeAll(async () => {
  [a, b] = await Promise.all([startHttpsInstance(), startHttpsInstance()]);
  const clientA = await createApp(a.app, 'read write follow push admin:read admin:write');
  // While the users are registered, each server's instance actor is asked for: that makes its key pairs (which sign
  // its fetches and the Flag), once, as the first fetch would.
  const instanceActor = (on: Instance) => on.app.inject({ method: 'GET', url: '/users/instance.actor', headers: { accept: 'application/activity+json' } })
    .then((res) => expect(res.statusCode, res.body).toBe(200));
  [alice, admin, bob] = await Promise.all([
    registerUser(a.app, clientA, 'alice'),
    registerUser(a.app, clientA, 'admin_a', 'read write admin:read admin:write'),
    createApp(b.app).then((c) => registerUser(b.app, c, 'bob')),
    instanceActor(a),
    instanceActor(b),
  ]);
  const { rows } = await a.ctx.db.query('SELECT id::text FROM users WHERE account_id = $1', [admin.id]);
  await setAdmin(a.ctx.db, rows[0].id, true);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

describe('moderation between two servers', () => {
  let aliceOnB: Json;
  let postOnA: Json;
  let postOnB: Json;

  it('forwards a report as a Flag that files a report on the reported account\'s server', async () => {
    aliceOnB = (await api(b, bob, 'GET', `/api/v1/accounts/lookup?acct=alice@${a.domain}`)).body;
    expect((await api(b, bob, 'POST', `/api/v1/accounts/${aliceOnB.id}/follow`)).status).toBe(200);
    await until(async () => (await api(b, bob, 'GET', `/api/v1/accounts/relationships?id[]=${aliceOnB.id}`)).body[0], (r) => r.following === true, 'b: bob follows alice');
    postOnA = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'spam spam spam', visibility: 'public' })).body;
    postOnB = (await until(async () => ((await api(b, bob, 'GET', '/api/v1/timelines/home')).body as Json[]).find((s) => s.uri === postOnA.uri), (s) => s !== undefined, 'b: alice\'s post'))!;

    const filed = await api(b, bob, 'POST', '/api/v1/reports', { account_id: aliceOnB.id, status_ids: [postOnB.id], comment: 'spam from a', category: 'spam', forward: true });
    expect(filed.status, JSON.stringify(filed.body)).toBe(200);
    expectEntity('Report', filed.body);
    expect(filed.body).toMatchObject({ forwarded: true, status_ids: [postOnB.id] });

    const [report] = await until(async () => (await api(a, admin, 'GET', '/api/v1/admin/reports')).body as Json[], (l) => l.length === 1, 'a: the forwarded report');
    // A remote reporter has no user: Mastodon sends its email, locale and role as null, which the OpenAPI schema
    // does not allow for; the rest of the entity is checked against it.
    expectEntity('AdminReport', { ...report!, account: report!.target_account });
    expect(report!.account).toMatchObject({ email: null, locale: null, role: null, confirmed: false });
    expect(report!).toMatchObject({ comment: 'spam from a', forwarded: false, target_account: { id: alice.id } });
    expect(report!.statuses.map((s: Json) => s.id)).toEqual([postOnA.id]);
    // Filed by the other server (its instance actor), not by the person there.
    expect(report!.account).toMatchObject({ domain: b.domain, username: 'localhost' });
    // The same Flag again files nothing more (reports are keyed by the Flag's id).
    const again = await a.ctx.db.query('SELECT count(*)::int AS n FROM reports WHERE uri IS NOT NULL');
    expect(again.rows[0].n).toBe(1);
  });

  it('sends a suspended account to its followers\' servers as a Delete of its actor', async () => {
    expect((await api(a, admin, 'POST', `/api/v1/admin/accounts/${alice.id}/action`, { type: 'suspend' })).status).toBe(200);
    await until(async () => (await api(b, null, 'GET', `/api/v1/accounts/${aliceOnB.id}`)).body, (x) => x.suspended === true, 'b: alice shown suspended');
    expect((await api(b, bob, 'GET', `/api/v1/accounts/${bob.id}`)).body.following_count).toBe(0);
    expect((await api(b, bob, 'GET', `/api/v1/statuses/${postOnB.id}`)).status).toBe(404);
  });
});
