// Annual reports ("Wrapstodon"): GET /api/v1/annual_reports, /:year, /:year/state, POST /:year/generate and /:year/read.
//
//   ann posts #alpha three times, #beta twice, #gamma once (with a poll), replies twice to bob and once to cat,
//   answers herself once, boosts bob twice and cat once, follows bob; bob and cat follow her. bob boosts her first
//   post and answers her third; bob and cat favourite her second, bob her third.
//   dan has 120 plain posts (written in SQL), eve one post in June 2024 (its id moved into that year in SQL).
// The campaign clock is set to 15 December of this year, so that this year's reports may be asked for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { startListeningServer } from '../helpers/listen.ts';
import { mastoAccounts } from '../helpers/masto.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { archetypeOf, currentCampaign, reportableYear, setAnnualReportClock } from '../../services/annual-reports.ts';

let s: TestServer & { url: string };
let ann: TestUser, bob: TestUser, cat: TestUser, dan: TestUser, eve: TestUser;
const year = new Date().getUTCFullYear();
const month = new Date().getUTCMonth() + 1;
const ids: Record<string, string> = {};

async function api(user: TestUser | string | null, method: 'GET' | 'POST', url: string, payload?: object) {
  const token = typeof user === 'string' ? user : user?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : undefined } as { status: number; body: any };
}

