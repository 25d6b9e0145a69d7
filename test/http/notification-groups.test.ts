// Grouped notifications (GET /api/v2/notifications and its group routes), the notification policy and filtered
// notification requests, through HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let mo: TestUser, ned: TestUser, ola: TestUser, pip: TestUser, rae: TestUser, sam: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [mo, ned, ola, pip, rae, sam] = await registerUsers(s.app, 'mo', 'ned', 'ola', 'pip', 'rae', 'sam');
});
afterAll(async () => s?.close());

const req = (method: 'GET' | 'POST' | 'PATCH', url: string, user: TestUser | string, payload?: object) =>
  s.app.inject({ method, url, headers: bearer(typeof user === 'string' ? user : user.token), ...(payload !== undefined ? { payload } : {}) });

/** Validates a GroupedNotificationsResults and each group in it. */
function expectGrouped(body: { notification_groups: unknown[]; partial_accounts?: unknown[] }) {
  expectEntity('GroupedNotificationsResults', body);
  for (const g of body.notification_groups) expectEntity('NotificationGroup', g);
  for (const a of body.partial_accounts ?? []) expectEntity('PartialAccountWithAvatar', a);
}

/** A next/prev link's id. */
const linkId = (link: string | undefined, rel: 'next' | 'prev') => new RegExp(`[?&](?:max_id|min_id)=(\\d+)>; rel="${rel}"`).exec(link ?? '')?.[1];

