// The operator's IP, e-mail domain and canonical e-mail blocks (Mastodon 4.5's admin API) and what they refuse:
// sign-ups through the API and the page, every request from a no_access range, and changes of address.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestAPIClient } from 'masto';
import type { TestServer } from '../helpers/server.ts';
import { startListeningServer } from '../helpers/listen.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { csrfOf, CookieJar } from '../helpers/web.ts';
import { canonicalEmail, canonicalEmailHash, ipAccessList, parseIpRange } from '../../services/admin-blocks.ts';
import { changeEmail } from '../../services/account-security.ts';
import { findUserByAccountId } from '../../storage/users.ts';
import { makeAdmin } from '../helpers/admin.ts';

let s: TestServer & { url: string };
let client: RegisteredApp;
let admin: TestUser;
let bob: TestUser; // no administrator
let appTok: string;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
const api = async (token: string | null, method: Method, url: string, payload?: object, remoteAddress?: string) => {
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}), ...(remoteAddress ? { remoteAddress } : {}) });
  let body: Json = {};
  try {
    body = res.body ? res.json() : {};
  } catch { /* not JSON */ }
  return { status: res.statusCode, body, text: res.body, headers: res.headers };
};
const count = async (table: string) => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
const signUpApi = (username: string, remoteAddress = '127.0.0.1', email = `${username}@example.com`) =>
  api(appTok, 'POST', '/api/v1/accounts', { username, email, password: `pw-${username}-long`, agreement: true, locale: 'en' }, remoteAddress);
const userOf = async (username: string) =>
  (await s.ctx.db.query(`SELECT u.approved FROM users u JOIN accounts a ON a.id = u.account_id WHERE a.username = $1 AND a.domain IS NULL`, [username])).rows[0] as { approved: boolean } | undefined;

/** The sign-up page, opened and submitted as a browser at `remoteAddress` does. */
async function signUpPage(username: string, remoteAddress: string, email = `${username}@example.com`) {
  const jar = new CookieJar();
  const page = await s.app.inject({ method: 'GET', url: '/auth/sign_up', headers: { accept: 'text/html' }, remoteAddress });
  jar.take(page.headers['set-cookie']);
  expect(page.statusCode).toBe(200);
  const body = new URLSearchParams({ _csrf: csrfOf(page.body), username, email, password: `pw-${username}-long`, password_confirmation: `pw-${username}-long`, agreement: '1' }).toString();
  return s.app.inject({ method: 'POST', url: '/auth/sign_up', payload: body, remoteAddress, headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() } });
}

beforeAll(async () => {
  s = await startListeningServer();
  client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [admin, bob] = await Promise.all([
    registerUser(s.app, client, 'olga', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'bob', 'read write admin:read admin:write'),
  ]);
  await makeAdmin(s, admin);
  appTok = await appToken(s.app, client);
}, 60_000);
afterAll(async () => s?.close());

describe('the canonical forms', () => {
  it('masks ranges to their network, bare addresses as /32 and /128', () => {
    expect(parseIpRange('10.1.2.3')).toBe('10.1.2.3/32');
    expect(parseIpRange(' 10.1.2.3/16 ')).toBe('10.1.0.0/16');
    expect(parseIpRange('2001:DB8::1')).toBe('2001:db8::1/128');
    expect(parseIpRange('2001:db8:1:2::/32')).toBe('2001:db8::/32');
    for (const bad of ['', 'nope', '10.1.2', '300.1.2.3', '10.1.2.3/33', '::1/129', '10.0.0.0/-1', '0x7f.1', 'fe80::1%eth0', '10.0.0.0/8/8']) {
      expect(parseIpRange(bad), bad).toBeNull();
    }
  });

  it('canonicalises addresses as Mastodon does', () => {
    expect(canonicalEmail('Jo.Hn+spam@Example.com')).toBe('john@example.com');
    expect(canonicalEmailHash('Jo.Hn+spam@Example.com')).toBe(createHash('sha256').update('john@example.com').digest('hex'));
  });
});

