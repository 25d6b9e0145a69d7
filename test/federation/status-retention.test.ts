// Retention of other servers' posts (CONTENT_CACHE_RETENTION_DAYS, `statuses remove`): old posts nobody here
// interacted with are purged (their rows and what hangs off them: attachments and their files, mentions, tag links,
// polls, edits, card links), from home and list feeds too; one with any local favourite, boost, reply, bookmark,
// mention, quote, pin, poll vote or report is kept, as are a reply to one of ours, one boosted recently and a recent
// one; a dry run changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { removeStaleRemoteStatuses } from '../../services/status-retention.ts';
import { replacePins } from '../../storage/status-marks.ts';
import { purgeStatuses, staleRemoteStatuses } from '../../storage/status-retention.ts';
import { transaction } from '../../storage/db.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
const CONTEXT = [AS, {
  gts: 'https://gotosocial.org/ns#',
  interactionPolicy: { '@id': 'gts:interactionPolicy', '@type': '@id' },
  canQuote: { '@id': 'gts:canQuote', '@type': '@id' },
  automaticApproval: { '@id': 'gts:automaticApproval', '@type': '@id' },
  toot: 'http://joinmastodon.org/ns#', votersCount: 'toot:votersCount', Hashtag: 'as:Hashtag',
}];
const DAY = 86_400_000;

let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let gusId: string;
let listId: string;
let seq = 0;
let origin: Server;
let originUrl: string;

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
const count = async (sql: string, values: unknown[]) => (await ours.ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values)).rows[0]!.n;
const home = async () => ((await api('GET', '/api/v1/timelines/home?limit=40')).body as Json[]).map((s) => s.id as string);
const list = async () => ((await api('GET', `/api/v1/timelines/list/${listId}?limit=40`)).body as Json[]).map((s) => s.id as string);

const posts: Record<string, string> = {};

/** What the fully dressed old post carries here: its attachment and the copy of its file, its edit, poll, tag, card. */
let full: { mediaId: string; copies: string[]; pollId: string; cardId: string };