describe('grouped notifications', () => {
  let st1: string, st2: string;

  beforeAll(async () => {
    st1 = (await req('POST', '/api/v1/statuses', mo, { status: 'first' })).json().id;
    st2 = (await req('POST', '/api/v1/statuses', mo, { status: 'second' })).json().id;
    for (const u of [ned, ola, pip]) expect((await req('POST', `/api/v1/statuses/${st1}/favourite`, u)).statusCode).toBe(200);
    await req('POST', `/api/v1/statuses/${st1}/reblog`, ned);
    await req('POST', `/api/v1/statuses/${st2}/favourite`, ola);
    await req('POST', '/api/v1/statuses', pip, { status: 'hi @mo' });
    await req('POST', `/api/v1/accounts/${mo.id}/follow`, ned);
    await req('POST', `/api/v1/accounts/${mo.id}/follow`, ola);
  });

  it('groups favourites of one post, reblogs of it, and follows, with counts and sample accounts', async () => {
    const res = await req('GET', '/api/v2/notifications', mo);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expectGrouped(body);
    expect(body).not.toHaveProperty('partial_accounts');
    const byType = (t: string) => body.notification_groups.filter((g: { type: string }) => g.type === t);
    expect(body.notification_groups.map((g: { type: string }) => g.type)).toEqual(['follow', 'mention', 'favourite', 'reblog', 'favourite']);
    const [fav1] = byType('favourite').filter((g: { status_id: string }) => g.status_id === st1);
    expect(fav1.group_key).toMatch(new RegExp(`^favourite-${st1}-\\d+$`));
    expect(fav1).toMatchObject({ notifications_count: 3, sample_account_ids: [pip.id, ola.id, ned.id], status_id: st1 });
    expect(BigInt(fav1.page_min_id) < BigInt(fav1.page_max_id)).toBe(true);
    // most_recent_notification_id is a JSON number (as Mastodon sends it), written exactly.
    expect(res.body).toContain(`"most_recent_notification_id":${fav1.page_max_id},`);
    expect(byType('follow')[0]).toMatchObject({ notifications_count: 2, sample_account_ids: [ola.id, ned.id] });
    expect(byType('follow')[0].group_key).toMatch(/^follow-\d+$/);
    expect(byType('follow')[0]).not.toHaveProperty('status_id');
    expect(byType('reblog')[0]).toMatchObject({ notifications_count: 1, sample_account_ids: [ned.id], status_id: st1 });
    expect(byType('mention')[0].group_key).toMatch(/^ungrouped-\d+$/);
    // Each account and status once.
    expect(body.accounts.map((a: { id: string }) => a.id).sort()).toEqual([ned.id, ola.id, pip.id].sort());
    for (const a of body.accounts) expectEntity('Account', a);
    expect(body.statuses.map((x: { id: string }) => x.id).sort()).toEqual([st1, st2, body.statuses.find((x: { id: string }) => x.id !== st1 && x.id !== st2).id].sort());
    expect(body.statuses).toHaveLength(3);

    // The v1 list names the same group keys.
    const v1 = (await req('GET', '/api/v1/notifications?types[]=favourite', mo)).json();
    expect(v1.filter((n: { status: { id: string } }) => n.status.id === st1).map((n: { group_key: string }) => n.group_key)).toEqual([fav1.group_key, fav1.group_key, fav1.group_key]);
  });

  it('groups only the grouped_types asked for, filters by type, and expands accounts partially', async () => {
    const only = (await req('GET', '/api/v2/notifications?grouped_types[]=follow', mo)).json();
    expectGrouped(only);
    expect(only.notification_groups.filter((g: { type: string }) => g.type === 'favourite')).toHaveLength(4);
    expect(only.notification_groups.filter((g: { type: string }) => g.type === 'favourite').every((g: { group_key: string; notifications_count: number }) => g.group_key.startsWith('ungrouped-') && g.notifications_count === 1)).toBe(true);

    const favs = (await req('GET', '/api/v2/notifications?types[]=favourite&types[]=reblog', mo)).json();
    expect(favs.notification_groups.map((g: { type: string }) => g.type)).toEqual(['favourite', 'reblog', 'favourite']);
    const noFavs = (await req('GET', '/api/v2/notifications?exclude_types[]=favourite&exclude_types[]=admin.sign_up', mo)).json();
    expect(noFavs.notification_groups.map((g: { type: string }) => g.type)).toEqual(['follow', 'mention', 'reblog']);
    const fromPip = (await req('GET', `/api/v2/notifications?account_id=${pip.id}`, mo)).json();
    expect(fromPip.notification_groups.map((g: { type: string; notifications_count: number }) => [g.type, g.notifications_count])).toEqual([['mention', 1], ['favourite', 1]]);

    const partial = (await req('GET', '/api/v2/notifications?types[]=favourite&expand_accounts=partial_avatars', mo)).json();
    expectGrouped(partial);
    // The most recent sender of each group in full (ola for the second post, pip for the first), the others partial.
    expect(partial.accounts.map((a: { id: string }) => a.id)).toEqual([ola.id, pip.id]);
    expect(partial.partial_accounts).toEqual([{ id: ned.id, acct: 'ned', locked: false, bot: false, url: expect.any(String), avatar: expect.any(String), avatar_static: expect.any(String), avatar_description: '' }]);
  });

  it('pages through groups with Link headers, without gaps or overlaps', async () => {
    const first = await req('GET', '/api/v2/notifications?limit=2', mo);
    expectGrouped(first.json());
    expect(first.json().notification_groups.map((g: { type: string }) => g.type)).toEqual(['follow', 'mention']);
    const next = linkId(first.headers.link as string, 'next');
    expect(next).toBe(first.json().notification_groups[1].page_min_id);
    const second = await req('GET', `/api/v2/notifications?limit=2&max_id=${next}`, mo);
    expect(second.json().notification_groups.map((g: { type: string }) => g.type)).toEqual(['favourite', 'reblog']);
    const third = await req('GET', `/api/v2/notifications?limit=2&max_id=${linkId(second.headers.link as string, 'next')}`, mo);
    expect(third.json().notification_groups.map((g: { type: string; status_id: string }) => [g.type, g.status_id])).toEqual([['favourite', st1]]);
    // A group cut by the page's top counts only what is below it.
    expect(second.json().notification_groups[0]).toMatchObject({ status_id: st2, notifications_count: 1 });
    const last = linkId(third.headers.link as string, 'next');
    expect((await req('GET', `/api/v2/notifications?max_id=${last}`, mo)).json().notification_groups).toEqual([]);
    // Paging forward from the oldest with min_id returns the groups just after it, newest first.
    const forward = (await req('GET', `/api/v2/notifications?limit=2&min_id=${last}`, mo)).json();
    expectGrouped(forward);
    expect(forward.notification_groups.map((g: { type: string }) => g.type)).toEqual(['reblog', 'favourite']);
    expect(forward.notification_groups[1]).toMatchObject({ status_id: st1, notifications_count: 3 });
  });

  it('shows a group, its accounts, dismisses it, and counts unread groups', async () => {
    const list = (await req('GET', '/api/v2/notifications', mo)).json();
    const fav = list.notification_groups.find((g: { type: string; status_id: string }) => g.type === 'favourite' && g.status_id === st1);
    const one = await req('GET', `/api/v2/notifications/${fav.group_key}`, mo);
    expect(one.statusCode).toBe(200);
    expectGrouped(one.json());
    expect(one.json().notification_groups).toEqual([expect.objectContaining({ group_key: fav.group_key, notifications_count: 3, sample_account_ids: [pip.id, ola.id, ned.id] })]);
    expect(one.json().notification_groups[0]).not.toHaveProperty('page_min_id');
    const mention = list.notification_groups.find((g: { type: string }) => g.type === 'mention');
    expect((await req('GET', `/api/v2/notifications/${mention.group_key}`, mo)).json().notification_groups[0]).toMatchObject({ group_key: mention.group_key, notifications_count: 1 });

    const accounts = await req('GET', `/api/v2/notifications/${fav.group_key}/accounts`, mo);
    expect(accounts.json().map((a: { id: string }) => a.id)).toEqual([pip.id, ola.id, ned.id]);
    for (const a of accounts.json()) expectEntity('Account', a);
    const paged = await req('GET', `/api/v2/notifications/${fav.group_key}/accounts?limit=2`, mo);
    expect(paged.json().map((a: { id: string }) => a.id)).toEqual([pip.id, ola.id]);
    const rest = await req('GET', `/api/v2/notifications/${fav.group_key}/accounts?limit=2&max_id=${linkId(paged.headers.link as string, 'next')}`, mo);
    expect(rest.json().map((a: { id: string }) => a.id)).toEqual([ned.id]);

    // Unread groups after the marker: everything, then nothing past the newest, then capped by limit.
    expect((await req('GET', '/api/v2/notifications/unread_count', mo)).json()).toEqual({ count: 5 });
    expect((await req('GET', '/api/v2/notifications/unread_count?limit=2', mo)).json()).toEqual({ count: 2 });
    expect((await req('GET', '/api/v2/notifications/unread_count?grouped_types[]=follow', mo)).json()).toEqual({ count: 7 });
    const newest = list.notification_groups[0].page_max_id;
    await req('POST', '/api/v1/markers', mo, { notifications: { last_read_id: newest } });
    expect((await req('GET', '/api/v2/notifications/unread_count', mo)).json()).toEqual({ count: 0 });

    // Someone else sees none of it; dismissing takes the whole group away.
    expect((await req('GET', `/api/v2/notifications/${fav.group_key}`, ned)).statusCode).toBe(404);
    expect((await req('POST', `/api/v2/notifications/${fav.group_key}/dismiss`, ned)).statusCode).toBe(200);
    expect((await req('GET', `/api/v2/notifications/${fav.group_key}`, mo)).statusCode).toBe(200);
    expect((await req('POST', `/api/v2/notifications/${fav.group_key}/dismiss`, mo)).json()).toEqual({});
    const after = await req('GET', `/api/v2/notifications/${fav.group_key}`, mo);
    expect(after.statusCode).toBe(404);
    expect(after.json()).toEqual({ error: 'Record not found' });
    expect((await req('GET', '/api/v2/notifications', mo)).json().notification_groups).toHaveLength(4);
  });

  it('refuses bad input and tokens without the scope', async () => {
    for (const url of ['/api/v2/notifications/nonsense', '/api/v2/notifications/ungrouped-99999999999999999999', '/api/v2/notifications/ungrouped-1']) {
      const res = await req('GET', url, mo);
      expect(res.statusCode, url).toBe(404);
    }
    for (const url of ['/api/v2/notifications?expand_accounts=everything', '/api/v2/notifications?types[]=poke', '/api/v2/notifications?grouped_types[]=nope', '/api/v2/notifications?include_filtered=maybe']) {
      const res = await req('GET', url, mo);
      expect(res.statusCode, url).toBe(422);
      expect(res.json()).toHaveProperty('error');
    }
    expect((await req('GET', '/api/v2/notifications?account_id=abc', mo)).json().notification_groups).toEqual([]);
    expect((await s.app.inject({ method: 'GET', url: '/api/v2/notifications' })).statusCode).toBe(401);
    const client = await createApp(s.app);
    const narrow = await registerUser(s.app, client, 'tia', 'read:statuses write:statuses');
    for (const [method, url] of [['GET', '/api/v2/notifications'], ['GET', '/api/v2/notifications/policy'], ['PATCH', '/api/v2/notifications/policy'], ['GET', '/api/v1/notifications/requests'], ['POST', '/api/v1/notifications/requests/1/accept'], ['POST', '/api/v2/notifications/x/dismiss'], ['GET', '/api/v2/notifications/unread_count']] as const) {
      expect((await req(method, url, narrow, method === 'GET' ? undefined : {})).statusCode, url).toBe(403);
    }
  });
});