describe('/api/v1/admin/ip_blocks', () => {
  let blockId: string;

  it('creates, shows, lists, updates and deletes blocks as Admin::IpBlock entities', async () => {
    const created = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '192.0.2.7/24', severity: 'sign_up_block', comment: 'spammers', expires_in: 3600 });
    expect(created.status, created.text).toBe(200);
    expectEntity('AdminIpBlock', created.body);
    expect(created.body).toMatchObject({ ip: '192.0.2.0/24', severity: 'sign_up_block', comment: 'spammers' });
    expect(Date.parse(created.body.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    blockId = created.body.id;

    const v6 = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '2001:db8::1', severity: 'no_access' });
    expect(v6.status, v6.text).toBe(200);
    expect(v6.body).toMatchObject({ ip: '2001:db8::1/128', comment: '', expires_at: null });
    expectEntity('AdminIpBlock', v6.body);

    // A form body, as Mastodon's own admin tools may send.
    const form = await s.app.inject({ method: 'POST', url: '/api/v1/admin/ip_blocks', headers: { ...bearer(admin.token), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'ip=198.51.100.0%2F24&severity=sign_up_requires_approval&expires_in=60' });
    expect(form.statusCode, form.body).toBe(200);

    const shown = await api(admin.token, 'GET', `/api/v1/admin/ip_blocks/${blockId}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual(created.body);

    const list = await api(admin.token, 'GET', '/api/v1/admin/ip_blocks?limit=2');
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2);
    for (const b of list.body as unknown as Json[]) expectEntity('AdminIpBlock', b);
    expect(list.headers.link).toMatch(/max_id=\d+>; rel="next"/);
    const next = await api(admin.token, 'GET', `/api/v1/admin/ip_blocks?limit=2&max_id=${(list.body as unknown as Json[])[1]!.id}`);
    expect((next.body as unknown as Json[]).map((b) => b.id)).toEqual([blockId]);

    const updated = await api(admin.token, 'PUT', `/api/v1/admin/ip_blocks/${blockId}`, { severity: 'no_access', comment: 'worse', expires_in: null });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ id: blockId, ip: '192.0.2.0/24', severity: 'no_access', comment: 'worse', expires_at: null });

    const gone = await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${v6.body.id}`);
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({});
    expect((await api(admin.token, 'GET', `/api/v1/admin/ip_blocks/${v6.body.id}`)).status).toBe(404);
    expect((await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${v6.body.id}`)).status).toBe(404);
    expect((await api(admin.token, 'GET', '/api/v1/admin/ip_blocks/nope')).status).toBe(404);
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${blockId}`);
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${form.json().id}`);
  });

  it('refuses bad input with 422 and writes nothing', async () => {
    const before = await count('ip_blocks');
    for (const [payload, message] of [
      [{ ip: 'not an address', severity: 'no_access' }, /Ip is invalid/],
      [{ ip: '10.0.0.0/33', severity: 'no_access' }, /Ip is invalid/],
      [{ severity: 'no_access' }, /Ip can't be blank/],
      [{ ip: '10.9.0.0/16', severity: 'everything' }, /Severity is not included in the list/],
      [{ ip: '10.9.0.0/16' }, /Severity can't be blank/],
      [{ ip: '10.9.0.0/16', severity: 'no_access', expires_in: 'soon' }, /Expires in/],
    ] as const) {
      const res = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', payload);
      expect(res.status, JSON.stringify(payload)).toBe(422);
      expect(res.body.error).toMatch(/^Validation failed: /);
      expect(res.body.error).toMatch(message);
    }
    const first = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.9.0.0/16', severity: 'sign_up_block' });
    expect(first.status).toBe(200);
    const dup = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.9.1.1/16', severity: 'no_access' });
    expect(dup.status).toBe(422);
    expect(dup.body.error).toBe('Validation failed: Ip has already been taken');
    const badUpdate = await api(admin.token, 'PUT', `/api/v1/admin/ip_blocks/${first.body.id}`, { severity: 'nope' });
    expect(badUpdate.status).toBe(422);
    expect((await api(admin.token, 'GET', `/api/v1/admin/ip_blocks/${first.body.id}`)).body.severity).toBe('sign_up_block');
    expect(await count('ip_blocks')).toBe(before + 1);
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${first.body.id}`);
  });

  it('is for administrators with the admin scopes only', async () => {
    expect((await api(bob.token, 'GET', '/api/v1/admin/ip_blocks')).status).toBe(403);
    const before = await count('ip_blocks');
    expect((await api(bob.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.8.0.0/16', severity: 'no_access' })).status).toBe(403);
    expect(await count('ip_blocks')).toBe(before);
    expect((await api(null, 'GET', '/api/v1/admin/ip_blocks')).status).toBe(401);
    const noScope = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'read write');
    expect((await api(noScope, 'GET', '/api/v1/admin/ip_blocks')).status).toBe(403);
  });
});

describe('what IP blocks refuse', () => {
  it('refuses sign-ups from a sign_up_block range, through the API (403) and the page, and writes nothing', async () => {
    const block = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.1.0.0/16', severity: 'sign_up_block' });
    const accounts = await count('accounts');
    const res = await signUpApi('blocked1', '10.1.2.3');
    expect(res.status, res.text).toBe(403);
    expect(res.body).toEqual({ error: 'This action is not allowed' });
    const page = await signUpPage('blocked2', '10.1.2.3');
    expect(page.statusCode).toBe(403);
    expect(page.body).toContain('This action is not allowed');
    expect(await count('accounts')).toBe(accounts);
    // Other addresses, and other requests from that range, are not touched.
    expect((await signUpApi('fromelsewhere', '10.2.0.1')).status).toBe(200);
    expect((await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials', undefined, '10.1.2.3')).status).toBe(200);
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${block.body.id}`);
    expect((await signUpApi('unblocked', '10.1.2.3')).status).toBe(200);
  });

  it('holds a sign-up from a sign_up_requires_approval range for approval, though sign-ups are open', async () => {
    const block = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '2001:db8:aa::/48', severity: 'sign_up_requires_approval' });
    const res = await signUpApi('heldv6', '2001:db8:aa::5');
    expect(res.status, res.text).toBe(200);
    expect((await userOf('heldv6'))?.approved).toBe(false);
    const me = await api(res.body.access_token, 'GET', '/api/v1/accounts/verify_credentials');
    expect(me.status).toBe(403);
    expect(me.body.error).toBe('Your login is currently pending approval');
    const page = await signUpPage('heldpage', '2001:db8:aa::6');
    expect(page.statusCode).toBeLessThan(400);
    expect((await userOf('heldpage'))?.approved).toBe(false);
    // An IPv4 client seen as an IPv4-mapped IPv6 address is matched as IPv4.
    await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.3.0.0/16', severity: 'sign_up_requires_approval' });
    expect((await signUpApi('mapped', '::ffff:10.3.0.9')).status).toBe(200);
    expect((await userOf('mapped'))?.approved).toBe(false);
    expect((await signUpApi('notheld', '10.4.0.1')).status).toBe(200);
    expect((await userOf('notheld'))?.approved).toBe(true);
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${block.body.id}`);
  });

  it('refuses every request from a no_access range with 403, but never loopback', async () => {
    const block = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.5.0.0/16', severity: 'no_access' });
    const refused = await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials', undefined, '10.5.6.7');
    expect(refused.status).toBe(403);
    expect(refused.text).toBe('Forbidden\n');
    expect((await s.app.inject({ method: 'GET', url: '/auth/sign_in', remoteAddress: '10.5.6.7' })).statusCode).toBe(403);
    expect((await api(null, 'GET', '/api/v1/instance', undefined, '10.5.0.1')).status).toBe(403);
    expect((await signUpApi('noaccess', '10.5.0.2')).status).toBe(403);
    expect((await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials', undefined, '10.6.0.1')).status).toBe(200);
    // Loopback always passes (Mastodon's safelist), even inside a blocked range.
    const loop = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '127.0.0.0/8', severity: 'no_access' });
    expect(loop.status).toBe(200);
    expect((await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials')).status).toBe(200);
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${loop.body.id}`);
    // Lifting the block lets the range back in at once in this process.
    await api(admin.token, 'DELETE', `/api/v1/admin/ip_blocks/${block.body.id}`);
    expect((await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials', undefined, '10.5.6.7')).status).toBe(200);
  });

  it('ignores expired blocks', async () => {
    const expired = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.7.0.0/16', severity: 'sign_up_block', expires_in: 3600 });
    const noAccess = await api(admin.token, 'POST', '/api/v1/admin/ip_blocks', { ip: '10.7.9.0/24', severity: 'no_access', expires_in: 3600 });
    expect((await signUpApi('beforeexpiry', '10.7.1.1')).status).toBe(403);
    expect((await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials', undefined, '10.7.9.9')).status).toBe(403);
    await s.ctx.db.query(`UPDATE ip_blocks SET expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [[expired.body.id, noAccess.body.id]]);
    ipAccessList(s.ctx.db).invalidate();
    expect((await signUpApi('afterexpiry', '10.7.1.1')).status).toBe(200);
    expect((await api(bob.token, 'GET', '/api/v1/accounts/verify_credentials', undefined, '10.7.9.9')).status).toBe(200);
    // Still listed (Mastodon removes expired blocks later), with their expiry in the past.
    expect(Date.parse((await api(admin.token, 'GET', `/api/v1/admin/ip_blocks/${expired.body.id}`)).body.expires_at)).toBeLessThan(Date.now());
  });
});

describe('/api/v1/admin/email_domain_blocks', () => {
  let blockId: string;

  it('creates, shows, lists and deletes blocks as Admin::EmailDomainBlock entities', async () => {
    const created = await api(admin.token, 'POST', '/api/v1/admin/email_domain_blocks', { domain: ' Spam.Example ' });
    expect(created.status, created.text).toBe(200);
    expectEntity('AdminEmailDomainBlock', created.body);
    expect(created.body.domain).toBe('spam.example');
    expect(created.body.history).toHaveLength(7);
    expect(created.body.history[0]).toEqual({ day: String(Math.floor(Date.now() / 86_400_000) * 86400), accounts: '0', uses: '0' });
    blockId = created.body.id;
    const shown = await api(admin.token, 'GET', `/api/v1/admin/email_domain_blocks/${blockId}`);
    expect(shown.body).toEqual(created.body);
    const other = await api(admin.token, 'POST', '/api/v1/admin/email_domain_blocks', { domain: 'other.example' });
    const list = await api(admin.token, 'GET', '/api/v1/admin/email_domain_blocks');
    expect((list.body as unknown as Json[]).map((b) => b.domain)).toEqual(['other.example', 'spam.example']);
    for (const b of list.body as unknown as Json[]) expectEntity('AdminEmailDomainBlock', b);
    expect(list.headers.link).toContain('rel="prev"');
    expect((await api(admin.token, 'DELETE', `/api/v1/admin/email_domain_blocks/${other.body.id}`)).status).toBe(200);
    expect((await api(admin.token, 'GET', `/api/v1/admin/email_domain_blocks/${other.body.id}`)).status).toBe(404);
    // Mastodon has no test endpoint for e-mail domain blocks.
    expect((await api(admin.token, 'POST', '/api/v1/admin/email_domain_blocks/test', { email: 'a@spam.example' })).status).toBe(404);
  });

  it('refuses a missing, malformed or repeated domain with 422 and writes nothing, and non-admins with 403', async () => {
    const before = await count('email_domain_blocks');
    for (const payload of [{}, { domain: '' }, { domain: 'not a domain' }, { domain: 'spam.example' }, { domain: 'SPAM.example.' }]) {
      const res = await api(admin.token, 'POST', '/api/v1/admin/email_domain_blocks', payload);
      expect(res.status, JSON.stringify(payload)).toBe(422);
      expect(res.body.error).toMatch(/^Validation failed: Domain /);
    }
    expect((await api(bob.token, 'POST', '/api/v1/admin/email_domain_blocks', { domain: 'bob.example' })).status).toBe(403);
    expect((await api(bob.token, 'GET', '/api/v1/admin/email_domain_blocks')).status).toBe(403);
    expect(await count('email_domain_blocks')).toBe(before);
  });

  it('refuses sign-ups with that domain or one below it (ERR_BLOCKED on email), on the API and the page', async () => {
    const accounts = await count('accounts');
    for (const email of ['eve@spam.example', 'eve@mail.SPAM.example']) {
      const res = await signUpApi('eve', '10.20.0.1', email);
      expect(res.status, res.text).toBe(422);
      expect(res.body.details.email).toEqual([{ error: 'ERR_BLOCKED', description: 'uses a disallowed e-mail provider' }]);
      expect(res.body.error).toBe('Validation failed: email uses a disallowed e-mail provider');
    }
    const page = await signUpPage('eve', '10.20.0.2', 'eve@spam.example');
    expect(page.statusCode).toBe(422);
    expect(page.body).toContain('Email uses a disallowed e-mail provider.');
    expect(await count('accounts')).toBe(accounts);
    // A domain that merely ends the same way is another domain.
    expect((await signUpApi('eve', '10.20.0.1', 'eve@notspam.example')).status).toBe(200);
    // The refusals are counted in the block's history: three attempts today from two addresses.
    const shown = await api(admin.token, 'GET', `/api/v1/admin/email_domain_blocks/${blockId}`);
    expect(shown.body.history[0]).toMatchObject({ uses: '3', accounts: '2' });
  });

  it('refuses a change of address to a blocked domain', async () => {
    const user = (await findUserByAccountId(s.ctx.db, bob.id))!;
    expect(await changeEmail(s.ctx, user, 'bob@sub.spam.example', bob.password)).toBe('That e-mail address uses a disallowed e-mail provider.');
    expect((await findUserByAccountId(s.ctx.db, bob.id))!.email).toBe(bob.email);
  });
});

describe('/api/v1/admin/canonical_email_blocks', () => {
  let blockId: string;

  it('creates from an address or a hash, shows, lists, tests and deletes blocks', async () => {
    const created = await api(admin.token, 'POST', '/api/v1/admin/canonical_email_blocks', { email: 'john@example.com' });
    expect(created.status, created.text).toBe(200);
    expectEntity('AdminCanonicalEmailBlock', created.body);
    expect(created.body.canonical_email_hash).toBe(createHash('sha256').update('john@example.com').digest('hex'));
    blockId = created.body.id;
    const byHash = await api(admin.token, 'POST', '/api/v1/admin/canonical_email_blocks', { canonical_email_hash: canonicalEmailHash('mallory@example.org').toUpperCase() });
    expect(byHash.status, byHash.text).toBe(200);
    expect(byHash.body.canonical_email_hash).toBe(canonicalEmailHash('mallory@example.org'));
    expect((await api(admin.token, 'GET', `/api/v1/admin/canonical_email_blocks/${blockId}`)).body).toEqual(created.body);
    const list = await api(admin.token, 'GET', '/api/v1/admin/canonical_email_blocks');
    expect((list.body as unknown as Json[]).map((b) => b.id)).toEqual([byHash.body.id, blockId]);
    for (const b of list.body as unknown as Json[]) expectEntity('AdminCanonicalEmailBlock', b);

    const test = await api(admin.token, 'POST', '/api/v1/admin/canonical_email_blocks/test', { email: 'Jo.Hn+spam@Example.com' });
    expect(test.status).toBe(200);
    expect(test.body).toEqual([created.body]);
    expect((await api(admin.token, 'POST', '/api/v1/admin/canonical_email_blocks/test', { email: 'jane@example.com' })).body).toEqual([]);

    expect((await api(admin.token, 'DELETE', `/api/v1/admin/canonical_email_blocks/${byHash.body.id}`)).status).toBe(200);
    expect((await api(admin.token, 'GET', `/api/v1/admin/canonical_email_blocks/${byHash.body.id}`)).status).toBe(404);
  });

  it('refuses bad input with 422 and writes nothing, and non-admins with 403', async () => {
    const before = await count('canonical_email_blocks');
    for (const [payload, message] of [
      [{}, "Validation failed: Canonical email hash can't be blank"],
      [{ canonical_email_hash: 'xyz' }, 'Validation failed: Canonical email hash is invalid'],
      [{ email: 'J.O.H.N+other@example.com' }, 'Validation failed: Canonical email hash has already been taken'],
    ] as const) {
      const res = await api(admin.token, 'POST', '/api/v1/admin/canonical_email_blocks', payload);
      expect(res.status, JSON.stringify(payload)).toBe(422);
      expect(res.body.error).toBe(message);
    }
    expect((await api(bob.token, 'POST', '/api/v1/admin/canonical_email_blocks', { email: 'x@example.com' })).status).toBe(403);
    expect((await api(bob.token, 'POST', '/api/v1/admin/canonical_email_blocks/test', { email: 'john@example.com' })).status).toBe(403);
    expect(await count('canonical_email_blocks')).toBe(before);
  });

  it('refuses a sign-up whose canonical address is blocked, as a taken address (Mastodon)', async () => {
    const accounts = await count('accounts');
    const res = await signUpApi('johnny', '10.30.0.1', 'Jo.Hn+spam@Example.com');
    expect(res.status, res.text).toBe(422);
    expect(res.body.details.email).toEqual([{ error: 'ERR_TAKEN', description: 'is already taken' }]);
    expect(await count('accounts')).toBe(accounts);
    const user = (await findUserByAccountId(s.ctx.db, bob.id))!;
    expect(await changeEmail(s.ctx, user, 'j.ohn@example.com', bob.password)).toBe('That e-mail address is already taken.');
    await api(admin.token, 'DELETE', `/api/v1/admin/canonical_email_blocks/${blockId}`);
    expect((await signUpApi('johnny', '10.30.0.1', 'Jo.Hn+spam@Example.com')).status).toBe(200);
  });
});

describe('through masto', () => {
  it('manages all three kinds of block as an app does', async () => {
    const masto = createRestAPIClient({ url: s.url, accessToken: admin.token });
    const ip = await masto.v1.admin.ipBlocks.create({ ip: '203.0.113.9', severity: 'sign_up_requires_approval', comment: 'masto', expiresIn: 600 });
    expect(ip).toMatchObject({ ip: '203.0.113.9/32', severity: 'sign_up_requires_approval', comment: 'masto' });
    const changed = await masto.v1.admin.ipBlocks.$select(ip.id).update({ ip: '203.0.113.0/24', severity: 'sign_up_block' });
    expect(changed).toMatchObject({ id: ip.id, ip: '203.0.113.0/24', severity: 'sign_up_block', comment: 'masto' });
    expect((await masto.v1.admin.ipBlocks.list({ limit: 100 })).map((b) => b.id)).toContain(ip.id);
    await masto.v1.admin.ipBlocks.$select(ip.id).remove();

    const domain = await masto.v1.admin.emailDomainBlocks.create({ domain: 'masto-spam.example' });
    expect((await masto.v1.admin.emailDomainBlocks.$select(domain.id).fetch()).domain).toBe('masto-spam.example');
    await masto.v1.admin.emailDomainBlocks.$select(domain.id).remove();

    const canonical = await masto.v1.admin.canonicalEmailBlocks.create({ email: 'ann.e+x@masto.example' });
    expect((await masto.v1.admin.canonicalEmailBlocks.test({ email: 'anne@masto.example' })).map((b) => b.id)).toEqual([canonical.id]);
    await masto.v1.admin.canonicalEmailBlocks.$select(canonical.id).remove();
    expect(await masto.v1.admin.canonicalEmailBlocks.test({ email: 'anne@masto.example' })).toEqual([]);
  });
});
