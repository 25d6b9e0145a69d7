import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf, signedInClient } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { findAccountById } from '../../storage/accounts.ts';
import { insertIdentity } from '../../storage/identities.ts';

// The operators' console beyond sign-ups and reports: accounts, notes, the audit log, the dashboard, domain blocks
// and allows with their CSV, IP rules and e-mail domain blocks; each behind its permission, on the page, the API and
// the CLI alike.
let s: TestServer;
let boss: TestUser;
let modo: TestUser;
let plain: TestUser;
let target: TestUser;
let admin: WebClient;
let mod: WebClient;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

const signedIn = (u: TestUser): Promise<WebClient> => signedInClient(s.app, u);

/** Submits a form of `pageUrl` (its CSRF token) to `action`. */
async function submit(web: WebClient, pageUrl: string, action: string, fields: Record<string, string> = {}) {
  return web.submit(pageUrl, action, fields);
}

const log = async (query = '') => (await admin.get(`/admin/action_logs${query}`)).body;

beforeAll(async () => {
  s = await startTestServer({});
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [boss, modo, plain, target] = await Promise.all(['boss', 'modo', 'plain', 'target'].map((u) => registerUser(s.app, client, u, 'read write admin:read admin:write'))) as [TestUser, TestUser, TestUser, TestUser];
  await cli('accounts', 'role', 'boss', 'Admin');
  await cli('accounts', 'role', 'modo', 'Moderator');
  admin = await signedIn(boss);
  mod = await signedIn(modo);
}, 60_000);
afterAll(async () => {
  await s?.close();
});