describe('notification policy and requests', () => {
  it('has Mastodon defaults, changes by PATCH, and refuses bad values', async () => {
    const res = await req('GET', '/api/v2/notifications/policy', rae);
    expectEntity('NotificationPolicy', res.json());
    expect(res.json()).toEqual({
      for_not_following: 'accept', for_not_followers: 'accept', for_new_accounts: 'accept', for_private_mentions: 'filter', for_limited_accounts: 'filter',
      summary: { pending_requests_count: 0, pending_notifications_count: 0 },
    });
    const bad = await req('PATCH', '/api/v2/notifications/policy', rae, { for_not_following: 'ignore' });
    expect(bad.statusCode).toBe(422);
    expect((await req('GET', '/api/v2/notifications/policy', rae)).json().for_not_following).toBe('accept');
    const changed = await req('PATCH', '/api/v2/notifications/policy', rae, { for_not_following: 'filter' });
    expectEntity('NotificationPolicy', changed.json());
    expect(changed.json()).toMatchObject({ for_not_following: 'filter', for_private_mentions: 'filter' });
  });

  it('files a stranger\'s notifications as a request, out of both lists; accepting merges them', async () => {
    // rae follows sam, not ned: ned's notifications are filtered, sam's are not.
    await req('POST', `/api/v1/accounts/${sam.id}/follow`, rae);
    const post = (await req('POST', '/api/v1/statuses', rae, { status: 'mine' })).json().id;
    await req('POST', `/api/v1/statuses/${post}/favourite`, ned);
    await req('POST', `/api/v1/statuses/${post}/favourite`, sam);
    const dm = (await req('POST', '/api/v1/statuses', ned, { status: '@rae psst', visibility: 'direct' })).json().id;

    const v2 = (await req('GET', '/api/v2/notifications', rae)).json();
    expect(v2.notification_groups.map((g: { sample_account_ids: string[] }) => g.sample_account_ids)).toEqual([[sam.id]]);
    expect((await req('GET', '/api/v1/notifications', rae)).json().map((n: { account: { id: string } }) => n.account.id)).toEqual([sam.id]);
    const withFiltered = (await req('GET', '/api/v2/notifications?include_filtered=true', rae)).json();
    expect(withFiltered.notification_groups.map((g: { type: string; group_key: string }) => [g.type, g.group_key.startsWith('ungrouped-')])).toEqual([['mention', true], ['favourite', false], ['favourite', true]]);
    expect((await req('GET', '/api/v1/notifications?include_filtered=1', rae)).json()).toHaveLength(3);
    expect((await req('GET', '/api/v1/notifications/unread_count', rae)).json()).toEqual({ count: 1 });

    const requests = await req('GET', '/api/v1/notifications/requests', rae);
    expect(requests.statusCode).toBe(200);
    expect(requests.json()).toHaveLength(1);
    const [r] = requests.json();
    expectEntity('NotificationRequest', r);
    expect(r).toMatchObject({ notifications_count: '2', account: { id: ned.id }, last_status: { id: dm } });
    expectEntity('NotificationRequest', (await req('GET', `/api/v1/notifications/requests/${r.id}`, rae)).json());
    expect((await req('GET', '/api/v2/notifications/policy', rae)).json().summary).toEqual({ pending_requests_count: 1, pending_notifications_count: 2 });
    expect((await req('GET', `/api/v1/notifications/requests/${r.id}`, sam)).statusCode).toBe(404);
    expect((await req('POST', `/api/v1/notifications/requests/${r.id}/accept`, sam)).statusCode).toBe(404);

    expect((await req('POST', `/api/v1/notifications/requests/${r.id}/accept`, rae)).json()).toEqual({});
    expect((await req('GET', '/api/v1/notifications/requests/merged', rae)).json()).toEqual({ merged: true });
    expect((await req('GET', '/api/v1/notifications/requests', rae)).json()).toEqual([]);
    expect((await req('GET', `/api/v1/notifications/requests/${r.id}`, rae)).statusCode).toBe(404);
    expect((await req('GET', '/api/v1/notifications', rae)).json().map((n: { account: { id: string } }) => n.account.id)).toEqual([ned.id, sam.id, ned.id]);
    // Later ones from an accepted sender are never filtered.
    await req('POST', `/api/v1/accounts/${rae.id}/follow`, ned);
    expect((await req('GET', '/api/v1/notifications?types[]=follow', rae)).json()).toHaveLength(1);
  });

  it('dismisses requests one or many at a time, all or none', async () => {
    // pip and ola reply privately to rae: both filtered (for_private_mentions, for_not_following).
    await req('POST', '/api/v1/statuses', pip, { status: '@rae one', visibility: 'direct' });
    await req('POST', '/api/v1/statuses', ola, { status: '@rae two', visibility: 'direct' });
    await req('POST', '/api/v1/statuses', mo, { status: '@rae three', visibility: 'direct' });
    const list = (await req('GET', '/api/v1/notifications/requests', rae)).json();
    expect(list.map((r: { account: { id: string } }) => r.account.id)).toEqual([mo.id, ola.id, pip.id]);
    const page = await req('GET', '/api/v1/notifications/requests?limit=1', rae);
    expect(page.json()).toHaveLength(1);
    expect(page.headers.link).toContain(`max_id=${list[0].id}`);
    const [moR, olaR, pipR] = list.map((r: { id: string }) => r.id);

    // As in Mastodon, the many-at-once calls leave out ids that are not the viewer's requests, and none is no error.
    expect((await req('POST', '/api/v1/notifications/requests/dismiss', rae, { id: ['12345', 'x'] })).json()).toEqual({});
    expect((await req('POST', '/api/v1/notifications/requests/accept', rae, {})).json()).toEqual({});
    expect((await req('GET', '/api/v1/notifications/requests', rae)).json()).toHaveLength(3);
    expect((await req('POST', '/api/v1/notifications/requests/12345/dismiss', rae)).statusCode).toBe(404);
    expect((await req('POST', `/api/v1/notifications/requests/${moR}/dismiss`, rae)).json()).toEqual({});
    expect((await req('POST', '/api/v1/notifications/requests/dismiss', rae, { id: [olaR, pipR] })).json()).toEqual({});
    expect((await req('GET', '/api/v1/notifications/requests', rae)).json()).toEqual([]);
    // Dismissed: their notifications are gone, even with include_filtered.
    expect((await req('GET', '/api/v1/notifications?include_filtered=true&types[]=mention', rae)).json().map((n: { account: { id: string } }) => n.account.id)).toEqual([ned.id]);
    // The many-at-once accept.
    await req('POST', '/api/v1/statuses', pip, { status: '@rae again', visibility: 'direct' });
    const again = (await req('GET', '/api/v1/notifications/requests', rae)).json();
    expect((await req('POST', '/api/v1/notifications/requests/accept', rae, { id: again.map((r: { id: string }) => r.id) })).json()).toEqual({});
    expect((await req('GET', '/api/v1/notifications?types[]=mention', rae)).json().map((n: { account: { id: string } }) => n.account.id)).toEqual([pip.id, ned.id]);
  });

  it('drops what the policy drops, and filters limited accounts by default', async () => {
    // sam is followed by rae; a limited account that rae does not follow is filtered by default.
    const post = (await req('POST', '/api/v1/statuses', rae, { status: 'another' })).json().id;
    await req('PATCH', '/api/v2/notifications/policy', rae, { for_not_following: 'accept' });
    await s.ctx.db.query('UPDATE accounts SET silenced_at = now() WHERE id = $1', [ola.id]);
    await req('POST', `/api/v1/statuses/${post}/favourite`, ola);
    expect((await req('GET', `/api/v2/notifications?account_id=${ola.id}`, rae)).json().notification_groups).toEqual([]);
    expect((await req('GET', `/api/v2/notifications?account_id=${ola.id}&include_filtered=true`, rae)).json().notification_groups).toHaveLength(1);
    expect((await req('GET', '/api/v1/notifications/requests', rae)).json().map((r: { account: { id: string } }) => r.account.id)).toEqual([ola.id]);

    await req('PATCH', '/api/v2/notifications/policy', rae, { for_limited_accounts: 'drop', for_not_followers: 'drop' });
    await req('POST', `/api/v1/statuses/${post}/reblog`, ola);
    await req('POST', `/api/v1/statuses/${post}/favourite`, mo); // mo does not follow rae
    expect((await req('GET', '/api/v1/notifications?include_filtered=true', rae)).json().filter((n: { status?: { id: string } }) => n.status?.id === post).map((n: { type: string }) => n.type)).toEqual(['favourite']);

    await req('PATCH', '/api/v2/notifications/policy', rae, { for_limited_accounts: 'accept', for_not_followers: 'accept' });
    await req('POST', `/api/v1/statuses/${post}/unreblog`, ola);
    await req('POST', `/api/v1/statuses/${post}/reblog`, ola);
    await req('POST', `/api/v1/statuses/${post}/unfavourite`, mo);
    await req('POST', `/api/v1/statuses/${post}/favourite`, mo);
    const types = (await req('GET', '/api/v1/notifications', rae)).json().filter((n: { status?: { id: string } }) => n.status?.id === post).map((n: { type: string; account: { id: string } }) => [n.type, n.account.id]);
    expect(types).toEqual([['favourite', mo.id], ['reblog', ola.id]]);
  });
});
