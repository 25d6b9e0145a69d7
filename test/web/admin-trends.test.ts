// The trends' review page (/admin/trends): links, their publishers, posts and hashtags that trend, with approve and
// reject through the same services as the admin trends API, whose public trends follow at once; only roles that may
// manage taxonomies (Moderator and up) may use it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient, signedInClient } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { attachCard, upsertCard } from '../../storage/preview-cards.ts';
import { refreshTrends } from '../../services/trends.ts';
import { instanceCacheKeys } from '../../services/instance.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let modo: TestUser;
let blocker: TestUser;
let plain: TestUser;
let cardId: string;
let tagId: string;
let statusId: string;
const URL = 'https://paper.example/story';

async function cli(...args: string[]): Promise<void> {
  await runCli(args, s.ctx.db, () => {}, (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
}
const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(s.app, user);
const get = async (url: string, token?: string) => (await s.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} })).json() as Json[];
const post = async (who: TestUser, url: string, payload?: object) => {
  const res = await s.app.inject({ method: 'POST', url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Json;
};

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  const people = await Promise.all(['tmod', 'tblocker', 'tplain', 'ta', 'tb', 'tc', 'td', 'te'].map((u) => registerUser(s.app, client, u, 'read write follow push admin:read admin:write')));
  [modo, blocker, plain] = people as [TestUser, TestUser, TestUser];
  const sharers = people.slice(3);
  await cli('accounts', 'role', 'tmod', 'Moderator');
  await cli('roles', 'create', 'Blocks only', '--position', '5', '--permissions', 'manage_blocks');
  await cli('accounts', 'role', 'tblocker', 'Blocks only');
  // Five accounts share a link and a hashtag; a post gets three favourites and two boosts (the trends' thresholds).
  const { card } = await upsertCard(s.ctx.db, {
    url: URL, title: 'Front <page> story', description: '', type: 'link', author_name: '', author_url: '', provider_name: 'Paper', provider_url: '',
    html: '', embed_url: '', width: 0, height: 0, image_remote_url: null, image_key: null, blurhash: null, published_at: null,
  });
  cardId = String(card.id);
  for (const u of sharers) {
    const st = await post(u, '/api/v1/statuses', { status: `reading ${u.username} #pagetrend`, visibility: 'public' });
    await attachCard(s.ctx.db, st.id, cardId, URL, false);
  }
  tagId = (await s.ctx.db.query(`SELECT id::text FROM tags WHERE name = 'pagetrend'`)).rows[0].id;
  statusId = (await post(plain, '/api/v1/statuses', { status: 'A post worth <b>trending</b>', visibility: 'public' })).id;
  for (const u of sharers.slice(0, 3)) await post(u, `/api/v1/statuses/${statusId}/favourite`);
  for (const u of sharers.slice(3)) await post(u, `/api/v1/statuses/${statusId}/reblog`);
  await Promise.all(instanceCacheKeys(s.config.redisPrefix).map((key) => s.ctx.redis.del(key)));
  await refreshTrends(s.ctx);
}, 90_000);
afterAll(async () => s?.close());

