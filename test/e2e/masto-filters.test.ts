// Filters as a Mastodon app manages them with masto: v2 filters with keywords and statuses, and the v1 API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';

let s: TestServer & { url: string };
let rae: mastodon.rest.Client;
let sol: mastodon.rest.Client;

beforeAll(async () => {
  s = await startListeningServer();
  ({ rae, sol } = (await mastoAccounts(s.url, 'masto filters', 'rae', 'sol')) as { rae: mastodon.rest.Client; sol: mastodon.rest.Client });
});
afterAll(async () => s?.close());

describe('masto: filters', () => {
  it('creates, lists, edits and deletes v2 filters with keywords and statuses', async () => {
    const filter = await rae.v2.filters.create({ title: 'Weather', context: ['home', 'public'], filterAction: 'warn', keywordsAttributes: [{ keyword: 'rain', wholeWord: true }] });
    expect(filter).toMatchObject({ title: 'Weather', filterAction: 'warn', context: ['home', 'public'] });
    expect(filter.keywords?.map((k) => k.keyword)).toEqual(['rain']);
    expect((await rae.v2.filters.list()).map((f) => f.id)).toEqual([filter.id]);

    const keyword = await rae.v2.filters.$select(filter.id).keywords.create({ keyword: 'snow', wholeWord: false });
    expect((await rae.v2.filters.keywords.$select(keyword.id).fetch()).keyword).toBe('snow');
    await rae.v2.filters.keywords.$select(keyword.id).update({ keyword: 'sleet' });
    expect((await rae.v2.filters.$select(filter.id).keywords.list()).map((k) => k.keyword)).toEqual(['rain', 'sleet']);

    const post = await sol.v1.statuses.create({ status: 'Rain again today' });
    const byId = await rae.v2.filters.$select(filter.id).statuses.create({ statusId: post.id });
    expect((await rae.v2.filters.statuses.$select(byId.id).fetch()).statusId).toBe(post.id);
    const publicTimeline = await rae.v1.timelines.public.list();
    expect(publicTimeline.find((x) => x.id === post.id)?.filtered).toEqual([
      expect.objectContaining({ keywordMatches: ['rain'], statusMatches: [post.id] }),
    ]);
    await rae.v2.filters.statuses.$select(byId.id).remove();

    const updated = await rae.v2.filters.$select(filter.id).update({ title: 'Bad weather', filterAction: 'hide' });
    expect(updated).toMatchObject({ title: 'Bad weather', filterAction: 'hide' });
    expect((await rae.v1.timelines.public.list()).some((x) => x.id === post.id)).toBe(false);
    await rae.v2.filters.$select(filter.id).remove();
    expect(await rae.v2.filters.list()).toEqual([]);
  });

  it('uses the v1 filters of older apps', async () => {
    const old = await rae.v1.filters.create({ phrase: 'heatwave', context: ['home'], irreversible: false, wholeWord: true });
    expect(old).toMatchObject({ phrase: 'heatwave', irreversible: false, wholeWord: true });
    expect((await rae.v1.filters.list()).map((f) => f.phrase)).toEqual(['heatwave']);
    expect((await rae.v1.filters.$select(old.id).update({ phrase: 'heat wave', context: ['home', 'notifications'] })).context).toEqual(['home', 'notifications']);
    await rae.v1.filters.$select(old.id).remove();
    expect(await rae.v1.filters.list()).toEqual([]);
  });
});
