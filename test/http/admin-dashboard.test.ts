// The admin dashboard's data: POST /api/v1/admin/measures, /dimensions and /retention (raw and through masto).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestAPIClient, type mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { upsertRemoteAccount, type AccountRow } from '../../storage/accounts.ts';
import { receiveRemoteStatus } from '../../services/statuses.ts';
import { makeAdmin } from '../helpers/admin.ts';

let s: TestServer & { url: string };
let admin: TestUser;
let adminNoScope: string;
let plain: TestUser; // not an administrator, token with admin scopes
let alice: TestUser;
let bob: TestUser;
let remote1: AccountRow;
let remote2: AccountRow;
let tagId: string;
let masto: mastodon.rest.Client;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (who: TestUser | string | null, method: 'GET' | 'POST', url: string, payload?: object) => {
  const token = typeof who === 'string' ? who : who?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null };
};

const DAY = 86_400_000;
const now = Date.now();
const today = new Date(now).toISOString().slice(0, 10);
const dayAgo = (n: number) => new Date(Date.parse(`${today}T00:00:00Z`) - n * DAY).toISOString().slice(0, 10);
/** Noon of a day n days ago, as a time-sortable id (what a row made then would have). */
const idDaysAgo = (n: number, seq: number) => ((BigInt(Date.parse(`${dayAgo(n)}T12:00:00Z`)) << 16n) + BigInt(seq)).toString();
const range = { start_at: dayAgo(6), end_at: today };

