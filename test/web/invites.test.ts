import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, appToken } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { invitesOf } from '../../storage/invites.ts';
import { findAccountByUsername } from '../../storage/accounts.ts';
import { loadAdminAccounts } from '../../http/serializers/admin-account.ts';

// Invites while registrations are closed: made on /invites by a role with invite_users, used through /invite/:code.
let s: TestServer;
let inviterId: string;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

const joinForm = (username: string, invite: string) => ({
  username, email: `${username}@example.com`, password: 'a-long-password', password_confirmation: 'a-long-password', agreement: '1', invite_code: invite,
});

beforeAll(async () => {
  s = await startTestServer({ REGISTRATIONS_MODE: 'none', SMTP_URL: '' });
  await cli('accounts', 'create', 'inviter', '--email', 'inviter@example.com', '--password', 'inviter-password', '--role', 'Moderator');
  await cli('accounts', 'create', 'nobody', '--email', 'nobody@example.com', '--password', 'nobody-password');
  inviterId = (await findAccountByUsername(s.ctx.db, 'inviter', null))!.id;
});
afterAll(async () => s?.close());

describe('invites', () => {
  it('someone whose role may invite makes a link; a person joins through it while registrations are closed', async () => {
    const web = new WebClient(s.app);
    expect((await web.signIn('inviter@example.com', 'inviter-password')).statusCode).toBe(303);
    expect((await web.submit('/invites', '/invites', { max_uses: '1', expires_in: '', autofollow: '1' })).statusCode).toBe(303);
    expect((await web.submit('/invites', '/invites', { max_uses: '3', expires_in: '' })).statusCode).toBe(422);
    const [invite] = await invitesOf(s.ctx.db, inviterId);
    expect(invite).toMatchObject({ max_uses: 1, uses: 0, autofollow: true, expires_at: null });
    expect((await web.get('/invites')).body).toContain(`/invite/${invite!.code}`);

    // The sign-up page is closed, the invite's page is not.
    const stranger = new WebClient(s.app);
    expect((await stranger.get('/auth/sign_up')).body).not.toContain('name="username"');
    const form = await stranger.get(`/invite/${invite!.code}`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(`name="invite_code" value="${invite!.code}"`);
    expect((await stranger.post('/auth/sign_up', { ...joinForm('newbie', ''), invite_code: '' }, form.body)).statusCode).toBe(403);
    const joined = await stranger.post('/auth/sign_up', joinForm('newbie', invite!.code), form.body);
    expect(joined.statusCode, joined.body).toBe(303);
    expect(joined.headers.location).toBe('/@newbie');
    const newbie = (await findAccountByUsername(s.ctx.db, 'newbie', null))!;

    // The operator sees who invited the account; the newcomer follows the inviter.
    const admin = (await loadAdminAccounts(s.ctx.db, s.ctx.render, [newbie.id])).get(newbie.id)!;
    expect(admin).toMatchObject({ username: 'newbie', approved: true, invited_by_account_id: inviterId });
    const { rows: follows } = await s.ctx.db.query(`SELECT 1 FROM follows WHERE account_id = $1 AND target_account_id = $2`, [newbie.id, inviterId]);
    expect(follows).toHaveLength(1);

    // Used up: its page says so, and a sign-up with it is refused.
    expect((await invitesOf(s.ctx.db, inviterId))[0]).toMatchObject({ uses: 1 });
    const gone = await new WebClient(s.app).get(`/invite/${invite!.code}`);
    expect(gone.statusCode).toBe(410);
    expect(gone.body).toContain('used up');
    const late = new WebClient(s.app);
    const lateForm = await late.get('/auth/sign_in');
    const refused = await late.post('/auth/sign_up', joinForm('latecomer', invite!.code), lateForm.body);
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('Invite has been used up');
    expect(await findAccountByUsername(s.ctx.db, 'latecomer', null)).toBeNull();
  });

  it('an expired or unknown invite lets nobody in; people whose role may not invite get 403', async () => {
    const web = new WebClient(s.app);
    await web.signIn('inviter@example.com', 'inviter-password');
    expect((await web.submit('/invites', '/invites', { max_uses: '', expires_in: '1800' })).statusCode).toBe(303);
    const [invite] = await invitesOf(s.ctx.db, inviterId);
    expect(invite!.expires_at).not.toBeNull();
    await s.ctx.db.query(`UPDATE invites SET expires_at = now() - interval '1 minute' WHERE id = $1`, [invite!.id]);
    const stranger = new WebClient(s.app);
    const expired = await stranger.get(`/invite/${invite!.code}`);
    expect(expired.statusCode).toBe(410);
    expect(expired.body).toContain('expired');
    const page = await stranger.get('/auth/sign_in');
    const refused = await stranger.post('/auth/sign_up', joinForm('toolate', invite!.code), page.body);
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('Invite has expired');
    expect((await stranger.get('/invite/NoSuchCode')).statusCode).toBe(404);
    // Through the API too: the code is checked before anything is written.
    const client = await createApp(s.app, 'read write');
    const token = await appToken(s.app, client, 'write');
    const api = await s.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: bearer(token), payload: { username: 'apilate', email: 'apilate@example.com', password: 'a-long-password', agreement: true, locale: 'en', invite_code: invite!.code } });
    expect(api.statusCode).toBe(422);
    expect(api.json()).toEqual({ error: 'Validation failed: Invite has expired' });
    const closed = await s.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: bearer(token), payload: { username: 'apilate', email: 'apilate@example.com', password: 'a-long-password', agreement: true, locale: 'en' } });
    expect(closed.statusCode).toBe(403);

    const plain = new WebClient(s.app);
    expect((await plain.signIn('nobody@example.com', 'nobody-password')).statusCode).toBe(303);
    expect((await plain.get('/invites')).statusCode).toBe(403);
  });
});
