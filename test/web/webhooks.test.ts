import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { listWebhooks } from '../../storage/webhooks.ts';
import { guardedPost, PrivateAddressError } from '../../services/guarded-fetch.ts';

// Operators' webhooks: a receiver on loopback (ALLOW_PRIVATE_ADDRESSES, as a test's receiver needs) gets the signed
// events; the operators' page and the CLI manage them, for roles with manage_webhooks only.
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- delivered JSON

interface Received { path: string; headers: IncomingHttpHeaders; body: Buffer }

let s: TestServer;
let receiver: Server;
let base: string;
const received: Received[] = [];
/** Paths answered 500 this many more times. */
const failures = new Map<string, number>();
let owner: TestUser;
let moderator: TestUser;
let plain: TestUser;
let client: Awaited<ReturnType<typeof createApp>>;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

/** The deliveries of `event` to `path` whose object has this id, checked against the webhook's secret. */
function deliveriesOf(path: string, event: string, objectId: string, secret: string): Json[] {
  return received.filter((r) => r.path === path).flatMap((r) => {
    const body = JSON.parse(r.body.toString()) as Json;
    if (body.event !== event || body.object?.id !== objectId) return [];
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['x-hub-signature']).toBe(`sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`);
    return [body];
  });
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const fail = failures.get(path) ?? 0;
      if (fail > 0) {
        failures.set(path, fail - 1);
        res.writeHead(500).end('down for a moment');
        return;
      }
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  s = await startTestServer({ ALLOW_PRIVATE_ADDRESSES: 'true' });
  client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [owner, moderator, plain] = await Promise.all(['hookowner', 'hookmod', 'hookplain'].map((u) => registerUser(s.app, client, u, 'read write admin:read admin:write'))) as [TestUser, TestUser, TestUser];
  await cli('accounts', 'role', 'hookowner', 'Owner');
  await cli('accounts', 'role', 'hookmod', 'Moderator');
});
afterAll(async () => {
  await s?.close();
  await new Promise((r) => receiver?.close(r));
});

