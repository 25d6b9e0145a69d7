// Lists as a Mastodon app manages them with masto, with raw answers checked against the schema and error paths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';

// masto's list parameters lack `repliesPolicy`, which it sends all the same (as replies_policy).
type WithPolicy = mastodon.rest.v1.CreateListParams & { repliesPolicy: string };
let s: TestServer & { url: string };
let lia: mastodon.rest.Client;
let max: mastodon.rest.Client;
let ned: mastodon.rest.Client;
let oz: mastodon.rest.Client;
const id: Record<string, string> = {};
let liaToken: string;

beforeAll(async () => {
  s = await startListeningServer();
  ({ lia, max, ned, oz } = (await mastoAccounts(s.url, 'masto lists', 'lia', 'max', 'ned', 'oz')) as Record<'lia' | 'max' | 'ned' | 'oz', mastodon.rest.Client>);
  for (const [name, c] of Object.entries({ lia, max, ned, oz })) id[name] = (await c.v1.accounts.verifyCredentials()).id;
  liaToken = tokenOf(lia);
  for (const who of ['max', 'ned']) await lia.v1.accounts.$select(id[who]!).follow();
  await lia.v1.timelines.home.list(); // lia's home feed exists, so fan-out fills it
});
afterAll(async () => s?.close());

const raw = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token: string | undefined, payload?: object) =>
  s.app.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(payload ? { payload } : {}) });
const until = async <T>(read: () => Promise<T>, ok: (v: T) => boolean) => {
  for (let i = 0; i < 100; i++) {
    const v = await read();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  return read();
};

describe('masto: lists', () => {
  it('creates, renames and deletes lists, and manages their members', async () => {
    const friends = await lia.v1.lists.create({ title: 'Friends' });
    expect(friends).toMatchObject({ title: 'Friends', repliesPolicy: 'list', exclusive: false });
    const renamed = await lia.v1.lists.$select(friends.id).update({ title: 'Close friends', repliesPolicy: 'followed' } as WithPolicy);
    expect(renamed).toMatchObject({ title: 'Close friends', repliesPolicy: 'followed' });
    expect((await lia.v1.lists.list()).map((l) => l.id)).toEqual([friends.id]);
    expect((await lia.v1.lists.$select(friends.id).fetch()).title).toBe('Close friends');

    await lia.v1.lists.$select(friends.id).accounts.create({ accountIds: [id.max!, id.ned!] });
    expect((await lia.v1.lists.$select(friends.id).accounts.list()).map((a) => a.id).sort()).toEqual([id.max, id.ned].sort());
    expect((await lia.v1.accounts.$select(id.max!).lists.list()).map((l) => l.id)).toEqual([friends.id]);
    await lia.v1.lists.$select(friends.id).accounts.remove({ accountIds: [id.ned!] });
    expect((await lia.v1.lists.$select(friends.id).accounts.list()).map((a) => a.id)).toEqual([id.max]);

    const res = await raw('GET', `/api/v1/lists/${friends.id}`, liaToken);
    expectEntity('List', res.json());
    await lia.v1.lists.$select(friends.id).remove();
    expect(await lia.v1.lists.list()).toEqual([]);
  });

  it('has a timeline of its members\' posts, with the replies policy, and an exclusive list keeps them out of home', async () => {
    const list = await lia.v1.lists.create({ title: 'Max only', repliesPolicy: 'none' } as WithPolicy);
    await lia.v1.lists.$select(list.id).accounts.create({ accountIds: [id.max!] });
    const before = await max.v1.statuses.create({ status: 'before the list was read' });
    // The first read builds the list feed from PostgreSQL; later posts arrive by fan-out.
    expect((await lia.v1.timelines.list.$select(list.id).list()).map((x) => x.id)).toContain(before.id);
    const post = await max.v1.statuses.create({ status: 'for the list' });
    const other = await ned.v1.statuses.create({ status: 'not in the list' });
    const reply = await max.v1.statuses.create({ status: '@ned a reply to ned', inReplyToId: other.id });
    const listIds = await until(async () => (await lia.v1.timelines.list.$select(list.id).list()).map((x) => x.id), (l) => l.includes(post.id));
    expect(listIds).toContain(post.id);
    expect(listIds).not.toContain(other.id);
    expect(listIds).not.toContain(reply.id);
    const home = await until(async () => (await lia.v1.timelines.home.list()).map((x) => x.id), (l) => l.includes(other.id));
    expect(home).toContain(post.id);

    await lia.v1.lists.$select(list.id).update({ title: 'Max only', exclusive: true });
    const homeNow = (await lia.v1.timelines.home.list()).map((x) => x.id);
    expect(homeNow).not.toContain(post.id);
    expect(homeNow).toContain(other.id);
    expect((await lia.v1.timelines.list.$select(list.id).list()).map((x) => x.id)).toContain(post.id);
    // Unfollowing a member takes them out of the list, as on Mastodon.
    await lia.v1.accounts.$select(id.max!).unfollow();
    expect(await lia.v1.lists.$select(list.id).accounts.list()).toEqual([]);
  });

  it('answers errors as Mastodon does, and changes nothing', async () => {
    const list = await lia.v1.lists.create({ title: 'Errors' });
    const cases: [string, string, object | undefined, number][] = [
      ['POST', '/api/v1/lists', { title: '  ' }, 422],
      ['POST', '/api/v1/lists', { title: 'x', replies_policy: 'everyone' }, 422],
      ['GET', '/api/v1/lists/999999', undefined, 404],
      ['GET', '/api/v1/lists/nope', undefined, 404],
      ['POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [id.oz] }, 404], // not followed
      ['POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [] }, 422],
      ['GET', '/api/v1/timelines/list/999999', undefined, 404],
    ];
    for (const [method, url, payload, status] of cases) {
      const res = await raw(method as 'GET' | 'POST', url, liaToken, payload);
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(payload)}`).toBe(status);
      expect(res.json().error).toEqual(expect.any(String));
    }
    // Another person's list does not exist for them.
    const ozToken = tokenOf(oz);
    expect((await raw('GET', `/api/v1/lists/${list.id}`, ozToken)).statusCode).toBe(404);
    expect((await raw('DELETE', `/api/v1/lists/${list.id}`, ozToken)).statusCode).toBe(404);
    expect((await raw('GET', '/api/v1/lists', undefined)).statusCode).toBe(401);
    expect((await lia.v1.lists.list()).map((l) => l.title)).toContain('Errors');
    expect(await lia.v1.lists.$select(list.id).accounts.list()).toEqual([]);
  });
});