async function ok(user: TestUser, method: 'GET' | 'POST', url: string, payload?: object) {
  const res = await api(user, method, url, payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const post = async (user: TestUser, payload: object) => (await ok(user, 'POST', '/api/v1/statuses', payload)).id as string;
const state = async (user: TestUser, y: number | string) => (await ok(user, 'GET', `/api/v1/annual_reports/${y}/state`)).state as string;

/** Checks a WrappedAnnualReports against Mastodon's schemas. */
function expectWrapped(body: any) {
  for (const report of body.annual_reports) {
    // Mastodon's OpenAPI types `percentiles` as a number; Mastodon's source (AnnualReport::Percentiles) and this server
    // send an object of `followers` and `statuses`: everything else is checked against the schema.
    expectEntity('AnnualReport', { ...report, data: { ...report.data, percentiles: 0 } });
    expect(Object.keys(report.data.percentiles).sort()).toEqual(['followers', 'statuses']);
  }
  for (const account of body.accounts) expectEntity('Account', account);
  for (const status of body.statuses) expectEntity('Status', status);
}

beforeAll(async () => {
  s = await startListeningServer();
  [ann, bob, cat, dan, eve] = await registerUsers(s.app, 'ann', 'bob', 'cat', 'dan', 'eve');
  setAnnualReportClock(() => new Date(Date.UTC(year, 11, 15, 12)));

  await s.ctx.db.query(
    `INSERT INTO statuses (account_id, text, content, visibility) SELECT $1, 'x', '<p>x</p>', 'public' FROM generate_series(1, 120)`,
    [dan.id],
  );
  const june2024 = (BigInt(Date.UTC(2024, 5, 10)) << 16n).toString();
  await s.ctx.db.query(
    `INSERT INTO statuses (id, account_id, text, content, visibility, created_at) VALUES ($1, $2, 'old', '<p>old</p>', 'public', '2024-06-10T00:00:00Z')`,
    [june2024, eve.id],
  );

  ids.b1 = await post(bob, { status: 'bob one' });
  ids.b2 = await post(bob, { status: 'bob two' });
  ids.c1 = await post(cat, { status: 'cat one' });
  ids.p1 = await post(ann, { status: 'hello #alpha #beta' });
  ids.p2 = await post(ann, { status: 'again #alpha #beta' });
  ids.p3 = await post(ann, { status: 'third #alpha' });
  ids.p4 = await post(ann, { status: 'vote #gamma', poll: { options: ['yes', 'no'], expires_in: 3600 } });
  ids.r1 = await post(ann, { status: '@bob sure', in_reply_to_id: ids.b1 });
  ids.r2 = await post(ann, { status: '@bob indeed', in_reply_to_id: ids.b2 });
  ids.r3 = await post(ann, { status: '@cat hi', in_reply_to_id: ids.c1 });
  ids.r4 = await post(ann, { status: 'and more', in_reply_to_id: ids.p1 });
  for (const id of [ids.b1, ids.b2, ids.c1]) await ok(ann, 'POST', `/api/v1/statuses/${id}/reblog`);
  await ok(ann, 'POST', `/api/v1/accounts/${bob.id}/follow`);
  await ok(bob, 'POST', `/api/v1/accounts/${ann.id}/follow`);
  await ok(cat, 'POST', `/api/v1/accounts/${ann.id}/follow`);
  await ok(bob, 'POST', `/api/v1/statuses/${ids.p1}/reblog`);
  await post(bob, { status: '@ann yes', in_reply_to_id: ids.p3 });
  await ok(bob, 'POST', `/api/v1/statuses/${ids.p2}/favourite`);
  await ok(cat, 'POST', `/api/v1/statuses/${ids.p2}/favourite`);
  await ok(bob, 'POST', `/api/v1/statuses/${ids.p3}/favourite`);
});

afterAll(async () => {
  setAnnualReportClock(undefined);
  await s?.close();
});

describe('the rules', () => {
  it('has a campaign from 10 December to the end of the year, and lets earlier years with posts be asked for', () => {
    expect(currentCampaign(new Date('2026-12-09T23:59:59Z'))).toBeNull();
    expect(currentCampaign(new Date('2026-12-10T00:00:00Z'))).toBe(2026);
    expect(currentCampaign(new Date('2026-12-31T23:59:59Z'))).toBe(2026);
    expect(currentCampaign(new Date('2027-01-01T00:00:00Z'))).toBeNull();
    const nov = new Date('2026-11-26T00:00:00Z');
    expect([reportableYear(2026, nov), reportableYear(2025, nov), reportableYear(2016, nov), reportableYear(2015, nov), reportableYear(2027, nov)])
      .toEqual([false, true, true, false, false]);
    expect(reportableYear(2026, new Date('2026-12-20T00:00:00Z'))).toBe(true);
  });

  it("picks Mastodon's archetypes in Mastodon's order", () => {
    expect(archetypeOf({ standalone: 50, replies: 50, reblogs: 12, polls: 0 })).toBe('lurker');
    expect(archetypeOf({ standalone: 30, replies: 10, reblogs: 80, polls: 10 })).toBe('booster');
    expect(archetypeOf({ standalone: 100, replies: 10, reblogs: 10, polls: 11 })).toBe('pollster');
    expect(archetypeOf({ standalone: 30, replies: 70, reblogs: 20, polls: 0 })).toBe('replier');
    expect(archetypeOf({ standalone: 120, replies: 0, reblogs: 0, polls: 0 })).toBe('oracle');
  });
});

describe('annual reports', () => {
  it('asks for a token with the right scopes', async () => {
    expect((await api(null, 'GET', '/api/v1/annual_reports')).status).toBe(401);
    expect((await api(null, 'GET', `/api/v1/annual_reports/${year}/state`)).status).toBe(401);
    expect((await api(null, 'POST', `/api/v1/annual_reports/${year}/generate`)).status).toBe(401);
    const client = await createApp(s.app);
    const statusesOnly = await registerUser(s.app, client, 'narrow', 'read:statuses write:statuses');
    expect((await api(statusesOnly, 'GET', '/api/v1/annual_reports')).status).toBe(403);
    expect((await api(statusesOnly, 'GET', `/api/v1/annual_reports/${year}/state`)).status).toBe(403);
    expect((await api(statusesOnly, 'POST', `/api/v1/annual_reports/${year}/generate`)).status).toBe(403);
    const readOnly = await registerUser(s.app, client, 'reader', 'read:accounts');
    expect((await api(readOnly, 'GET', `/api/v1/annual_reports/${year}/state`)).status).toBe(200);
    expect((await api(readOnly, 'POST', `/api/v1/annual_reports/${year}/generate`)).status).toBe(403);
    expect((await api(readOnly, 'POST', `/api/v1/annual_reports/${year}/read`)).status).toBe(403);
  });

  it('is not to be had outside the campaign, for a year without posts, or for a year to come', async () => {
    setAnnualReportClock(() => new Date(Date.UTC(year, 10, 15)));
    expect(await state(ann, year)).toBe('ineligible');
    setAnnualReportClock(() => new Date(Date.UTC(year, 11, 15, 12)));
    expect(await state(ann, year - 1)).toBe('ineligible');
    expect(await state(ann, year + 1)).toBe('ineligible');
    expect(await state(ann, 'abc')).toBe('ineligible');
    const generate = await api(ann, 'POST', `/api/v1/annual_reports/${year - 1}/generate`);
    expect(generate.status).toBe(200);
    expect(await state(ann, year - 1)).toBe('ineligible');
    expect((await api(ann, 'GET', `/api/v1/annual_reports/${year - 1}`)).status).toBe(404);
    expect((await api(ann, 'POST', `/api/v1/annual_reports/${year - 1}/read`)).status).toBe(404);
    expect((await api(ann, 'GET', '/api/v1/annual_reports/abc')).status).toBe(404);
    expect(await ok(ann, 'GET', '/api/v1/annual_reports')).toEqual({ annual_reports: [], accounts: [], statuses: [] });
  });

  it('goes from eligible through generating to available, with one job however often it is asked for', async () => {
    expect(await state(ann, year)).toBe('eligible');
    await s.stopWorkers();
    try {
      const first = await api(ann, 'POST', `/api/v1/annual_reports/${year}/generate`);
      expect(first.status).toBe(202);
      expect(await state(ann, year)).toBe('generating');
      expect((await api(ann, 'POST', `/api/v1/annual_reports/${year}/generate`)).status).toBe(202);
      const { rows } = await s.ctx.db.query(`SELECT payload FROM outbox WHERE kind = 'generateAnnualReport'`);
      expect(rows.map((r) => r.payload)).toEqual([{ accountId: ann.id, year }]);
      expect((await api(ann, 'GET', `/api/v1/annual_reports/${year}`)).status).toBe(404);
    } finally {
      s.startWorkers();
    }
    expect(await eventually(() => state(ann, year), 'available', 10_000)).toBe('available');
    // Asked for again once there: nothing more is queued.
    expect((await api(ann, 'POST', `/api/v1/annual_reports/${year}/generate`)).status).toBe(200);
    expect(await eventually(async () => (await s.ctx.db.query(`SELECT 1 FROM outbox WHERE kind = 'generateAnnualReport'`)).rowCount, 0)).toBe(0);
  });

  it("holds each section's figures", async () => {
    const body = await ok(ann, 'GET', `/api/v1/annual_reports/${year}`);
    expectWrapped(body);
    expect(body.annual_reports).toHaveLength(1);
    const report = body.annual_reports[0];
    expect(report).toMatchObject({ year, account_id: ann.id, schema_version: 1, share_url: null });
    const data = report.data;
    expect(data.archetype).toBe('lurker');
    expect(data.type_distribution).toEqual({ total: 11, reblogs: 3, replies: 3, standalone: 5 });
    expect(data.top_hashtags).toEqual([{ name: 'alpha', count: 3 }, { name: 'beta', count: 2 }]);
    expect(data.top_statuses).toEqual({ by_reblogs: ids.p1, by_favourites: ids.p2, by_replies: ids.p3 });
    expect(data.commonly_interacted_with_accounts).toEqual([{ account_id: bob.id, count: 2 }]);
    expect(data.most_reblogged_accounts).toEqual([{ account_id: bob.id, count: 2 }]);
    const { rows: apps } = await s.ctx.db.query(
      `SELECT count(*)::int AS n FROM statuses WHERE account_id = $1 AND application_id IS NOT NULL`, [ann.id],
    );
    expect(apps[0].n).toBeGreaterThan(0);
    expect(data.most_used_apps).toEqual([{ name: 'Test app', count: apps[0].n }]);
    const months = data.time_series;
    expect(months).toHaveLength(12);
    expect(months.map((m: any) => m.month)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(months[month - 1]).toEqual({ month, statuses: 11, following: 1, followers: 2 });
    expect(months.filter((m: any) => m.month !== month).every((m: any) => m.statuses === 0 && m.following === 0 && m.followers === 0)).toBe(true);
    // Local accounts that posted this year: ann 11, bob 4, cat 1, dan 120 (eve's post is of 2024): 2 have fewer than
    // ann, of 4 (+1). That gained followers: ann 2, bob 1: 1 has fewer, of 2 (+1).
    expect(data.percentiles.statuses).toBeCloseTo(40);
    expect(data.percentiles.followers).toBeCloseTo(100 / 3);
    // The accounts and statuses it names, rendered.
    expect(body.accounts.map((a: any) => a.id)).toEqual([bob.id]);
    expect(body.statuses.map((st: any) => st.id).sort()).toEqual([ids.p1, ids.p2, ids.p3].sort());
    expect(body.statuses.find((st: any) => st.id === ids.p2).favourites_count).toBe(2);
  });

  it('is listed until read, and stays there to be fetched', async () => {
    const listed = await ok(ann, 'GET', '/api/v1/annual_reports');
    expectWrapped(listed);
    expect(listed.annual_reports.map((r: any) => r.year)).toEqual([year]);
    expect(listed.statuses).toHaveLength(3);
    expect(await ok(ann, 'POST', `/api/v1/annual_reports/${year}/read`)).toEqual({});
    expect(await ok(ann, 'POST', `/api/v1/annual_reports/${year}/read`)).toEqual({});
    expect(await ok(ann, 'GET', '/api/v1/annual_reports')).toEqual({ annual_reports: [], accounts: [], statuses: [] });
    expect((await ok(ann, 'GET', `/api/v1/annual_reports/${year}`)).annual_reports).toHaveLength(1);
    expect(await state(ann, year)).toBe('available');
    // Another user's report is not ann's.
    expect((await api(bob, 'GET', `/api/v1/annual_reports/${year}`)).status).toBe(404);
    expect((await api(bob, 'POST', `/api/v1/annual_reports/${year}/read`)).status).toBe(404);
  });

  it('calls a prolific poster an oracle', async () => {
    expect((await api(dan, 'POST', `/api/v1/annual_reports/${year}/generate`)).status).toBe(202);
    expect(await eventually(() => state(dan, year), 'available', 10_000)).toBe('available');
    const { data } = (await ok(dan, 'GET', `/api/v1/annual_reports/${year}`)).annual_reports[0];
    expect(data.archetype).toBe('oracle');
    expect(data.type_distribution).toEqual({ total: 120, reblogs: 0, replies: 0, standalone: 120 });
    expect(data.top_statuses).toEqual({ by_reblogs: null, by_favourites: null, by_replies: null });
    expect(data.most_used_apps).toEqual([]);
  });

  it('makes the report of an earlier year the account posted in', async () => {
    expect(await state(eve, year)).toBe('ineligible');
    expect(await state(eve, 2024)).toBe('eligible');
    expect((await api(eve, 'POST', '/api/v1/annual_reports/2024/generate')).status).toBe(202);
    expect(await eventually(() => state(eve, 2024), 'available', 10_000)).toBe('available');
    const body = await ok(eve, 'GET', '/api/v1/annual_reports/2024');
    expectWrapped(body);
    const { data } = body.annual_reports[0];
    expect(data.type_distribution.total).toBe(1);
    expect(data.time_series[5]).toEqual({ month: 6, statuses: 1, following: 0, followers: 0 });
    expect(data.time_series[month - 1].statuses).toBe(month === 6 ? 1 : 0);
  });

  it('works through masto', async () => {
    const { fay } = await mastoAccounts(s.url, 'Masto app', 'fay');
    await fay!.v1.statuses.create({ status: 'from masto #delta' });
    const report = fay!.v1.annualReports.$select(String(year));
    expect(await report.state.fetch()).toEqual({ state: 'eligible' });
    await report.generate();
    expect(await eventually(async () => (await report.state.fetch()).state, 'available', 10_000)).toBe('available');
    const wrapped = await report.fetch();
    expect(wrapped.annualReports[0]!.year).toBe(year);
    expect(wrapped.annualReports[0]!.data.typeDistribution).toEqual({ total: 1, reblogs: 0, replies: 0, standalone: 1 });
    expect((await fay!.v1.annualReports.list()).annualReports).toHaveLength(1);
    await report.read();
    expect((await fay!.v1.annualReports.list()).annualReports).toHaveLength(0);
  });
});
