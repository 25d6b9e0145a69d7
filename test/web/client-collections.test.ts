// The signed-in person's collections and a post's further forms (http/web/client-saved.ts, client-lists.ts,
// client-filters.ts, client-actions.ts): bookmarks, favourites, follow requests, lists, filters, pins and poll votes.
// Each shows what the API shows the same person, each form needs the session's CSRF token and answers with a
// redirect, and bad input shows its reasons on the page (422), never a 500.
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
let web: WebClient;

const api = async (who: TestUser, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? (res.json() as Json) : null };
};
const post = async (who: TestUser, payload: object) => {
  const res = await api(who, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Json;
};
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
  [alice, bob, carol] = await registerUsers(s.app, 'alice', 'bob', 'carol');
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
});

describe('bookmarks, favourites, pins and polls', () => {
  it('lists what alice bookmarked and favourited, as the API does, and pins her own post', async () => {
    const kept = await post(bob, { status: 'A post worth keeping' });
    const liked = await post(bob, { status: 'A post worth a star' });
    expect((await api(alice, 'POST', `/api/v1/statuses/${kept.id}/bookmark`)).status).toBe(200);
    expect((await api(alice, 'POST', `/api/v1/statuses/${liked.id}/favourite`)).status).toBe(200);
    const bookmarks = await web.get('/bookmarks');
    expect(bookmarks.statusCode).toBe(200);
    expect(bookmarks.body).toContain('A post worth keeping');
    expect(bookmarks.body).not.toContain('A post worth a star');
    const favourites = await web.get('/favourites');
    expect(favourites.body).toContain('A post worth a star');
    expect(favourites.body).not.toContain('A post worth keeping');
    // Bob's bookmarks are his: alice's page never shows them.
    expect((await api(bob, 'POST', `/api/v1/statuses/${liked.id}/bookmark`)).status).toBe(200);
    expect((await web.get('/bookmarks')).body).not.toContain('A post worth a star');

    const own = await post(alice, { status: 'Alice pins this one' });
    const thread = await web.get(`/@alice/${own.id}`);
    expect(thread.body).toContain(`formaction="/statuses/${own.id}/pin"`);
    expect((await web.get(`/@bob/${kept.id}`)).body).not.toContain(`/statuses/${kept.id}/pin`);
    const pinned = await web.post(`/statuses/${own.id}/pin`, { return_to: `/@alice/${own.id}` }, thread.body);
    expect([pinned.statusCode, pinned.headers.location]).toEqual([303, `/@alice/${own.id}`]);
    expect((await api(alice, 'GET', `/api/v1/statuses/${own.id}`)).body!.pinned).toBe(true);
    const again = await web.get(`/@alice/${own.id}`);
    expect(again.body).toContain('Unpin from profile');
    await web.post(`/statuses/${own.id}/unpin`, { return_to: `/@alice/${own.id}` }, again.body);
    expect((await api(alice, 'GET', `/api/v1/statuses/${own.id}`)).body!.pinned).toBe(false);
    // Someone else's post cannot be pinned: the API's refusal, on a page.
    const refused = await web.post(`/statuses/${kept.id}/pin`, { return_to: '/home' }, again.body);
    expect(refused.statusCode).toBe(422);
  });

  it('votes in a poll with its form, once', async () => {
    const poll = await post(bob, { status: 'Tea or coffee?', poll: { options: ['Tea', 'Coffee'], expires_in: 3600 } });
    const thread = await web.get(`/@bob/${poll.id}`);
    expect(thread.body).toContain(`action="/polls/${poll.poll.id}/votes"`);
    expect(thread.body).toMatch(/type="radio" name="choices" value="1"/);
    const none = await web.post(`/polls/${poll.poll.id}/votes`, { return_to: `/@bob/${poll.id}` }, thread.body);
    expect(none.statusCode).toBe(422);
    const voted = await web.post(`/polls/${poll.poll.id}/votes`, { choices: '1', return_to: `/@bob/${poll.id}` }, thread.body);
    expect([voted.statusCode, voted.headers.location]).toEqual([303, `/@bob/${poll.id}`]);
    const seen = (await api(alice, 'GET', `/api/v1/polls/${poll.poll.id}`)).body!;
    expect([seen.voted, seen.own_votes, seen.options[1].votes_count]).toEqual([true, [1], 1]);
    const after = await web.get(`/@bob/${poll.id}`);
    expect(after.body).not.toContain(`action="/polls/${poll.poll.id}/votes"`);
    expect(after.body).toContain('100%');
    const twice = await web.post(`/polls/${poll.poll.id}/votes`, { choices: '0', return_to: '/home' }, after.body);
    expect(twice.statusCode).toBe(422);
  });
});

