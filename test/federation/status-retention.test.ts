// Retention of other servers' posts (CONTENT_CACHE_RETENTION_DAYS, `statuses remove`): old posts nobody here
// interacted with are removed, from home and list feeds too; one with any local favourite, boost, reply, bookmark,
// mention, quote, pin or poll vote is kept, as is a recent one; a dry run changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { removeStaleRemoteStatuses } from '../../services/status-retention.ts';
import { replacePins } from '../../storage/status-marks.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
const CONTEXT = [AS, {
  gts: 'https://gotosocial.org/ns#',
  interactionPolicy: { '@id': 'gts:interactionPolicy', '@type': '@id' },
  canQuote: { '@id': 'gts:canQuote', '@type': '@id' },
  automaticApproval: { '@id': 'gts:automaticApproval', '@type': '@id' },
  toot: 'http://joinmastodon.org/ns#', votersCount: 'toot:votersCount',
}];
const DAY = 86_400_000;

let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let gusId: string;
let listId: string;
let seq = 0;

const api = async (method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Json };
};
const cli = async (...args: string[]) => {
  const lines: string[] = [];
  await runCli(args, ours.ctx.db, (l) => lines.push(l), (what) => publishTokenInvalidation(ours.ctx.redis, ours.config.redisPrefix, what), { redis: ours.ctx.redis, redisPrefix: ours.config.redisPrefix, config: ours.config });
  return lines;
};
/** A Note (or Question) by gus, published `daysAgo` days ago, pushed to our shared inbox as Mastodon sends it; its id here. */
async function push(label: string, daysAgo: number, extra: Json = {}): Promise<string> {
  const id = `${gus}/statuses/${++seq}`;
  const object = {
    id, type: 'Note', attributedTo: gus, content: `<p>${label}</p>`, published: new Date(Date.now() - daysAgo * DAY).toISOString(),
    to: PUBLIC, cc: `${gus}/followers`, interactionPolicy: { canQuote: { automaticApproval: PUBLIC } }, ...extra,
  };
  expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': CONTEXT, id: `${id}/activity`, type: 'Create', actor: gus, object, to: PUBLIC, cc: object.cc })).toBe(202);
  const found = await until(async () => (await api('GET', `/api/v2/search?q=${encodeURIComponent(id)}&type=statuses`)).body.statuses as Json[], (l) => l.length === 1, label);
  return found[0]!.id as string;
}
const alive = async (id: string) => (await api('GET', `/api/v1/statuses/${id}`)).status === 200;
const home = async () => ((await api('GET', '/api/v1/timelines/home?limit=40')).body as Json[]).map((s) => s.id as string);
const list = async () => ((await api('GET', `/api/v1/timelines/list/${listId}?limit=40`)).body as Json[]).map((s) => s.id as string);

