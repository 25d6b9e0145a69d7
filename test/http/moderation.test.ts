// Reports (POST /api/v1/reports), the admin reports and accounts APIs, and what moderation does to every read path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { setApproved } from '../../storage/users.ts';
import { insertRule } from '../../storage/rules.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { runCli } from '../../cli/admin.ts';
import { makeAdmin } from '../helpers/admin.ts';

let s: TestServer;
let client: RegisteredApp;
let mod: TestUser; // an administrator, token with admin scopes
let modNoScope: string; // the same administrator, token without admin scopes
let bob: TestUser; // reports people
let carol: TestUser; // gets reported
let dave: TestUser; // follows carol
let carolPost: string;
let bobPost: string;
let ruleId: string;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
// Token changes reach the token cache through Redis pub/sub: checked until they show.
const signedIn = (user: TestUser, want: number) => eventually(async () => (await api(user, 'GET', '/api/v1/accounts/verify_credentials')).status, want);
const api = async (user: TestUser | string | null, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
  const token = typeof user === 'string' ? user : user?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {}, headers: res.headers };
};

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [mod, bob, carol, dave] = await Promise.all([
    registerUser(s.app, client, 'miriam', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'bob'),
    registerUser(s.app, client, 'carol'),
    registerUser(s.app, client, 'dave'),
  ]);
  await makeAdmin(s, mod);
  const { authorizationCodeToken } = await import('../helpers/oauth.ts');
  modNoScope = await authorizationCodeToken(s.app, client, mod.email, mod.password, 'read write');
  ruleId = (await insertRule(s.ctx.db, { text: 'No spam', hint: '', priority: 0 })).id;
  expect((await api(dave, 'POST', `/api/v1/accounts/${carol.id}/follow`)).status).toBe(200);
  carolPost = (await api(carol, 'POST', '/api/v1/statuses', { status: 'buy my stuff', visibility: 'public' })).body.id;
  bobPost = (await api(bob, 'POST', '/api/v1/statuses', { status: 'hello', visibility: 'public' })).body.id;
}, 60_000);
afterAll(async () => s?.close());