describe('follow requests', () => {
  it('accepts one and rejects another, and only those waiting', async () => {
    expect((await api(alice, 'PATCH', '/api/v1/accounts/update_credentials', { locked: true })).status).toBe(200);
    expect((await api(bob, 'POST', `/api/v1/accounts/${alice.id}/follow`)).status).toBe(200);
    expect((await api(carol, 'POST', `/api/v1/accounts/${alice.id}/follow`)).status).toBe(200);
    const page = await web.get('/follow_requests');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`action="/follow_requests/${bob.id}/authorize"`);
    expect(page.body).toContain(`formaction="/follow_requests/${carol.id}/reject"`);
    const accepted = await web.post(`/follow_requests/${bob.id}/authorize`, { return_to: '/follow_requests' }, page.body);
    expect([accepted.statusCode, accepted.headers.location]).toEqual([303, '/follow_requests']);
    await web.post(`/follow_requests/${carol.id}/reject`, { return_to: '/follow_requests' }, page.body);
    const rel = (await api(alice, 'GET', `/api/v1/accounts/relationships?id[]=${bob.id}&id[]=${carol.id}`)).body as unknown as Json[];
    expect(rel.map((r) => r.followed_by)).toEqual([true, false]);
    expect((await web.get('/follow_requests')).body).toContain('No one is waiting');
    // No request from carol any more: not found.
    expect((await web.post(`/follow_requests/${carol.id}/authorize`, { return_to: '/follow_requests' }, page.body)).statusCode).toBe(404);
    expect((await api(alice, 'PATCH', '/api/v1/accounts/update_credentials', { locked: false })).status).toBe(200);
  });
});

describe('lists', () => {
  it('makes, renames, fills and deletes a list, with its timeline; another person\'s list is not there', async () => {
    expect((await api(alice, 'POST', `/api/v1/accounts/${carol.id}/follow`)).status).toBe(200);
    const index = await web.get('/lists');
    expect(index.statusCode).toBe(200);
    const blank = await web.post('/lists', { title: '   ' }, index.body);
    expect(blank.statusCode).toBe(422);
    expect(blank.body).toContain('Title can&#39;t be blank');
    const made = await web.post('/lists', { title: 'Friends', replies_policy: 'list' }, index.body);
    expect(made.statusCode).toBe(303);
    const path = made.headers.location as string;
    const listId = path.split('/').pop()!;
    expect((await api(alice, 'GET', `/api/v1/lists/${listId}`)).body!.title).toBe('Friends');

    const found = await web.get(`${path}?q=carol`);
    expect(found.body).toContain(`value="${carol.id}"`);
    const added = await web.post(`${path}/add`, { account_id: carol.id }, found.body);
    expect([added.statusCode, added.headers.location]).toEqual([303, path]);
    // Someone alice does not follow cannot be added (the API's 404, shown with its reason).
    const notFollowed = await web.post(`${path}/add`, { account_id: bob.id }, found.body);
    expect(notFollowed.statusCode).toBe(422);
    expect(notFollowed.body).toContain('only add people you follow');
    const members = (await api(alice, 'GET', `/api/v1/lists/${listId}/accounts`)).body as unknown as Json[];
    expect(members.map((a) => a.id)).toEqual([carol.id]);

    await post(carol, { status: 'Carol speaks to her list' });
    // The list's feed fills by fan-out, as home does.
    const timeline = await vi.waitFor(async () => {
      const res = await web.get(path);
      expect(res.body).toContain('Carol speaks to her list');
      return res;
    }, { timeout: 3000 });

    const renamed = await web.post(path, { title: 'Close friends', replies_policy: 'none' }, timeline.body);
    expect(renamed.statusCode).toBe(303);
    expect((await api(alice, 'GET', `/api/v1/lists/${listId}`)).body).toMatchObject({ title: 'Close friends', replies_policy: 'none' });
    await web.post(`${path}/remove`, { account_id: carol.id }, timeline.body);
    expect((await api(alice, 'GET', `/api/v1/lists/${listId}/accounts`)).body).toEqual([]);

    // Bob's list: no page, no change, as the API answers 404.
    const bobs = (await api(bob, 'POST', '/api/v1/lists', { title: 'Bob only' })).body!;
    expect((await web.get(`/lists/${bobs.id}`)).statusCode).toBe(404);
    expect((await web.post(`/lists/${bobs.id}`, { title: 'Taken' }, timeline.body)).statusCode).toBe(404);
    expect((await web.post(`/lists/${bobs.id}/delete`, {}, timeline.body)).statusCode).toBe(404);
    expect((await api(bob, 'GET', `/api/v1/lists/${bobs.id}`)).body!.title).toBe('Bob only');
    expect((await web.get('/lists')).body).not.toContain('Bob only');

    const deleted = await web.post(`${path}/delete`, {}, timeline.body);
    expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/lists']);
    expect((await api(alice, 'GET', `/api/v1/lists/${listId}`)).status).toBe(404);
  });
});

