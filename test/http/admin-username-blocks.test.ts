// Username blocks (Mastodon 4.5's /api/v1/admin/username_blocks) and what they do to new accounts: a name equal to a
// block, or containing it, compared lower-cased with digits read as letters, is refused at sign-up (the API and the
// page) and by the CLI, or held for the operators' approval when the block allows that.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { csrfOf, CookieJar } from '../helpers/web.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';
import { normalizeUsername } from '../../services/username-blocks.ts';

let s: TestServer;
let client: RegisteredApp;
let admin: TestUser;
let modo: TestUser;
let appTok: string;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
const api = async (token: string | null, method: Method, url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: (res.body ? res.json() : {}) as Json, text: res.body, headers: res.headers };
};
const count = async (table: string) => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
const userOf = async (username: string) =>
  (await s.ctx.db.query(`SELECT u.approved, u.reason FROM users u JOIN accounts a ON a.id = u.account_id WHERE a.username = $1 AND a.domain IS NULL`, [username])).rows[0] as { approved: boolean; reason: string | null } | undefined;
const signUpApi = (username: string, extra: object = {}) =>
  api(appTok, 'POST', '/api/v1/accounts', { username, email: `${username.toLowerCase()}@example.com`, password: `pw-${username}-long`, agreement: true, locale: 'en', ...extra });
const block = async (username: string, comparison: 'equals' | 'contains', allowWithApproval = false) => {
  const res = await api(admin.token, 'POST', '/api/v1/admin/username_blocks', { username, comparison, allow_with_approval: allowWithApproval });
  expect(res.status, res.text).toBe(200);
  return res.body.id as string;
};
const unblock = async (id: string) => expect((await api(admin.token, 'DELETE', `/api/v1/admin/username_blocks/${id}`)).status).toBe(200);

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

/** The sign-up page, opened and submitted as a browser does. */
async function signUpPage(username: string) {
  const jar = new CookieJar();
  const page = await s.app.inject({ method: 'GET', url: '/auth/sign_up', headers: { accept: 'text/html' } });
  jar.take(page.headers['set-cookie']);
  const password = `pw-${username}-long`;
  const body = new URLSearchParams({ _csrf: csrfOf(page.body), username, email: `${username.toLowerCase()}@example.com`, password, password_confirmation: password, agreement: '1' }).toString();
  return s.app.inject({ method: 'POST', url: '/auth/sign_up', payload: body, headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() } });
}

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [admin, modo] = await Promise.all(['ublocker', 'umod'].map((u) => registerUser(s.app, client, u, 'read write admin:read admin:write'))) as [TestUser, TestUser];
  await cli('accounts', 'role', 'ublocker', 'Admin');
  await cli('accounts', 'role', 'umod', 'Moderator');
  appTok = await appToken(s.app, client);
}, 60_000);
afterAll(async () => s?.close());

describe('normalised names', () => {
  it('are lower case with the digits of leet read as letters, as Mastodon compares them', () => {
    expect(normalizeUsername('4dM1n')).toBe('admin');
    expect(normalizeUsername('B0b_2357890')).toBe('bob_zestbgo');
    // 6 stands for nothing there either.
    expect(normalizeUsername('x6')).toBe('x6');
  });
});

