import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { expectEntity } from '../helpers/schema.ts';
import { registerLocalAccount } from '../../services/accounts.ts';

let s: TestServer;
let operator: WebClient;

beforeAll(async () => {
  s = await startTestServer({ REGISTRATIONS_MODE: 'approved' });
  await registerLocalAccount(s.ctx.db, { username: 'boss', email: 'boss@example.com', password: 'boss-password', agreement: true, approved: true, admin: true, confirmed: true });
  operator = new WebClient(s.app);
  expect((await operator.signIn('boss@example.com', 'boss-password')).statusCode).toBe(303);
});
afterAll(async () => s?.close());

async function applyToJoin(username: string) {
  const browser = new WebClient(s.app);
  const res = await browser.submit('/auth/sign_up', '/auth/sign_up', {
    username, email: `${username}@example.com`, password: `pw-${username}-long`, password_confirmation: `pw-${username}-long`, agreement: '1', reason: `I am ${username} and I like this place`,
  });
  expect([res.statusCode, res.headers.location]).toEqual([303, '/auth/done/signed_up_approval']);
  expect((await browser.get(res.headers.location as string)).body).toContain('operators will review');
  return browser;
}

describe('operators approve sign-ups from the browser', () => {
  it('needs a reason while approval is required', async () => {
    const res = await new WebClient(s.app).submit('/auth/sign_up', '/auth/sign_up', {
      username: 'noreason', email: 'noreason@example.com', password: 'pw-noreason-long', password_confirmation: 'pw-noreason-long', agreement: '1', reason: '  ',
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('why you want to join');
  });

  it('lists the waiting sign-ups with their reasons; approving lets the person in', async () => {
    await applyToJoin('hopeful');
    expect((await new WebClient(s.app).signIn('hopeful@example.com', 'pw-hopeful-long')).statusCode).toBe(403);
    const list = await operator.get('/admin/approvals');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('I am hopeful and I like this place');
    const id = new RegExp(`/admin/accounts/(\\d+)/approve" ?[^>]*>[\\s\\S]*?aria-label="Approve @hopeful"`).exec(list.body)?.[1]
      ?? /\/admin\/accounts\/(\d+)\/approve/.exec(list.body)![1]!;
    const approved = await operator.post(`/admin/accounts/${id}/approve`, {}, list.body);
    expect(approved.statusCode).toBe(303);
    expect((await new WebClient(s.app).signIn('hopeful@example.com', 'pw-hopeful-long')).statusCode).toBe(303);
    // Approving twice is refused as the API refuses it, with a page rather than a crash.
    expect((await operator.post(`/admin/accounts/${id}/approve`, {}, list.body)).statusCode).toBe(403);
  });

  it('rejecting removes the sign-up and frees its name', async () => {
    await applyToJoin('spammer');
    const list = await operator.get('/admin/approvals');
    const id = (await s.ctx.db.query(`SELECT id::text FROM accounts WHERE username = 'spammer'`)).rows[0].id;
    expect(list.body).toContain(`/admin/accounts/${id}/reject`);
    expect((await operator.post(`/admin/accounts/${id}/reject`, {}, list.body)).statusCode).toBe(303);
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM accounts WHERE username = 'spammer'`)).rows[0].n).toBe(0);
  });

  it('is for operators only', async () => {
    const stranger = new WebClient(s.app);
    const res = await stranger.get('/admin/approvals');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/auth\/sign_in/);
    await registerLocalAccount(s.ctx.db, { username: 'plain', email: 'plain@example.com', password: 'plain-password', agreement: true, approved: true, confirmed: true });
    const member = new WebClient(s.app);
    await member.signIn('plain@example.com', 'plain-password');
    expect((await member.get('/admin/approvals')).statusCode).toBe(403);
    expect((await member.get('/admin/reports')).statusCode).toBe(403);
    const page = await member.get('/settings/profile');
    const forged = await member.post('/admin/accounts/1/approve', {}, page.body);
    expect(forged.statusCode).toBe(403);
  });
});

describe('operators handle reports from the browser', () => {
  it('shows an open report with its posts, and suspending the account resolves it', async () => {
    const client = await createApp(s.app);
    await registerLocalAccount(s.ctx.db, { username: 'troll', email: 'troll@example.com', password: 'troll-password', agreement: true, approved: true, confirmed: true });
    await registerLocalAccount(s.ctx.db, { username: 'victim', email: 'victim@example.com', password: 'victim-password', agreement: true, approved: true, confirmed: true });
    const trollToken = await authorizationCodeToken(s.app, client, 'troll@example.com', 'troll-password');
    const victimToken = await authorizationCodeToken(s.app, client, 'victim@example.com', 'victim-password');
    const post = (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(trollToken), payload: { status: 'a <nasty> post' } })).json();
    const troll = (await s.app.inject({ method: 'GET', url: '/api/v1/accounts/lookup?acct=troll' })).json();
    const filed = await s.app.inject({ method: 'POST', url: '/api/v1/reports', headers: bearer(victimToken), payload: { account_id: troll.id, status_ids: [post.id], comment: 'Rude <b>again</b>' } });
    expect(filed.statusCode, filed.body).toBe(200);
    const reportId = filed.json().id;
    // The operator's apps see it too, grouped (v2) as well as not (v1), with the report.
    const bossToken = await authorizationCodeToken(s.app, client, 'boss@example.com', 'boss-password', 'read');
    const v2 = (await s.app.inject({ method: 'GET', url: '/api/v2/notifications', headers: bearer(bossToken) })).json();
    const group = v2.notification_groups.find((g: { type: string }) => g.type === 'admin.report');
    expect(group?.report?.id).toBe(reportId);
    expectEntity('GroupedNotificationsResults', v2);

    const list = await operator.get('/admin/reports');
    expect(list.body).toContain(`/admin/reports/${reportId}`);
    const page = await operator.get(`/admin/reports/${reportId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Rude &lt;b&gt;again&lt;/b&gt;');
    expect(page.body).toContain('a &lt;nasty&gt; post');
    const acted = await operator.post(`/admin/reports/${reportId}/action`, { type: 'suspend' }, page.body);
    expect(acted.statusCode).toBe(303);
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${troll.id}` })).json().suspended).toBe(true);
    const after = await operator.get('/admin/reports');
    expect(after.body).not.toContain(`/admin/reports/${reportId}"`);
    expect((await operator.get('/admin/reports/999999999')).statusCode).toBe(404);
  });
});
