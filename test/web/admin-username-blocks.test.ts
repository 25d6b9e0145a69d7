// The username blocks page (/admin/username_blocks): blocks added, edited and removed there are what the admin API
// answers and what sign-ups meet; only roles that may manage blocks may use it, and each change is in the audit log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { WebClient, signedInClient } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';

let s: TestServer;
let client: RegisteredApp;
let admin: TestUser;
let modo: TestUser;

async function cli(...args: string[]): Promise<void> {
  await runCli(args, s.ctx.db, () => {}, (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
}

const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(s.app, user);

type Block = { id: string; username: string; comparison: string; allow_with_approval: boolean };
const apiBlocks = async () => (await s.app.inject({ method: 'GET', url: '/api/v1/admin/username_blocks', headers: bearer(admin.token) })).json() as Block[];
const signUp = async (username: string) => s.app.inject({
  method: 'POST', url: '/api/v1/accounts', headers: bearer(await appToken(s.app, client)),
  payload: { username, email: `${username}@example.com`, password: `pw-${username}-long`, agreement: true, locale: 'en' },
});

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [admin, modo] = await Promise.all(['pageblocker', 'pagemod'].map((u) => registerUser(s.app, client, u, 'read write admin:read admin:write'))) as [TestUser, TestUser];
  await cli('accounts', 'role', 'pageblocker', 'Admin');
  await cli('accounts', 'role', 'pagemod', 'Moderator');
}, 60_000);
afterAll(async () => s?.close());

describe('username blocks page', () => {
  it('adds, edits and removes blocks; the API and sign-ups follow; the audit log names the operator', async () => {
    const web = await signedIn(admin);
    let page = await web.get('/admin/username_blocks');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('No username blocks.');
    await expectValidHtml(page.body, '/admin/username_blocks');

    const added = await web.post('/admin/username_blocks', { username: 'webmaster', comparison: 'equals' }, page.body);
    expect(added.statusCode).toBe(303);
    expect(added.headers.location).toBe('/admin/username_blocks?notice=added');
    page = await web.get(added.headers.location as string);
    expect(page.body).toContain('The username block is added.');
    expect((await web.post('/admin/username_blocks', { username: 'casino', comparison: 'contains', allow_with_approval: '1' }, page.body)).statusCode).toBe(303);
    page = await web.get('/admin/username_blocks');
    await expectValidHtml(page.body, 'the list');
    expect(await apiBlocks()).toEqual([
      { id: expect.any(String), username: 'casino', comparison: 'contains', allow_with_approval: true },
      { id: expect.any(String), username: 'webmaster', comparison: 'equals', allow_with_approval: false },
    ]);
    const [casino, webmaster] = await apiBlocks();
    expect((await signUp('w3bmaster')).statusCode).toBe(422);
    const big = await signUp('bigcasino');
    expect(big.statusCode, big.body).toBe(200);

    // The edit form shows the block as it is, and saving it (the box left unticked) changes it.
    const edit = await web.get(`/admin/username_blocks/${casino!.id}/edit`);
    expect(edit.statusCode).toBe(200);
    await expectValidHtml(edit.body, 'the edit page');
    expect(edit.body).toContain('value="casino"');
    expect(edit.body).toMatch(/<option value="contains" selected>/);
    expect(edit.body).toMatch(/name="allow_with_approval" value="1" checked>/);
    const saved = await web.post(`/admin/username_blocks/${casino!.id}`, { username: 'c4sino', comparison: 'contains' }, edit.body);
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe('/admin/username_blocks?notice=changed');
    expect((await apiBlocks())[0]).toEqual({ id: casino!.id, username: 'c4sino', comparison: 'contains', allow_with_approval: false });
    expect((await signUp('casinoking')).statusCode).toBe(422);

    const removed = await web.post(`/admin/username_blocks/${webmaster!.id}/delete`, {}, page.body);
    expect(removed.headers.location).toBe('/admin/username_blocks?notice=removed');
    expect((await apiBlocks()).map((b) => b.username)).toEqual(['c4sino']);
    expect((await signUp('w3bmaster')).statusCode).toBe(200);

    const logged = await actionLogsPage(s.ctx.db, { targetType: 'UsernameBlock' }, { limit: 10 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([
      [admin.id, 'destroy', 'webmaster'], [admin.id, 'update', 'c4sino'], [admin.id, 'create', 'casino'], [admin.id, 'create', 'webmaster'],
    ]);
    expect((await web.get('/admin/action_logs?target_type=UsernameBlock')).body).toContain('c4sino');
  });

  it('answers a blank, long or repeated name with 422 keeping what was typed, and a missing block with 404', async () => {
    const web = await signedIn(admin);
    const page = await web.get('/admin/username_blocks');
    const before = await apiBlocks();
    const blank = await web.post('/admin/username_blocks', { username: '  ', comparison: 'contains', allow_with_approval: '1' }, page.body);
    expect(blank.statusCode).toBe(422);
    expect(blank.body).toContain("Username can&#39;t be blank");
    expect(blank.body).toMatch(/name="allow_with_approval" value="1" checked>/);
    await expectValidHtml(blank.body, 'a refused block');
    const repeated = await web.post('/admin/username_blocks', { username: 'C4SINO', comparison: 'equals' }, page.body);
    expect(repeated.statusCode).toBe(422);
    expect(repeated.body).toContain('Username has already been taken');
    expect(repeated.body).toContain('value="C4SINO"');
    expect((await web.post('/admin/username_blocks', { username: 'x'.repeat(31), comparison: 'equals' }, page.body)).statusCode).toBe(422);
    expect((await web.post('/admin/username_blocks', { username: 'ok', comparison: 'sounds_like' }, page.body)).statusCode).toBe(422);
    const badEdit = await web.post(`/admin/username_blocks/${before[0]!.id}`, { username: '', comparison: 'equals' }, page.body);
    expect(badEdit.statusCode).toBe(422);
    expect(badEdit.body).toContain('Edit a username block');
    for (const url of ['/admin/username_blocks/999999/delete', '/admin/username_blocks/nope/delete', '/admin/username_blocks/999999']) {
      expect((await web.post(url, { username: 'x', comparison: 'equals' }, page.body)).statusCode, url).toBe(404);
    }
    expect((await web.get('/admin/username_blocks/999999/edit')).statusCode).toBe(404);
    expect(await apiBlocks()).toEqual(before);
  });

  it('needs manage_blocks: a moderator gets 403 and changes nothing; a form without its token is refused; a stranger signs in first', async () => {
    const before = await apiBlocks();
    const mod = await signedIn(modo);
    expect((await mod.get('/admin/username_blocks')).statusCode).toBe(403);
    expect((await mod.get(`/admin/username_blocks/${before[0]!.id}/edit`)).statusCode).toBe(403);
    const own = await mod.get('/settings/profile');
    expect((await mod.post('/admin/username_blocks', { username: 'sneaky', comparison: 'equals' }, own.body)).statusCode).toBe(403);
    expect((await mod.post(`/admin/username_blocks/${before[0]!.id}/delete`, {}, own.body)).statusCode).toBe(403);
    const web = await signedIn(admin);
    await web.get('/admin/username_blocks');
    expect((await web.post('/admin/username_blocks', { username: 'tokenless', comparison: 'equals' })).statusCode).toBe(403);
    const stranger = await new WebClient(s.app).get('/admin/username_blocks');
    expect(stranger.statusCode).toBe(303);
    expect(stranger.headers.location).toBe('/auth/sign_in?return_to=%2Fadmin%2Fusername_blocks');
    expect(await apiBlocks()).toEqual(before);
  });
});
