// Private notes, removing a follower, familiar followers and featured accounts, as an app drives them with masto.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer & { url: string };
let c: Record<'ada' | 'bo' | 'cy' | 'di', mastodon.rest.Client>;
const id: Record<string, string> = {};

beforeAll(async () => {
  s = await startListeningServer();
  c = (await mastoAccounts(s.url, 'masto account extras', 'ada', 'bo', 'cy', 'di')) as typeof c;
  for (const [name, client] of Object.entries(c)) id[name] = (await client.v1.accounts.verifyCredentials()).id;
});
afterAll(async () => s?.close());

const raw = (method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, payload?: object) =>
  s.app.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(payload ? { payload } : {}) });

describe('masto: around accounts', () => {
  it('keeps a private note, shown only to its writer', async () => {
    const rel = await c.ada.v1.accounts.$select(id.bo!).note.create({ comment: 'met at the conference' });
    expect(rel.note).toBe('met at the conference');
    const [again] = await c.ada.v1.accounts.relationships.fetch({ id: [id.bo!] });
    expect(again!.note).toBe('met at the conference');
    const [theirs] = await c.bo.v1.accounts.relationships.fetch({ id: [id.ada!] });
    expect(theirs!.note).toBe('');
    expect((await c.ada.v1.accounts.$select(id.bo!).note.create({ comment: '' })).note).toBe('');
    const long = await raw('POST', `/api/v1/accounts/${id.bo}/note`, tokenOf(c.ada), { comment: 'x'.repeat(2001) });
    expect(long.statusCode).toBe(422);
    expect(long.json().error).toMatch(/^Validation failed/);
  });

  it('removes a follower, and shows familiar followers', async () => {
    await c.bo.v1.accounts.$select(id.ada!).follow();
    await c.ada.v1.accounts.$select(id.bo!).follow();
    await c.bo.v1.accounts.$select(id.cy!).follow();
    // masto's types take a bare array, which it sends as `0=…&1=…` (Mastodon ignores that too); `{ id }` sends id[].
    const familiar = await c.ada.v1.accounts.familiarFollowers.fetch({ id: [id.cy!, id.di!] } as unknown as string[]);
    expect(familiar).toEqual([{ id: id.cy, accounts: [expect.objectContaining({ id: id.bo })] }, { id: id.di, accounts: [] }]);
    const res = await raw('GET', `/api/v1/accounts/familiar_followers?id[]=${id.cy}`, tokenOf(c.ada));
    expectEntity('FamiliarFollowers', res.json()[0]);

    const rel = await c.ada.v1.accounts.$select(id.bo!).removeFromFollowers();
    expect(rel).toMatchObject({ followedBy: false, following: true });
    const [theirs] = await c.bo.v1.accounts.relationships.fetch({ id: [id.ada!] });
    expect(theirs!.following).toBe(false);
  });

  it('features followed accounts on a profile, and only those', async () => {
    const rel = await c.ada.v1.accounts.$select(id.bo!).endorse();
    expect(rel.endorsed).toBe(true);
    expect((await c.ada.v1.endorsements.list()).map((a) => a.id)).toEqual([id.bo]);
    expect((await c.cy.v1.accounts.$select(id.ada!).endorsements.list()).map((a) => a.id)).toEqual([id.bo]);
    const notFollowed = await raw('POST', `/api/v1/accounts/${id.di}/endorse`, tokenOf(c.ada));
    expect(notFollowed.statusCode).toBe(422);
    expect(notFollowed.json().error).toMatch(/following/);
    expect((await raw('POST', '/api/v1/accounts/99999999/endorse', tokenOf(c.ada))).statusCode).toBe(404);
    expect((await c.ada.v1.accounts.$select(id.bo!).unendorse()).endorsed).toBe(false);
    expect(await c.ada.v1.endorsements.list()).toEqual([]);
  });
});

describe('masto: featured hashtags', () => {
  it('features tags with their use counts, suggests recent ones, and publishes them in the actor', async () => {
    await c.di.v1.statuses.create({ status: 'about #Gardening and #tomatoes' });
    await c.di.v1.statuses.create({ status: 'more #gardening' });
    await c.di.v1.statuses.create({ status: 'only for followers #gardening', visibility: 'private' });
    const suggested = await c.di.v1.featuredTags.suggestions.list();
    expect(suggested.map((t) => t.name).sort()).toEqual(['gardening', 'tomatoes']);

    const tag = await c.di.v1.featuredTags.create({ name: 'Gardening' });
    expect(tag).toMatchObject({ name: 'Gardening', statusesCount: '2', lastStatusAt: new Date().toISOString().slice(0, 10) });
    const res = await raw('GET', `/api/v1/accounts/${id.di}/featured_tags`);
    expect(res.statusCode).toBe(200);
    for (const t of res.json()) expectEntity('FeaturedTag', t);
    expect((await c.ada.v1.accounts.$select(id.di!).featuredTags.list()).map((t) => t.name)).toEqual(['Gardening']);
    expect((await c.di.v1.featuredTags.create({ name: 'gardening' })).id).toBe(tag.id);
    expect((await c.di.v1.featuredTags.suggestions.list()).map((t) => t.name)).toEqual(['tomatoes']);

    const actor = await s.app.inject({ method: 'GET', url: '/users/di', headers: { accept: 'application/activity+json' } });
    const collection = actor.json().featuredTags as string;
    const tags = await s.app.inject({ method: 'GET', url: new URL(collection).pathname, headers: { accept: 'application/activity+json' } });
    expect(tags.json()).toMatchObject({ type: 'OrderedCollection', orderedItems: [expect.objectContaining({ type: 'Hashtag', name: '#Gardening' })] });

    for (const name of ['', '12345', 'not a tag']) {
      const bad = await raw('POST', '/api/v1/featured_tags', tokenOf(c.di), { name });
      expect(bad.statusCode, name).toBe(422);
      expect(bad.json().error).toMatch(/^Validation failed/);
    }
    expect((await raw('DELETE', '/api/v1/featured_tags/99999', tokenOf(c.di))).statusCode).toBe(404);
    await c.di.v1.featuredTags.$select(tag.id).remove();
    expect(await c.di.v1.featuredTags.list()).toEqual([]);
  });
});