beforeAll(async () => {
  // Gus's server keeps its pictures here.
  const picture = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#3a6' } }).jpeg().toBuffer();
  origin = createServer((req, res) => (req.url === '/picture.jpg' ? res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': picture.length }).end(picture) : res.writeHead(404).end()));
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
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

  // One with everything that hangs off a post: an attachment (copied to our file host), a tag, a mention of someone
  // elsewhere, a poll nobody here voted in, an edit, a link card.
  posts.full = await push('full', 40, {
    type: 'Question', endTime: new Date(Date.now() + DAY).toISOString(), votersCount: 0,
    anyOf: [{ type: 'Note', name: 'red', replies: { type: 'Collection', totalItems: 0 } }, { type: 'Note', name: 'green', replies: { type: 'Collection', totalItems: 0 } }],
    attachment: [{ type: 'Document', mediaType: 'image/jpeg', url: `${originUrl}/picture.jpg`, name: 'a green square' }],
    tag: [{ type: 'Hashtag', href: `${peer.url}/tags/retained`, name: '#retained' }, { type: 'Mention', href: gus, name: `@gus@${peer.domain}` }],
  });
  const fullRow = await ours.ctx.db.query<{ id: string }>(`SELECT id::text FROM media_attachments WHERE status_id = $1`, [posts.full]);
  const mediaId = fullRow.rows[0]!.id;
  const copies = await until(async () => (await ours.ctx.db.query<{ key: string }>(`SELECT key FROM cached_files WHERE kind = 'attachment' AND owner_id = $1`, [mediaId])).rows.map((r) => r.key), (k) => k.length > 0, 'the attachment copied');
  const fullUri = `${gus}/statuses/${seq}`;
  expect(await peer.send('gus', `${ours.url}/inbox`, {
    '@context': CONTEXT, id: `${fullUri}/update`, type: 'Update', actor: gus, to: PUBLIC,
    object: {
      id: fullUri, type: 'Question', attributedTo: gus, content: '<p>full, edited</p>', published: new Date(Date.now() - 40 * DAY).toISOString(), updated: new Date().toISOString(),
      to: PUBLIC, cc: `${gus}/followers`, endTime: new Date(Date.now() + DAY).toISOString(), votersCount: 0,
      anyOf: [{ type: 'Note', name: 'red', replies: { type: 'Collection', totalItems: 0 } }, { type: 'Note', name: 'green', replies: { type: 'Collection', totalItems: 0 } }],
      attachment: [{ type: 'Document', mediaType: 'image/jpeg', url: `${originUrl}/picture.jpg`, name: 'a green square' }],
      tag: [{ type: 'Hashtag', href: `${peer.url}/tags/retained`, name: '#retained' }, { type: 'Mention', href: gus, name: `@gus@${peer.domain}` }],
    },
  })).toBe(202);
  await until(() => count('status_edits WHERE status_id = $1', [posts.full]), (n) => n > 0, 'the edit stored');
  const card = await ours.ctx.db.query<{ id: string }>(`INSERT INTO preview_cards (url, title) VALUES ($1, 'A page') RETURNING id::text`, [`${originUrl}/page`]);
  await ours.ctx.db.query(`INSERT INTO preview_cards_statuses (status_id, preview_card_id, url) VALUES ($1, $2, $3)`, [posts.full, card.rows[0]!.id, `${originUrl}/page`]);
  const pollId = (await ours.ctx.db.query<{ id: string }>(`SELECT id::text FROM polls WHERE status_id = $1`, [posts.full])).rows[0]!.id;
  full = { mediaId, copies, pollId, cardId: card.rows[0]!.id };
  // Old posts tied to us otherwise: reported by alice, a reply to her post, one gus boosted yesterday.
  posts.reported = await push('reported', 40);
  const alicePost = (await api('POST', '/api/v1/statuses', { status: 'hello from alice' })).body;
  posts.replyToAlice = await push('reply to alice', 40, { inReplyTo: alicePost.uri, content: `<p><a href="${ours.url}/@alice" class="u-url mention">@alice</a> hi</p>` });
  posts.boostedLately = await push('boosted lately', 40);
  const boostedUri = `${gus}/statuses/${seq}`;
  expect(await peer.send('gus', `${ours.url}/inbox`, {
    '@context': CONTEXT, id: `${boostedUri}/announce`, type: 'Announce', actor: gus, object: boostedUri, published: new Date(Date.now() - DAY).toISOString(), to: PUBLIC, cc: `${gus}/followers`,
  })).toBe(202);
  await until(() => count('statuses WHERE reblog_of_id = $1', [posts.boostedLately]), (n) => n === 1, 'the boost stored');

  // What alice does with them.
  expect((await api('POST', '/api/v1/reports', { account_id: gusId, status_ids: [posts.reported] })).status).toBe(200);
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
  await Promise.all([ours?.close(), peer?.close(), new Promise((resolve) => (origin ? origin.close(resolve) : resolve(undefined)))]);
});

const KEPT = ['favourited', 'boosted', 'replied', 'bookmarked', 'quoted', 'pinned', 'mentioning', 'poll', 'recent', 'reported', 'replyToAlice', 'boostedLately'];
const file = (key: string) => existsSync(join(ours.config.dataDir, 'files', key));

describe('removal of old remote posts nobody here interacted with', () => {
  it('a dry run counts them and changes nothing', async () => {
    const before = await home();
    expect(before).toContain(posts.untouched);
    expect(await cli('statuses', 'remove', '--days', '30', '--dry-run')).toEqual(['3 posts would be removed (dry run)']);
    for (const id of Object.values(posts)) expect(await alive(id)).toBe(true);
    expect(await home()).toEqual(before);
    expect(full.copies.every(file)).toBe(true);
  });

  it('purges their rows, what hangs off them and their files, keeping every post tied to this server and recent ones', async () => {
    expect(await home()).toContain(posts.untouched);
    expect(await home()).toContain(posts.full);
    expect(await list()).toContain(posts.untouched);
    const gone = [posts.untouched!, posts.untouched2!, posts.full!];
    const statusesCount = async () => (await api('GET', `/api/v1/accounts/${gusId}`)).body.statuses_count as number;
    const countBefore = await statusesCount();
    const mediaKeys = (await ours.ctx.db.query<{ keys: (string | null)[] }>(`SELECT ARRAY[original_key, small_key, thumbnail_key] AS keys FROM media_attachments WHERE id = $1`, [full.mediaId])).rows[0]!.keys;
    const files = new Set([...mediaKeys.filter((k): k is string => k !== null), ...full.copies]);
    const dependents = ['mentions', 'statuses_tags', 'status_edits', 'polls', 'preview_cards_statuses'];
    for (const table of dependents) expect(await count(`${table} WHERE status_id = $1`, [posts.full]), table).toBeGreaterThan(0);
    expect([...files].every(file)).toBe(true);
    // What the hourly job does with CONTENT_CACHE_RETENTION_DAYS=30, in batches (here of one post).
    const run = await removeStaleRemoteStatuses(ours.ctx, { days: ours.config.contentCacheRetentionDays, dryRun: false, batch: 1 });
    expect(run).toEqual({ found: 3, removed: 3, files: files.size });
    // Not read as deleted: gone from the database, with what hung off them.
    expect(await count('statuses WHERE id = ANY($1::bigint[])', [gone])).toBe(0);
    expect(await count('media_attachments WHERE id = $1', [full.mediaId])).toBe(0);
    expect(await count('cached_files WHERE key = ANY($1::text[])', [full.copies])).toBe(0);
    expect([...files].some(file)).toBe(false);
    for (const table of dependents) expect(await count(`${table} WHERE status_id = ANY($1::bigint[])`, [gone]), table).toBe(0);
    expect(await count('poll_votes WHERE poll_id = $1', [full.pollId])).toBe(0);
    // The card stays for other posts linking the same page (as Mastodon keeps it).
    expect(await count('preview_cards WHERE id = $1', [full.cardId])).toBe(1);
    expect(await statusesCount()).toBe(countBefore - 3);
    // Nothing serves them any more, at once: the statuses, the home timeline read before (its page cached).
    for (const id of gone) expect(await alive(id), id).toBe(false);
    for (const id of gone) expect((await home()).includes(id)).toBe(false);
    for (const label of KEPT) expect(await alive(posts[label]!), label).toBe(true);
    // And the feeds in Redis drop them once the job has run.
    const feedKey = ours.ctx.feeds.key(alice.id);
    await until(async () => (await ours.ctx.redis.zrange(feedKey, 0, -1)), (ids) => !gone.some((id) => ids.includes(id)), 'gone from the home feed in Redis');
    await until(list, (ids) => !ids.includes(posts.untouched!), 'gone from the list feed');
    expect(await home()).toContain(posts.recent);
    expect(await cli('statuses', 'remove', '--days', '30')).toEqual(['0 posts removed, 0 files']);
  });

  it('a post favourited after its batch was found is kept: each batch is checked again before its rows go', async () => {
    const old = await push('found, then favourited', 40);
    const found = await staleRemoteStatuses(ours.ctx.db, new Date(Date.now() - 30 * DAY), '0', 10);
    expect(found.map((r) => r.id)).toEqual([old]);
    expect((await api('POST', `/api/v1/statuses/${old}/favourite`)).status).toBe(200);
    const purged = await transaction(ours.ctx.db, (tx) => purgeStatuses(tx, [old], new Date(Date.now() - 30 * DAY)));
    expect(purged.statuses).toEqual([]);
    expect(await alive(old)).toBe(true);
  });

  it('the command line removes what a shorter period finds, and refuses a missing or wrong --days', async () => {
    const old = await push('old enough for five days', 6);
    expect(await cli('statuses', 'remove', '--days', '5')).toEqual(['1 posts removed, 0 files']);
    expect(await alive(old)).toBe(false);
    expect(await alive(posts.recent!)).toBe(true);
    await expect(cli('statuses', 'remove')).rejects.toThrow(/--days/);
    await expect(cli('statuses', 'remove', '--days', '0')).rejects.toThrow(/--days/);
    await expect(cli('statuses', 'purge', '--days', '3')).rejects.toThrow(/unknown command/);
  });
});
