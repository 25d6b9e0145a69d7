// Grouped notifications, the notification policy and notification requests, as an app drives them with masto.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer & { url: string };
let c: Record<'ida' | 'jo' | 'kai' | 'lu' | 'max', mastodon.rest.Client>;
const id: Record<string, string> = {};

beforeAll(async () => {
  s = await startListeningServer();
  c = (await mastoAccounts(s.url, 'masto notification groups', 'ida', 'jo', 'kai', 'lu', 'max')) as typeof c;
  for (const [name, client] of Object.entries(c)) id[name] = (await client.v1.accounts.verifyCredentials()).id;
});
afterAll(async () => s?.close());

const raw = (method: 'GET' | 'POST', url: string, client: mastodon.rest.Client) =>
  s.app.inject({ method, url, headers: { authorization: `Bearer ${tokenOf(client)}` } });

describe('masto: grouped notifications', () => {
  it('lists favourites of one post as one group, pages, fetches, counts and dismisses groups', async () => {
    const post = await c.ida.v1.statuses.create({ status: 'favourite me' });
    for (const who of ['jo', 'kai', 'lu'] as const) await c[who].v1.statuses.$select(post.id).favourite();
    await c.jo.v1.accounts.$select(id.ida!).follow();
    await c.kai.v1.statuses.create({ status: '@ida hello' });

    const page = await c.ida.v2.notifications.list();
    expect(page.notificationGroups.map((g) => [g.type, g.notificationsCount])).toEqual([['mention', 1], ['follow', 1], ['favourite', 3]]);
    const fav = page.notificationGroups[2]!;
    expect(fav).toMatchObject({ sampleAccountIds: [id.lu, id.kai, id.jo], statusId: post.id });
    expect(page.statuses.map((x) => x.id)).toContain(post.id);
    expectEntity('GroupedNotificationsResults', (await raw('GET', '/api/v2/notifications', c.ida)).json());

    // masto follows the Link header page by page.
    const seen: string[] = [];
    for await (const p of c.ida.v2.notifications.list({ limit: 1 })) {
      seen.push(...p.notificationGroups.map((g) => g.groupKey));
      if (seen.length > 5) break;
    }
    expect(seen).toEqual(page.notificationGroups.map((g) => g.groupKey));

    const one = await c.ida.v2.notifications.$select(fav.groupKey).fetch();
    expect(one.notificationGroups).toEqual([expect.objectContaining({ groupKey: fav.groupKey, notificationsCount: 3 })]);
    expect((await c.ida.v2.notifications.$select(fav.groupKey).accounts.fetch()).map((a) => a.id)).toEqual([id.lu, id.kai, id.jo]);
    expect(await c.ida.v2.notifications.unreadCount.fetch()).toEqual({ count: 3 });
    await c.ida.v1.markers.create({ notifications: { lastReadId: fav.pageMaxId! } });
    expect(await c.ida.v2.notifications.unreadCount.fetch()).toEqual({ count: 2 });

    await c.ida.v2.notifications.$select(fav.groupKey).dismiss();
    await expect(c.ida.v2.notifications.$select(fav.groupKey).fetch()).rejects.toMatchObject({ statusCode: 404 });
    expect((await c.ida.v2.notifications.list()).notificationGroups.map((g) => g.type)).toEqual(['mention', 'follow']);
  });

  it('filters by policy into requests, which are accepted or dismissed', async () => {
    const policy = await c.max.v2.notifications.policy.fetch();
    expect(policy).toMatchObject({ forPrivateMentions: 'filter', forLimitedAccounts: 'filter', summary: { pendingRequestsCount: 0 } });
    const updated = await c.max.v2.notifications.policy.update({ forNotFollowing: 'filter', forNewAccounts: 'accept' });
    expect(updated.forNotFollowing).toBe('filter');
    expectEntity('NotificationPolicy', (await raw('GET', '/api/v2/notifications/policy', c.max)).json());

    await c.jo.v1.statuses.create({ status: '@max from jo', visibility: 'direct' });
    await c.kai.v1.accounts.$select(id.max!).follow();
    expect((await c.max.v2.notifications.list()).notificationGroups).toEqual([]);
    expect(await c.max.v1.notifications.list()).toEqual([]);
    expect((await c.max.v2.notifications.list({ includeFiltered: true })).notificationGroups).toHaveLength(2);

    const requests = await c.max.v1.notifications.requests.list();
    expect(requests.map((r) => r.account.id)).toEqual([id.kai, id.jo]);
    expect(requests[1]).toMatchObject({ notificationsCount: '1', lastStatus: expect.objectContaining({ visibility: 'direct' }) });
    for (const r of (await raw('GET', '/api/v1/notifications/requests', c.max)).json()) expectEntity('NotificationRequest', r);
    expect((await c.max.v2.notifications.policy.fetch()).summary).toEqual({ pendingRequestsCount: 2, pendingNotificationsCount: 2 });

    await c.max.v1.notifications.requests.$select(requests[1]!.id).accept();
    expect(await c.max.v1.notifications.requests.merged.fetch()).toEqual({ merged: true });
    await c.max.v1.notifications.requests.$select(requests[0]!.id).dismiss();
    expect(await c.max.v1.notifications.requests.list()).toEqual([]);
    const list = await c.max.v2.notifications.list();
    expect(list.notificationGroups.map((g) => [g.type, g.sampleAccountIds])).toEqual([['mention', [id.jo]]]);
    await expect(c.max.v1.notifications.requests.$select(requests[0]!.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
    // The many-at-once calls with nothing to do answer 200, as Mastodon's do; ids not theirs are left out.
    await c.max.v1.notifications.requests.accept();
    await c.max.v1.notifications.requests.dismiss();
    // (masto's typings give these no parameters; it sends what it is given.)
    await (c.max.v1.notifications.requests.dismiss as unknown as (params: { id: string[] }) => Promise<void>)({ id: [requests[0]!.id] });
    await expect(c.max.v2.notifications.policy.update({ forNotFollowers: 'ignore' as 'drop' })).rejects.toMatchObject({ statusCode: 422 });
  });
});
