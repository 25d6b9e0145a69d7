// Link trends (GET /api/v1/trends/links), a trending link's timeline (GET /api/v1/timelines/link) and the admin trends
// API whose approvals and rejections decide what the public trends of links, statuses and tags show.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestAPIClient } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { instanceCacheKeys } from '../../services/instance.ts';
import { attachCard, upsertCard } from '../../storage/preview-cards.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { refreshTrends } from '../../services/trends.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer & { url: string };
let admin: TestUser;
let adminNoScope: string;
let plain: TestUser;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
/** More sharers: links, tags and statuses trend from five accounts on (Mastodon's threshold). */
let more: TestUser[];
const cards: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };
const URL_A = 'https://news.example/a';
const URL_B = 'https://blog.example/b';
const URL_C = 'https://www.spam.example/c';
/** The public posts showing card A, oldest first. */
const postsA: string[] = [];
let trendyTagId: string;
let favouritedId: string;

const api = async (who: TestUser | string | null, method: 'GET' | 'POST', url: string, payload?: object) => {
  const token = typeof who === 'string' ? who : who?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null, link: res.headers.link as string | undefined };
};
const ok = async (who: TestUser | string | null, method: 'GET' | 'POST', url: string) => {
  const res = await api(who, method, url);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res;
};
const post = async (who: TestUser, status: string, extra: object = {}) => {
  const res = await api(who, 'POST', '/api/v1/statuses', { status, visibility: 'public', ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
};
async function card(url: string, title: string): Promise<string> {
  const { card } = await upsertCard(s.ctx.db, {
    url, title, description: `About ${title}`, type: 'link', author_name: '', author_url: '', provider_name: 'Example', provider_url: '',
    html: '', embed_url: '', width: 0, height: 0, image_remote_url: null, image_key: null, blurhash: null, published_at: null,
  });
  return String(card.id);
}
/** A post of `who` showing the card (as the link-card job would leave it). */
async function share(who: TestUser, cardId: string, url: string, extra: object = {}): Promise<string> {
  const id = await post(who, `reading ${Math.random().toString(36).slice(2)}`, extra);
  await attachCard(s.ctx.db, id, cardId, url, false);
  await s.ctx.versions.bump({ statuses: [id] }); // as the job does: the post's renderings now show the card
  return id;
}
const publicLinks = async (query = '') => (await ok(null, 'GET', `/api/v1/trends/links${query}`)).body as Json[];
const adminLinks = async () => (await ok(admin, 'GET', '/api/v1/admin/trends/links')).body as Json[];
const today = String(Math.floor(Date.now() / 86_400_000) * 86_400);

beforeAll(async () => {
  s = await startListeningServer();
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [admin, plain, alice, bob, carol, dave] = await Promise.all([
    registerUser(s.app, client, 'trendboss', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'plain', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'alice'),
    registerUser(s.app, client, 'bob'),
    registerUser(s.app, client, 'carol'),
    registerUser(s.app, client, 'dave'),
  ]);
  more = await Promise.all(['erin', 'frank', 'grace', 'heidi'].map((n) => registerUser(s.app, client, n)));
  await makeAdmin(s, admin);
  adminNoScope = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'read write');

  cards.a = await card(URL_A, 'Big news');
  cards.b = await card(URL_B, 'A blog post');
  cards.c = await card(URL_C, 'Buy now');
  // Trend scores (services/trends.ts) need five distinct accounts today, where this file used to count one and up:
  // A is shared by seven accounts (eight posts), B by six, C by five.
  // A: eight posts by seven accounts count; a post behind a content warning and a private one do not.
  postsA.push(await share(alice, cards.a, URL_A));
  postsA.push(await share(bob, cards.a, URL_A));
  postsA.push(await share(carol, cards.a, URL_A));
  postsA.push(await share(alice, cards.a, URL_A));
  for (const u of more) postsA.push(await share(u, cards.a, URL_A));
  // (Shown in the link's timeline all the same.)
  postsA.push(await share(dave, cards.a, URL_A, { spoiler_text: 'spoilers' }));
  await share(dave, cards.a, URL_A, { visibility: 'private' });
  // B: six accounts; C: five.
  for (const u of [alice, dave, ...more]) await share(u, cards.b, URL_B);
  for (const u of [bob, ...more]) await share(u, cards.c, URL_C);
  // C again, but only in sensitive posts (which do not count): C stays behind B.
  await share(carol, cards.c, URL_C, { sensitive: true });
  await share(dave, cards.c, URL_C, { sensitive: true });

  // A trending tag (five accounts) and a trending status (three favourites and two boosts), both shown without review.
  for (const u of [alice, bob, ...more.slice(0, 3)]) await post(u, 'so #trendy');
  trendyTagId = (await s.ctx.db.query(`SELECT id::text FROM tags WHERE lower(name) = 'trendy'`)).rows[0].id;
  favouritedId = await post(carol, 'favourite me');
  for (const u of [bob, dave, more[0]!]) expect((await api(u, 'POST', `/api/v1/statuses/${favouritedId}/favourite`)).status).toBe(200);
  for (const u of [more[1]!, more[2]!]) expect((await api(u, 'POST', `/api/v1/statuses/${favouritedId}/reblog`)).status).toBe(200);
  await Promise.all(instanceCacheKeys(s.config.redisPrefix).map((key) => s.ctx.redis.del(key)));
  await refreshTrends(s.ctx);
}, 60_000);

afterAll(async () => {
  await s?.close();
});

describe('link trends', () => {
  it('ranks links by accounts sharing them, and shows none before an operator approves them', async () => {
    expect(await publicLinks()).toEqual([]);
    const links = await adminLinks();
    expect(links.map((l) => l.url)).toEqual([URL_A, URL_B, URL_C]);
    for (const l of links) {
      expectEntity('TrendsLink', l);
      expect(l.requires_review).toBe(true);
    }
    expect(links[0]!.id).toBe(cards.a);
    expect(links[0]!.history).toHaveLength(7);
    expect(links[0]!.history[0]).toEqual({ day: today, accounts: '7', uses: '8' });
    expect(links[0]!.history.slice(1).every((h: Json) => h.uses === '0' && h.accounts === '0')).toBe(true);
    expect(links[2]!.history[0]).toEqual({ day: today, accounts: '5', uses: '5' });
    // The timeline of a link that does not trend is a 404, as is an unknown link's.
    expect((await api(null, 'GET', `/api/v1/timelines/link?url=${encodeURIComponent(URL_A)}`)).status).toBe(404);
    expect((await api(null, 'GET', `/api/v1/timelines/link?url=${encodeURIComponent('https://nowhere.example/')}`)).status).toBe(404);
  });

  it('shows a link once approved, with its history', async () => {
    const approved = await ok(admin, 'POST', `/api/v1/admin/trends/links/${cards.a}/approve`);
    expectEntity('TrendsLink', approved.body);
    expect(approved.body).toMatchObject({ id: cards.a, url: URL_A, requires_review: false });
    const links = await publicLinks();
    expect(links.map((l) => l.url)).toEqual([URL_A]);
    expectEntity('TrendsLink', links[0]);
    expect(links[0]).not.toHaveProperty('requires_review');
    expect(links[0]!.title).toBe('Big news');
    expect(links[0]!.history[0]).toEqual({ day: today, accounts: '7', uses: '8' });
  });

  it('lets publishers be approved or rejected, by id or by domain; a link\'s own review comes first', async () => {
    const publishers = (await ok(admin, 'GET', '/api/v1/admin/trends/links/publishers')).body as Json[];
    expect(publishers.map((p) => p.domain).sort()).toEqual(['blog.example', 'news.example', 'www.spam.example']);
    for (const p of publishers) {
      expect(p).toMatchObject({ trendable: false, reviewed_at: null, requires_review: true });
      expect(typeof p.requested_review_at).toBe('string');
    }
    const blog = publishers.find((p) => p.domain === 'blog.example')!;
    const approved = (await ok(admin, 'POST', `/api/v1/admin/trends/links/publishers/${blog.id}/approve`)).body;
    expect(approved).toMatchObject({ id: blog.id, domain: 'blog.example', trendable: true, requires_review: false });
    expect((await publicLinks()).map((l) => l.url)).toEqual([URL_A, URL_B]);
    // Offset paging with Link headers.
    const first = await ok(null, 'GET', '/api/v1/trends/links?limit=1');
    expect(first.body.map((l: Json) => l.url)).toEqual([URL_A]);
    expect(first.link).toContain('offset=1');
    expect((await publicLinks('?limit=1&offset=1')).map((l) => l.url)).toEqual([URL_B]);

    // The link itself rejected: gone, though its publisher is approved.
    const rejected = (await ok(admin, 'POST', `/api/v1/admin/trends/links/${cards.b}/reject`)).body;
    expect(rejected).toMatchObject({ id: cards.b, requires_review: false });
    expect((await publicLinks()).map((l) => l.url)).toEqual([URL_A]);

    // A domain above www.spam.example approved by name, before any link of its own trends: C trends.
    const parent = (await ok(admin, 'POST', '/api/v1/admin/trends/links/publishers/spam.example/approve')).body;
    expect(parent).toMatchObject({ domain: 'spam.example', trendable: true, requires_review: false, requested_review_at: null });
    expect((await publicLinks()).map((l) => l.url)).toEqual([URL_A, URL_C]);
    // The more specific publisher rejected (by domain) holds: C no longer awaits review, and does not trend.
    const spam = (await ok(admin, 'POST', '/api/v1/admin/trends/links/publishers/www.spam.example/reject')).body;
    expect(spam).toMatchObject({ domain: 'www.spam.example', trendable: false, requires_review: false });
    const links = await adminLinks();
    expect(links.map((l) => [l.url, l.requires_review])).toEqual([[URL_A, false], [URL_B, false], [URL_C, false]]);
    expect((await publicLinks()).map((l) => l.url)).toEqual([URL_A]);
    // The next scoring run keeps what the reviews decided.
    await refreshTrends(s.ctx);
    expect((await publicLinks()).map((l) => l.url)).toEqual([URL_A]);
    expect((await adminLinks()).map((l) => l.url)).toEqual([URL_A, URL_B, URL_C]);
    // Unknown ids are 404s.
    expect((await api(admin, 'POST', '/api/v1/admin/trends/links/publishers/12345/approve')).status).toBe(404);
    expect((await api(admin, 'POST', '/api/v1/admin/trends/links/12345/approve')).status).toBe(404);
    expect((await api(admin, 'POST', '/api/v1/admin/trends/links/nope/approve')).status).toBe(404);
  });

  it('lists the posts of a trending link, newest first, with id paging', async () => {
    const url = `/api/v1/timelines/link?url=${encodeURIComponent(URL_A)}`;
    const all = await ok(null, 'GET', url);
    const newestFirst = [...postsA].reverse();
    expect(all.body.map((st: Json) => st.id)).toEqual(newestFirst);
    for (const st of all.body) expectEntity('Status', st);
    expect(all.body[0].card.url).toBe(URL_A);

    const page1 = await ok(null, 'GET', `${url}&limit=2`);
    expect(page1.body.map((st: Json) => st.id)).toEqual(newestFirst.slice(0, 2));
    const next = /<([^>]+)>; rel="next"/.exec(page1.link!)![1]!;
    expect(next).toContain(`max_id=${newestFirst[1]}`);
    expect(next).toContain('url=');
    const page2 = await ok(null, 'GET', next.slice(s.config.publicUrl.length));
    expect(page2.body.map((st: Json) => st.id)).toEqual(newestFirst.slice(2, 4));
    const newer = await ok(null, 'GET', `${url}&min_id=${postsA[0]}&limit=2`);
    expect(newer.body.map((st: Json) => st.id)).toEqual([postsA[2], postsA[1]]);
    const since = await ok(null, 'GET', `${url}&since_id=${postsA[2]}`);
    expect(since.body.map((st: Json) => st.id)).toEqual(postsA.slice(3).reverse());

    // A rejected link has no timeline.
    expect((await api(null, 'GET', `/api/v1/timelines/link?url=${encodeURIComponent(URL_B)}`)).status).toBe(404);
    expect((await api(null, 'GET', '/api/v1/timelines/link')).status).toBe(422); // no url
  });
});

describe('admin trends of tags and statuses', () => {
  it('shows tags without review, hides rejected ones, and lists them all to operators', async () => {
    const names = async () => ((await ok(null, 'GET', '/api/v1/trends/tags')).body as Json[]).map((t) => t.name);
    expect(await names()).toContain('trendy');
    const listed = ((await ok(admin, 'GET', '/api/v1/admin/trends/tags')).body as Json[]).find((t) => t.name === 'trendy')!;
    expectEntity('Tag', listed);
    expectEntity('AdminTag', listed);
    expect(listed).toMatchObject({ id: trendyTagId, trendable: true, usable: true, requires_review: true });
    expect(listed.history[0]).toEqual({ day: today, accounts: '5', uses: '5' });

    const rejected = (await ok(admin, 'POST', `/api/v1/admin/trends/tags/${trendyTagId}/reject`)).body;
    expectEntity('AdminTag', rejected);
    expect(rejected).toMatchObject({ name: 'trendy', trendable: false, requires_review: false });
    expect(await names()).not.toContain('trendy');
    const again = ((await ok(admin, 'GET', '/api/v1/admin/trends/tags')).body as Json[]).find((t) => t.name === 'trendy');
    expect(again).toMatchObject({ trendable: false, requires_review: false });

    expect((await ok(admin, 'POST', `/api/v1/admin/trends/tags/${trendyTagId}/approve`)).body).toMatchObject({ trendable: true });
    expect(await names()).toContain('trendy');
    expect((await api(admin, 'POST', '/api/v1/admin/trends/tags/12345/approve')).status).toBe(404);
  });

  it('shows statuses without review, hides rejected ones, and lists them all to operators', async () => {
    const ids = async () => ((await ok(null, 'GET', '/api/v1/trends/statuses')).body as Json[]).map((st) => st.id);
    expect(await ids()).toEqual([favouritedId]);
    const listed = (await ok(admin, 'GET', '/api/v1/admin/trends/statuses')).body as Json[];
    expect(listed.map((st) => [st.id, st.requires_review])).toEqual([[favouritedId, true]]);
    expectEntity('Status', listed[0]);

    const rejected = (await ok(admin, 'POST', `/api/v1/admin/trends/statuses/${favouritedId}/reject`)).body;
    expectEntity('Status', rejected);
    expect(rejected).toMatchObject({ id: favouritedId, requires_review: false });
    expect(await ids()).toEqual([]);
    await refreshTrends(s.ctx); // and stays hidden when scored again
    expect(await ids()).toEqual([]);
    expect(((await ok(admin, 'GET', '/api/v1/admin/trends/statuses')).body as Json[]).map((st) => st.requires_review)).toEqual([false]);
    await ok(admin, 'POST', `/api/v1/admin/trends/statuses/${favouritedId}/approve`);
    expect(await ids()).toEqual([favouritedId]);
    expect((await api(admin, 'POST', '/api/v1/admin/trends/statuses/12345/approve')).status).toBe(404);
  });
});

describe('who may use the admin trends API', () => {
  const routes: ['GET' | 'POST', string][] = [
    ['GET', '/api/v1/admin/trends/links'],
    ['GET', '/api/v1/admin/trends/links/publishers'],
    ['GET', '/api/v1/admin/trends/statuses'],
    ['GET', '/api/v1/admin/trends/tags'],
    ['POST', '/api/v1/admin/trends/links/1/approve'],
    ['POST', '/api/v1/admin/trends/links/publishers/news.example/reject'],
    ['POST', '/api/v1/admin/trends/statuses/1/reject'],
    ['POST', '/api/v1/admin/trends/tags/1/approve'],
  ];

  it('refuses anonymous callers (401), non-administrators and tokens without admin scopes (403)', async () => {
    for (const [method, url] of routes) {
      expect((await api(null, method, url)).status, `${method} ${url}`).toBe(401);
      expect((await api(plain, method, url)).status, `${method} ${url}`).toBe(403);
      expect((await api(adminNoScope, method, url)).status, `${method} ${url}`).toBe(403);
    }
    // Nothing was changed by the refused calls.
    expect((await ok(admin, 'GET', '/api/v1/admin/trends/links/publishers')).body.find((p: Json) => p.domain === 'news.example'))
      .toMatchObject({ requires_review: true });
  });

  it('answers masto\'s calls', async () => {
    const masto = createRestAPIClient({ url: s.url, accessToken: admin.token });
    const links = await masto.v1.trends.links.list();
    expect(links.map((l) => l.url)).toEqual([URL_A]);
    const adminLinksList = await masto.v1.admin.trends.links.list();
    expect(adminLinksList.map((l) => l.url)).toEqual([URL_A, URL_B, URL_C]);
    const statuses = await masto.v1.timelines.link.list({ url: URL_A });
    expect(statuses).toHaveLength(postsA.length);
  });
});
