// The roles page (/admin/roles): an operator with manage_roles makes, changes and deletes roles with Mastodon's
// permission flags, under Mastodon's rules (only roles below their own position, only permissions their role has),
// which are the role service's, shared with `npm run cli -- roles`. Holders' permissions follow a change at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient, signedInClient } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signedInContext } from '../helpers/browser-session.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { findRoleByName } from '../../storage/roles.ts';
import { PERMISSION_FLAGS } from '../../services/roles.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';

let s: TestServer & { url: string };
let browser: TestBrowser;
let admin: TestUser;
let moderator: TestUser;
let helper: TestUser;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}
const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(s.app, user);
/** A form body with the permission checkboxes as a browser sends them. */
function roleForm(fields: Record<string, string>, permissions: string[]): Record<string, string> {
  const out: Record<string, string> = { ...fields };
  permissions.forEach((p, i) => (out[`permissions[${i}]`] = p));
  return out;
}

beforeAll(async () => {
  s = await startListeningServer();
  const client = await createApp(s.app);
  [admin, moderator, helper] = await Promise.all(['roleadmin', 'rolemod', 'rolehelper'].map((u) => registerUser(s.app, client, u))) as [TestUser, TestUser, TestUser];
  await cli('accounts', 'role', 'roleadmin', 'Admin');
  await cli('accounts', 'role', 'rolemod', 'Moderator');
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('roles page', () => {
  it('creates a role with permissions, edits it (its holder gains the permission at once) and deletes it', async () => {
    const web = await signedIn(admin);
    const list = await web.get('/admin/roles');
    expect(list.statusCode).toBe(200);
    await expectValidHtml(list.body, '/admin/roles');
    expect(list.body).toContain('Owner');
    // Only roles below the Admin's own position can be edited.
    expect(list.body).toContain('aria-label="Edit Moderator"');
    expect(list.body).not.toContain('aria-label="Edit Owner"');
    expect(list.body).not.toContain('aria-label="Edit Admin"');
    const form = await web.get('/admin/roles/new');
    expect(form.statusCode).toBe(200);
    await expectValidHtml(form.body, '/admin/roles/new');

    const created = await web.post('/admin/roles', roleForm({ name: 'Helper', position: '5', color: '#33aa66', highlighted: '1' }, ['manage_reports', 'view_dashboard']), form.body);
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe('/admin/roles?notice=created');
    let role = (await findRoleByName(s.ctx.db, 'Helper'))!;
    expect(role).toMatchObject({ position: 5, color: '#33aa66', highlighted: true });
    expect(Number(role.permissions)).toBe(PERMISSION_FLAGS.manage_reports | PERMISSION_FLAGS.view_dashboard);
    expect(await cli('accounts', 'role', 'rolehelper', 'Helper')).toBeDefined();

    const holder = await signedIn(helper);
    expect((await holder.get('/admin/rules')).statusCode).toBe(403);
    const edit = await web.get(`/admin/roles/${role.id}/edit`);
    expect(edit.statusCode).toBe(200);
    expect(edit.body).toContain('value="Helper"');
    await expectValidHtml(edit.body, 'edit role');
    const saved = await web.post(`/admin/roles/${role.id}`, roleForm({ name: 'Rule keeper', position: '6', color: '' }, ['manage_rules']), edit.body);
    expect(saved.statusCode).toBe(303);
    role = (await findRoleByName(s.ctx.db, 'Rule keeper'))!;
    expect(role).toMatchObject({ position: 6, highlighted: false });
    expect(Number(role.permissions)).toBe(PERMISSION_FLAGS.manage_rules);
    expect((await holder.get('/admin/rules')).statusCode).toBe(200);

    const deleted = await web.post(`/admin/roles/${role.id}/delete`, {}, edit.body);
    expect(deleted.statusCode).toBe(303);
    expect(await findRoleByName(s.ctx.db, 'Rule keeper')).toBeNull();
    expect((await holder.get('/admin/rules')).statusCode).toBe(403);
    expect((await web.post(`/admin/roles/${role.id}/delete`, {}, edit.body)).statusCode).toBe(404);
    expect((await web.get('/admin/roles/nope/edit')).statusCode).toBe(404);

    // The audit log has each of them, as the operator's doing (newest first), and its page shows them.
    const logged = await actionLogsPage(s.ctx.db, { targetType: 'UserRole' }, { limit: 10 });
    expect(logged.slice(0, 3).map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([
      [admin.id, 'destroy', 'Rule keeper'], [admin.id, 'update', 'Rule keeper'], [admin.id, 'create', 'Helper'],
    ]);
    const logPage = await web.get('/admin/action_logs?target_type=UserRole&action_type=destroy');
    expect(logPage.statusCode).toBe(200);
    expect(logPage.body).toContain('Rule keeper');
    expect(logPage.body).toContain('@roleadmin');
  });

  it("refuses, keeping what was typed, what Mastodon's rules forbid: a position not below one's own, a permission one lacks, a taken name", async () => {
    const web = await signedIn(admin);
    const form = await web.get('/admin/roles/new');
    const high = await web.post('/admin/roles', roleForm({ name: 'Too high', position: '100' }, ['manage_reports']), form.body);
    expect(high.statusCode).toBe(422);
    expect(high.body).toContain('position must be below your own');
    expect(high.body).toContain('value="Too high"');
    await expectValidHtml(high.body, 'refused role');
    const lacking = await web.post('/admin/roles', roleForm({ name: 'Devops', position: '3' }, ['view_devops']), form.body);
    expect(lacking.statusCode).toBe(422);
    expect(lacking.body).toContain('permissions your own role lacks');
    expect((await web.post('/admin/roles', roleForm({ name: 'Moderator', position: '3' }, []), form.body)).statusCode).toBe(422);
    expect((await web.post('/admin/roles', roleForm({ name: 'Bad', position: 'x' }, []), form.body)).statusCode).toBe(422);
    expect((await web.post('/admin/roles', roleForm({ name: 'Bad', position: '2', color: 'red' }, []), form.body)).statusCode).toBe(422);
    expect((await web.post('/admin/roles', roleForm({ name: 'Bad', position: '2' }, ['no_such_flag']), form.body)).statusCode).toBe(422);
    for (const name of ['Too high', 'Devops', 'Bad']) expect(await findRoleByName(s.ctx.db, name)).toBeNull();

    // Roles at or above one's own: no editing, no deleting.
    const owner = (await findRoleByName(s.ctx.db, 'Owner'))!;
    const adminRole = (await findRoleByName(s.ctx.db, 'Admin'))!;
    expect((await web.get(`/admin/roles/${owner.id}/edit`)).statusCode).toBe(403);
    expect((await web.post(`/admin/roles/${adminRole.id}`, roleForm({ name: 'Admin', position: '50' }, []), form.body)).statusCode).toBe(403);
    expect((await web.post(`/admin/roles/${owner.id}/delete`, {}, form.body)).statusCode).toBe(403);
    expect(await findRoleByName(s.ctx.db, 'Owner')).toEqual(owner);
    expect(await findRoleByName(s.ctx.db, 'Admin')).toEqual(adminRole);
  });

  it('needs manage_roles: a moderator gets 403 and changes nothing; a form without its token is refused', async () => {
    const web = await signedIn(moderator);
    expect((await web.get('/admin/roles')).statusCode).toBe(403);
    expect((await web.get('/admin/roles/new')).statusCode).toBe(403);
    const own = await web.get('/settings/profile');
    expect((await web.post('/admin/roles', roleForm({ name: 'Mods own', position: '1' }, []), own.body)).statusCode).toBe(403);
    const mod = (await findRoleByName(s.ctx.db, 'Moderator'))!;
    expect((await web.post(`/admin/roles/${mod.id}/delete`, {}, own.body)).statusCode).toBe(403);
    expect(await findRoleByName(s.ctx.db, 'Mods own')).toBeNull();
    const adminWeb = await signedIn(admin);
    await adminWeb.get('/admin/roles');
    expect((await adminWeb.post('/admin/roles', roleForm({ name: 'Tokenless', position: '1' }, []))).statusCode).toBe(403);
    expect(await findRoleByName(s.ctx.db, 'Tokenless')).toBeNull();
    expect(await findRoleByName(s.ctx.db, 'Moderator')).toEqual(mod);
  });

  it('in Chromium: passes axe; without scripts, a role is created with checkboxes', async () => {
    const withScripts = await signedInContext(browser, s.url, admin, true);
    try {
      await withScripts.page.goto(`${s.url}/admin/roles`);
      await expectAccessible(withScripts.page, 'roles');
      await withScripts.page.goto(`${s.url}/admin/roles/new`);
      await expectAccessible(withScripts.page, 'new role');
    } finally {
      await withScripts.context.close();
    }
    const { context, page } = await signedInContext(browser, s.url, admin, false);
    try {
      await page.goto(`${s.url}/admin/roles/new`);
      await page.fill('#role-name', 'Emoji keeper');
      await page.fill('#role-position', '4');
      await page.check('input[name="permissions[]"][value="manage_custom_emojis"]');
      expect(await page.isDisabled('input[name="permissions[]"][value="view_devops"]')).toBe(true);
      await Promise.all([page.waitForURL(/notice=created/), page.click('form[action="/admin/roles"] button[type=submit]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('The role is created.');
      expect(Number((await findRoleByName(s.ctx.db, 'Emoji keeper'))!.permissions)).toBe(PERMISSION_FLAGS.manage_custom_emojis);
    } finally {
      await context.close();
    }
  }, 60_000);
});
