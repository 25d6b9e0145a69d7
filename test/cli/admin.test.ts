import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, submitAuthorizeForm, REDIRECT_URI, type RegisteredApp } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { DEFAULT_ROLES, permissionBits } from '../../services/roles.ts';

let s: TestServer;
let client: RegisteredApp;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
});
afterAll(async () => s?.close());

/** Runs an operator command as `npm run cli -- …` would, against the test server's database and Redis; returns what it printed. */
async function cli(server: TestServer, ...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, server.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(server.ctx.redis, server.config.redisPrefix, what), { redis: server.ctx.redis, redisPrefix: server.config.redisPrefix });
  return lines;
}

const verify = (token: string, server = s) =>
  server.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });

async function tableCounts(server = s) {
  const { rows } = await server.ctx.db.query(
    `SELECT (SELECT count(*)::int FROM accounts) AS accounts, (SELECT count(*)::int FROM users) AS users,
            (SELECT count(*)::int FROM users WHERE role_id IS NOT NULL) AS operators,
            (SELECT count(*)::int FROM oauth_access_tokens WHERE revoked_at IS NULL) AS live_tokens,
            (SELECT string_agg(password_hash, ',' ORDER BY id) FROM users) AS hashes`,
  );
  return rows[0];
}

describe('accounts create', () => {
  it('creates an approved local account, prints its id, and its user can sign in through the authorize page', async () => {
    const out = await cli(s, 'accounts', 'create', 'bob', '--email', 'bob@example.com', '--password', 'secret-pass');
    expect(out).toHaveLength(1);
    const id = out[0]!;
    expect(id).toMatch(/^\d+$/);

    const shown = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${id}` });
    expect(shown.statusCode).toBe(200);
    expectEntity('Account', shown.json());
    expect(shown.json()).toMatchObject({ id, username: 'bob', acct: 'bob' });

    const token = await authorizationCodeToken(s.app, client, 'bob@example.com', 'secret-pass');
    const me = await verify(token);
    expect(me.statusCode).toBe(200);
    expectEntity('CredentialAccount', me.json());
    expect(me.json().id).toBe(id);
    expect(me.json().role).toMatchObject({ permissions: '0' });

    // A wrong password is refused on the same page.
    const wrong = await submitAuthorizeForm(s.app, { client_id: client.client_id, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'read' }, 'bob@example.com', 'not-the-password');
    expect(wrong.statusCode).toBe(401);
    const { rows } = await s.ctx.db.query('SELECT password_hash FROM users WHERE email = $1', ['bob@example.com']);
    expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
  });

  it('prints a generated password when none is given, and --admin makes the first operator the Owner', async () => {
    const out = await cli(s, 'accounts', 'create', 'root', '--email', 'root@example.com', '--admin');
    expect(out[0]).toMatch(/^\d+$/);
    const password = /^password: (\S{12,})$/.exec(out[1] ?? '')?.[1];
    expect(password).toBeTruthy();
    const token = await authorizationCodeToken(s.app, client, 'root@example.com', password!);
    expect((await verify(token)).json().role).toMatchObject({ name: 'Owner', permissions: '1' });
    // The next operator made with --admin is an Admin.
    await cli(s, 'accounts', 'create', 'deputy', '--email', 'deputy@example.com', '--admin', '--password', 'deputy-pass');
    const deputy = await authorizationCodeToken(s.app, client, 'deputy@example.com', 'deputy-pass');
    expect((await verify(deputy)).json().role).toMatchObject({ name: 'Admin', permissions: String(permissionBits(DEFAULT_ROLES[1]!.permissions)) });
  });

  it('refuses taken names and emails, bad input and missing arguments, creating nothing', async () => {
    const before = await tableCounts();
    const cases: [string[], RegExp][] = [
      [['accounts', 'create', 'bob', '--email', 'other@example.com', '--password', 'long-enough'], /username.*taken/],
      [['accounts', 'create', 'BOB', '--email', 'other@example.com', '--password', 'long-enough'], /username.*taken/],
      [['accounts', 'create', 'robert', '--email', 'BOB@example.com', '--password', 'long-enough'], /email.*taken/],
      [['accounts', 'create', 'robert', '--email', 'not-an-email', '--password', 'long-enough'], /email/],
      [['accounts', 'create', 'robert', '--email', 'robert@example.com', '--password', 'short'], /password/],
      [['accounts', 'create', 'bad name', '--email', 'robert@example.com', '--password', 'long-enough'], /username/],
      [['accounts', 'create', 'robert'], /--email/],
      [['accounts', 'create'], /username/],
      [['accounts', 'create', 'robert', '--email', 'robert@example.com', '--role', 'Wizard'], /no role named Wizard/],
      [['accounts', 'frobnicate', 'bob'], /unknown command/],
      [['users', 'create', 'bob'], /unknown command/],
      [[], /unknown command/],
    ];
    for (const [args, message] of cases) {
      await expect(cli(s, ...args), args.join(' ')).rejects.toThrow(message);
    }
    await expect(cli(s, 'accounts', 'create', 'robert', '--email', 'r@example.com', '--bogus')).rejects.toThrow();
    expect(await tableCounts()).toEqual(before);
  });
});

describe('accounts admin', () => {
  it('makes an account an admin, as verify_credentials shows, and --revoke takes it back', async () => {
    const token = await authorizationCodeToken(s.app, client, 'bob@example.com', 'secret-pass');
    expect((await verify(token)).json().role).toMatchObject({ name: '', permissions: '0', highlighted: false });

    const out = await cli(s, 'accounts', 'admin', 'bob');
    expect(out).toEqual(['bob is now Admin']);
    const admin = await verify(token);
    expect(admin.statusCode).toBe(200);
    expectEntity('CredentialAccount', admin.json());
    expect(admin.json().role).toMatchObject({ name: 'Admin', permissions: String(permissionBits(DEFAULT_ROLES[1]!.permissions)), highlighted: true });
    // Idempotent.
    await cli(s, 'accounts', 'admin', 'bob');
    expect((await verify(token)).json().role.name).toBe('Admin');

    expect(await cli(s, 'accounts', 'admin', 'bob', '--revoke')).toEqual(['bob has no role now']);
    expect((await verify(token)).json().role).toMatchObject({ name: '', permissions: '0' });
  });
});

describe('accounts reset-password', () => {
  it('sets the new password, revokes every token the user holds, and the old password stops working', async () => {
    const first = await authorizationCodeToken(s.app, client, 'bob@example.com', 'secret-pass');
    const otherApp = await createApp(s.app, 'read');
    const second = await authorizationCodeToken(s.app, otherApp, 'bob@example.com', 'secret-pass', 'read');
    expect((await verify(first)).statusCode).toBe(200);
    expect((await verify(second)).statusCode).toBe(200);
    // Someone else's token must survive bob's reset.
    const carol = await registerUser(s.app, client, 'carol');
    const app = await appToken(s.app, client);

    const { rows } = await s.ctx.db.query(
      `SELECT count(*)::int AS n FROM oauth_access_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = 'bob@example.com' AND t.revoked_at IS NULL`,
    );
    const out = await cli(s, 'accounts', 'reset-password', 'bob', '--password', 'other-pass');
    expect(out).toEqual([`password changed; ${rows[0].n} token(s) revoked`]);

    for (const token of [first, second]) {
      const status = () => verify(token).then((r) => r.statusCode);
      expect(await eventually(status, 401)).toBe(401);
      expect((await verify(token)).json()).toEqual({ error: 'The access token is invalid' });
    }
    expect((await verify(carol.token)).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/apps/verify_credentials', headers: bearer(app) })).statusCode).toBe(200);

    const old = await submitAuthorizeForm(s.app, { client_id: client.client_id, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'read' }, 'bob@example.com', 'secret-pass');
    expect(old.statusCode).toBe(401);
    const fresh = await authorizationCodeToken(s.app, client, 'bob@example.com', 'other-pass');
    expect((await verify(fresh)).json().username).toBe('bob');
  });

  it('generates and prints a password when none is given', async () => {
    const out = (await cli(s, 'accounts', 'reset-password', 'bob')).join('\n').split('\n');
    const password = /^password: (\S+)$/.exec(out[0] ?? '')?.[1];
    expect(password).toBeTruthy();
    expect(out[1]).toMatch(/^\d+ token\(s\) revoked$/);
    await authorizationCodeToken(s.app, client, 'bob@example.com', password!);
  });

  it('refuses a password of the wrong length, changing nothing', async () => {
    const before = await tableCounts();
    await expect(cli(s, 'accounts', 'reset-password', 'bob', '--password', 'short')).rejects.toThrow(/8 to 72/);
    await expect(cli(s, 'accounts', 'reset-password', 'bob', '--password', 'x'.repeat(73))).rejects.toThrow(/8 to 72/);
    expect(await tableCounts()).toEqual(before);
  });
});

describe('unknown usernames', () => {
  it('make every command throw, changing nothing', async () => {
    const before = await tableCounts();
    for (const command of ['admin', 'approve', 'reset-password']) {
      await expect(cli(s, 'accounts', command, 'ghost'), command).rejects.toThrow(/no local account named ghost/);
      await expect(cli(s, 'accounts', command), command).rejects.toThrow(/username is required/);
    }
    await expect(cli(s, 'accounts', 'reset-password', 'ghost', '--password', 'long-enough-pass')).rejects.toThrow(/no local account named ghost/);
    expect(await tableCounts()).toEqual(before);
  });
});

describe('accounts approve', () => {
  it('lets in an account that registered while registrations needed approval', async () => {
    const moderated = await startTestServer({ REGISTRATIONS_MODE: 'approved' });
    try {
      const modClient = await createApp(moderated.app);
      const reg = await moderated.app.inject({
        method: 'POST', url: '/api/v1/accounts', headers: bearer(await appToken(moderated.app, modClient)),
        payload: { username: 'newbie', email: 'newbie@example.com', password: 'newbie-pass', agreement: true, locale: 'en', reason: 'Hello' },
      });
      expect(reg.statusCode, reg.body).toBe(200);
      const token = reg.json().access_token;
      const pending = await verify(token, moderated);
      expect(pending.statusCode).toBe(403);
      expect(pending.json().error).toBe('Your login is currently pending approval');
      const page = await submitAuthorizeForm(moderated.app, { client_id: modClient.client_id, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'read' }, 'newbie@example.com', 'newbie-pass');
      expect(page.statusCode).not.toBe(302);

      expect(await cli(moderated, 'accounts', 'approve', 'newbie')).toEqual(['newbie is approved']);
      // The token the server has cached learns of the approval over Redis.
      const status = () => verify(token, moderated).then((r) => r.statusCode);
      expect(await eventually(status, 200)).toBe(200);
      expect((await verify(token, moderated)).json().username).toBe('newbie');
      await authorizationCodeToken(moderated.app, modClient, 'newbie@example.com', 'newbie-pass');
    } finally {
      await moderated.close();
    }
  });
});