describe('filters', () => {
  it('makes a filter that the API and the timelines apply, changes its keywords, and deletes it', async () => {
    const page = await web.get('/filters');
    expect(page.statusCode).toBe(200);
    const bad = await postForm(web, '/filters', [['title', ''], ['keywords', ''], ['expires_in', 'forever']], page.body);
    expect(bad.statusCode).toBe(422);
    for (const reason of ['Title can&#39;t be blank.', 'Choose at least one place', 'Choose when the filter expires.', 'Give at least one keyword.']) expect(bad.body).toContain(reason);

    const made = await postForm(web, '/filters', [
      ['title', 'No spoilers'], ['context[]', 'home'], ['context[]', 'thread'], ['filter_action', 'warn'], ['expires_in', '86400'],
      ['keywords', 'finale\nplot twist'], ['whole_word', '1'],
    ], page.body);
    expect([made.statusCode, made.headers.location]).toEqual([303, '/filters']);
    const [filter] = (await api(alice, 'GET', '/api/v2/filters')).body as unknown as Json[];
    expect(filter).toMatchObject({ title: 'No spoilers', context: ['home', 'thread'], filter_action: 'warn' });
    expect(filter!.keywords.map((k: Json) => k.keyword).sort()).toEqual(['finale', 'plot twist']);
    expect(Date.parse(filter!.expires_at) - Date.now()).toBeGreaterThan(86_000_000);

    const spoiler = await post(carol, { status: 'The finale was something' });
    // Alice follows carol (the lists above): the post reaches her home, folded away behind the filter.
    await vi.waitFor(async () => {
      const home = await web.get('/home');
      expect(home.body).toContain(`id="s-${spoiler.id}"`);
      expect(home.body).toContain('Filtered: No spoilers');
    }, { timeout: 3000 });

    const edit = await web.get(`/filters/${filter!.id}`);
    expect(edit.statusCode).toBe(200);
    const finale = filter!.keywords.find((k: Json) => k.keyword === 'finale');
    const changed = await postForm(web, `/filters/${filter!.id}`, [
      ['title', 'Spoilers'], ['context[]', 'home'], ['filter_action', 'hide'], ['expires_in', 'keep'], ['remove[]', finale.id], ['keywords', 'ending'],
    ], edit.body);
    expect(changed.statusCode).toBe(303);
    const after = (await api(alice, 'GET', `/api/v2/filters/${filter!.id}`)).body!;
    expect(after).toMatchObject({ title: 'Spoilers', context: ['home'], filter_action: 'hide', expires_at: filter!.expires_at });
    expect(after.keywords.map((k: Json) => k.keyword).sort()).toEqual(['ending', 'plot twist']);
    // Removing every keyword is refused with a reason; nothing changes.
    const empty = await postForm(web, `/filters/${filter!.id}`, [
      ['title', 'Spoilers'], ['context[]', 'home'], ['expires_in', 'keep'], ...after.keywords.map((k: Json): [string, string] => ['remove[]', k.id]),
    ], edit.body);
    expect(empty.statusCode).toBe(422);
    expect((await api(alice, 'GET', `/api/v2/filters/${filter!.id}`)).body!.keywords).toHaveLength(2);

    // Bob's filter is not alice's to see or change.
    const bobs = (await api(bob, 'POST', '/api/v2/filters', { title: 'Bob filter', context: ['home'], keywords_attributes: [{ keyword: 'x' }] })).body!;
    expect((await web.get(`/filters/${bobs.id}`)).statusCode).toBe(404);
    expect((await web.post(`/filters/${bobs.id}/delete`, {}, edit.body)).statusCode).toBe(404);
    expect((await api(bob, 'GET', `/api/v2/filters/${bobs.id}`)).status).toBe(200);

    const deleted = await web.post(`/filters/${filter!.id}/delete`, {}, edit.body);
    expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/filters']);
    expect((await api(alice, 'GET', '/api/v2/filters')).body).toEqual([]);
  });
});