describe('POST /api/v1/reports', () => {
  let reportId: string;

  it('files a report with statuses and rules, as a Report entity', async () => {
    const res = await api(bob, 'POST', '/api/v1/reports', { account_id: carol.id, status_ids: [carolPost], comment: 'spammy', rule_ids: [ruleId], category: 'spam' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expectEntity('Report', res.body);
    // Naming rules makes it a violation, as Mastodon does.
    expect(res.body).toMatchObject({ category: 'violation', comment: 'spammy', forwarded: false, action_taken: false, status_ids: [carolPost], rule_ids: [ruleId] });
    expect(res.body.target_account.id).toBe(carol.id);
    reportId = res.body.id;
  });

  it('accepts a form body and defaults to `other`', async () => {
    const res = await s.app.inject({ method: 'POST', url: '/api/v1/reports', headers: { ...bearer(dave.token), 'content-type': 'application/x-www-form-urlencoded' }, payload: `account_id=${carol.id}&status_ids[]=${carolPost}&forward=true` });
    expect(res.statusCode, res.body).toBe(200);
    // forward has no meaning for a local account.
    expect(res.json()).toMatchObject({ category: 'other', comment: '', forwarded: false, status_ids: [carolPost], rule_ids: null });
  });

  it('refuses what Mastodon refuses', async () => {
    expect((await api(bob, 'POST', '/api/v1/reports', { account_id: '999999' })).status).toBe(404);
    expect((await api(bob, 'POST', '/api/v1/reports', { account_id: 'nope' })).status).toBe(404);
    // A status of someone else is not the reported account's.
    expect((await api(bob, 'POST', '/api/v1/reports', { account_id: carol.id, status_ids: [bobPost] })).status).toBe(404);
    const badRule = await api(bob, 'POST', '/api/v1/reports', { account_id: carol.id, rule_ids: ['12345'] });
    expect(badRule.status).toBe(422);
    expect(badRule.body.error).toMatch(/Rule/);
    const long = await api(bob, 'POST', '/api/v1/reports', { account_id: carol.id, comment: 'x'.repeat(1001) });
    expect(long.status).toBe(422);
    expect(long.body.error).toMatch(/Comment is too long/);
    expect((await api(bob, 'POST', '/api/v1/reports', { account_id: carol.id, category: 'rude' })).status).toBe(422);
    expect((await api(bob, 'POST', '/api/v1/reports', {})).status).toBe(422);
    expect((await api(null, 'POST', '/api/v1/reports', { account_id: carol.id })).status).toBe(401);
    const readOnly = await (await import('../helpers/oauth.ts')).authorizationCodeToken(s.app, client, bob.email, bob.password, 'read');
    const noScope = await api(readOnly, 'POST', '/api/v1/reports', { account_id: carol.id });
    expect(noScope.status).toBe(403);
    expect(noScope.body.error).toBe('This action is outside the authorized scopes');
  });

  describe('admin reports', () => {
    it('are for administrators with admin scopes only', async () => {
      // Admin scopes are not enough: the user must be an administrator.
      const bobWithAdminScopes = await (await import('../helpers/oauth.ts')).authorizationCodeToken(s.app, client, bob.email, bob.password, 'read admin:read admin:write');
      const notAdmin = await api(bobWithAdminScopes, 'GET', '/api/v1/admin/reports');
      expect(notAdmin).toMatchObject({ status: 403, body: { error: 'This action is not allowed' } });
      expect((await api(bobWithAdminScopes, 'GET', '/api/v1/admin/accounts')).status).toBe(403);
      expect((await api(bob, 'GET', '/api/v1/admin/reports')).body.error).toBe('This action is outside the authorized scopes');
      expect((await api(modNoScope, 'GET', '/api/v1/admin/reports')).status).toBe(403);
      expect((await api(null, 'GET', '/api/v1/admin/reports')).status).toBe(401);
      expect((await api(bob, 'POST', `/api/v1/admin/reports/${reportId}/resolve`)).status).toBe(403);
    });

    it('lists open reports, newest first, with filters and paging', async () => {
      const list = await api(mod, 'GET', '/api/v1/admin/reports');
      expect(list.status).toBe(200);
      expect(list.body).toHaveLength(2);
      for (const r of list.body) expectEntity('AdminReport', r);
      const mine = list.body.find((r: Json) => r.id === reportId);
      expect(mine).toMatchObject({ category: 'violation', comment: 'spammy', assigned_account: null, action_taken_by_account: null });
      expect(mine.account.id).toBe(bob.id);
      expect(mine.target_account).toMatchObject({ id: carol.id, username: 'carol', email: 'carol@example.com', suspended: false });
      expect(mine.statuses.map((x: Json) => x.id)).toEqual([carolPost]);
      expect(mine.rules).toEqual([{ id: ruleId, text: 'No spam', hint: '' }]);

      expect((await api(mod, 'GET', `/api/v1/admin/reports?account_id=${bob.id}`)).body.map((r: Json) => r.id)).toEqual([reportId]);
      expect((await api(mod, 'GET', `/api/v1/admin/reports?target_account_id=${bob.id}`)).body).toEqual([]);
      expect((await api(mod, 'GET', '/api/v1/admin/reports?resolved=true')).body).toEqual([]);
      const first = await api(mod, 'GET', '/api/v1/admin/reports?limit=1');
      expect(first.body).toHaveLength(1);
      expect(first.headers.link).toMatch(/max_id=/);
      const next = await api(mod, 'GET', `/api/v1/admin/reports?limit=1&max_id=${first.body[0].id}`);
      expect(next.body.map((r: Json) => r.id)).toEqual([reportId]);
    });

    it('assigns, unassigns, resolves and reopens', async () => {
      const assigned = await api(mod, 'POST', `/api/v1/admin/reports/${reportId}/assign_to_self`);
      expect(assigned.status).toBe(200);
      expectEntity('AdminReport', assigned.body);
      expect(assigned.body.assigned_account.id).toBe(mod.id);
      expect((await api(mod, 'POST', `/api/v1/admin/reports/${reportId}/unassign`)).body.assigned_account).toBeNull();
      const resolved = await api(mod, 'POST', `/api/v1/admin/reports/${reportId}/resolve`);
      expect(resolved.body).toMatchObject({ action_taken: true });
      expect(resolved.body.action_taken_by_account.id).toBe(mod.id);
      expect((await api(mod, 'GET', '/api/v1/admin/reports?resolved=true')).body.map((r: Json) => r.id)).toEqual([reportId]);
      const reopened = await api(mod, 'POST', `/api/v1/admin/reports/${reportId}/reopen`);
      expect(reopened.body).toMatchObject({ action_taken: false, action_taken_at: null, action_taken_by_account: null });
      const updated = await api(mod, 'PUT', `/api/v1/admin/reports/${reportId}`, { category: 'spam', rule_ids: [] });
      expect(updated.body).toMatchObject({ category: 'spam', rules: [] });
      expect((await api(mod, 'GET', `/api/v1/admin/reports/${reportId}`)).body.id).toBe(reportId);
    });

    it('answers 404 for unknown reports', async () => {
      expect((await api(mod, 'GET', '/api/v1/admin/reports/12345')).status).toBe(404);
      expect((await api(mod, 'GET', '/api/v1/admin/reports/abc')).status).toBe(404);
      expect((await api(mod, 'POST', '/api/v1/admin/reports/12345/resolve')).status).toBe(404);
    });
  });

  describe('admin accounts', () => {
    it('lists and shows accounts as Admin::Account', async () => {
      expect((await api(bob, 'GET', '/api/v1/admin/accounts')).status).toBe(403);
      expect((await api(modNoScope, 'GET', '/api/v1/admin/accounts')).status).toBe(403);
      const list = await api(mod, 'GET', '/api/v1/admin/accounts?local=true');
      expect(list.status).toBe(200);
      // Newest first: in id order.
      expect(list.body.map((a: Json) => a.username).sort()).toEqual(['bob', 'carol', 'dave', 'miriam']);
      expect(list.body.map((a: Json) => a.id)).toEqual(list.body.map((a: Json) => a.id).sort((x: string, y: string) => (BigInt(y) > BigInt(x) ? 1 : -1)));
      for (const a of list.body) expectEntity('AdminAccount', a);
      expect(list.body.find((a: Json) => a.username === 'miriam')).toMatchObject({ role: { name: 'Admin' }, approved: true, disabled: false, locale: 'en', confirmed: true });
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?staff=true')).body.map((a: Json) => a.username)).toEqual(['miriam']);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?username=car')).body.map((a: Json) => a.username)).toEqual(['carol']);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?email=dave@')).body.map((a: Json) => a.username)).toEqual(['dave']);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?remote=true')).body).toEqual([]);
      // Addresses are those of sign-ins and browser sessions: none from a documentation range, none for a non-address.
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?ip=203.0.113.9')).body).toEqual([]);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?ip=no-address')).body).toEqual([]);
      const page = await api(mod, 'GET', '/api/v1/admin/accounts?limit=2');
      expect(page.body).toHaveLength(2);
      expect(page.headers.link).toMatch(/rel="next"/);
      expect((await api(mod, 'GET', '/api/v2/admin/accounts?origin=local&permissions=staff')).body.map((a: Json) => a.username)).toEqual(['miriam']);
      expect((await api(mod, 'GET', '/api/v2/admin/accounts?status=bogus')).status).toBe(422);
      const one = await api(mod, 'GET', `/api/v1/admin/accounts/${carol.id}`);
      expectEntity('AdminAccount', one.body);
      expect(one.body.account.id).toBe(carol.id);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts/12345')).status).toBe(404);
    });

    it('refuses bad actions', async () => {
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'obliterate' })).status).toBe(422);
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, {})).status).toBe(422);
      expect((await api(mod, 'POST', '/api/v1/admin/accounts/12345/action', { type: 'silence' })).status).toBe(404);
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'none', report_id: '12345' })).status).toBe(404);
      // An administrator is not for moderators to act on (themselves included).
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${mod.id}/action`, { type: 'suspend' })).status).toBe(403);
      expect((await api(bob, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'suspend' })).status).toBe(403);
      // Not suspended: nothing to undo or delete; not pending: nothing to approve or reject.
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/unsuspend`)).status).toBe(403);
      expect((await api(mod, 'DELETE', `/api/v1/admin/accounts/${carol.id}`)).status).toBe(403);
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/approve`)).status).toBe(403);
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/reject`)).status).toBe(403);
    });

    it('silences: limited, and kept out of public timelines', async () => {
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'silence' })).body).toEqual({});
      expect((await api(mod, 'GET', `/api/v1/admin/accounts/${carol.id}`)).body.silenced).toBe(true);
      expect((await api(null, 'GET', `/api/v1/accounts/${carol.id}`)).body.limited).toBe(true);
      const ids = (await api(bob, 'GET', '/api/v1/timelines/public')).body.map((x: Json) => x.id);
      expect(ids).toContain(bobPost);
      expect(ids).not.toContain(carolPost);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?silenced=true')).body.map((a: Json) => a.username)).toEqual(['carol']);
      // A limited account's mentions reach those who follow it (dave) and nobody else (bob), as Mastodon filters them.
      const mention = (await api(carol, 'POST', '/api/v1/statuses', { status: '@bob @dave limited hello' })).body.id;
      const mentioned = async (u: TestUser) => (await api(u, 'GET', '/api/v1/notifications?types[]=mention')).body.map((n: Json) => n.status.id);
      expect(await mentioned(dave)).toContain(mention);
      expect(await mentioned(bob)).not.toContain(mention);
      const back = await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/unsilence`);
      expectEntity('AdminAccount', back.body);
      expect(back.body.silenced).toBe(false);
      expect((await api(bob, 'GET', '/api/v1/timelines/public')).body.map((x: Json) => x.id)).toContain(carolPost);
    });

    it('marks sensitive: every post shown as sensitive, until unsensitive', async () => {
      await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'sensitive' });
      expect((await api(dave, 'GET', `/api/v1/statuses/${carolPost}`)).body.sensitive).toBe(true);
      expect((await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/unsensitive`)).body.sensitized).toBe(false);
      expect((await api(dave, 'GET', `/api/v1/statuses/${carolPost}`)).body.sensitive).toBe(false);
    });

    it('disables: sign-in and tokens refused, until enabled', async () => {
      expect(await signedIn(carol, 200)).toBe(200);
      await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'disable' });
      expect(await signedIn(carol, 403)).toBe(403);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?disabled=true')).body.map((a: Json) => a.username)).toEqual(['carol']);
      const enabled = await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/enable`);
      expect(enabled.body.disabled).toBe(false);
      expect(await signedIn(carol, 200)).toBe(200);
    });

    it('suspends with a report: the report resolved, tokens refused, posts gone from every read path; unsuspends', async () => {
      // Read dave's home once, so a cached page exists that must not be served again.
      const inHome = () => api(dave, 'GET', '/api/v1/timelines/home').then((r) => r.body.map((x: Json) => x.id).includes(carolPost));
      expect(await eventually(inHome, true)).toBe(true);
      const res = await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'suspend', report_id: reportId, text: 'bye' });
      expect(res.status).toBe(200);
      expect((await api(mod, 'GET', `/api/v1/admin/reports/${reportId}`)).body).toMatchObject({ action_taken: true });
      // Every other open report about carol is resolved too.
      expect((await api(mod, 'GET', `/api/v1/admin/reports?target_account_id=${carol.id}`)).body).toEqual([]);
      expect(await signedIn(carol, 403)).toBe(403);
      expect((await api(dave, 'GET', '/api/v1/timelines/home')).body.map((x: Json) => x.id)).not.toContain(carolPost);
      expect((await api(dave, 'GET', '/api/v1/timelines/public')).body.map((x: Json) => x.id)).not.toContain(carolPost);
      expect((await api(dave, 'GET', `/api/v1/statuses/${carolPost}`)).status).toBe(404);
      expect((await api(null, 'GET', `/api/v1/accounts/${carol.id}`)).body.suspended).toBe(true);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?suspended=true')).body.map((a: Json) => a.username)).toEqual(['carol']);
      // Its actor is still published, reduced and marked suspended, so that its Delete can be checked elsewhere.
      const actor = await s.app.inject({ method: 'GET', url: '/users/carol', headers: { accept: 'application/activity+json' } });
      expect(actor.statusCode).toBe(200);
      expect(actor.json()).toMatchObject({ suspended: true, preferredUsername: 'carol' });
      expect(actor.json().name).toBeUndefined();
      // The reported status is still shown to moderators.
      const report = await api(mod, 'GET', `/api/v1/admin/reports/${reportId}`);
      expect(report.body.statuses.map((x: Json) => x.id)).toEqual([carolPost]);

      const back = await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/unsuspend`);
      expect(back.body.suspended).toBe(false);
      expect(await signedIn(carol, 200)).toBe(200);
      expect((await api(dave, 'GET', '/api/v1/timelines/home')).body.map((x: Json) => x.id)).toContain(carolPost);
    });

    it('approves and rejects pending sign-ups', async () => {
      const [erin, fay] = await Promise.all([registerUser(s.app, client, 'erin'), registerUser(s.app, client, 'fay')]);
      const userOf = async (id: string) => (await s.ctx.db.query('SELECT id::text FROM users WHERE account_id = $1', [id])).rows[0].id;
      await setApproved(s.ctx.db, await userOf(erin.id), false);
      await setApproved(s.ctx.db, await userOf(fay.id), false);
      expect((await api(mod, 'GET', '/api/v1/admin/accounts?pending=true')).body.map((a: Json) => a.username).sort()).toEqual(['erin', 'fay']);
      const approved = await api(mod, 'POST', `/api/v1/admin/accounts/${erin.id}/approve`);
      expect(approved.body).toMatchObject({ approved: true, username: 'erin' });
      const rejected = await api(mod, 'POST', `/api/v1/admin/accounts/${fay.id}/reject`);
      expect(rejected.status).toBe(200);
      expectEntity('AdminAccount', rejected.body);
      expect((await api(mod, 'GET', `/api/v1/admin/accounts/${fay.id}`)).status).toBe(404);
      expect(await signedIn(fay, 401)).toBe(401);
    });

    it('deletes the data of a suspended account', async () => {
      await api(mod, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'suspend' });
      const res = await api(mod, 'DELETE', `/api/v1/admin/accounts/${carol.id}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      // As Mastodon: the answer is the account as it was; a job then removes its data.
      expect(res.body).toMatchObject({ suspended: true, email: 'carol@example.com' });
      const liveStatuses = async () => (await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses WHERE account_id = $1 AND deleted_at IS NULL', [carol.id])).rows[0].n;
      expect(await eventually(liveStatuses, 0, 10_000)).toBe(0);
      expect(await eventually(async () => (await api(null, 'GET', `/api/v1/accounts/${dave.id}`)).body.following_count, 0, 10_000)).toBe(0);
      expect(await signedIn(carol, 401)).toBe(401);
    });
  });
});

describe('npm run cli: accounts and reports', () => {
  const cli = async (...args: string[]) => {
    const lines: string[] = [];
    await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
    return lines;
  };

  it('suspends, silences, disables and lists and resolves reports', async () => {
    const gus = await registerUser(s.app, client, 'gus');
    const post = (await api(gus, 'POST', '/api/v1/statuses', { status: 'gus here', visibility: 'public' })).body.id;
    expect(await cli('accounts', 'suspend', 'gus')).toEqual(['gus is suspended']);
    expect(await signedIn(gus, 403)).toBe(403);
    expect((await api(null, 'GET', '/api/v1/timelines/public')).body.map((x: Json) => x.id)).not.toContain(post);
    // The Delete of its actor waits in the outbox for the server's sweeper.
    const { rows } = await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE payload->>'activity' = 'DeleteActor' AND payload->>'accountId' = $1`, [gus.id]);
    expect(rows[0].n).toBe(1);
    expect(await cli('accounts', 'unsuspend', 'gus')).toEqual(['gus is no longer suspended']);
    expect(await signedIn(gus, 200)).toBe(200);

    expect(await cli('accounts', 'silence', 'gus')).toEqual(['gus is silenced']);
    expect((await api(null, 'GET', `/api/v1/accounts/${gus.id}`)).body.limited).toBe(true);
    await cli('accounts', 'unsilence', 'gus');
    expect(await cli('accounts', 'disable', 'gus')).toEqual(['gus is disabled']);
    expect(await signedIn(gus, 403)).toBe(403);
    await cli('accounts', 'enable', 'gus');
    expect(await signedIn(gus, 200)).toBe(200);
    await expect(cli('accounts', 'suspend', 'nobody')).rejects.toThrow(/no account named nobody/);

    const report = (await api(dave, 'POST', '/api/v1/reports', { account_id: gus.id, status_ids: [post], comment: 'odd' })).body;
    const listed = await cli('reports', 'list');
    expect(listed.find((l) => l.startsWith(report.id))).toBe(`${report.id}  dave -> gus  other (1 status(es))  "odd"`);
    expect(await cli('reports', 'resolve', report.id)).toEqual([`report ${report.id} resolved`]);
    expect((await api(mod, 'GET', `/api/v1/admin/reports/${report.id}`)).body).toMatchObject({ action_taken: true, action_taken_by_account: null });
    expect((await cli('reports', 'list', '--resolved')).some((l) => l.startsWith(report.id))).toBe(true);
    await expect(cli('reports', 'resolve', '123')).rejects.toThrow(/no report/);
  });
});
