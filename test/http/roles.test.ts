import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { permissionBits } from '../../services/roles.ts';
import { insertRole } from '../../storage/roles.ts';

let s: TestServer;
let owner: TestUser;
let moderator: TestUser;
let reviewer: TestUser;
let plain: TestUser;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

const get = (url: string, user: TestUser) => s.app.inject({ method: 'GET', url, headers: bearer(user.token) });

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  const scopes = 'read write admin:read admin:write';
  [owner, moderator, reviewer, plain] = await Promise.all(['chief', 'modo', 'reviewer', 'plain'].map((u) => registerUser(s.app, client, u, scopes))) as [TestUser, TestUser, TestUser, TestUser];
  // A role of the server's own: reports only, not shown on profiles.
  await insertRole(s.ctx.db, { name: 'Reviewer', position: 5, permissions: permissionBits(['manage_reports']), highlighted: false });
  expect(await cli('accounts', 'role', 'chief', 'Owner')).toEqual(['chief is now Owner']);
  await cli('accounts', 'role', 'modo', 'Moderator');
  await cli('accounts', 'role', 'reviewer', 'reviewer');
});
afterAll(async () => s?.close());

describe('roles', () => {
  it('the credential account carries the role as Mastodon\'s Role; accounts show highlighted roles only', async () => {
    const me = (await get('/api/v1/accounts/verify_credentials', moderator)).json();
    expectEntity('CredentialAccount', me);
    expectEntity('Role', me.role);
    expect(me.role).toMatchObject({ name: 'Moderator', permissions: String(permissionBits(['invite_users', 'view_dashboard', 'view_audit_log', 'view_feeds', 'manage_users', 'manage_reports', 'manage_taxonomies'])), highlighted: true });
    const shown = (await get(`/api/v1/accounts/${moderator.id}`, plain)).json();
    expect(shown.roles).toEqual([{ id: me.role.id, name: 'Moderator', color: '' }]);
    expect((await get(`/api/v1/accounts/${reviewer.id}`, plain)).json().roles).toEqual([]);
    expect((await get('/api/v1/accounts/verify_credentials', plain)).json().role).toMatchObject({ id: '-99', name: '', permissions: '0' });
  });

  it('each admin API route asks for its own permission', async () => {
    // Moderator: manage_users yes, manage_federation and delete_user_data no.
    expect((await get('/api/v1/admin/accounts', moderator)).statusCode).toBe(200);
    expect((await get('/api/v1/admin/domain_blocks', moderator)).statusCode).toBe(403);
    const del = await s.app.inject({ method: 'DELETE', url: `/api/v1/admin/accounts/${plain.id}`, headers: bearer(moderator.token) });
    expect(del.statusCode).toBe(403);
    // Reports only: no account actions, but reports.
    expect((await get('/api/v1/admin/reports', reviewer)).statusCode).toBe(200);
    expect((await get('/api/v1/admin/accounts', reviewer)).statusCode).toBe(403);
    const action = await s.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${plain.id}/action`, headers: bearer(reviewer.token), payload: { type: 'silence' } });
    expect(action.statusCode).toBe(403);
    expect((await get('/api/v1/admin/accounts', plain)).statusCode).toBe(403);
    // The Owner (administrator) may do everything.
    for (const url of ['/api/v1/admin/accounts', '/api/v1/admin/domain_blocks', '/api/v1/admin/reports', '/admin/queues']) {
      expect((await get(url, owner)).statusCode, url).toBe(200);
    }
    // A moderator may not act on an account whose role is not below theirs.
    const onOwner = await s.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${owner.id}/action`, headers: bearer(moderator.token), payload: { type: 'silence' } });
    expect(onOwner.statusCode).toBe(403);
  });

  it('the operators\' pages ask for the same permissions', async () => {
    const web = new WebClient(s.app);
    expect((await web.signIn(reviewer.email, reviewer.password)).statusCode).toBe(303);
    expect((await web.get('/admin/approvals')).statusCode).toBe(403);
    expect((await web.get('/admin/reports')).statusCode).toBe(200);
    expect((await web.get('/admin/announcements')).statusCode).toBe(403);
    const chief = new WebClient(s.app);
    await chief.signIn(owner.email, owner.password);
    expect((await chief.get('/admin/approvals')).statusCode).toBe(200);
    // The Owner writes an announcement on the page; readers get it from the API.
    const saved = await chief.submit('/admin/announcements', '/admin/announcements', { text: 'Tea at <five>', starts_at: '', ends_at: '', scheduled_at: '' });
    expect(saved.statusCode).toBe(303);
    const listed = (await get('/api/v1/announcements', plain)).json();
    expect(listed).toMatchObject([{ content: '<p>Tea at &lt;five&gt;</p>', read: false }]);
    expectEntity('Announcement', listed[0]);
    const page = await chief.get('/admin/announcements');
    expect(page.body).toContain('Tea at &lt;five&gt;');
    expect((await chief.submit('/admin/announcements', '/admin/announcements', { text: '  ' })).statusCode).toBe(422);
    expect((await chief.submit('/admin/announcements', `/admin/announcements/${listed[0].id}/remove`, {})).statusCode).toBe(303);
    expect((await get('/api/v1/announcements', plain)).json()).toEqual([]);
  });

  it('so do CLI commands run for an operator, and role changes apply at once', async () => {
    await expect(cli('--as', 'reviewer', 'accounts', 'silence', 'plain')).rejects.toThrow(/not allowed: reviewer's role lacks manage_users/);
    await expect(cli('--as', 'modo', 'accounts', 'role', 'plain', 'Moderator')).rejects.toThrow(/manage_roles/);
    await expect(cli('--as', 'plain', 'reports', 'list')).rejects.toThrow(/not allowed/);
    expect(await cli('--as', 'chief', 'accounts', 'silence', 'plain')).toEqual(['plain is silenced']);
    await cli('accounts', 'unsilence', 'plain');
    await expect(cli('accounts', 'role', 'plain', 'Wizard')).rejects.toThrow(/no role named Wizard/);

    // The reviewer's token is cached by now; giving it Moderator opens the accounts list at once, taking it closes it.
    expect((await get('/api/v1/admin/accounts', reviewer)).statusCode).toBe(403);
    await cli('--as', 'chief', 'accounts', 'role', 'reviewer', 'Moderator');
    expect(await eventually(async () => (await get('/api/v1/admin/accounts', reviewer)).statusCode, 200)).toBe(200);
    expect((await get(`/api/v1/accounts/${reviewer.id}`, plain)).json().roles).toMatchObject([{ name: 'Moderator' }]);
    expect(await cli('accounts', 'role', 'reviewer', 'none')).toEqual(['reviewer has no role now']);
    expect(await eventually(async () => (await get('/api/v1/admin/reports', reviewer)).statusCode, 403)).toBe(403);
    expect((await get(`/api/v1/accounts/${reviewer.id}`, plain)).json().roles).toEqual([]);
  });
});