describe('every page of these', () => {
  it('refuses forms without their token and sends strangers to sign in', async () => {
    const page = await web.get('/lists');
    for (const url of ['/lists', '/filters', `/follow_requests/${bob.id}/authorize`, '/polls/1/votes']) {
      expect((await web.post(url, { title: 'x' })).statusCode, url).toBe(403);
    }
    csrfOf(page.body);
    const stranger = new WebClient(s.app);
    for (const path of ['/bookmarks', '/favourites', '/lists', '/filters', '/follow_requests']) {
      expect((await stranger.get(path)).headers.location, path).toBe(`/auth/sign_in?return_to=${encodeURIComponent(path)}`);
    }
  });

  it('are valid HTML', async () => {
    const listId = (await api(alice, 'POST', '/api/v1/lists', { title: 'Checked' })).body!.id;
    const filterId = (await api(alice, 'POST', '/api/v2/filters', { title: 'Checked', context: ['home'], keywords_attributes: [{ keyword: 'y' }] })).body!.id;
    for (const path of ['/bookmarks', '/favourites', '/follow_requests', '/lists', `/lists/${listId}?q=carol`, '/filters', `/filters/${filterId}`, '/home']) {
      const res = await web.get(path);
      expect(res.statusCode, path).toBe(200);
      await expectValidHtml(res.body, path);
    }
  });
});

describe('a poll from the compose form', () => {
  it('posts a poll with its choices and duration, and keeps a refused one in the form', async () => {
    const home = await web.get('/home');
    expect(home.body).toContain('name="poll_options[]"');
    const fields: [string, string][] = [
      ['status', 'Which day?'], ['idempotency_key', 'poll-form-1'], ['return_to', '/home'],
      ['poll_options[]', 'Saturday'], ['poll_options[]', 'Sunday'], ['poll_options[]', ''], ['poll_options[]', ''], ['poll_expires_in', '3600'], ['poll_multiple', '1'],
    ];
    const made = await postForm(web, '/statuses', fields, home.body);
    expect(made.statusCode).toBe(303);
    const id = /#s-(\d+)$/.exec(made.headers.location as string)![1]!;
    const seen = (await api(alice, 'GET', `/api/v1/statuses/${id}`)).body!;
    expect(seen.poll).toMatchObject({ multiple: true, options: [{ title: 'Saturday' }, { title: 'Sunday' }] });
    expect(Date.parse(seen.poll.expires_at) - Date.now()).toBeGreaterThan(3_500_000);

    const one = await postForm(web, '/statuses', [['status', 'Only one choice'], ['idempotency_key', 'poll-form-2'], ['return_to', '/home'], ['poll_options[]', 'Alone'], ['poll_expires_in', '3600']], home.body);
    expect(one.statusCode).toBe(422);
    expect(one.body).toContain('Poll must have at least 2 options');
    expect(one.body).toContain('value="Alone"');
  });
});