describe('/api/v1/admin/username_blocks', () => {
  it('creates, shows, lists, updates and deletes blocks, each written to the audit log', async () => {
    const created = await api(admin.token, 'POST', '/api/v1/admin/username_blocks', { username: ' Staff ', comparison: 'equals' });
    expect(created.status, created.text).toBe(200);
    expect(created.body).toEqual({ id: expect.stringMatching(/^\d+$/), username: 'Staff', comparison: 'equals', allow_with_approval: false });
    const id = created.body.id as string;
    // A form body, a boolean as forms send it, and the comparison left to its default (contains).
    const form = await s.app.inject({ method: 'POST', url: '/api/v1/admin/username_blocks', headers: { ...bearer(admin.token), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'username=spam&allow_with_approval=true' });
    expect(form.statusCode, form.body).toBe(200);
    expect(form.json()).toMatchObject({ username: 'spam', comparison: 'contains', allow_with_approval: true });

    expect((await api(admin.token, 'GET', `/api/v1/admin/username_blocks/${id}`)).body).toEqual(created.body);
    const list = await api(admin.token, 'GET', '/api/v1/admin/username_blocks?limit=1');
    expect(list.status).toBe(200);
    expect((list.body as unknown as Json[]).map((b) => b.username)).toEqual(['spam']);
    expect(list.headers.link).toMatch(/max_id=\d+>; rel="next"/);
    const next = await api(admin.token, 'GET', `/api/v1/admin/username_blocks?limit=1&max_id=${form.json().id}`);
    expect((next.body as unknown as Json[]).map((b) => b.id)).toEqual([id]);

    const updated = await api(admin.token, 'PUT', `/api/v1/admin/username_blocks/${id}`, { comparison: 'contains', allow_with_approval: true });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toEqual({ id, username: 'Staff', comparison: 'contains', allow_with_approval: true });
    const renamed = await api(admin.token, 'PUT', `/api/v1/admin/username_blocks/${id}`, { username: 'st4ff' });
    expect(renamed.body).toEqual({ id, username: 'st4ff', comparison: 'contains', allow_with_approval: true });

    expect(await api(admin.token, 'DELETE', `/api/v1/admin/username_blocks/${id}`)).toMatchObject({ status: 200, body: {} });
    for (const [method, url] of [['GET', `/api/v1/admin/username_blocks/${id}`], ['DELETE', `/api/v1/admin/username_blocks/${id}`], ['PUT', `/api/v1/admin/username_blocks/${id}`], ['GET', '/api/v1/admin/username_blocks/nope']] as const) {
      const gone = await api(admin.token, method, url, method === 'PUT' ? { username: 'x' } : undefined);
      expect(gone.status, `${method} ${url}`).toBe(404);
      expect(gone.body).toEqual({ error: 'Record not found' });
    }
    await unblock(form.json().id);

    const logged = await actionLogsPage(s.ctx.db, { targetType: 'UsernameBlock' }, { limit: 10 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([
      [admin.id, 'destroy', 'spam'], [admin.id, 'destroy', 'st4ff'], [admin.id, 'update', 'st4ff'], [admin.id, 'update', 'Staff'],
      [admin.id, 'create', 'spam'], [admin.id, 'create', 'Staff'],
    ]);
    expect(logged[0]!.target_id).toBeNull();
    expect(logged.at(-1)!.target_id).toBe(id);
  });

  it('refuses a blank, long or repeated name and another comparison with 422, writing nothing', async () => {
    const first = await block('Taken', 'equals');
    const before = await count('username_blocks');
    const logs = await count('admin_action_logs');
    for (const [payload, error] of [
      [{}, "Validation failed: Username can't be blank"],
      [{ username: '   ', comparison: 'equals' }, "Validation failed: Username can't be blank"],
      [{ username: 'x'.repeat(31) }, 'Validation failed: Username is too long (maximum is 30 characters)'],
      [{ username: 'fine', comparison: 'starts_with' }, 'Validation failed: Comparison is not included in the list'],
      [{ username: 'TAKEN', comparison: 'contains' }, 'Validation failed: Username has already been taken'],
    ] as const) {
      const res = await api(admin.token, 'POST', '/api/v1/admin/username_blocks', payload);
      expect(res.status, JSON.stringify(payload)).toBe(422);
      expect(res.body).toEqual({ error });
    }
    const other = await block('other', 'contains');
    const clash = await api(admin.token, 'PUT', `/api/v1/admin/username_blocks/${other}`, { username: 'taken' });
    expect(clash).toMatchObject({ status: 422, body: { error: 'Validation failed: Username has already been taken' } });
    const notBool = await api(admin.token, 'PUT', `/api/v1/admin/username_blocks/${other}`, { allow_with_approval: 'maybe' });
    expect(notBool.status).toBe(422);
    expect((await api(admin.token, 'GET', `/api/v1/admin/username_blocks/${other}`)).body).toMatchObject({ username: 'other', allow_with_approval: false });
    expect(await count('username_blocks')).toBe(before + 1);
    expect(await count('admin_action_logs')).toBe(logs + 1);
    await unblock(first);
    await unblock(other);
  });

  it('needs manage_blocks: a moderator gets 403 and changes nothing; no token 401; a token without the admin scopes 403', async () => {
    const id = await block('guarded', 'equals');
    for (const [method, url, payload] of [
      ['GET', '/api/v1/admin/username_blocks', undefined], ['GET', `/api/v1/admin/username_blocks/${id}`, undefined],
      ['POST', '/api/v1/admin/username_blocks', { username: 'sneaky' }], ['PUT', `/api/v1/admin/username_blocks/${id}`, { username: 'sneaky' }],
      ['DELETE', `/api/v1/admin/username_blocks/${id}`, undefined],
    ] as const) {
      const res = await api(modo.token, method, url, payload);
      expect(res.status, `${method} ${url}`).toBe(403);
      expect(res.body).toEqual({ error: 'This action is not allowed' });
    }
    expect((await api(null, 'GET', '/api/v1/admin/username_blocks')).body).toEqual({ error: 'The access token is invalid' });
    const noScope = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'read write');
    expect(await api(noScope, 'GET', '/api/v1/admin/username_blocks')).toMatchObject({ status: 403, body: { error: 'This action is outside the authorized scopes' } });
    expect((await api(admin.token, 'GET', `/api/v1/admin/username_blocks/${id}`)).body.username).toBe('guarded');
    // A role of the server's own that may manage blocks, and nothing else, may.
    await cli('roles', 'create', 'Blocker', '--position', '5', '--permissions', 'manage_blocks');
    await cli('accounts', 'role', 'umod', 'Blocker');
    // (Every process hears of the change through Redis, so it takes a moment.)
    expect(await eventually(async () => (await api(modo.token, 'GET', '/api/v1/admin/username_blocks')).status, 200)).toBe(200);
    await cli('accounts', 'role', 'umod', 'Moderator');
    await unblock(id);
  });
});

describe('what username blocks do to new accounts', () => {
  it('refuses a name equal to an `equals` block, in any case or leet, with Mastodon\'s ERR_RESERVED, on the API and the page', async () => {
    const id = await block('boss', 'equals');
    const accounts = await count('accounts');
    for (const name of ['boss', 'BOSS', 'B0SS', 'b055']) {
      const res = await signUpApi(name);
      expect(res.status, name).toBe(422);
      expect(res.body).toEqual({ error: 'Validation failed: username is reserved', details: { username: [{ error: 'ERR_RESERVED', description: 'is reserved' }] } });
    }
    const page = await signUpPage('B0ss');
    expect(page.statusCode).toBe(422);
    expect(page.body).toContain('Username is reserved.');
    expect(await count('accounts')).toBe(accounts);
    // Equal means equal: a longer name passes.
    expect((await signUpApi('bossanova')).status).toBe(200);
    await unblock(id);
    expect((await signUpApi('boss')).status).toBe(200);
  });

  it('refuses a name containing a `contains` block, with the other refusals of the form at once', async () => {
    const id = await block('nazi', 'contains');
    const res = await signUpApi('the_n4z1_fan', { email: 'not-an-address' });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual({ username: [{ error: 'ERR_RESERVED', description: 'is reserved' }], email: [{ error: 'ERR_INVALID', description: 'is invalid' }] });
    expect((await signUpApi('NAZIhunter')).status).toBe(422);
    // `_` in a block is a character, not a wildcard.
    const underscore = await block('a_b', 'contains');
    expect((await signUpApi('xa_bx')).status).toBe(422);
    expect((await signUpApi('xacbx')).status).toBe(200);
    await unblock(id);
    await unblock(underscore);
  });

  it('holds a name meeting a block that allows approval, though sign-ups are open, keeping the reason given', async () => {
    const id = await block('promo', 'contains', true);
    const res = await signUpApi('pr0mo_deals', { reason: 'I sell things.' });
    expect(res.status, res.text).toBe(200);
    expect(await userOf('pr0mo_deals')).toEqual({ approved: false, reason: 'I sell things.' });
    const me = await api(res.body.access_token, 'GET', '/api/v1/accounts/verify_credentials');
    expect(me).toMatchObject({ status: 403, body: { error: 'Your login is currently pending approval' } });
    const page = await signUpPage('promotions');
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/auth/done/signed_up_approval');
    expect((await userOf('promotions'))?.approved).toBe(false);
    // Other names are not held; a block that refuses wins over one that holds.
    expect((await signUpApi('plainname')).status).toBe(200);
    expect((await userOf('plainname'))?.approved).toBe(true);
    const refusing = await block('promoter', 'equals');
    expect((await signUpApi('promoter')).status).toBe(422);
    await unblock(refusing);
    await unblock(id);
  });

  it('refuses a blocked name to the CLI as well; a name held for approval is made there approved', async () => {
    const refusing = await block('helpdesk', 'contains');
    const held = await block('shop', 'contains', true);
    await expect(cli('accounts', 'create', 'h3lpdesk_team', '--email', 'hd@example.com', '--password', 'long-enough-pw')).rejects.toThrow('Validation failed: username is reserved');
    await expect(cli('--as', 'ublocker', 'accounts', 'create', 'HELPDESK', '--email', 'hd2@example.com', '--password', 'long-enough-pw')).rejects.toThrow(/username is reserved/);
    expect((await cli('accounts', 'create', 'sh0pkeeper', '--email', 'shop@example.com', '--password', 'long-enough-pw'))).toHaveLength(1);
    expect((await userOf('sh0pkeeper'))?.approved).toBe(true);
    // The names reserved by the server itself stay the operators' to take.
    expect(await cli('accounts', 'create', 'postmaster', '--email', 'pm@example.com', '--password', 'long-enough-pw')).toHaveLength(1);
    await unblock(refusing);
    await unblock(held);
  });
});
