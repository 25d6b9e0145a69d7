// How trends are scored (services/trends.ts, as Mastodon's Trends::Links, ::Statuses and ::Tags): the refreshTrends
// job, Mastodon's threshold of five accounts, boosts and favourites for statuses, boosters sharing links, the decay
// by half-life and the peak kept through the cooldown, and the viewer's language first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { eventually } from '../helpers/eventually.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { attachCard, upsertCard } from '../../storage/preview-cards.ts';
import { decayedFromPeak, firstAcceptedLanguage, refreshTrends, surgeScore, TREND_OPTIONS } from '../../services/trends.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let users: TestUser[];
let admin: TestUser;
const ids: Record<string, string> = {};
const HOUR = 3_600_000;

const api = async (method: 'GET' | 'POST', url: string, who: TestUser | null = null, payload?: object, headers: Record<string, string> = {}) => {
  const res = await s.app.inject({ method, url, headers: { ...(who ? bearer(who.token) : {}), ...headers }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null };
};
const post = async (who: TestUser, status: string, extra: object = {}) => {
  const res = await api('POST', '/api/v1/statuses', who, { status, visibility: 'public', ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
};
const act = async (who: TestUser, id: string, what: 'favourite' | 'reblog') =>
  expect((await api('POST', `/api/v1/statuses/${id}/${what}`, who)).status).toBe(200);
const list = async (path: string, who: TestUser | null = null, headers: Record<string, string> = {}) => {
  const res = await api('GET', path, who, undefined, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Json[];
};
const tagNames = async () => (await list('/api/v1/trends/tags')).map((t) => t.name);
const statusIds = async (who: TestUser | null = null, headers: Record<string, string> = {}) =>
  (await list('/api/v1/trends/statuses', who, headers)).map((st) => st.id);

beforeAll(async () => {
  s = await startTestServer();
  users = [...await registerUsers(s.app, 'u0', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7')];
  admin = await registerUser(s.app, await createApp(s.app, 'read write follow push admin:read admin:write'), 'boss', 'read write admin:read admin:write');
  await makeAdmin(s, admin);
  const [u0, u1, u2, u3, u4, u5, u6, u7] = users as [TestUser, TestUser, TestUser, TestUser, TestUser, TestUser, TestUser, TestUser];

  // Statuses: a French one liked by seven (score 36), an English one liked by three and boosted by two (16).
  ids.fr = await post(u0, 'Bonjour tout le monde', { language: 'fr' });
  for (const u of users.slice(1)) await act(u, ids.fr, 'favourite');
  ids.en = await post(u1, 'Hello everyone', { language: 'en' });
  for (const u of [u2, u3, u4]) await act(u, ids.en, 'favourite');
  for (const u of [u5, u6]) await act(u, ids.en, 'reblog');
  // Four interactions: under the threshold.
  ids.four = await post(u2, 'Almost', { language: 'en' });
  for (const u of [u3, u4, u5, u6]) await act(u, ids.four, 'favourite');
  // Not eligible, however liked: sensitive, behind a content warning, by an author who opted out of discovery.
  ids.sensitive = await post(u3, 'Careful', { sensitive: true });
  ids.warned = await post(u3, 'Behind a warning', { spoiler_text: 'cw' });
  ids.undiscoverable = await post(u7, 'Do not feature me');
  for (const u of [u0, u1, u2, u4, u5]) {
    for (const id of [ids.sensitive, ids.warned, ids.undiscoverable]) await act(u, id!, 'favourite');
  }
  await s.ctx.db.query(`UPDATE accounts SET discoverable = false WHERE id = $1`, [u7.id]);

  // Tags: #surge by six accounts (25); #few by four.
  for (const u of users.slice(0, 6)) await post(u, 'riding the #surge');
  for (const u of users.slice(0, 4)) await post(u, 'only a #few');

  // A link posted once and boosted by four: the boosters share it too (five accounts).
  const { card } = await upsertCard(s.ctx.db, {
    url: 'https://journal.example/article', title: 'Un article', description: '', type: 'link', author_name: '', author_url: '',
    provider_name: '', provider_url: '', html: '', embed_url: '', width: 0, height: 0, image_remote_url: null, image_key: null,
    blurhash: null, published_at: null,
  });
  ids.card = String(card.id);
  const linked = await post(u0, 'à lire https://journal.example/article', { language: 'fr' });
  await attachCard(s.ctx.db, linked, ids.card, 'https://journal.example/article', false);
  for (const u of [u1, u2, u3, u4]) await act(u, linked, 'reblog');
}, 90_000);

afterAll(async () => {
  await s?.close();
});

describe('the refreshTrends job', () => {
  it('is scheduled every five minutes, and fills the trends when it runs', async () => {
    const scheduler = await s.ctx.jobs.fanout.getJobScheduler('refresh-trends');
    expect(scheduler?.every).toBe(300_000);
    // Nothing trends before a refresh: the read path only reads the scores.
    expect(await tagNames()).toEqual([]);
    expect(await statusIds()).toEqual([]);
    await s.ctx.jobs.fanout.add('refreshTrends', { kind: 'refreshTrends' });
    expect(await eventually(async () => (await tagNames()).join(), 'surge', 10_000)).toBe('surge');
  });
});

describe('scores', () => {
  it('counts boosts and favourites for statuses, five at least, eligible posts only', async () => {
    await refreshTrends(s.ctx);
    // By score in the operators' list (no language first), and in a French reader's.
    expect((await list('/api/v1/admin/trends/statuses', admin)).map((st) => st.id)).toEqual([ids.fr, ids.en]);
    expect(await statusIds(null, { 'accept-language': 'fr' })).toEqual([ids.fr, ids.en]);
    const scores = (await s.ctx.db.query(`SELECT target_id::text AS id, score FROM trend_scores WHERE kind = 'status' ORDER BY score DESC`)).rows;
    expect(scores.map((r) => r.id)).toEqual([ids.fr, ids.en]);
    // (7 - 1)² and (5 - 1)², halved every two hours since posting (a few seconds ago).
    expect(scores[0].score).toBeLessThanOrEqual(36);
    expect(scores[0].score).toBeGreaterThan(35);
    expect(scores[1].score).toBeGreaterThan(15.5);
  });

  it('counts the accounts that boosted a link as sharing it', async () => {
    const links = await list('/api/v1/admin/trends/links', admin);
    expect(links.map((l) => l.id)).toEqual([ids.card]);
    expect(links[0]).toMatchObject({ requires_review: true });
    expect(await list('/api/v1/trends/links')).toEqual([]);
    expect((await api('POST', '/api/v1/admin/trends/links/publishers/journal.example/approve', admin)).status).toBe(200);
    expect((await list('/api/v1/trends/links')).map((l) => l.url)).toEqual(['https://journal.example/article']);
  });

  it('puts the viewer\'s language first: their locale, else Accept-Language, else English', async () => {
    expect(await statusIds(null, { 'accept-language': 'fr-CA,fr;q=0.9,en;q=0.5' })).toEqual([ids.fr, ids.en]);
    expect(await statusIds(null, { 'accept-language': 'de;q=0.2, en;q=0.8' })).toEqual([ids.en, ids.fr]);
    expect(await statusIds()).toEqual([ids.en, ids.fr]);
    // u2 signed up with the locale `en`: their locale decides, not the header.
    expect(await statusIds(users[2]!, { 'accept-language': 'fr' })).toEqual([ids.en, ids.fr]);
    await s.ctx.db.query(`UPDATE users SET locale = 'fr' WHERE account_id = $1`, [users[2]!.id]);
    expect(await statusIds(users[2]!)).toEqual([ids.fr, ids.en]);
    // Paging goes through the same order.
    expect((await list('/api/v1/trends/statuses?limit=1&offset=1', null, { 'accept-language': 'fr' })).map((st) => st.id)).toEqual([ids.en]);
  });

  it('decays statuses with a two-hour half-life from their posting, dropped under 0.3', async () => {
    // Twelve hours on: 36 / 64 ≈ 0.56 stays, 16 / 64 = 0.25 goes.
    await refreshTrends(s.ctx, new Date(Date.now() + 12 * HOUR));
    expect(await statusIds()).toEqual([ids.fr]);
    await refreshTrends(s.ctx);
    expect(await statusIds()).toEqual([ids.en, ids.fr]);
  });

  it('decays tags from their peak with a four-hour half-life, and keeps the peak through the two-day cooldown', async () => {
    const peak = async () => (await s.ctx.db.query(`SELECT score, max_score FROM trend_scores WHERE kind = 'tag'`)).rows;
    expect((await peak())[0]).toMatchObject({ max_score: 25 });
    expect((await peak())[0].score).toBeCloseTo(25, 2);
    // Twelve hours on (tomorrow: nobody used it today, yesterday is the expected level): 25 / 8.
    await refreshTrends(s.ctx, new Date(Date.now() + 12 * HOUR));
    expect(await tagNames()).toEqual(['surge']);
    expect((await peak())[0].score).toBeCloseTo(25 / 8, 3);
    // Twenty hours on: 25 / 32 < 1, gone; the peak is kept.
    await refreshTrends(s.ctx, new Date(Date.now() + 20 * HOUR));
    expect(await tagNames()).toEqual([]);
    expect((await list('/api/v1/admin/trends/tags', admin)).map((t) => t.name)).toEqual([]);
    expect(await peak()).toEqual([{ score: 0, max_score: 25 }]);
    // Past the cooldown the row goes.
    await refreshTrends(s.ctx, new Date(Date.now() + 50 * HOUR));
    expect(await peak()).toEqual([]);
    await refreshTrends(s.ctx);
    expect(await tagNames()).toEqual(['surge']);
    // A signed-in viewer is told whether they follow each trending tag.
    expect((await api('POST', '/api/v1/tags/surge/follow', users[0]!)).status).toBe(200);
    expect((await list('/api/v1/trends/tags', users[0]!)).map((t) => [t.name, t.following])).toEqual([['surge', true]]);
    expect((await list('/api/v1/trends/tags', users[1]!)).map((t) => [t.name, t.following])).toEqual([['surge', false]]);
  });

  it('computes Mastodon\'s surge, peak and decay', () => {
    expect(surgeScore(4, 0, 5)).toBe(0); // under the threshold
    expect(surgeScore(5, 0, 5)).toBe(16); // expected at least 1
    expect(surgeScore(6, 7, 5)).toBe(0); // under yesterday's level
    expect(surgeScore(9, 3, 5)).toBe(12);
    const now = new Date('2026-01-02T12:00:00Z');
    const o = TREND_OPTIONS.tag;
    // A smaller surge within the cooldown decays from the earlier, higher peak.
    const within = decayedFromPeak(9, { maxScore: 32, maxScoreAt: new Date(now.getTime() - 4 * HOUR) }, now, o);
    expect(within).toEqual({ score: 16, maxScore: 32, maxScoreAt: new Date(now.getTime() - 4 * HOUR) });
    // Past the cooldown it is the new peak.
    expect(decayedFromPeak(9, { maxScore: 32, maxScoreAt: new Date(now.getTime() - 49 * HOUR) }, now, o)).toEqual({ score: 9, maxScore: 9, maxScoreAt: now });
    // Under the decay threshold the score is 0, the peak kept.
    expect(decayedFromPeak(0, { maxScore: 4, maxScoreAt: new Date(now.getTime() - 12 * HOUR) }, now, o)).toMatchObject({ score: 0, maxScore: 4 });
    expect(firstAcceptedLanguage('*, pt-BR;q=0.7, es;q=0.9')).toBe('es');
    expect(firstAcceptedLanguage('x;q=abc, ;;, <script>')).toBeNull();
    expect(firstAcceptedLanguage(undefined)).toBeNull();
  });

  it('refuses bad paging with a 422 and Mastodon\'s error body', async () => {
    for (const q of ['offset=-1', 'limit=0', 'offset=99999', 'limit=abc']) {
      const res = await api('GET', `/api/v1/trends/statuses?${q}`);
      expect(res.status, q).toBe(422);
      expect(typeof res.body.error).toBe('string');
    }
  });
});