let n = 0;
async function remote(domain: string, followers = 0): Promise<AccountRow> {
  const username = `user${++n}`;
  const account = await upsertRemoteAccount(s.ctx.db, {
    uri: `https://${domain}/users/${username}`, username, domain, displayName: username, noteHtml: '', url: null,
    inboxUrl: `https://${domain}/users/${username}/inbox`, sharedInboxUrl: null, outboxUrl: null, followersUrl: null,
    locked: false, bot: false, discoverable: true, avatarUrl: null, headerUrl: null, fields: [], createdAt: null,
  });
  await s.ctx.db.query('UPDATE accounts SET followers_count = $2 WHERE id = $1', [account.id, followers]);
  return account;
}
async function remotePost(author: AccountRow, text: string, language: string | null, tags: string[] = []): Promise<string> {
  const id = await receiveRemoteStatus(s.ctx.actors.deps, {
    accountId: author.id, uri: `${author.uri}/statuses/${++n}`, url: null, content: `<p>${text}</p>`, spoilerText: '', sensitive: false,
    visibility: 'public', language, parent: null, mentioned: [], tags, createdAt: null, media: [],
  });
  return id!;
}
const post = async (who: TestUser, status: string, language: string, extra: object = {}) => {
  const res = await api(who, 'POST', '/api/v1/statuses', { status, language, visibility: 'public', ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
};
const measures = async (keys: string[], extra: object = {}, who: TestUser | string = admin) =>
  api(who, 'POST', '/api/v1/admin/measures', { keys, ...range, ...extra });
const one = async (key: string, extra: object = {}) => {
  const res = await measures([key], extra);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body).toHaveLength(1);
  expectEntity('AdminMeasure', res.body[0]);
  return res.body[0] as Json;
};
/** A measure's days as {day: value}, leaving out the zeros. */
const nonZero = (m: Json) => Object.fromEntries((m.data as Json[]).filter((d) => d.value !== '0').map((d) => [d.date.slice(0, 10), d.value]));

beforeAll(async () => {
  s = await startListeningServer();
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [admin, plain, alice, bob] = await Promise.all([
    registerUser(s.app, client, 'ozzie', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'plain', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'alice'),
    registerUser(s.app, client, 'bob'),
  ]);
  await makeAdmin(s, admin);
  adminNoScope = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'read write');
  masto = createRestAPIClient({ url: s.url, accessToken: admin.token });

  // Local posts today: three with #cats (two of alice's, in English), one in German; bob favourites, boosts and
  // answers alice's first.
  const first = await post(alice, 'hello #cats', 'en');
  await post(alice, 'more #cats', 'en');
  await post(alice, 'hallo Welt', 'de');
  await post(bob, 'mine too #cats', 'en');
  expect((await api(bob, 'POST', `/api/v1/statuses/${first}/favourite`)).status).toBe(200);
  expect((await api(bob, 'POST', `/api/v1/statuses/${first}/reblog`)).status).toBe(200);
  await post(bob, 'nice', 'en', { in_reply_to_id: first });
  tagId = (await s.ctx.db.query(`SELECT id::text FROM tags WHERE lower(name) = 'cats'`)).rows[0].id;

  // Another server: two accounts there and one on a subdomain; three posts (one in French, one with #cats).
  remote1 = await remote('remote.example', 50);
  remote2 = await remote('remote.example', 7);
  const sub = await remote('sub.remote.example');
  const remotePostId = await remotePost(remote1, 'bonjour', 'fr');
  await remotePost(remote1, 'cats #cats', 'en', ['cats']);
  await remotePost(remote2, 'hi', null);
  await remotePost(sub, 'hey', 'en');
  // A favourite of a remote post is no interaction with local posts.
  expect((await api(bob, 'POST', `/api/v1/statuses/${remotePostId}/favourite`)).status).toBe(200);
  // bob follows remote1, remote1 follows alice (rows as the follow flows leave them).
  await s.ctx.db.query('INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2), ($3, $4)', [bob.id, remote1.id, remote1.id, alice.id]);

  // A report by bob against alice (resolved), and one against remote1 (open).
  const report = await api(bob, 'POST', '/api/v1/reports', { account_id: alice.id, comment: 'hm' });
  expect(report.status).toBe(200);
  expect((await api(admin, 'POST', `/api/v1/admin/reports/${report.body.id}/resolve`)).status).toBe(200);
  await s.ctx.db.query('INSERT INTO reports (account_id, target_account_id) VALUES ($1, $2)', [bob.id, remote1.id]);

  // The past: alice posted three days ago and ten days ago (the previous period), bob signed up two days ago,
  // plain last signed in yesterday; nobody else's sign-in is known.
  await s.ctx.db.query(`INSERT INTO statuses (id, account_id, visibility, language) VALUES ($1, $3, 'public', 'en'), ($2, $3, 'public', 'en')`,
    [idDaysAgo(3, 1), idDaysAgo(10, 2), alice.id]);
  await s.ctx.db.query('UPDATE users SET last_sign_in_at = NULL');
  await s.ctx.db.query(`UPDATE users SET last_sign_in_at = $2 WHERE account_id = $1`, [plain.id, `${dayAgo(1)}T08:00:00Z`]);
  await s.ctx.db.query(`UPDATE users SET created_at = $2 WHERE account_id = $1`, [bob.id, `${dayAgo(2)}T09:00:00Z`]);
}, 60_000);
afterAll(async () => s?.close());