describe('trends page', () => {
  it('lists what trends with its standing, for a moderator', async () => {
    const web = await signedIn(modo);
    const page = await web.get('/admin/trends');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/admin/trends');
    expect(page.body).toContain('Front &lt;page&gt; story');
    expect(page.body).toMatch(/paper\.example<\/td><td>5 posts by 5 accounts<\/td><td>waiting for review<\/td>/);
    expect(page.body).toMatch(/#pagetrend<\/a><\/td><td>5 posts by 5 accounts<\/td><td>shown, not reviewed<\/td>/);
    expect(page.body).toContain('A post worth &lt;b&gt;trending&lt;/b&gt;');
    expect(page.body).toContain('@tplain');
    expect(page.body).toContain('aria-label="Approve the link Front &lt;page&gt; story"');
  });

  it('approves and rejects links, publishers, posts and hashtags; the public trends and the admin API follow', async () => {
    const web = await signedIn(modo);
    const page = (await web.get('/admin/trends')).body;
    expect(await get('/api/v1/trends/links')).toEqual([]);

    const approved = await web.post(`/admin/trends/links/${cardId}/approve`, {}, page);
    expect(approved.statusCode).toBe(303);
    expect(approved.headers.location).toBe('/admin/trends?notice=approved#links');
    expect((await get('/api/v1/trends/links')).map((l) => l.url)).toEqual([URL]);
    const after = await web.get('/admin/trends?notice=approved');
    expect(after.body).toContain('Approved: it may trend.');
    expect(after.body).toMatch(/paper\.example<\/td><td>5 posts by 5 accounts<\/td><td>approved<\/td>/);
    // Once approved, only rejecting is offered.
    expect(after.body).not.toContain('aria-label="Approve the link Front &lt;page&gt; story"');

    expect((await web.post(`/admin/trends/tags/${tagId}/reject`, {}, page)).headers.location).toBe('/admin/trends?notice=rejected#tags');
    expect((await get('/api/v1/trends/tags')).map((t) => t.name)).not.toContain('pagetrend');
    expect((await get('/api/v1/admin/trends/tags', modo.token)).find((t) => t.id === tagId)).toMatchObject({ trendable: false, requires_review: false });

    expect((await get('/api/v1/trends/statuses')).map((t) => t.id)).toEqual([statusId]);
    expect((await web.post(`/admin/trends/statuses/${statusId}/reject`, {}, page)).headers.location).toBe('/admin/trends?notice=rejected#statuses');
    expect(await get('/api/v1/trends/statuses')).toEqual([]);
    expect((await web.get('/admin/trends')).body).toMatch(/@tplain, <time[^>]*>[^<]*<\/time><\/a> · 3 favourites, 2 boosts · rejected/);
    await web.post(`/admin/trends/statuses/${statusId}/approve`, {}, page);
    expect((await get('/api/v1/trends/statuses')).map((t) => t.id)).toEqual([statusId]);

    // The link rejected on its own; its publisher approved does not bring it back.
    await web.post(`/admin/trends/links/${cardId}/reject`, {}, page);
    const publisher = (await get('/api/v1/admin/trends/links/publishers', modo.token)).find((p) => p.domain === 'paper.example')!;
    expect((await web.post(`/admin/trends/publishers/${publisher.id}/approve`, {}, page)).headers.location).toBe('/admin/trends?notice=approved#publishers');
    expect((await get('/api/v1/admin/trends/links/publishers', modo.token)).find((p) => p.id === publisher.id)).toMatchObject({ trendable: true, requires_review: false });
    expect(await get('/api/v1/trends/links')).toEqual([]);
  });

  it('answers a link, post, hashtag or publisher that is not there with 404, changing nothing', async () => {
    const web = await signedIn(modo);
    const page = (await web.get('/admin/trends')).body;
    for (const url of ['/admin/trends/links/999999/approve', '/admin/trends/statuses/999999/reject', '/admin/trends/tags/999999/approve', '/admin/trends/tags/nope/reject', '/admin/trends/publishers/not%20a%20domain/approve', '/admin/trends/publishers/999999/reject']) {
      const res = await web.post(url, {}, page);
      expect(res.statusCode, url).toBe(404);
    }
    expect((await get('/api/v1/admin/trends/tags', modo.token)).find((t) => t.id === tagId)).toMatchObject({ trendable: false });
  });

  it('needs manage_taxonomies: a role without it and a person without a role get 403; a form without its token is refused', async () => {
    for (const who of [blocker, plain]) {
      const web = await signedIn(who);
      expect((await web.get('/admin/trends')).statusCode).toBe(403);
      const own = await web.get('/settings/profile');
      expect((await web.post(`/admin/trends/tags/${tagId}/approve`, {}, own.body)).statusCode).toBe(403);
    }
    const web = await signedIn(modo);
    await web.get('/admin/trends');
    expect((await web.post(`/admin/trends/tags/${tagId}/approve`, {})).statusCode).toBe(403);
    expect((await get('/api/v1/admin/trends/tags', modo.token)).find((t) => t.id === tagId)).toMatchObject({ trendable: false });
    const stranger = await new WebClient(s.app).get('/admin/trends');
    expect(stranger.headers.location).toBe('/auth/sign_in?return_to=%2Fadmin%2Ftrends');
  });
});