describe('permissions', () => {
  it('a moderator gets 403 on the pages of federation and blocks, on their API and their CLI; a person without a role on all', async () => {
    for (const path of ['/admin/domain_blocks', '/admin/domain_allows', '/admin/ip_blocks', '/admin/email_domain_blocks', '/admin/domain_blocks/export']) {
      expect((await mod.get(path)).statusCode, path).toBe(403);
    }
    for (const path of ['/admin/accounts', '/admin/action_logs', '/admin/dashboard', `/admin/accounts/${target.id}`]) {
      expect((await mod.get(path)).statusCode, path).toBe(200);
    }
    const page = (await mod.get(`/admin/accounts/${target.id}`)).body;
    expect((await mod.post('/admin/domain_blocks', { domain: 'sneaky.example', severity: 'suspend' }, page)).statusCode).toBe(403);
    expect((await mod.post('/admin/ip_blocks', { ip: '192.0.2.0/24', severity: 'no_access' }, page)).statusCode).toBe(403);
    expect((await mod.post('/admin/email_domain_blocks', { domain: 'sneaky.example' }, page)).statusCode).toBe(403);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/admin/domain_blocks', headers: bearer(modo.token) })).statusCode).toBe(403);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/admin/ip_blocks', headers: bearer(modo.token) })).statusCode).toBe(403);
    await expect(cli('domains', 'block', 'sneaky.example', '--as', 'modo')).rejects.toThrow(/lacks manage_federation/);

    const person = await signedIn(plain);
    for (const path of ['/admin/accounts', '/admin/action_logs', '/admin/dashboard', '/admin/domain_blocks', '/admin/ip_blocks']) {
      expect((await person.get(path)).statusCode, path).toBe(403);
    }
    expect((await s.app.inject({ method: 'POST', url: '/api/v1/admin/measures', headers: bearer(plain.token), payload: { keys: ['new_users'], start_at: '2026-01-01', end_at: '2026-01-02' } })).statusCode).toBe(403);
    // A stranger is sent to sign in.
    const stranger = await new WebClient(s.app).get('/admin/action_logs');
    expect(stranger.statusCode).toBe(303);
    expect(stranger.headers.location).toMatch(/^\/auth\/sign_in\?return_to=%2Fadmin%2Faction_logs/);
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM instance_domain_blocks WHERE domain = 'sneaky.example'`)).rows[0].n).toBe(0);
  });

  it('a form without its CSRF token is refused', async () => {
    const res = await admin.post('/admin/email_domain_blocks', { domain: 'nocsrf.example' });
    expect(res.statusCode).toBe(403);
    expect((await admin.get('/admin/email_domain_blocks')).body).not.toContain('nocsrf.example');
  });
});

describe('accounts', () => {
  it('are found by username, display name, e-mail, address and status', async () => {
    await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(target.token), payload: { display_name: 'Tar Get' } });
    const find = async (q: string) => (await admin.get(`/admin/accounts?${q}`)).body;
    const row = (u: TestUser) => `href="/admin/accounts/${u.id}"`;
    expect(await find('username=targ')).toContain(row(target));
    expect(await find('username=targ')).not.toContain(row(plain));
    expect(await find('display_name=tar%20get')).toContain(row(target));
    expect(await find('email=target%40example')).toContain(row(target));
    expect(await find('email=target%40example')).not.toContain(row(boss));
    // The web client signed in from loopback: its session's address finds it, another range does not.
    expect(await find('ip=127.0.0.0%2F8')).toContain(row(boss));
    expect(await find('ip=203.0.113.0%2F24')).not.toContain(row(boss));
    const bad = await admin.get('/admin/accounts?ip=not-an-address');
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('not an IP address');
    // The API's filter reads the same addresses.
    const api = await s.app.inject({ method: 'GET', url: '/api/v1/admin/accounts?ip=127.0.0.1', headers: bearer(boss.token) });
    expect(api.json().map((a: { username: string }) => a.username)).toContain('boss');
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/admin/accounts?ip=nonsense', headers: bearer(boss.token) })).json()).toEqual([]);
  });

  it("shows who signs in through a single sign-on provider, with their id there", async () => {
    expect((await admin.get(`/admin/accounts/${target.id}`)).body).toContain("Signs in with this server's password only.");
    const { rows } = await s.ctx.db.query<{ id: string }>('SELECT id FROM users WHERE account_id = $1', [target.id]);
    expect(await insertIdentity(s.ctx.db, { provider: 'openid_connect', uid: 'sub-<42>', userId: rows[0]!.id })).toBe(true);
    const page = (await admin.get(`/admin/accounts/${target.id}`)).body;
    expect(page).toContain('<td>openid_connect</td><td>sub-&lt;42&gt;</td>');
  });

  it('an operator limits an account with a text: a strike, the status filter and the audit log show it; lifting it too', async () => {
    const res = await submit(admin, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/action`, { type: 'silence', text: 'Too many <b>mentions</b>.', send_email_notification: '0' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/admin/accounts/${target.id}?notice=acted`);
    expect((await findAccountById(s.ctx.db, target.id))!.silenced_at).not.toBeNull();
    const page = (await admin.get(`/admin/accounts/${target.id}`)).body;
    expect(page).toContain('Too many &lt;b&gt;mentions&lt;/b&gt;.');
    expect(page).toMatch(/silence<\/td><td>@boss/);
    expect((await admin.get('/admin/accounts?status=silenced')).body).toContain(`href="/admin/accounts/${target.id}"`);
    expect((await admin.get('/admin/accounts?status=suspended')).body).not.toContain(`href="/admin/accounts/${target.id}"`);
    expect(await log('?action_type=silence')).toMatch(/@boss<\/td>\s*<td>silence<\/td>\s*<td>Account <a href="\/admin\/accounts\/\d+">target<\/a>/);

    expect((await submit(admin, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/unsilence`)).statusCode).toBe(303);
    expect((await findAccountById(s.ctx.db, target.id))!.silenced_at).toBeNull();
    expect(await log('?action_type=unsilence')).toContain('target');
  });

  it('a warning needs a text; an unknown account is a 404 page; a moderator cannot act on an admin', async () => {
    const warn = await submit(admin, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/action`, { type: 'none', text: '  ' });
    expect(warn.statusCode).toBe(422);
    expect((await admin.get('/admin/accounts/123456789')).statusCode).toBe(404);
    expect((await admin.get('/admin/accounts/nope')).statusCode).toBe(404);
    const up = await submit(mod, `/admin/accounts/${boss.id}`, `/admin/accounts/${boss.id}/action`, { type: 'suspend', text: 'no' });
    expect(up.statusCode).toBe(403);
    expect((await findAccountById(s.ctx.db, boss.id))!.suspended_at).toBeNull();
    const warned = await submit(mod, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/action`, { type: 'none', text: 'Please calm down.' });
    expect(warned.statusCode).toBe(303);
    expect(await log('?action_type=warn')).toMatch(/@modo<\/td>\s*<td>warn<\/td>/);
  });

  it('notes are added and removed by their author or a higher role, not by a lower one', async () => {
    const added = await submit(admin, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/notes`, { content: 'Watch <this> one.' });
    expect(added.statusCode).toBe(303);
    const page = (await mod.get(`/admin/accounts/${target.id}`)).body;
    expect(page).toContain('Watch &lt;this&gt; one.');
    const noteId = /\/admin\/accounts\/\d+\/notes\/(\d+)\/delete/.exec(page)![1]!;
    // The moderator's role is below the admin's: not theirs to remove.
    expect((await mod.post(`/admin/accounts/${target.id}/notes/${noteId}/delete`, {}, page)).statusCode).toBe(403);
    expect((await submit(admin, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/notes`, { content: '   ' })).statusCode).toBe(422);
    expect((await submit(admin, `/admin/accounts/${target.id}`, `/admin/accounts/${target.id}/notes`, { content: 'x'.repeat(2001) })).statusCode).toBe(422);
    // A note id of another account is not found there.
    expect((await admin.post(`/admin/accounts/${plain.id}/notes/${noteId}/delete`, {}, (await admin.get(`/admin/accounts/${target.id}`)).body)).statusCode).toBe(404);
    const removed = await admin.post(`/admin/accounts/${target.id}/notes/${noteId}/delete`, {}, (await admin.get(`/admin/accounts/${target.id}`)).body);
    expect(removed.statusCode).toBe(303);
    expect((await admin.get(`/admin/accounts/${target.id}`)).body).not.toContain('Watch &lt;this&gt; one.');
    const entries = await log('?target_type=AccountModerationNote');
    expect(entries).toMatch(/<td>create<\/td>\s*<td>AccountModerationNote target<\/td>/);
    expect(entries).toMatch(/<td>destroy<\/td>\s*<td>AccountModerationNote target<\/td>/);
  });
});