describe('webhooks', () => {
  it('an operator adds one on the page; new accounts and reports arrive signed, with their admin entities', async () => {
    const web = new WebClient(s.app);
    expect((await web.signIn(owner.email, owner.password)).statusCode).toBe(303);
    const page = await web.get('/admin/webhooks');
    expect(page.statusCode).toBe(200);
    const form = new URLSearchParams({ _csrf: csrfOf(page.body), url: `${base}/hooks` });
    form.append('events', 'account.created');
    form.append('events', 'report.created');
    const added = await s.app.inject({
      method: 'POST', url: '/admin/webhooks', payload: form.toString(),
      headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: web.jar.header() },
    });
    expect(added.statusCode, added.body).toBe(303);
    const [hook] = await listWebhooks(s.ctx.db);
    expect(hook).toMatchObject({ url: `${base}/hooks`, events: ['account.created', 'report.created'], enabled: true });
    expect(hook!.secret).toMatch(/^[0-9a-f]{40}$/);
    expect((await web.get('/admin/webhooks')).body).toContain(hook!.secret);
    // An unknown event is refused on the page, nothing added.
    expect((await web.submit('/admin/webhooks', '/admin/webhooks', { url: `${base}/x`, events: 'status.exploded' })).statusCode).toBe(422);

    const newcomer = await registerUser(s.app, client, 'hooknewcomer');
    await eventually(async () => deliveriesOf('/hooks', 'account.created', newcomer.id, hook!.secret).length, 1, 8000);
    const [created] = deliveriesOf('/hooks', 'account.created', newcomer.id, hook!.secret);
    expect(created).toMatchObject({ event: 'account.created', object: { id: newcomer.id, username: 'hooknewcomer', email: 'hooknewcomer@example.com', account: { id: newcomer.id } } });
    expect(Date.parse(created!.created_at)).not.toBeNaN();

    const report = await s.app.inject({ method: 'POST', url: '/api/v1/reports', headers: bearer(plain.token), payload: { account_id: newcomer.id, comment: 'hm' } });
    expect(report.statusCode, report.body).toBe(200);
    const reportId = report.json().id as string;
    await eventually(async () => deliveriesOf('/hooks', 'report.created', reportId, hook!.secret).length, 1, 8000);
    expect(deliveriesOf('/hooks', 'report.created', reportId, hook!.secret)[0]).toMatchObject({ object: { id: reportId, comment: 'hm', target_account: { id: newcomer.id }, account: { id: plain.id } } });

    // The last deliveries are shown; rotating the secret changes it; disabling stops deliveries.
    expect((await web.get('/admin/webhooks')).body).toMatch(/account\.created<\/td><td>1<\/td><td>delivered \(200\)/);
    expect((await web.submit('/admin/webhooks', `/admin/webhooks/${hook!.id}/rotate`, {})).statusCode).toBe(303);
    expect((await listWebhooks(s.ctx.db))[0]!.secret).not.toBe(hook!.secret);
    expect((await web.submit('/admin/webhooks', `/admin/webhooks/${hook!.id}/disable`, {})).statusCode).toBe(303);
    expect((await listWebhooks(s.ctx.db))[0]!.enabled).toBe(false);
    expect((await web.submit('/admin/webhooks', `/admin/webhooks/${hook!.id}/events`, { events: 'report.updated' })).statusCode).toBe(303);
    expect((await listWebhooks(s.ctx.db))[0]!.events).toEqual(['report.updated']);
    expect((await web.submit('/admin/webhooks', `/admin/webhooks/${hook!.id}/remove`, {})).statusCode).toBe(303);
    expect(await listWebhooks(s.ctx.db)).toEqual([]);
  });

  it('a delivery answered 500 arrives on a retry, and both attempts are recorded', async () => {
    const [line] = await cli('webhooks', 'add', `${base}/flaky`, '--events', 'report.updated,report.created');
    const [id, , secret] = line!.split(/\s+/);
    expect(await cli('webhooks', 'list')).toEqual([`${id}  enabled  ${base}/flaky  report.updated,report.created`]);
    failures.set('/flaky', 1);
    const report = await s.app.inject({ method: 'POST', url: '/api/v1/reports', headers: bearer(plain.token), payload: { account_id: moderator.id, comment: 'again' } });
    const reportId = report.json().id as string;
    await eventually(async () => deliveriesOf('/flaky', 'report.created', reportId, secret!).length, 1, 10_000);
    // The attempt is recorded once the receiver has answered.
    const recorded = () => s.ctx.db.query<{ attempt: number; status_code: number; error: string | null }>(
      'SELECT attempt, status_code, error FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id', [id]).then((r) => r.rows);
    await eventually(async () => (await recorded()).length, 2, 5000);
    expect(await recorded()).toEqual([{ attempt: 1, status_code: 500, error: 'answered 500' }, { attempt: 2, status_code: 200, error: null }]);
    // A change to the report is report.updated.
    await s.app.inject({ method: 'POST', url: `/api/v1/admin/reports/${reportId}/assign_to_self`, headers: bearer(owner.token) });
    await eventually(async () => deliveriesOf('/flaky', 'report.updated', reportId, secret!).length, 1, 8000);
    expect(deliveriesOf('/flaky', 'report.updated', reportId, secret!)[0]).toMatchObject({ object: { assigned_account: { id: owner.id } } });
    expect(await cli('webhooks', 'remove', id!)).toEqual([`webhook ${id} removed`]);
    await expect(cli('webhooks', 'remove', id!)).rejects.toThrow(/no webhook/);
    await expect(cli('webhooks', 'add', 'ftp://example.com/', '--events', 'report.created')).rejects.toThrow(/Url is invalid/);
  });

  it('local statuses posted and edited are sent as their Status entities, private ones too; profile edits as account.updated', async () => {
    const [line] = await cli('webhooks', 'add', `${base}/statuses`, '--events', 'status.created,status.updated');
    const [id, , secret] = line!.split(/\s+/);
    const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(plain.token), payload: { status: 'for followers', visibility: 'private' } });
    const statusId = posted.json().id as string;
    await eventually(async () => deliveriesOf('/statuses', 'status.created', statusId, secret!).length, 1, 8000);
    expect(deliveriesOf('/statuses', 'status.created', statusId, secret!)[0]).toMatchObject({ object: { id: statusId, visibility: 'private', content: '<p>for followers</p>', account: { id: plain.id } } });
    const edited = await s.app.inject({ method: 'PUT', url: `/api/v1/statuses/${statusId}`, headers: bearer(plain.token), payload: { status: 'for followers, edited' } });
    expect(edited.statusCode, edited.body).toBe(200);
    await eventually(async () => deliveriesOf('/statuses', 'status.updated', statusId, secret!).length, 1, 8000);
    expect(deliveriesOf('/statuses', 'status.updated', statusId, secret!)[0]!.object.content).toBe('<p>for followers, edited</p>');
    // A profile edit is account.updated, with the Admin::Account.
    await cli('webhooks', 'remove', id!);
    const [accountLine] = await cli('webhooks', 'add', `${base}/accounts`, '--events', 'account.updated');
    const [accountHook, , accountSecret] = accountLine!.split(/\s+/);
    const profile = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(plain.token), payload: { display_name: 'Plain Person' } });
    expect(profile.statusCode, profile.body).toBe(200);
    await eventually(async () => deliveriesOf('/accounts', 'account.updated', plain.id, accountSecret!).length, 1, 8000);
    expect(deliveriesOf('/accounts', 'account.updated', plain.id, accountSecret!)[0]!.object).toMatchObject({ username: 'hookplain', account: { display_name: 'Plain Person' } });
    await cli('webhooks', 'remove', accountHook!);
  });

  it('a role without manage_webhooks gets 403 on the page and is refused by the CLI', async () => {
    const web = new WebClient(s.app);
    expect((await web.signIn(moderator.email, moderator.password)).statusCode).toBe(303);
    expect((await web.get('/admin/webhooks')).statusCode).toBe(403);
    // A form's token from a page the moderator may open.
    const page = await web.get('/settings/profile');
    expect((await web.post('/admin/webhooks', { url: `${base}/sneaky`, events: 'account.created' }, page.body)).statusCode).toBe(403);
    await expect(cli('--as', 'hookmod', 'webhooks', 'list')).rejects.toThrow(/not allowed: hookmod's role lacks manage_webhooks/);
    await expect(cli('--as', 'hookmod', 'webhooks', 'add', `${base}/sneaky`, '--events', 'account.created')).rejects.toThrow(/manage_webhooks/);
    expect(await listWebhooks(s.ctx.db)).toEqual([]);
    expect(await cli('--as', 'hookowner', 'webhooks', 'list')).toEqual(['no webhooks']);
  });

  it('the guarded POST refuses loopback addresses unless private addresses are allowed', async () => {
    const body = Buffer.from('{}');
    await expect(guardedPost(new URL(`${base}/hooks`), body, { headers: {}, maxBytes: 1024, allowPrivateAddresses: false, userAgent: 't' })).rejects.toBeInstanceOf(PrivateAddressError);
    await expect(guardedPost(new URL(`http://localhost:${new URL(base).port}/hooks`), body, { headers: {}, maxBytes: 1024, allowPrivateAddresses: false, userAgent: 't' })).rejects.toBeInstanceOf(PrivateAddressError);
    expect((await guardedPost(new URL(`${base}/direct`), body, { headers: {}, maxBytes: 1024, allowPrivateAddresses: true, userAgent: 't' })).status).toBe(200);
  });
});
