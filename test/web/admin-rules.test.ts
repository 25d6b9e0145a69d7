// The server rules page (/admin/rules): rules added, edited, moved and removed there are what
// /api/v1/instance/rules answers, in that order; only roles with manage_rules may use it, and the CLI does the same.
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
import { actionLogsPage } from '../../storage/action-logs.ts';

let s: TestServer & { url: string };
let browser: TestBrowser;
let owner: TestUser;
let moderator: TestUser;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(s.app, user);

const apiRules = async () => (await s.app.inject({ method: 'GET', url: '/api/v1/instance/rules' })).json() as { id: string; text: string; hint: string }[];

beforeAll(async () => {
  s = await startListeningServer();
  const client = await createApp(s.app);
  [owner, moderator] = await Promise.all(['ruleowner', 'rulemod'].map((u) => registerUser(s.app, client, u))) as [TestUser, TestUser];
  await cli('accounts', 'role', 'ruleowner', 'Admin');
  await cli('accounts', 'role', 'rulemod', 'Moderator');
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('server rules page', () => {
  it('adds, edits, reorders and removes rules; the API answers them in the order shown', async () => {
    const web = await signedIn(owner);
    let page = await web.get('/admin/rules');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/admin/rules');
    for (const [text, hint] of [['Be kind.', 'No harassment.'], ['No spam.', ''], ['Mark sensitive media.', 'Use content warnings.']] as const) {
      const added = await web.post('/admin/rules', { text, hint }, page.body);
      expect(added.statusCode).toBe(303);
      expect(added.headers.location).toBe('/admin/rules?notice=added');
      page = await web.get(added.headers.location as string);
      expect(page.body).toContain('The rule is added.');
    }
    let rules = await apiRules();
    expect(rules.map((r) => r.text)).toEqual(['Be kind.', 'No spam.', 'Mark sensitive media.']);

    expect((await web.post(`/admin/rules/${rules[1]!.id}`, { text: 'No spam or ads.', hint: 'Commercial posts need an invitation.' }, page.body)).statusCode).toBe(303);
    expect((await web.post(`/admin/rules/${rules[2]!.id}/up`, {}, page.body)).statusCode).toBe(303);
    rules = await apiRules();
    expect(rules.map((r) => [r.text, r.hint])).toEqual([['Be kind.', 'No harassment.'], ['Mark sensitive media.', 'Use content warnings.'], ['No spam or ads.', 'Commercial posts need an invitation.']]);
    // Moving the first up or the last down changes nothing.
    expect((await web.post(`/admin/rules/${rules[0]!.id}/up`, {}, page.body)).statusCode).toBe(303);
    expect((await web.post(`/admin/rules/${rules[2]!.id}/down`, {}, page.body)).statusCode).toBe(303);
    expect((await apiRules()).map((r) => r.id)).toEqual(rules.map((r) => r.id));
    expect((await web.post(`/admin/rules/${rules[0]!.id}/down`, {}, page.body)).statusCode).toBe(303);
    expect((await apiRules()).map((r) => r.id)).toEqual([rules[1]!.id, rules[0]!.id, rules[2]!.id]);

    expect((await web.post(`/admin/rules/${rules[1]!.id}/remove`, {}, page.body)).statusCode).toBe(303);
    expect((await apiRules()).map((r) => r.text)).toEqual(['Be kind.', 'No spam or ads.']);
    // The instance entity and the about page show the same rules.
    expect(((await s.app.inject({ method: 'GET', url: '/api/v2/instance' })).json().rules as { text: string }[]).map((r) => r.text)).toEqual(['Be kind.', 'No spam or ads.']);
    const about = (await s.app.inject({ method: 'GET', url: '/about', headers: { accept: 'text/html' } })).body;
    expect(about).toContain('No spam or ads.');
    expect(about).not.toContain('Mark sensitive media.');
    // The audit log has the additions, the edit, the two moves that moved something and the removal as the
    // operator's, newest first.
    const logged = await actionLogsPage(s.ctx.db, { targetType: 'Rule' }, { limit: 10 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([
      [owner.id, 'destroy', 'Mark sensitive media.'], [owner.id, 'update', 'Be kind.'], [owner.id, 'update', 'Mark sensitive media.'],
      [owner.id, 'update', 'No spam or ads.'],
      [owner.id, 'create', 'Mark sensitive media.'], [owner.id, 'create', 'No spam.'], [owner.id, 'create', 'Be kind.'],
    ]);
  });

  it('the CLI edits and moves rules as the page does', async () => {
    const [first, second] = await apiRules();
    expect(await cli('rules', 'edit', second!.id, 'No spam.', '--hint', 'None at all.')).toEqual([`rule ${second!.id} changed`]);
    expect(await cli('rules', 'move', second!.id, 'up')).toEqual([`rule ${second!.id} moved up`]);
    expect(await cli('rules', 'list')).toEqual([`${second!.id}  No spam.  (None at all.)`, `${first!.id}  Be kind.  (No harassment.)`]);
    // The edit and the move, each logged as the shell's operator's.
    expect((await actionLogsPage(s.ctx.db, { targetType: 'Rule' }, { limit: 2 })).map((r) => [r.account_id, r.action, r.target_id, r.human_identifier])).toEqual([
      [null, 'update', second!.id, 'No spam.'], [null, 'update', second!.id, 'No spam.'],
    ]);
    // A move that moves nothing (the first rule up) logs nothing.
    const logs = async () => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM admin_action_logs`)).rows[0].n as number;
    const count = await logs();
    expect(await cli('rules', 'move', second!.id, 'up')).toEqual([`rule ${second!.id} moved up`]);
    expect(await logs()).toBe(count);
    await expect(cli('rules', 'move', '12345', 'up')).rejects.toThrow('no rule with id 12345');
    await expect(cli('rules', 'edit', first!.id, '  ')).rejects.toThrow(/1 to 300 characters/);
    await expect(cli('--as', 'rulemod', 'rules', 'move', first!.id, 'up')).rejects.toThrow(/rulemod's role lacks manage_rules/);
  });

  it('refuses an empty or long rule with 422 (keeping what was typed) and a missing one with 404', async () => {
    const web = await signedIn(owner);
    const page = await web.get('/admin/rules');
    const before = await apiRules();
    const empty = await web.post('/admin/rules', { text: '   ', hint: 'Kept hint' }, page.body);
    expect(empty.statusCode).toBe(422);
    expect(empty.body).toContain('A rule is 1 to 300 characters.');
    expect(empty.body).toContain('Kept hint');
    await expectValidHtml(empty.body, 'refused rule');
    expect((await web.post('/admin/rules', { text: 'x'.repeat(301) }, page.body)).statusCode).toBe(422);
    expect((await web.post(`/admin/rules/${before[0]!.id}`, { text: 'ok', hint: 'h'.repeat(1001) }, page.body)).statusCode).toBe(422);
    expect((await web.post('/admin/rules/999999/remove', {}, page.body)).statusCode).toBe(404);
    expect((await web.post('/admin/rules/not-an-id/up', {}, page.body)).statusCode).toBe(404);
    expect((await web.post('/admin/rules/999999', { text: 'Gone' }, page.body)).statusCode).toBe(404);
    expect(await apiRules()).toEqual(before);
  });

  it('needs manage_rules: a moderator gets 403 and changes nothing; a form without its token is refused', async () => {
    const before = await apiRules();
    const web = await signedIn(moderator);
    expect((await web.get('/admin/rules')).statusCode).toBe(403);
    const own = await web.get('/settings/profile');
    expect((await web.post('/admin/rules', { text: 'Moderators rule' }, own.body)).statusCode).toBe(403);
    expect((await web.post(`/admin/rules/${before[0]!.id}/remove`, {}, own.body)).statusCode).toBe(403);
    const admin = await signedIn(owner);
    await admin.get('/admin/rules');
    expect((await admin.post('/admin/rules', { text: 'Tokenless' })).statusCode).toBe(403);
    expect(await apiRules()).toEqual(before);
  });

  it('in Chromium: passes axe; without scripts, a rule is added and moved', async () => {
    const withScripts = await signedInContext(browser, s.url, owner, true);
    try {
      await withScripts.page.goto(`${s.url}/admin/rules`);
      await expectAccessible(withScripts.page, 'rules');
    } finally {
      await withScripts.context.close();
    }
    const { context, page } = await signedInContext(browser, s.url, owner, false);
    try {
      await page.goto(`${s.url}/admin/rules`);
      await page.fill('#rule-text', 'Respect privacy.');
      await Promise.all([page.waitForURL(/notice=added/), page.click('form[action="/admin/rules"] button[type=submit]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('The rule is added.');
      const count = (await apiRules()).length;
      await Promise.all([page.waitForURL(/notice=moved/), page.click(`button:text("Move rule ${count} up")`)]);
      expect((await apiRules()).map((r) => r.text)[count - 2]).toBe('Respect privacy.');
    } finally {
      await context.close();
    }
  }, 60_000);
});
