// Bookmarks, the favourites list, pins and muted conversations, as a Mastodon app uses them through masto, with raw
// answers checked against Mastodon's schema and the error paths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer & { url: string };
let pia: mastodon.rest.Client;
let quin: mastodon.rest.Client;
let rue: mastodon.rest.Client;
const id: Record<string, string> = {};
const token: Record<string, string> = {};

beforeAll(async () => {
  s = await startListeningServer();
  ({ pia, quin, rue } = (await mastoAccounts(s.url, 'masto marks', 'pia', 'quin', 'rue')) as Record<'pia' | 'quin' | 'rue', mastodon.rest.Client>);
  for (const [name, c] of Object.entries({ pia, quin, rue })) {
    id[name] = (await c.v1.accounts.verifyCredentials()).id;
    token[name] = tokenOf(c);
  }
});
afterAll(async () => s?.close());

const raw = (method: 'GET' | 'POST', url: string, who?: string) =>
  s.app.inject({ method, url, headers: who ? { authorization: `Bearer ${token[who]}` } : {} });
const post = (c: mastodon.rest.Client, status: string, visibility: 'public' | 'unlisted' | 'private' | 'direct' = 'public', inReplyToId?: string) =>
  c.v1.statuses.create({ status, visibility, ...(inReplyToId ? { inReplyToId } : {}) });

describe('masto: bookmarks and favourites', () => {
  it('bookmarks and unbookmarks, lists bookmarks newest first with Link paging, and refuses what cannot be seen', async () => {
    const a = await post(pia, 'first to bookmark');
    const b = await post(pia, 'second to bookmark');
    expect((await quin.v1.statuses.$select(b.id).bookmark()).bookmarked).toBe(true);
    expect((await quin.v1.statuses.$select(a.id).bookmark()).bookmarked).toBe(true);
    // Again: no change, no error.
    expect((await quin.v1.statuses.$select(a.id).bookmark()).bookmarked).toBe(true);
    expect((await quin.v1.statuses.$select(a.id).fetch()).bookmarked).toBe(true);
    expect((await pia.v1.statuses.$select(a.id).fetch()).bookmarked).toBe(false); // per viewer

    // Newest bookmark first (a was bookmarked after b), one at a time through the Link header.
    expect((await quin.v1.bookmarks.list()).map((x) => x.id)).toEqual([a.id, b.id]);
    const first = await raw('GET', '/api/v1/bookmarks?limit=1', 'quin');
    expect(first.statusCode).toBe(200);
    expect(first.json().map((x: { id: string }) => x.id)).toEqual([a.id]);
    for (const st of first.json()) expectEntity('Status', st);
    const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))![1]!;
    const second = await raw('GET', new URL(next).pathname + new URL(next).search, 'quin');
    expect(second.json().map((x: { id: string }) => x.id)).toEqual([b.id]);

    // A boost's id bookmarks what it boosts.
    const boost = await rue.v1.statuses.$select(b.id).reblog();
    await quin.v1.statuses.$select(b.id).unbookmark();
    const viaBoost = await quin.v1.statuses.$select(boost.id).bookmark();
    expect(viaBoost.reblog?.bookmarked).toBe(true);
    expect((await quin.v1.statuses.$select(b.id).fetch()).bookmarked).toBe(true);

    const un = await raw('POST', `/api/v1/statuses/${a.id}/unbookmark`, 'quin');
    expect(un.statusCode).toBe(200);
    expectEntity('Status', un.json());
    expect(un.json().bookmarked).toBe(false);
    expect((await quin.v1.bookmarks.list()).map((x) => x.id)).toEqual([b.id]);

    // Followers-only post of someone quin does not follow, an unknown id, no token.
    const hidden = await post(pia, 'followers only', 'private');
    for (const url of [`/api/v1/statuses/${hidden.id}/bookmark`, '/api/v1/statuses/123456789/bookmark', '/api/v1/statuses/nope/bookmark']) {
      const res = await raw('POST', url, 'quin');
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
    expect((await raw('GET', '/api/v1/bookmarks')).statusCode).toBe(401);
    const bad = await raw('GET', '/api/v1/bookmarks?limit=abc', 'quin');
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ error: expect.any(String) });
  });

  it('lists favourites newest favourite first, with Link paging', async () => {
    const older = await post(pia, 'favourite me later');
    const newer = await post(pia, 'favourite me first');
    await rue.v1.statuses.$select(newer.id).favourite();
    await rue.v1.statuses.$select(older.id).favourite();
    const list = await rue.v1.favourites.list();
    expect(list.map((x) => x.id)).toEqual([older.id, newer.id]);
    expect(list.every((x) => x.favourited)).toBe(true);
    const page = await raw('GET', '/api/v1/favourites?limit=1', 'rue');
    for (const st of page.json()) expectEntity('Status', st);
    expect(String(page.headers.link)).toContain('rel="next"');
    const next = new URL(/<([^>]+)>; rel="next"/.exec(String(page.headers.link))![1]!);
    expect((await raw('GET', next.pathname + next.search, 'rue')).json().map((x: { id: string }) => x.id)).toEqual([newer.id]);
    await rue.v1.statuses.$select(older.id).unfavourite();
    expect((await rue.v1.favourites.list()).map((x) => x.id)).toEqual([newer.id]);
    expect((await raw('GET', '/api/v1/favourites')).statusCode).toBe(401);
  });
});