describe('reports', () => {
  it('are assigned, unassigned, resolved and reopened from the page, with notes; the API and the CLI log the same', async () => {
    const filed = await s.app.inject({ method: 'POST', url: '/api/v1/reports', headers: bearer(plain.token), payload: { account_id: target.id, comment: 'spam' } });
    expect(filed.statusCode, filed.body).toBe(200);
    const id = filed.json().id as string;
    const url = `/admin/reports/${id}`;
    const step = async (action: string, location: string) => {
      const res = await submit(mod, url, `${url}/${action}`);
      expect(res.statusCode, action).toBe(303);
      expect(res.headers.location).toBe(`${url}?notice=${location}`);
    };
    await step('assign_to_self', 'assigned_to_self');
    expect((await mod.get(url)).body).toMatch(/Assigned to<\/dt><dd>@modo/);
    await step('unassign', 'unassigned');
    expect((await mod.get(url)).body).toMatch(/Assigned to<\/dt><dd>Nobody/);
    await step('resolve', 'report_resolved');
    expect((await mod.get(url)).body).toMatch(/Resolved by @modo/);
    await step('reopen', 'reopened');
    expect((await mod.get(url)).body).toMatch(/State<\/dt><dd>Open/);

    expect((await submit(mod, url, `${url}/notes`, { content: 'Looked at it.' })).statusCode).toBe(303);
    const page = (await mod.get(url)).body;
    expect(page).toContain('Looked at it.');
    const noteId = /\/notes\/(\d+)\/delete/.exec(page)![1]!;
    expect((await mod.post(`${url}/notes/${noteId}/delete`, {}, page)).statusCode).toBe(303);

    const api = await s.app.inject({ method: 'POST', url: `/api/v1/admin/reports/${id}/assign_to_self`, headers: bearer(boss.token) });
    expect(api.statusCode).toBe(200);
    await cli('reports', 'resolve', id, '--as', 'boss');
    await cli('reports', 'reopen', id);

    const entries = await log(`?target_type=Report`);
    for (const action of ['assigned to self', 'unassigned', 'resolve', 'reopen']) expect(entries).toMatch(new RegExp(`@modo</td>\\s*<td>${action}</td>`));
    expect(entries).toMatch(/@boss<\/td>\s*<td>assigned to self<\/td>/);
    expect(entries).toMatch(/@boss<\/td>\s*<td>resolve<\/td>/);
    expect(entries).toMatch(/the command line<\/td>\s*<td>reopen<\/td>/);
    expect(await log('?target_type=ReportNote')).toMatch(/<td>destroy<\/td>\s*<td>ReportNote #\d+<\/td>/);
    // Filter by operator: the moderator's entries only.
    const onlyModo = await log(`?account_id=${modo.id}`);
    expect(onlyModo).toContain('@modo');
    expect(onlyModo).not.toContain('@boss</td>');
    expect((await mod.post('/admin/reports/999999999/resolve', {}, page)).statusCode).toBe(404);
    expect((await submit(mod, url, `${url}/notes`, { content: '' })).statusCode).toBe(422);
  });
});

describe('domain blocks and allows', () => {
  it('are made and lifted on the page, exported and imported as Mastodon\'s CSV, each in the audit log', async () => {
    const made = await submit(admin, '/admin/domain_blocks', '/admin/domain_blocks', { domain: 'Bad.Example', severity: 'suspend', reject_media: '1', public_comment: 'Spam, "lots"' });
    expect(made.statusCode).toBe(303);
    const again = await submit(admin, '/admin/domain_blocks', '/admin/domain_blocks', { domain: 'sub.bad.example', severity: 'silence' });
    expect(again.statusCode).toBe(422);
    expect(again.body).toContain('bad.example is blocked already');
    expect((await submit(admin, '/admin/domain_blocks', '/admin/domain_blocks', { domain: 'not a domain', severity: 'silence' })).statusCode).toBe(422);
    expect((await submit(admin, '/admin/domain_blocks', '/admin/domain_blocks', { domain: 'x.example', severity: 'obliterate' })).statusCode).toBe(422);

    const csv = await admin.get('/admin/domain_blocks/export');
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.body.split('\n')[0]).toBe('#domain,#severity,#reject_media,#reject_reports,#public_comment,#obfuscate');
    expect(csv.body).toContain('bad.example,suspend,true,false,"Spam, ""lots""",false');

    const file = '#domain,#severity,#reject_media,#reject_reports,#public_comment,#obfuscate\n'
      + 'new.example,silence,false,true,From a list,true\nbad.example,silence,false,true,,false\nnope nope,suspend,false,false,,false\nodd.example,banish,false,false,,false\nplain.example,,,,,\n'
      + 'sub.bad.example,suspend,,,,\nnew.example,suspend,,,,\n';
    const page = (await admin.get('/admin/domain_blocks')).body;
    const form = await multipart({ _csrf: csrfOf(page), file: { data: Buffer.from(file), filename: 'blocks.csv', type: 'text/csv' } });
    const preview = await s.app.inject({ method: 'POST', url: '/admin/domain_blocks/import', headers: { ...form.headers, cookie: admin.jar.header(), accept: 'text/html' }, payload: form.payload });
    expect(preview.statusCode, preview.body.slice(0, 2000)).toBe(200);
    await expectValidHtml(preview.body, 'import confirmation');
    // Nothing is blocked yet: the page lists what the file would block, and the blocks here it meets.
    const blocked = async () => (await s.app.inject({ method: 'GET', url: '/api/v1/admin/domain_blocks', headers: bearer(boss.token) })).json() as { id: string; domain: string; severity: string; reject_media: boolean; reject_reports: boolean; obfuscate: boolean }[];
    expect((await blocked()).map((b) => b.domain)).toEqual(['bad.example']);
    const body = preview.body.replace(/&#39;/g, "'");
    expect(body).toContain('blocked already: suspend, reject media');
    expect(body).toContain('covered by the block of bad.example (suspend): left as it is');
    expect(body).toContain('Line 4: Domain is not a valid domain name');
    expect(body).toContain('Line 5: unknown severity');
    expect(body).toContain('Line 8: new.example is in the file already');
    // Ticked: the new blocks; not the one that would change bad.example's. Nothing to tick for sub.bad.example.
    const boxes = [...preview.body.matchAll(/<input type="checkbox" name="apply\[\]" value="(\d+)" id="apply-\d+"( checked)? aria-label="Apply the block of ([^"]+)">/g)].map((m) => [m[3], m[2] === ' checked', m[1]]);
    expect(boxes).toEqual([['new.example', true, '0'], ['bad.example', false, '1'], ['plain.example', true, '2']]);
    const token = /name="token" value="([0-9a-f]{32})"/.exec(preview.body)![1]!;
    const confirm = (apply: string[], withToken = token) => {
      const form = new URLSearchParams([['_csrf', csrfOf(preview.body)], ['token', withToken], ...apply.map((a): [string, string] => ['apply[]', a])]);
      return s.app.inject({ method: 'POST', url: '/admin/domain_blocks/import/confirm', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: admin.jar.header(), accept: 'text/html' }, payload: form.toString() });
    };
    // A confirmation naming a row the import does not have, or an import that is not waiting, is refused and changes nothing.
    const outside = await confirm(['0', '7']);
    expect(outside.statusCode).toBe(422);
    expect(outside.body).toContain('names a row of no page waiting');
    const unknown = await confirm(['0'], 'f'.repeat(32));
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('This import is no longer waiting');
    expect((await confirm(['0'], 'not a token')).statusCode).toBe(404);
    expect((await blocked()).map((b) => b.domain)).toEqual(['bad.example']);
    // The operator keeps new.example, also ticks bad.example (the file's settings replace its block), unticks plain.example.
    const imported = await confirm(['0', '1']);
    expect(imported.statusCode).toBe(200);
    expect(imported.body).toContain('Imported: 1 added, 1 changed, 0 already blocked or left as they were, 3 skipped.');
    const api = await blocked();
    expect(api.map((b) => b.domain).sort()).toEqual(['bad.example', 'new.example']);
    expect(api.find((b) => b.domain === 'new.example')).toMatchObject({ severity: 'silence', reject_reports: true, obfuscate: true });
    expect(api.find((b) => b.domain === 'bad.example')).toMatchObject({ severity: 'silence', reject_media: false, reject_reports: true });
    expect(await log('?target_type=DomainBlock')).toMatch(/@boss<\/td>\s*<td>update<\/td>\s*<td>DomainBlock bad\.example<\/td>/);
    // Confirmed once: the same import is not waiting any more.
    expect((await confirm(['2'])).statusCode).toBe(404);
    expect((await blocked()).map((b) => b.domain)).not.toContain('plain.example');
    const notCsv = await multipart({ _csrf: csrfOf(page), file: { data: Buffer.from('domain\nx.example\n'), filename: 'x.csv', type: 'text/csv' } });
    const refused = await s.app.inject({ method: 'POST', url: '/admin/domain_blocks/import', headers: { ...notCsv.headers, cookie: admin.jar.header(), accept: 'text/html' }, payload: notCsv.payload });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('no #domain column');

    const newId = api.find((b) => b.domain === 'new.example')!.id;
    expect((await submit(admin, `/admin/domain_blocks/${newId}`, `/admin/domain_blocks/${newId}`, { severity: 'suspend' })).statusCode).toBe(303);
    expect((await submit(admin, '/admin/domain_blocks', `/admin/domain_blocks/${newId}/delete`)).statusCode).toBe(303);
    expect((await submit(admin, '/admin/domain_blocks', `/admin/domain_blocks/${newId}/delete`)).statusCode).toBe(404);
    const entries = await log('?target_type=DomainBlock');
    expect(entries).toMatch(/@boss<\/td>\s*<td>create<\/td>\s*<td>DomainBlock bad\.example<\/td>/);
    expect(entries).toMatch(/<td>update<\/td>\s*<td>DomainBlock new\.example<\/td>/);
    expect(entries).toMatch(/<td>destroy<\/td>\s*<td>DomainBlock new\.example<\/td>/);

    // Allows: made, exported, imported, removed.
    expect((await submit(admin, '/admin/domain_allows', '/admin/domain_allows', { domain: 'friend.example' })).statusCode).toBe(303);
    expect((await submit(admin, '/admin/domain_allows', '/admin/domain_allows', { domain: '' })).statusCode).toBe(422);
    expect((await admin.get('/admin/domain_allows/export')).body).toBe('#domain\nfriend.example\n');
    const allowPage = (await admin.get('/admin/domain_allows')).body;
    const allowForm = await multipart({ _csrf: csrfOf(allowPage), file: { data: Buffer.from('#domain\nfriend.example\npal.example\n'), filename: 'a.csv', type: 'text/csv' } });
    const allowImport = await s.app.inject({ method: 'POST', url: '/admin/domain_allows/import', headers: { ...allowForm.headers, cookie: admin.jar.header(), accept: 'text/html' }, payload: allowForm.payload });
    expect(allowImport.body).toContain('Imported: 1 added, 1 already allowed, 0 skipped.');
    const allowId = /\/admin\/domain_allows\/(\d+)\/delete/.exec((await admin.get('/admin/domain_allows')).body)![1]!;
    expect((await submit(admin, '/admin/domain_allows', `/admin/domain_allows/${allowId}/delete`)).statusCode).toBe(303);
    expect(await log('?target_type=DomainAllow')).toMatch(/<td>destroy<\/td>\s*<td>DomainAllow \w+\.example<\/td>/);
  });

  it('a file of more blocks than a confirmation page shows is confirmed a page at a time', async () => {
    const file = `#domain,#severity\n${Array.from({ length: 502 }, (_, i) => `many${i}.example,silence`).join('\n')}\n`;
    const page = (await admin.get('/admin/domain_blocks')).body;
    const form = await multipart({ _csrf: csrfOf(page), file: { data: Buffer.from(file), filename: 'many.csv', type: 'text/csv' } });
    const first = await s.app.inject({ method: 'POST', url: '/admin/domain_blocks/import', headers: { ...form.headers, cookie: admin.jar.header(), accept: 'text/html' }, payload: form.payload });
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('Blocks 1 to 500 of 502');
    const token = /name="token" value="([0-9a-f]{32})"/.exec(first.body)![1]!;
    const confirm = (body: string, apply: string[]) => s.app.inject({
      method: 'POST', url: '/admin/domain_blocks/import/confirm', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: admin.jar.header(), accept: 'text/html' },
      payload: new URLSearchParams([['_csrf', csrfOf(body)], ['token', token], ...apply.map((a): [string, string] => ['apply[]', a])]).toString(),
    });
    // The first page confirmed with none ticked; a row of the next page is not the first page's to tick.
    expect((await confirm(first.body, ['500'])).statusCode).toBe(422);
    const second = await confirm(first.body, []);
    expect(second.statusCode).toBe(200);
    expect(second.body).toContain('Blocks 501 to 502 of 502');
    expect((await confirm(second.body, ['0'])).statusCode).toBe(422);
    const done = await confirm(second.body, ['501']);
    expect(done.body).toContain('Imported: 1 added, 0 changed, 0 already blocked or left as they were, 0 skipped.');
    const domains = ((await s.app.inject({ method: 'GET', url: '/api/v1/admin/domain_blocks?limit=200', headers: bearer(boss.token) })).json() as { domain: string }[]).map((b) => b.domain);
    expect(domains.filter((d) => d.startsWith('many'))).toEqual(['many501.example']);
  });

  it('the CLI and the API log their changes with their operator', async () => {
    await cli('domains', 'block', 'cli.example', '--as', 'boss');
    await cli('domains', 'unblock', 'cli.example');
    const api = await s.app.inject({ method: 'POST', url: '/api/v1/admin/domain_blocks', headers: bearer(boss.token), payload: { domain: 'api.example' } });
    expect(api.statusCode).toBe(200);
    const entries = await log('?target_type=DomainBlock');
    expect(entries).toMatch(/@boss<\/td>\s*<td>create<\/td>\s*<td>DomainBlock cli\.example/);
    expect(entries).toMatch(/the command line<\/td>\s*<td>destroy<\/td>\s*<td>DomainBlock cli\.example/);
    expect(entries).toMatch(/@boss<\/td>\s*<td>create<\/td>\s*<td>DomainBlock api\.example/);
  });
});