describe('POST /api/v1/admin/measures', () => {
  it('answers every key asked for, in order, with every day of the range', async () => {
    const keys = ['active_users', 'new_users', 'interactions', 'opened_reports', 'resolved_reports', 'tag_accounts', 'tag_uses', 'tag_servers',
      'instance_accounts', 'instance_media_attachments', 'instance_reports', 'instance_statuses', 'instance_follows', 'instance_followers'];
    const res = await measures([...keys, 'no_such_key'], { tag_accounts: { id: tagId }, instance_accounts: { domain: 'remote.example' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((res.body as Json[]).map((m) => m.key)).toEqual(keys);
    for (const m of res.body as Json[]) {
      expectEntity('AdminMeasure', m);
      expect((m.data as Json[]).map((d) => d.date)).toEqual([6, 5, 4, 3, 2, 1, 0].map((i) => `${dayAgo(i)}T00:00:00.000Z`));
      for (const d of m.data as Json[]) expect(typeof d.value).toBe('string');
    }
  });

  it('active_users: posters and the sign-ins it can see, distinct over the range', async () => {
    const m = await one('active_users');
    expect(nonZero(m)).toEqual({ [today]: '2', [dayAgo(1)]: '1', [dayAgo(3)]: '1' });
    expect(m).toMatchObject({ total: '3', previous_total: '1', unit: null });
    expect(m).not.toHaveProperty('human_value');
  });

  it('new_users, interactions, opened and resolved reports', async () => {
    const users = await one('new_users');
    expect(nonZero(users)).toEqual({ [today]: '3', [dayAgo(2)]: '1' });
    expect(users).toMatchObject({ total: '4', previous_total: '0' });
    const interactions = await one('interactions');
    expect(nonZero(interactions)).toEqual({ [today]: '3' });
    expect(interactions.total).toBe('3');
    const opened = await one('opened_reports');
    expect(opened).toMatchObject({ total: '2', previous_total: '0' });
    expect(nonZero(opened)).toEqual({ [today]: '2' });
    const resolved = await one('resolved_reports');
    expect(resolved).toMatchObject({ total: '1', previous_total: '0' });
    expect(nonZero(resolved)).toEqual({ [today]: '1' });
  });

  it('tag measures: of the tag given by id, zeros without one', async () => {
    const uses = await one('tag_uses', { tag_uses: { id: tagId } });
    expect(uses).toMatchObject({ total: '4', previous_total: '0' });
    expect(nonZero(uses)).toEqual({ [today]: '4' });
    expect((await one('tag_accounts', { tag_accounts: { id: tagId } })).total).toBe('3');
    expect((await one('tag_servers', { tag_servers: { id: tagId } })).total).toBe('1');
    expect((await one('tag_uses')).total).toBe('0');
    expect((await one('tag_uses', { tag_uses: { id: 'nope' } })).total).toBe('0');
  });

  it('instance measures: per domain, the domain’s whole history as the total, subdomains when asked', async () => {
    const accounts = await one('instance_accounts', { instance_accounts: { domain: 'Remote.Example' } });
    expect(accounts.total).toBe('2');
    expect(nonZero(accounts)).toEqual({ [today]: '2' });
    expect(accounts).not.toHaveProperty('previous_total');
    expect((await one('instance_accounts', { instance_accounts: { domain: 'remote.example', include_subdomains: true } })).total).toBe('3');
    expect((await one('instance_statuses', { instance_statuses: { domain: 'remote.example' } })).total).toBe('3');
    expect((await one('instance_reports', { instance_reports: { domain: 'remote.example' } })).total).toBe('1');
    expect((await one('instance_follows', { instance_follows: { domain: 'remote.example' } })).total).toBe('1');
    expect((await one('instance_followers', { instance_followers: { domain: 'remote.example' } })).total).toBe('1');
    expect((await one('instance_statuses', { instance_statuses: { domain: 'elsewhere.example' } })).total).toBe('0');
    const media = await one('instance_media_attachments', { instance_media_attachments: { domain: 'remote.example' } });
    expect(media).toMatchObject({ unit: 'bytes', total: '0', human_value: '0 Bytes' });
  });

  it('takes a form body, and a time in the dates is ignored', async () => {
    const res = await s.app.inject({
      method: 'POST', url: '/api/v1/admin/measures', headers: { ...bearer(admin.token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `keys[]=tag_uses&keys[]=new_users&start_at=${dayAgo(6)}T15:00:00Z&end_at=${today}T01:00:00Z&tag_uses[id]=${tagId}`,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().map((m: Json) => [m.key, m.total])).toEqual([['tag_uses', '4'], ['new_users', '4']]);
  });

  it('refuses bad dates with 422', async () => {
    for (const bad of [{ start_at: undefined }, { start_at: 'yesterday' }, { start_at: '2024-02-30' }, { end_at: dayAgo(7) }, { start_at: '2020-01-01' }]) {
      const res = await api(admin, 'POST', '/api/v1/admin/measures', { keys: ['new_users'], ...range, ...bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(typeof res.body.error).toBe('string');
    }
    expect((await api(admin, 'POST', '/api/v1/admin/measures', { keys: 'new_users', ...range })).status).toBe(200);
  });

  it('is for administrators with admin:read only', async () => {
    expect((await measures(['new_users'], {}, plain)).status).toBe(403);
    expect((await measures(['new_users'], {}, adminNoScope)).status).toBe(403);
    expect((await api(null, 'POST', '/api/v1/admin/measures', { keys: ['new_users'], ...range })).status).toBe(401);
    expect((await api(null, 'POST', '/api/v1/admin/dimensions', { keys: ['languages'], ...range })).status).toBe(401);
    expect((await api(plain, 'POST', '/api/v1/admin/dimensions', { keys: ['languages'], ...range })).status).toBe(403);
    expect((await api(plain, 'POST', '/api/v1/admin/retention', { frequency: 'day', ...range })).status).toBe(403);
  });

  it('works through masto', async () => {
    const [users, uses] = await masto.v1.admin.measures.create({ keys: ['new_users', 'tag_uses'], startAt: range.start_at, endAt: range.end_at, tagUses: { id: tagId } });
    expect(users).toMatchObject({ key: 'new_users', total: '4', previousTotal: '0' });
    expect(users!.data).toHaveLength(7);
    expect(uses).toMatchObject({ key: 'tag_uses', total: '4' });
  });
});

describe('POST /api/v1/admin/dimensions', () => {
  const dims = async (keys: string[], extra: object = {}) => {
    const res = await api(admin, 'POST', '/api/v1/admin/dimensions', { keys, ...range, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    for (const d of res.body as Json[]) expectEntity('AdminDimension', d);
    return Object.fromEntries((res.body as Json[]).map((d) => [d.key, d.data as Json[]]));
  };

  it('languages of local posts, sources of sign-ups, servers posting', async () => {
    const d = await dims(['languages', 'sources', 'servers']);
    expect(d.languages).toEqual([
      { key: 'en', human_key: 'English', value: '5' },
      { key: 'de', human_key: 'German', value: '1' },
    ]);
    expect(d.sources).toEqual([{ key: 'Test app', human_key: 'Test app', value: '4' }]);
    expect(d.servers).toEqual([
      { key: 'remote.example', human_key: 'remote.example', value: '3' },
      { key: 'sub.remote.example', human_key: 'sub.remote.example', value: '1' },
    ]);
    expect((await dims(['languages'], { limit: 1 })).languages).toHaveLength(1);
  });

  it('space usage and software versions, without a range', async () => {
    const res = await api(admin, 'POST', '/api/v1/admin/dimensions', { keys: ['space_usage', 'software_versions'] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [space, versions] = res.body as [Json, Json];
    expectEntity('AdminDimension', space);
    expectEntity('AdminDimension', versions);
    expect(space.data.map((x: Json) => x.key)).toEqual(['postgresql', 'redis']);
    for (const x of space.data) {
      expect(x.unit).toBe('bytes');
      expect(Number(x.value)).toBeGreaterThan(0);
      expect(x.human_value).toMatch(/^[\d.]+ (Bytes|KB|MB|GB)$/);
    }
    expect(versions.data).toContainEqual({ key: 'nodejs', human_key: 'Node.js', value: process.versions.node, human_value: process.versions.node });
    expect(versions.data.map((x: Json) => x.key)).toEqual(['fedi-server', 'nodejs', 'postgresql', 'redis']);
  });

  it('tag and instance dimensions', async () => {
    const d = await dims(['tag_servers', 'tag_languages', 'instance_accounts', 'instance_languages'], {
      tag_servers: { id: tagId }, tag_languages: { id: tagId }, instance_accounts: { domain: 'remote.example' }, instance_languages: { domain: 'remote.example' },
    });
    expect(d.tag_servers).toEqual([
      { key: s.config.localDomain, human_key: s.config.localDomain, value: '3' },
      { key: 'remote.example', human_key: 'remote.example', value: '1' },
    ]);
    expect(d.tag_languages).toEqual([{ key: 'en', human_key: 'English', value: '4' }]);
    expect(d.instance_accounts).toEqual([
      { key: remote1.username, human_key: remote1.username, value: '50' },
      { key: remote2.username, human_key: remote2.username, value: '7' },
    ]);
    expect(d.instance_languages).toEqual([{ key: 'en', human_key: 'English', value: '1' }, { key: 'fr', human_key: 'French', value: '1' }]);
  });

  it('has no data for ranged keys without a range (as Mastodon, whose NULL dates match no day), and works through masto', async () => {
    const open = await api(admin, 'POST', '/api/v1/admin/dimensions', { keys: ['languages', 'sources', 'software_versions'], start_at: range.start_at });
    expect(open.status, JSON.stringify(open.body)).toBe(200);
    expect(open.body.map((d: Json) => [d.key, d.data.length > 0])).toEqual([['languages', false], ['sources', false], ['software_versions', true]]);
    expect((await api(admin, 'POST', '/api/v1/admin/dimensions', { keys: ['languages'], start_at: 'yesterday' })).status).toBe(422);
    const [languages] = await masto.v1.admin.dimensions.create({ keys: ['languages'], startAt: range.start_at, endAt: range.end_at, limit: '5' });
    expect(languages!.data[0]).toMatchObject({ key: 'en', humanKey: 'English', value: '5' });
  });
});

describe('POST /api/v1/admin/retention', () => {
  it('daily cohorts of sign-ups, active when they posted', async () => {
    const res = await api(admin, 'POST', '/api/v1/admin/retention', { frequency: 'day', ...range });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const cohorts = res.body as Json[];
    for (const c of cohorts) expectEntity('AdminCohort', c);
    expect(cohorts.map((c) => c.period)).toEqual([6, 5, 4, 3, 2, 1, 0].map((i) => `${dayAgo(i)}T00:00:00.000Z`));
    // Today's cohort: ozzie, plain and alice; alice posted today.
    const todays = cohorts.at(-1)!;
    expect(todays).toMatchObject({ frequency: 'day', data: [{ date: `${today}T00:00:00.000Z`, value: '1' }] });
    expect(todays.data[0].rate).toBeCloseTo(1 / 3);
    // bob signed up two days ago and posted today.
    const bobs = cohorts.find((c) => c.period.startsWith(dayAgo(2)))!;
    expect(bobs.data.map((d: Json) => [d.date.slice(0, 10), d.value, d.rate])).toEqual([[dayAgo(2), '0', 0], [dayAgo(1), '0', 0], [today, '1', 1]]);
    expect(cohorts[0]!.data).toHaveLength(7);
  });

  it('monthly cohorts through masto, and 422 for bad ranges', async () => {
    const cohorts = await masto.v1.admin.retention.create({ startAt: range.start_at, endAt: range.end_at, frequency: 'month' });
    const last = cohorts.at(-1)!;
    expect(last.period).toBe(`${today.slice(0, 7)}-01T00:00:00.000Z`);
    expect(last.frequency).toBe('month');
    // alice and bob posted this month, plain signed in yesterday (bob and plain count when that was this month too).
    const thisMonth = (day: string) => (day.slice(0, 7) === today.slice(0, 7) ? 1 : 0);
    const active = String(1 + thisMonth(dayAgo(2)) + thisMonth(dayAgo(1)));
    expect(last.data.at(-1)).toMatchObject({ date: `${today.slice(0, 7)}-01T00:00:00.000Z`, value: active });
    expect((await api(admin, 'POST', '/api/v1/admin/retention', { frequency: 'day', start_at: dayAgo(200), end_at: today })).status).toBe(422);
    expect((await api(admin, 'POST', '/api/v1/admin/retention', { frequency: 'day', start_at: today, end_at: dayAgo(1) })).status).toBe(422);
    // Without dates: no cohorts, as from Mastodon.
    expect(await masto.v1.admin.retention.create({ frequency: 'day' } as Parameters<typeof masto.v1.admin.retention.create>[0])).toEqual([]);
    expect((await api(admin, 'POST', '/api/v1/admin/retention', { frequency: 'day', end_at: 'soon' })).status).toBe(422);
  });
});