describe('masto: pins', () => {
  it('pins own public, unlisted and followers-only posts (at most 5), lists them, and refuses the rest with 422', async () => {
    const pub = await post(rue, 'pin me');
    const unl = await post(rue, 'pin me too', 'unlisted');
    const pinned = await rue.v1.statuses.$select(pub.id).pin();
    expect(pinned.pinned).toBe(true);
    await rue.v1.statuses.$select(unl.id).pin();
    await rue.v1.statuses.$select(unl.id).pin(); // again: no change
    const res = await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`, 'rue');
    expect(res.json().map((x: { id: string }) => x.id)).toEqual([unl.id, pub.id]);
    for (const st of res.json()) expectEntity('Status', st);
    // Others see the pins, without a `pinned` field (it is the viewer's own); anonymous readers too.
    const seen = await pia.v1.accounts.$select(id.rue!).statuses.list({ pinned: true });
    expect(seen.map((x) => x.id)).toEqual([unl.id, pub.id]);
    expect((await raw('GET', `/api/v1/statuses/${pub.id}`, 'pia')).json().pinned).toBeUndefined();
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`)).json()).toHaveLength(2);
    // Not pinned: the ordinary listing still shows everything.
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses`, 'pia')).json().length).toBeGreaterThanOrEqual(2);

    const refuse = async (statusId: string, who: string, message: RegExp) => {
      const r = await raw('POST', `/api/v1/statuses/${statusId}/pin`, who);
      expect(r.statusCode, r.body).toBe(422);
      expect(r.json().error).toMatch(message);
    };
    const priv = await post(rue, 'followers only', 'private');
    const direct = await post(rue, `@pia just you`, 'direct');
    const boost = await rue.v1.statuses.$select((await post(pia, 'boost me')).id).reblog();
    // A followers-only post may be pinned, as in Mastodon; only those who may see it see the pin.
    expect((await rue.v1.statuses.$select(priv.id).pin()).pinned).toBe(true);
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`)).json().map((x: { id: string }) => x.id)).not.toContain(priv.id);
    await refuse(direct.id, 'rue', /^Validation failed: .*mentioned users/);
    await refuse(boost.id, 'rue', /^Validation failed: A boost cannot be pinned/);
    await refuse(pub.id, 'pia', /^Validation failed: Someone else's post/);
    for (let i = 0; i < 2; i++) await rue.v1.statuses.$select((await post(rue, `more pins ${i}`)).id).pin();
    await refuse((await post(rue, 'one too many')).id, 'rue', /^Validation failed: You have already pinned the maximum/);
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`, 'rue')).json()).toHaveLength(5);
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`)).json()).toHaveLength(4);
    expect((await raw('POST', '/api/v1/statuses/999999999/pin', 'rue')).statusCode).toBe(404);

    // A deleted pin frees its place; unpinning shows at once.
    await rue.v1.statuses.$select(unl.id).remove();
    const unpinned = await rue.v1.statuses.$select(pub.id).unpin();
    expect(unpinned.pinned).toBe(false);
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`)).json()).toHaveLength(2);
    expect((await raw('GET', `/api/v1/accounts/${id.rue}/statuses?pinned=true`, 'rue')).json()).toHaveLength(3);
    expect((await rue.v1.statuses.$select(pub.id).fetch()).pinned).toBe(false);

    // The actor's featured collection lists the public ones as Notes (the followers-only pin is not published).
    const featured = await s.app.inject({ method: 'GET', url: '/users/rue/collections/featured', headers: { accept: 'application/activity+json' } });
    expect(featured.statusCode).toBe(200);
    const items = featured.json().orderedItems as { type: string; content: string }[];
    expect(items.map((n) => n.type)).toEqual(['Note', 'Note']);
    expect(items[0]!.content).toContain('more pins 1');
  });
});

describe('masto: muting a conversation', () => {
  it('marks the thread muted and makes no notifications from it until unmuted', async () => {
    const root = await post(pia, 'a thread about everything');
    const muted = await pia.v1.statuses.$select(root.id).mute();
    expect(muted.muted).toBe(true);
    expectEntity('Status', (await raw('GET', `/api/v1/statuses/${root.id}`, 'pia')).json());
    const reply = await post(quin, `@pia my thoughts`, 'public', root.id);
    const deeper = await post(rue, `@pia @quin and mine`, 'public', reply.id);
    await quin.v1.statuses.$select(root.id).favourite();
    expect((await pia.v1.statuses.$select(deeper.id).fetch()).muted).toBe(true);
    expect((await quin.v1.statuses.$select(deeper.id).fetch()).muted).toBe(false); // quin did not mute it
    const notes = await pia.v1.notifications.list();
    expect(notes.filter((n) => [root.id, reply.id, deeper.id].includes(n.status?.id ?? ''))).toEqual([]);
    // quin, who did not mute it, is told of rue's mention.
    expect((await quin.v1.notifications.list()).some((n) => n.type === 'mention' && n.status?.id === deeper.id)).toBe(true);

    // Unmuting from a reply deep in the thread lifts it.
    expect((await pia.v1.statuses.$select(deeper.id).unmute()).muted).toBe(false);
    expect((await pia.v1.statuses.$select(root.id).fetch()).muted).toBe(false);
    const after = await post(rue, '@pia back again', 'public', root.id);
    expect((await pia.v1.notifications.list()).some((n) => n.type === 'mention' && n.status?.id === after.id)).toBe(true);

    const hidden = await post(rue, 'followers only', 'private');
    expect((await raw('POST', `/api/v1/statuses/${hidden.id}/mute`, 'pia')).statusCode).toBe(404);
    expect((await raw('POST', `/api/v1/statuses/${root.id}/mute`)).statusCode).toBe(401);
  });
});
