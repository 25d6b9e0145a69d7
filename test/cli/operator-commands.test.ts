import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, submitAuthorizeForm, type RegisteredApp } from '../helpers/oauth.ts';
import { runCli } from '../../cli/admin.ts';
import { eventually } from '../helpers/eventually.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

let s: TestServer;
let client: RegisteredApp;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
});
afterAll(async () => s?.close());

async function cli(...args: string[]) {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what));
  return lines;
}

describe('operators\' command line', () => {
  it('creates an account that can sign in, makes it an admin, and resets its password', async () => {
    const [id] = await cli('accounts', 'create', 'oper', '--email', 'oper@example.com', '--password', 'first-password');
    expect(id).toMatch(/^\d+$/);
    const token = await authorizationCodeToken(s.app, client, 'oper@example.com', 'first-password');
    const me = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect(me.json().id).toBe(id);
    expect(me.json().role.permissions).toBe('0');

    await cli('accounts', 'admin', 'oper');
    const admin = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect(admin.json().role).toMatchObject({ name: 'Admin', permissions: '1' });

    const out = await cli('accounts', 'reset-password', 'oper', '--password', 'second-password');
    expect(out.join('\n')).toMatch(/1 token\(s\) revoked/);
    const status = () => s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) }).then((r) => r.statusCode);
    expect(await eventually(status, 401)).toBe(401);
    const old = await submitAuthorizeForm(s.app, { client_id: client.client_id, redirect_uri: 'urn:ietf:wg:oauth:2.0:oob', response_type: 'code' }, 'oper@example.com', 'first-password');
    expect(old.statusCode).toBe(401);
    await authorizationCodeToken(s.app, client, 'oper@example.com', 'second-password');
  });

  it('generates a password when none is given, and may take reserved names', async () => {
    const out = await cli('accounts', 'create', 'admin', '--email', 'root@example.com', '--admin');
    const password = /^password: (\S+)$/.exec(out[1] ?? '')?.[1];
    expect(password).toBeTruthy();
    await authorizationCodeToken(s.app, client, 'root@example.com', password!);
  });

  it('fails on unknown accounts and bad input, changing nothing', async () => {
    await expect(cli('accounts', 'admin', 'ghost')).rejects.toThrow(/no local account named ghost/);
    await expect(cli('accounts', 'create', 'oper', '--email', 'x@example.com', '--password', 'long-enough')).rejects.toThrow(/taken/);
    await expect(cli('accounts', 'create', 'newone')).rejects.toThrow(/--email/);
    await expect(cli('accounts', 'frobnicate')).rejects.toThrow(/unknown command/);
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM accounts');
    expect(rows[0].n).toBe(2);
  });
});