describe('IP rules and e-mail domain blocks', () => {
  it('are added and removed on their pages, refused when malformed, and logged', async () => {
    expect((await submit(admin, '/admin/ip_blocks', '/admin/ip_blocks', { ip: '198.51.100.7/24', severity: 'sign_up_block', comment: 'bots', expires_in: '86400' })).statusCode).toBe(303);
    const page = (await admin.get('/admin/ip_blocks')).body;
    expect(page).toContain('198.51.100.0/24');
    const bad = await submit(admin, '/admin/ip_blocks', '/admin/ip_blocks', { ip: '999.1.1.1', severity: 'no_access' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('Ip is invalid');
    expect((await submit(admin, '/admin/ip_blocks', '/admin/ip_blocks', { ip: '10.0.0.0/8', severity: 'everything' })).statusCode).toBe(422);
    const id = /\/admin\/ip_blocks\/(\d+)\/delete/.exec(page)![1]!;
    expect((await admin.post(`/admin/ip_blocks/${id}/delete`, {}, page)).statusCode).toBe(303);
    expect((await admin.post(`/admin/ip_blocks/${id}/delete`, {}, page)).statusCode).toBe(404);

    expect((await submit(admin, '/admin/email_domain_blocks', '/admin/email_domain_blocks', { domain: 'spam.example' })).statusCode).toBe(303);
    expect((await submit(admin, '/admin/email_domain_blocks', '/admin/email_domain_blocks', { domain: 'spam.example' })).statusCode).toBe(422);
    const emailPage = (await admin.get('/admin/email_domain_blocks')).body;
    const emailId = /\/admin\/email_domain_blocks\/(\d+)\/delete/.exec(emailPage)![1]!;
    expect((await admin.post(`/admin/email_domain_blocks/${emailId}/delete`, {}, emailPage)).statusCode).toBe(303);
    const entries = await log();
    expect(entries).toMatch(/<td>create<\/td>\s*<td>IpBlock 198\.51\.100\.0\/24<\/td>/);
    expect(entries).toMatch(/<td>destroy<\/td>\s*<td>IpBlock 198\.51\.100\.0\/24<\/td>/);
    expect(entries).toMatch(/<td>create<\/td>\s*<td>EmailDomainBlock spam\.example<\/td>/);
  });
});

describe('dashboard', () => {
  it('draws the measures, dimensions and retention as SVG and tables, for any of its ranges', async () => {
    const page = await mod.get('/admin/dashboard?days=7');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('New users');
    expect(page.body).toMatch(/<svg class="chart"[^>]*role="img"/);
    // Four accounts joined today: the new users' total says so, as the API's measure does.
    const today = new Date().toISOString().slice(0, 10);
    const measure = (await s.app.inject({ method: 'POST', url: '/api/v1/admin/measures', headers: bearer(boss.token), payload: { keys: ['new_users'], start_at: today, end_at: today } })).json()[0];
    expect(page.body).toMatch(new RegExp(`measure-new_users">New users</h2>\\s*<p class="measure-total"><strong>${measure.total}</strong>`));
    expect(page.body).toContain('Retention of new users');
    // A range that is not offered is the default month.
    expect((await mod.get('/admin/dashboard?days=5')).body).toContain('<strong>30 days</strong>');
  });
});
