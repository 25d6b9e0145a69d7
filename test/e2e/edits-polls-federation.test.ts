import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

// Edits, polls and pins across two instances of this server over https (b in authorized-fetch mode): an edit reaches
// the follower's server as an Update, a poll as a Question, a vote from the other server is counted, and the end
// reaches it as the final Update; a pin as an Add to the featured collection.
let a: Instance;
let b: Instance;
let alice: TestUser; // on a
let carol: TestUser; // on a
let bob: TestUser; // on b, follows alice

beforeAll(async () => {
  [a, b] = await Promise.all([startHttpsInstance(), startHttpsInstance({ AUTHORIZED_FETCH: 'true' })]);
  [[alice, carol], [bob]] = await Promise.all([registerUsers(a.app, 'alice', 'carol'), registerUsers(b.app, 'bob')]);
  const found = await api(b, bob, 'GET', `/api/v1/accounts/lookup?acct=alice@${a.domain}`);
  expect(found.status).toBe(200);
  await api(b, bob, 'POST', `/api/v1/accounts/${found.body.id}/follow`);
  await until(async () => (await api(a, alice, 'GET', `/api/v1/accounts/${alice.id}/followers`)).body as Json[], (l) => l.length === 1, 'a: bob follows alice');
  // b takes alice's posts once it has her Accept (before, bob's follow is only a request there).
  await until(async () => (await api(b, bob, 'GET', `/api/v1/accounts/relationships?id[]=${found.body.id}`)).body[0], (r) => r.following === true, 'b: the follow accepted');
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
async function api(on: Instance, user: TestUser | null, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object): Promise<{ status: number; body: Json }> {
  const res = await on.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
}
/** Alice's status as bob's server has it (it came by delivery). */
const onB = (uri: string) => until(async () => ((await api(b, bob, 'GET', '/api/v1/timelines/home')).body as Json[]).find((s) => s.uri === uri), (s) => s !== undefined, `b: ${uri}`);

describe('edits and polls across two servers', () => {
  it('sends an edit as an Update: the other server shows the new text, edited_at and the history', async () => {
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'before the edit' })).body;
    const there = (await onB(post.uri))!;
    expect(there.edited_at).toBeNull();
    const edited = await api(a, alice, 'PUT', `/api/v1/statuses/${post.id}`, { status: 'after the edit', spoiler_text: 'edited' });
    expect(edited.status).toBe(200);
    const updated = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${there.id}`)).body, (s) => s.content.includes('after the edit'), 'b: the edit');
    expectEntity('Status', updated);
    expect(updated).toMatchObject({ spoiler_text: 'edited', sensitive: true, edited_at: expect.any(String) });
    const history = (await api(b, bob, 'GET', `/api/v1/statuses/${there.id}/history`)).body as Json[];
    expect(history.map((h) => h.content)).toEqual([there.content, updated.content]);
    for (const h of history) expectEntity('StatusEdit', h);
  });

  it('sends a poll as a Question, counts a vote from the other server, and sends the counts and the end back', async () => {
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'Cats or dogs?', poll: { options: ['cats', 'dogs'], expires_in: 300 } })).body;
    const there = (await onB(post.uri))!;
    expectEntity('Poll', there.poll);
    expect(there.poll).toMatchObject({ multiple: false, expired: false, votes_count: 0, voted: false });
    expect(there.poll.options.map((o: Json) => o.title)).toEqual(['cats', 'dogs']);
    expect(Math.abs(Date.parse(there.poll.expires_at) - Date.parse(post.poll.expires_at))).toBeLessThan(1000);

    // bob votes on b: the vote goes to a, as a Note named after the option.
    const voted = await api(b, bob, 'POST', `/api/v1/polls/${there.poll.id}/votes`, { choices: [1] });
    expect(voted.status, JSON.stringify(voted.body)).toBe(200);
    expect(voted.body).toMatchObject({ voted: true, own_votes: [1] });
    const counted = await until(async () => (await api(a, alice, 'GET', `/api/v1/polls/${post.poll.id}`)).body, (p) => p.votes_count === 1, 'a: bob\'s vote');
    expect(counted.options.map((o: Json) => o.votes_count)).toEqual([0, 1]);
    const voters = await a.ctx.db.query(`SELECT a.username, a.domain FROM poll_votes v JOIN accounts a ON a.id = v.account_id WHERE v.poll_id = $1`, [post.poll.id]);
    expect(voters.rows).toEqual([{ username: 'bob', domain: b.domain }]);

    // carol votes on a: b hears of the counts through an Update of the Question (a vote, a job, a delivery and its
    // processing: longer than one hop on a machine busy with the rest of the suite).
    expect((await api(a, carol, 'POST', `/api/v1/polls/${post.poll.id}/votes`, { choices: [0] })).status).toBe(200);
    const refreshed = await until(async () => (await api(b, bob, 'GET', `/api/v1/statuses/${there.id}`)).body.poll, (p) => p.votes_count === 2, 'b: the new counts', 30_000);
    expect(refreshed.options.map((o: Json) => o.votes_count)).toEqual([1, 1]);
    expect(refreshed).toMatchObject({ voters_count: 2, own_votes: [1] });

    // The end, brought forward: a notifies its voter and author, and b gets the final Update (the poll closed).
    const { rows } = await a.ctx.db.query<{ id: string }>(`SELECT id FROM outbox WHERE kind = 'endPoll' AND payload->>'pollId' = $1`, [post.poll.id]);
    await a.ctx.db.query(`UPDATE polls SET expires_at = now() + interval '500 milliseconds' WHERE id = $1`, [post.poll.id]);
    await (await a.ctx.jobs.fanout.getJob(`outbox-${rows[0]!.id}`))!.changeDelay(500);
    const notified = await until(async () => (await api(a, alice, 'GET', '/api/v1/notifications?types[]=poll')).body as Json[], (l) => l.length === 1, 'a: alice hears of the end');
    expect(notified[0]).toMatchObject({ status: { id: post.id, poll: { expired: true } } });
    expect(((await api(a, carol, 'GET', '/api/v1/notifications?types[]=poll')).body as Json[])).toHaveLength(1);
    const closed = await until(async () => (await api(b, bob, 'GET', `/api/v1/polls/${there.poll.id}`)).body, (p) => p.expired === true, 'b: the poll ended');
    expect(Math.abs(Date.parse(closed.expires_at) - Date.now())).toBeLessThan(60_000);
    expect((await api(b, bob, 'GET', `/api/v1/statuses/${there.id}`)).body.edited_at).toBeNull();
  });
  it('shows a pin on the other server: sent as an Add to the featured collection, listed as the account\'s pinned posts', async () => {
    const post = (await api(a, alice, 'POST', '/api/v1/statuses', { status: 'pin me' })).body;
    const there = (await onB(post.uri))!;
    expect((await api(a, alice, 'POST', `/api/v1/statuses/${post.id}/pin`)).body.pinned).toBe(true);
    const pinned = async () => ((await api(b, bob, 'GET', `/api/v1/accounts/${there.account.id}/statuses?pinned=true`)).body as Json[]).map((s) => s.uri);
    await until(pinned, (uris) => uris.includes(post.uri), 'b: the pin');
    const featured = await a.app.inject({ method: 'GET', url: '/users/alice/collections/featured', headers: { accept: 'application/activity+json' } });
    expect(JSON.stringify(featured.json())).toContain(post.uri);
    await api(a, alice, 'POST', `/api/v1/statuses/${post.id}/unpin`);
    await until(pinned, (uris) => !uris.includes(post.uri), 'b: the unpin');
  });
});