const posts: Record<string, string> = {};

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance({ CONTENT_CACHE_RETENTION_DAYS: '30' }), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  gus = await peer.addActor('gus');
  const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`gus@${peer.domain}`)}&resolve=true&type=accounts`);
  gusId = found.body.accounts[0].id;
  await api('POST', `/api/v1/accounts/${gusId}/follow`);
  await until(async () => (await api('GET', `/api/v1/accounts/relationships?id[]=${gusId}`)).body[0], (r) => r.following === true, 'alice follows gus');
  listId = (await api('POST', '/api/v1/lists', { title: 'Gus' })).body.id;
  expect((await api('POST', `/api/v1/lists/${listId}/accounts`, { account_ids: [gusId] })).status).toBe(200);

  for (const label of ['untouched', 'untouched2', 'favourited', 'boosted', 'replied', 'bookmarked', 'quoted', 'pinned']) posts[label] = await push(label, 40);
  posts.recent = await push('recent', 2);
  posts.mentioning = await push('mentioning', 40, {
    content: `<p><a href="${ours.url}/@alice" class="u-url mention">@alice</a> hello</p>`, tag: [{ type: 'Mention', href: `${ours.url}/users/alice`, name: `@alice@${new URL(ours.url).host}` }],
  });
  posts.poll = await push('poll', 40, {
    type: 'Question', endTime: new Date(Date.now() + DAY).toISOString(), votersCount: 0,
    oneOf: [{ type: 'Note', name: 'yes', replies: { type: 'Collection', totalItems: 0 } }, { type: 'Note', name: 'no', replies: { type: 'Collection', totalItems: 0 } }],
  });

  // What alice does with them.
  expect((await api('POST', `/api/v1/statuses/${posts.favourited}/favourite`)).status).toBe(200);
  expect((await api('POST', `/api/v1/statuses/${posts.boosted}/reblog`)).status).toBe(200);
  expect((await api('POST', '/api/v1/statuses', { status: 'a reply', in_reply_to_id: posts.replied })).status).toBe(200);
  expect((await api('POST', `/api/v1/statuses/${posts.bookmarked}/bookmark`)).status).toBe(200);
  expect((await api('POST', '/api/v1/statuses', { status: 'a quote', quoted_status_id: posts.quoted })).status).toBe(200);
  const poll = (await api('GET', `/api/v1/statuses/${posts.poll}`)).body.poll;
  expect((await api('POST', `/api/v1/polls/${poll.id}/votes`, { choices: ['0'] })).status).toBe(200);
  // Gus's featured posts, as his featured collection is stored here.
  await replacePins(ours.ctx.db, gusId, [posts.pinned!]);
}, 120_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

describe('removal of old remote posts nobody here interacted with', () => {
  it('a dry run counts them and changes nothing', async () => {
    const before = await home();
    expect(before).toContain(posts.untouched);
    expect(await cli('statuses', 'remove', '--days', '30', '--dry-run')).toEqual(['2 posts would be removed (dry run)']);
    for (const id of Object.values(posts)) expect(await alive(id)).toBe(true);
    expect(await home()).toEqual(before);
  });

  it('removes them from the server and from home and list feeds, keeping every post with a local interaction and recent ones', async () => {
    expect(await home()).toContain(posts.untouched);
    expect(await list()).toContain(posts.untouched);
    // What the hourly job does with CONTENT_CACHE_RETENTION_DAYS=30, in batches (here of one post).
    const run = await removeStaleRemoteStatuses(ours.ctx, { days: ours.config.contentCacheRetentionDays, dryRun: false, batch: 1 });
    expect(run).toEqual({ found: 2, removed: 2 });
    for (const label of ['untouched', 'untouched2']) expect(await alive(posts[label]!), label).toBe(false);
    for (const label of ['favourited', 'boosted', 'replied', 'bookmarked', 'quoted', 'pinned', 'mentioning', 'poll', 'recent']) expect(await alive(posts[label]!), label).toBe(true);
    await until(home, (ids) => !ids.includes(posts.untouched!) && !ids.includes(posts.untouched2!), 'gone from the home feed');
    await until(list, (ids) => !ids.includes(posts.untouched!), 'gone from the list feed');
    expect(await home()).toContain(posts.recent);
    expect(await cli('statuses', 'remove', '--days', '30')).toEqual(['0 posts removed']);
  });

  it('the command line removes what a shorter period finds, and refuses a missing or wrong --days', async () => {
    const old = await push('old enough for five days', 6);
    expect(await cli('statuses', 'remove', '--days', '5')).toEqual(['1 posts removed']);
    expect(await alive(old)).toBe(false);
    expect(await alive(posts.recent!)).toBe(true);
    await expect(cli('statuses', 'remove')).rejects.toThrow(/--days/);
    await expect(cli('statuses', 'remove', '--days', '0')).rejects.toThrow(/--days/);
    await expect(cli('statuses', 'purge', '--days', '3')).rejects.toThrow(/unknown command/);
  });
});
