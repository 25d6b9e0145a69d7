// `npm run cli -- roles …`: custom roles with Mastodon's permission flags, made, changed and deleted; run for an
// operator (--as), only roles below the operator's own position and only permissions their role has, as Mastodon's
// UserRole validations have it; holders' tokens follow a change at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { listRoles } from '../../storage/roles.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';

let s: TestServer;
let helper: TestUser;
let roleAdmin: TestUser;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

const reportsStatus = async () => (await s.app.inject({ method: 'GET', url: '/api/v1/admin/reports', headers: bearer(helper.token) })).statusCode;

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [helper, roleAdmin] = await Promise.all([
    registerUser(s.app, client, 'rolehelper', 'read write follow push admin:read admin:write'),
    registerUser(s.app, client, 'roleadmin'),
    registerUser(s.app, client, 'rolemod'),
  ]) as [TestUser, TestUser, TestUser];
  await cli('accounts', 'role', 'roleadmin', 'Admin');
  await cli('accounts', 'role', 'rolemod', 'Moderator');
});
afterAll(async () => s?.close());

describe('roles on the command line', () => {
  it('creates a custom role with permission flags, which a person can be given; a change applies to their token at once', async () => {
    expect(await cli('roles', 'create', 'Helper', '--position', '5', '--permissions', 'manage_reports,view_dashboard', '--color', '#3a6', '--highlighted')).toEqual(['role Helper created']);
    expect(await cli('roles', 'list')).toContain('Helper  position 5  view_dashboard,manage_reports  shown on profiles  #3a6');
    await cli('accounts', 'role', 'rolehelper', 'Helper');
    expect(await eventually(reportsStatus, 200)).toBe(200);
    expect(await cli('roles', 'edit', 'Helper', '--permissions', 'view_dashboard', '--not-highlighted')).toEqual(['role Helper changed']);
    expect(await eventually(reportsStatus, 403)).toBe(403);
    expect(await cli('roles', 'list')).toContain('Helper  position 5  view_dashboard  #3a6');
    // In the audit log, without --as, as the command line's doing (no account).
    const logged = await actionLogsPage(s.ctx.db, { targetType: 'UserRole' }, { limit: 2 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([[null, 'update', 'Helper'], [null, 'create', 'Helper']]);
  });

  it('run for an operator: only roles below their own, only permissions they have, and only with manage_roles', async () => {
    expect(await cli('--as', 'roleadmin', 'roles', 'create', 'Curator', '--position', '50', '--permissions', 'manage_taxonomies')).toEqual(['role Curator created']);
    await expect(cli('--as', 'roleadmin', 'roles', 'create', 'Peer', '--position', '100')).rejects.toThrow(/position must be below your own/);
    await expect(cli('--as', 'roleadmin', 'roles', 'create', 'Devops', '--position', '20', '--permissions', 'view_devops')).rejects.toThrow(/permissions your own role lacks/);
    await expect(cli('--as', 'roleadmin', 'roles', 'edit', 'Owner', '--permissions', 'view_dashboard')).rejects.toThrow(/Owner is not below your own role/);
    await expect(cli('--as', 'roleadmin', 'roles', 'edit', 'Curator', '--position', '150')).rejects.toThrow(/position must be below your own/);
    await expect(cli('--as', 'roleadmin', 'roles', 'delete', 'Admin')).rejects.toThrow(/Admin is not below your own role/);
    expect(await cli('--as', 'roleadmin', 'roles', 'edit', 'Curator', '--name', 'Tag Curator', '--position', '40')).toEqual(['role Tag Curator changed']);
    await expect(cli('--as', 'rolemod', 'roles', 'list')).rejects.toThrow(/rolemod's role lacks manage_roles/);
    expect((await listRoles(s.ctx.db)).map((r) => [r.name, r.position])).toEqual([['Helper', 5], ['Moderator', 10], ['Tag Curator', 40], ['Admin', 100], ['Owner', 1000]]);
    // With --as, the audit log names the operator; refused changes are not in it.
    const logged = await actionLogsPage(s.ctx.db, { targetType: 'UserRole' }, { limit: 2 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([[roleAdmin.id, 'update', 'Tag Curator'], [roleAdmin.id, 'create', 'Curator']]);
  });

  it('an operator changing a role keeps, untouched, the permissions it holds beyond their own', async () => {
    expect(await cli('roles', 'create', 'Devops', '--position', '20', '--permissions', 'view_devops,manage_reports')).toEqual(['role Devops created']);
    // The admin lacks view_devops: it is neither given nor taken away by their edit, which names only what they have.
    expect(await cli('--as', 'roleadmin', 'roles', 'edit', 'Devops', '--permissions', 'view_dashboard')).toEqual(['role Devops changed']);
    expect((await cli('roles', 'list')).find((l) => l.startsWith('Devops '))).toMatch(/position 20 {2}view_devops,view_dashboard$/);
    await expect(cli('--as', 'roleadmin', 'roles', 'edit', 'Devops', '--permissions', 'view_audit_log,view_devops')).resolves.toEqual(['role Devops changed']);
    expect((await cli('roles', 'list')).find((l) => l.startsWith('Devops '))).toMatch(/position 20 {2}view_devops,view_audit_log$/);
    await cli('roles', 'delete', 'Devops');
  });

  it('refuses unknown permissions, names taken or missing, bad positions and colours, changing nothing', async () => {
    const before = await listRoles(s.ctx.db);
    await expect(cli('roles', 'create', 'Odd', '--position', '3', '--permissions', 'fly')).rejects.toThrow(/no permission named fly/);
    await expect(cli('roles', 'create', 'helper', '--position', '3')).rejects.toThrow(/a role named helper exists/);
    await expect(cli('roles', 'create', 'Odd', '--position', 'low')).rejects.toThrow(/--position takes a whole number/);
    await expect(cli('roles', 'create', 'Odd')).rejects.toThrow(/--position is required/);
    await expect(cli('roles', 'create', 'Odd', '--position', '3', '--color', 'red')).rejects.toThrow(/colour/);
    await expect(cli('roles', 'edit', 'Nobody', '--position', '3')).rejects.toThrow(/no role named Nobody/);
    await expect(cli('roles', 'edit', 'Helper', '--name', 'Moderator')).rejects.toThrow(/a role named Moderator exists/);
    await expect(cli('roles', 'delete', 'Nobody')).rejects.toThrow(/no role named Nobody/);
    expect(await listRoles(s.ctx.db)).toEqual(before);
  });

  it('deletes a role: its holders are left without one, and lose its permissions at once', async () => {
    await cli('roles', 'edit', 'Helper', '--permissions', 'manage_reports');
    expect(await eventually(reportsStatus, 200)).toBe(200);
    expect(await cli('roles', 'delete', 'Helper')).toEqual(['role Helper deleted; 1 person left without a role']);
    expect(await eventually(reportsStatus, 403)).toBe(403);
    expect((await listRoles(s.ctx.db)).map((r) => r.name)).not.toContain('Helper');
  });
});
