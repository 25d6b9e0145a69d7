import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

/** Quote posts as Mastodon 4.5 has them, on one server. */
let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app);
  [alice, bob, carol, dave] = (await Promise.all(['alice', 'bob', 'carol', 'dave'].map((n) => registerUser(s.app, client, n)))) as [TestUser, TestUser, TestUser, TestUser];
});
afterAll(async () => s?.close());

type Json = Record<string, any>;
const call = (user: TestUser | null, method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH', url: string, payload?: object) =>
  s.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
const post = async (user: TestUser, payload: object): Promise<Json> => {
  const res = await call(user, 'POST', '/api/v1/statuses', payload);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
/**
 * A Status with its quote. Mastodon's schema says `quote` is oneOf Quote or ShallowQuote, but both require only
 * `state`, so any quote matches both and oneOf fails: each part is checked against its own schema instead.
 */
function expectStatus(st: Json, shallow = false): void {
  expectEntity('Status', { ...st, quote: null });
  if (!st.quote) return;
  expectEntity(shallow ? 'ShallowQuote' : 'Quote', st.quote);
  expect(Object.keys(st.quote).sort()).toEqual(shallow ? ['quoted_status_id', 'state'] : ['quoted_status', 'state']);
  if (!shallow && st.quote.quoted_status) expectStatus(st.quote.quoted_status, true);
}
const get = async (user: TestUser | null, id: string): Promise<Json> => {
  const res = await call(user, 'GET', `/api/v1/statuses/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  expectStatus(res.json());
  return res.json();
};
const count = async (table: string) => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;

describe('posting a quote', () => {
  it('quotes a public post: accepted, rendered with the quoted status (its own quote shallow), counted, notified', async () => {
    const original = await post(alice, { status: 'original thought' });
    expect(original.quote).toBeNull();
    expect(original.quotes_count).toBe(0);
    expect(original.quote_approval).toEqual({ automatic: ['public'], manual: [], current_user: 'automatic' });
    const quote = await post(bob, { status: 'so true', quoted_status_id: original.id });
    expectStatus(quote);
    expect(quote.quote.state).toBe('accepted');
    expect(quote.quote.quoted_status.id).toBe(original.id);
    expectEntity('Quote', quote.quote);
    expect((await get(alice, original.id)).quotes_count).toBe(1);
    // A quote of a quote: the inner quote is a ShallowQuote.
    const second = await post(carol, { status: 'quoting the quote', quoted_status_id: quote.id });
    expect(second.quote.quoted_status.id).toBe(quote.id);
    expect(second.quote.quoted_status.quote).toEqual({ state: 'accepted', quoted_status_id: original.id });
    expectEntity('ShallowQuote', second.quote.quoted_status.quote);
    // Anonymous readers see the quote too (and may not quote).
    const anon = await get(null, quote.id);
    expect(anon.quote.state).toBe('accepted');
    expect(anon.quote_approval.current_user).toBe('denied');
    // Timelines (cached rendering) show it as well.
    const timeline = (await call(bob, 'GET', `/api/v1/accounts/${bob.id}/statuses`)).json() as Json[];
    expect(timeline.find((st) => st.id === quote.id)?.quote?.quoted_status?.id).toBe(original.id);
    const notes = (await call(alice, 'GET', '/api/v1/notifications?types[]=quote')).json() as Json[];
    expect(notes.map((n) => [n.type, n.account.id, n.status.id])).toEqual([['quote', bob.id, quote.id]]);
    expectEntity('Notification', { ...notes[0], status: { ...notes[0]!.status, quote: null } });
  });

  it('follows the quoted author policy: followers only for followers, nobody for none but the author', async () => {
    const forFollowers = await post(alice, { status: 'followers may quote', quote_approval_policy: 'followers' });
    expect(forFollowers.quote_approval).toEqual({ automatic: ['followers'], manual: [], current_user: 'automatic' });
    expect((await get(dave, forFollowers.id)).quote_approval.current_user).toBe('denied');
    const before = [await count('statuses'), await count('quotes')];
    const refused = await call(dave, 'POST', '/api/v1/statuses', { status: 'nope', quoted_status_id: forFollowers.id });
    expect(refused.statusCode).toBe(404);
    expect(refused.json().error).toBe('The post you are trying to quote does not appear to exist.');
    expect([await count('statuses'), await count('quotes')]).toEqual(before);
    expect((await call(dave, 'POST', `/api/v1/accounts/${alice.id}/follow`)).statusCode).toBe(200);
    expect((await get(dave, forFollowers.id)).quote_approval.current_user).toBe('automatic');
    expect((await post(dave, { status: 'now I may', quoted_status_id: forFollowers.id })).quote.state).toBe('accepted');

    const nobody = await post(alice, { status: 'nobody may quote', quote_approval_policy: 'nobody' });
    expect(nobody.quote_approval).toEqual({ automatic: [], manual: [], current_user: 'automatic' });
    expect((await call(dave, 'POST', '/api/v1/statuses', { status: 'x', quoted_status_id: nobody.id })).statusCode).toBe(404);
    expect((await post(alice, { status: 'quoting myself', quoted_status_id: nobody.id })).quote.state).toBe('accepted');
  });

  it('private posts only by their author (the quote becomes private), direct ones by nobody, blocks refuse', async () => {
    const secret = await post(alice, { status: 'for followers', visibility: 'private' });
    expect(secret.quote_approval.automatic).toEqual([]);
    // Dave follows alice and sees it, but may not quote it.
    expect((await get(dave, secret.id)).quote_approval.current_user).toBe('denied');
    expect((await call(dave, 'POST', '/api/v1/statuses', { status: 'x', quoted_status_id: secret.id })).statusCode).toBe(404);
    const own = await post(alice, { status: 'my own', quoted_status_id: secret.id, visibility: 'public' });
    expect(own.visibility).toBe('private');
    const dm = await post(alice, { status: '@bob hi', visibility: 'direct' });
    expect((await call(bob, 'POST', '/api/v1/statuses', { status: 'x', quoted_status_id: dm.id })).statusCode).toBe(404);
    // Not visible at all: 404 as well.
    expect((await call(carol, 'POST', '/api/v1/statuses', { status: 'x', quoted_status_id: secret.id })).statusCode).toBe(404);
    expect((await call(carol, 'POST', '/api/v1/statuses', { status: 'x', quoted_status_id: '123456' })).statusCode).toBe(404);

    const carolPost = await post(carol, { status: 'carol speaks' });
    expect((await call(carol, 'POST', `/api/v1/accounts/${bob.id}/block`)).statusCode).toBe(200);
    expect((await call(bob, 'POST', '/api/v1/statuses', { status: 'x', quoted_status_id: carolPost.id })).statusCode).toBe(404);
    expect((await call(carol, 'POST', `/api/v1/accounts/${bob.id}/unblock`)).statusCode).toBe(200);
  });

  it('refuses an unknown policy with 422 and writes nothing', async () => {
    const before = await count('statuses');
    const res = await call(alice, 'POST', '/api/v1/statuses', { status: 'x', quote_approval_policy: 'everyone' });
    expect(res.statusCode).toBe(422);
    expect(await count('statuses')).toBe(before);
  });
});

describe('states per viewer', () => {
  it('blocked_account, muted_account, unauthorized, deleted, revoked', async () => {
    const original = await post(carol, { status: 'carol again' });
    const quote = await post(bob, { status: 'bob quotes carol', quoted_status_id: original.id });
    await call(dave, 'POST', `/api/v1/accounts/${carol.id}/block`);
    const blocked = await get(dave, quote.id);
    expect(blocked.quote.state).toBe('blocked_account');
    expect(blocked.quote.quoted_status.id).toBe(original.id);
    await call(dave, 'POST', `/api/v1/accounts/${carol.id}/unblock`);
    await call(dave, 'POST', `/api/v1/accounts/${carol.id}/mute`);
    expect((await get(dave, quote.id)).quote.state).toBe('muted_account');
    await call(dave, 'POST', `/api/v1/accounts/${carol.id}/unmute`);
    // Carol blocks alice: alice may not see carol's post, so the quote is unauthorized for her.
    await call(carol, 'POST', `/api/v1/accounts/${alice.id}/block`);
    expect((await get(alice, quote.id)).quote).toEqual({ state: 'unauthorized', quoted_status: null });
    await call(carol, 'POST', `/api/v1/accounts/${alice.id}/unblock`);
    expect((await get(alice, quote.id)).quote.state).toBe('accepted');

    // Revoked by the quoted author: the count goes down and the quote shows revoked.
    expect((await get(carol, original.id)).quotes_count).toBe(1);
    // Not bob's to revoke: Mastodon's QuotePolicy#revoke? refuses (403); a quote the post does not have is not there.
    expect((await call(bob, 'POST', `/api/v1/statuses/${original.id}/quotes/${quote.id}/revoke`)).statusCode).toBe(403);
    expect((await call(carol, 'POST', `/api/v1/statuses/${original.id}/quotes/${original.id}/revoke`)).statusCode).toBe(404);
    const revoked = await call(carol, 'POST', `/api/v1/statuses/${original.id}/quotes/${quote.id}/revoke`);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expectStatus(revoked.json());
    expect(revoked.json().quote).toEqual({ state: 'revoked', quoted_status: null });
    expect((await get(bob, quote.id)).quote.state).toBe('revoked');
    expect((await get(carol, original.id)).quotes_count).toBe(0);

    // Deleted: the quoting post's quote says so; deleting a quote counts it down.
    const other = await post(carol, { status: 'to be deleted' });
    const q2 = await post(bob, { status: 'quoting what goes', quoted_status_id: other.id });
    expect((await get(carol, other.id)).quotes_count).toBe(1);
    expect((await call(carol, 'DELETE', `/api/v1/statuses/${other.id}`)).statusCode).toBe(200);
    expect((await get(bob, q2.id)).quote).toEqual({ state: 'deleted', quoted_status: null });
    const third = await post(carol, { status: 'quoted then unquoted' });
    const q3 = await post(bob, { status: 'will delete', quoted_status_id: third.id });
    expect((await get(carol, third.id)).quotes_count).toBe(1);
    expect((await call(bob, 'DELETE', `/api/v1/statuses/${q3.id}`)).statusCode).toBe(200);
    expect((await get(carol, third.id)).quotes_count).toBe(0);
  });
});

describe('quotes list, interaction policy, edits, preferences', () => {
  it('lists the accepted quotes of a post, paged with Link headers, to anyone who may see it, less whom they block or mute', async () => {
    const original = await post(alice, { status: 'quote me' });
    const q1 = await post(bob, { status: 'one', quoted_status_id: original.id });
    const q2 = await post(carol, { status: 'two', quoted_status_id: original.id });
    const page = await call(alice, 'GET', `/api/v1/statuses/${original.id}/quotes?limit=1`);
    expect(page.statusCode).toBe(200);
    expect(page.json().map((st: Json) => st.id)).toEqual([q2.id]);
    expect(page.headers.link).toMatch(/max_id=/);
    const next = String(page.headers.link).match(/<([^>]+)>; rel="next"/)![1]!;
    const rest = await call(alice, 'GET', new URL(next).pathname + new URL(next).search);
    expect(rest.json().map((st: Json) => st.id)).toEqual([q1.id]);
    // Others see the list too (Mastodon's QuotesController#index), without the quotes of accounts they mute or block.
    expect((await call(bob, 'GET', `/api/v1/statuses/${original.id}/quotes`)).json().map((st: Json) => st.id)).toEqual([q2.id, q1.id]);
    await call(bob, 'POST', `/api/v1/accounts/${carol.id}/mute`);
    expect((await call(bob, 'GET', `/api/v1/statuses/${original.id}/quotes`)).json().map((st: Json) => st.id)).toEqual([q1.id]);
    await call(bob, 'POST', `/api/v1/accounts/${carol.id}/unmute`);
    // A token is needed (any app's will do), as Mastodon's doorkeeper_authorize!.
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/statuses/${original.id}/quotes` })).statusCode).toBe(401);
  });

  it('changes the policy through interaction_policy and edits; quoters hear of edits', async () => {
    const original = await post(alice, { status: 'policy changes' });
    const quote = await post(carol, { status: 'quoted it', quoted_status_id: original.id });
    const changed = await call(alice, 'PUT', `/api/v1/statuses/${original.id}/interaction_policy`, { quote_approval_policy: 'nobody' });
    expect(changed.statusCode, changed.body).toBe(200);
    expectStatus(changed.json());
    expect(changed.json().quote_approval.automatic).toEqual([]);
    expect((await get(bob, original.id)).quote_approval.current_user).toBe('denied');
    expect((await call(bob, 'PUT', `/api/v1/statuses/${original.id}/interaction_policy`, { quote_approval_policy: 'public' })).statusCode).toBe(404);
    expect((await call(alice, 'PUT', `/api/v1/statuses/${original.id}/interaction_policy`, { quote_approval_policy: 'bogus' })).statusCode).toBe(422);
    const edited = await call(alice, 'PUT', `/api/v1/statuses/${original.id}`, { status: 'policy changed again', quote_approval_policy: 'public' });
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.json().quote_approval.automatic).toEqual(['public']);
    const seen = await get(carol, quote.id);
    expect(seen.quote.quoted_status.content).toContain('policy changed again');
    const notes = (await call(carol, 'GET', '/api/v1/notifications?types[]=quoted_update')).json() as Json[];
    expect(notes.map((n) => [n.type, n.status.id])).toEqual([['quoted_update', original.id]]);
  });

  it('keeps the default policy in preferences and source, used for new posts', async () => {
    const res = await call(dave, 'PATCH', '/api/v1/accounts/update_credentials', { source: { quote_policy: 'followers' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().source.quote_policy).toBe('followers');
    expect((await call(dave, 'GET', '/api/v1/preferences')).json()['posting:default:quote_policy']).toBe('followers');
    expect((await post(dave, { status: 'default policy' })).quote_approval.automatic).toEqual(['followers']);
    expect((await call(dave, 'PATCH', '/api/v1/accounts/update_credentials', { source: { quote_policy: 'all' } })).statusCode).not.toBe(200);
  });
});
