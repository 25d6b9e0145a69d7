// Instance-wide domain blocks and allows: the admin API (raw and through masto), GET /api/v1/instance/domain_blocks,
// the CLI, and what a block does to the domain's accounts and posts on the read paths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createRestAPIClient, type mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { upsertRemoteAccount, type AccountRow } from '../../storage/accounts.ts';
import { receiveRemoteStatus } from '../../services/statuses.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { domainPolicy, normalizeDomain, obfuscatedDomain } from '../../services/domain-policy.ts';
import { runCli } from '../../cli/admin.ts';
import { makeAdmin } from '../helpers/admin.ts';

let s: TestServer & { url: string };
let admin: TestUser; // an administrator whose token has admin:read and admin:write
let adminNoScope: string; // the same administrator, token without admin scopes
let adminReadOnly: string; // granular: admin:read:domain_blocks only
let plain: TestUser; // not an administrator, token with admin scopes
let fan: TestUser; // follows the remote accounts
let masto: mastodon.rest.Client;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (who: TestUser | string | null, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
  const token = typeof who === 'string' ? who : who?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null, headers: res.headers };
};
const cli = async (...args: string[]) => {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (l) => lines.push(l), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
};

let n = 0;
async function remote(domain: string): Promise<AccountRow> {
  const username = `user${++n}`;
  return upsertRemoteAccount(s.ctx.db, {
    uri: `https://${domain}/users/${username}`, username, domain, displayName: username, noteHtml: '', url: null,
    inboxUrl: `https://${domain}/users/${username}/inbox`, sharedInboxUrl: null, outboxUrl: null, followersUrl: null,
    locked: false, bot: false, discoverable: true, avatarUrl: `https://${domain}/avatar.png`, headerUrl: null, fields: [], createdAt: null,
  });
}
async function remotePost(author: AccountRow, text: string, media = false): Promise<string> {
  const id = await receiveRemoteStatus(s.ctx.actors.deps, {
    accountId: author.id, uri: `${author.uri}/statuses/${++n}`, url: null, content: `<p>${text}</p>`, spoilerText: '', sensitive: false,
    visibility: 'public', language: null, parent: null, mentioned: [], tags: [], createdAt: null,
    media: media ? [{ type: 'image', remoteUrl: `https://${author.domain}/cat.png`, contentType: 'image/png', description: '', width: null, height: null }] : [],
  });
  return id!;
}
const publicIds = async (who: TestUser | null, query = '') => ((await api(who, 'GET', `/api/v1/timelines/public?limit=40${query}`)).body as Json[]).map((x) => x.id);
const homeIds = async (who: TestUser) => ((await api(who, 'GET', '/api/v1/timelines/home?limit=40')).body as Json[]).map((x) => x.id);

beforeAll(async () => {
  s = await startListeningServer();
  const client = await createApp(s.app, 'read write follow push admin:read admin:write admin:read:domain_blocks');
  [admin, plain, fan] = await Promise.all([
    registerUser(s.app, client, 'ozzie', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'plain', 'read write admin:read admin:write'),
    registerUser(s.app, client, 'fan'),
  ]);
  await makeAdmin(s, admin);
  adminNoScope = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'read write');
  adminReadOnly = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'admin:read:domain_blocks');
  masto = createRestAPIClient({ url: s.url, accessToken: admin.token });
}, 60_000);
afterAll(async () => s?.close());

describe('domains as Mastodon normalises them', () => {
  it('lower-cases, drops a trailing dot, keeps a port, turns IDNs to ASCII and refuses what is no host', () => {
    expect(normalizeDomain(' Example.SOCIAL. ')).toBe('example.social');
    expect(normalizeDomain('bücher.example')).toBe('xn--bcher-kva.example');
    expect(normalizeDomain('localhost:8443')).toBe('localhost:8443');
    for (const bad of ['', 'exa mple.com', 'https://example.com/', 'a..b', '-a.example', 'user@example.com']) expect(normalizeDomain(bad), bad).toBeNull();
    expect(obfuscatedDomain('example.social')).toBe('exam***.***ial');
  });
});

describe('admin API: /api/v1/admin/domain_blocks', () => {
  let blockId: string;

  it('refuses non-administrators, tokens without the admin scopes, and no token', async () => {
    for (const [who, status] of [[plain, 403], [adminNoScope, 403], [null, 401]] as const) {
      const res = await api(who, 'GET', '/api/v1/admin/domain_blocks');
      expect(res.status, String(who)).toBe(status);
      expect(res.body.error).toBeTruthy();
    }
    expect((await api(plain, 'GET', '/api/v1/admin/domain_blocks')).body).toEqual({ error: 'This action is not allowed' });
    // admin:read:domain_blocks reads, but does not write
    expect((await api(adminReadOnly, 'GET', '/api/v1/admin/domain_blocks')).status).toBe(200);
    expect((await api(adminReadOnly, 'POST', '/api/v1/admin/domain_blocks', { domain: 'x.example' })).status).toBe(403);
  });

  it('creates a block through masto, as an Admin::DomainBlock entity, and reads it back', async () => {
    const block = await masto.v1.admin.domainBlocks.create({ domain: 'Spam.Example', severity: 'silence', rejectMedia: true, publicComment: 'spam', privateComment: 'seen in reports' });
    expect(block).toMatchObject({ domain: 'spam.example', severity: 'silence', rejectMedia: true, rejectReports: false, obfuscate: false, publicComment: 'spam', privateComment: 'seen in reports' });
    blockId = block.id;
    const raw = await api(admin, 'GET', `/api/v1/admin/domain_blocks/${blockId}`);
    expect(raw.status).toBe(200);
    expectEntity('AdminDomainBlock', raw.body);
    expect(raw.body.digest).toBe(createHash('sha256').update('spam.example').digest('hex'));
    expect((await masto.v1.admin.domainBlocks.$select(blockId).fetch()).domain).toBe('spam.example');
  });

  it('answers 422 for a domain already covered (its own or a parent block), with the existing block', async () => {
    for (const domain of ['spam.example', 'sub.spam.example']) {
      const res = await api(admin, 'POST', '/api/v1/admin/domain_blocks', { domain, severity: 'suspend' });
      expect(res.status, domain).toBe(422);
      expect(res.body.error).toBe('You have already imposed stricter limits on spam.example.');
      expectEntity('AdminDomainBlock', res.body.existing_domain_block);
      expect(res.body.existing_domain_block.id).toBe(blockId);
    }
  });

  it('answers 422 for a blank or invalid domain or severity, and 404 for unknown ids, never 500', async () => {
    const cases: [object, RegExp][] = [
      [{}, /Domain can't be blank/],
      [{ domain: '  ' }, /Domain can't be blank/],
      [{ domain: 'not a domain' }, /Domain is not a valid domain name/],
      [{ domain: 'ok.example', severity: 'obliterate' }, /Severity/],
      [{ domain: 'ok.example', reject_media: 'maybe' }, /reject_media/],
    ];
    for (const [payload, message] of cases) {
      const res = await api(admin, 'POST', '/api/v1/admin/domain_blocks', payload);
      expect(res.status, JSON.stringify(payload)).toBe(422);
      expect(res.body.error).toMatch(message);
    }
    for (const id of ['123', 'abc', '99999999999999999999']) {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const res = await api(admin, method, `/api/v1/admin/domain_blocks/${id}`, method === 'PUT' ? { severity: 'noop' } : undefined);
        expect(res.status, `${method} ${id}`).toBe(404);
        expect(res.body).toEqual({ error: 'Record not found' });
      }
    }
    expect((await api(admin, 'GET', '/api/v1/admin/domain_blocks')).body).toHaveLength(1);
  });

  it('updates only what is given, lists newest first with Link paging, and deletes', async () => {
    const other = await masto.v1.admin.domainBlocks.create({ domain: 'noop.example', severity: 'noop' });
    const updated = await masto.v1.admin.domainBlocks.$select(blockId).update({ obfuscate: true, publicComment: null });
    expect(updated).toMatchObject({ severity: 'silence', rejectMedia: true, obfuscate: true, publicComment: null, privateComment: 'seen in reports' });
    const page = await api(admin, 'GET', '/api/v1/admin/domain_blocks?limit=1');
    expect(page.body.map((b: Json) => b.id)).toEqual([other.id]);
    expect(page.headers.link).toContain(`max_id=${other.id}`);
    const next = await api(admin, 'GET', `/api/v1/admin/domain_blocks?limit=1&max_id=${other.id}`);
    expect(next.body.map((b: Json) => b.id)).toEqual([blockId]);
    for (const b of next.body) expectEntity('AdminDomainBlock', b);
    const removed = await api(admin, 'DELETE', `/api/v1/admin/domain_blocks/${other.id}`);
    expect(removed).toMatchObject({ status: 200, body: {} });
    expect((await api(admin, 'GET', `/api/v1/admin/domain_blocks/${other.id}`)).status).toBe(404);
  });
});

describe('admin API: /api/v1/admin/domain_allows', () => {
  it('creates (once per domain), lists, reads and deletes allows, as Admin::DomainAllow entities', async () => {
    const allow = await masto.v1.admin.domainAllows.create({ domain: 'Friends.Example' });
    expect(allow.domain).toBe('friends.example');
    const again = await api(admin, 'POST', '/api/v1/admin/domain_allows', { domain: 'friends.example' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(allow.id);
    expectEntity('AdminDomainAllow', again.body);
    expect((await masto.v1.admin.domainAllows.list()).map((a) => a.id)).toEqual([allow.id]);
    expect((await masto.v1.admin.domainAllows.$select(allow.id).fetch()).domain).toBe('friends.example');
    expect((await api(admin, 'POST', '/api/v1/admin/domain_allows', { domain: 'bad domain' })).status).toBe(422);
    expect((await api(plain, 'GET', '/api/v1/admin/domain_allows')).status).toBe(403);
    expect((await api(adminReadOnly, 'GET', '/api/v1/admin/domain_allows')).status).toBe(403); // domain_blocks is not domain_allows
    await masto.v1.admin.domainAllows.$select(allow.id).remove();
    expect((await api(admin, 'DELETE', `/api/v1/admin/domain_allows/${allow.id}`)).status).toBe(404);
  });
});

describe('GET /api/v1/instance/domain_blocks', () => {
  it('publishes silences and suspensions (not noop), obfuscated where asked, with digests and comments', async () => {
    await masto.v1.admin.domainBlocks.create({ domain: 'quiet.example', severity: 'noop', rejectMedia: true });
    await masto.v1.admin.domainBlocks.create({ domain: 'evil.example', severity: 'suspend', publicComment: 'harassment' });
    const anonymous = createRestAPIClient({ url: s.url });
    const list = await anonymous.v1.instance.domainBlocks.fetch();
    expect(list).toEqual([
      { domain: obfuscatedDomain('spam.example'), digest: createHash('sha256').update('spam.example').digest('hex'), severity: 'silence', comment: null },
      { domain: 'evil.example', digest: createHash('sha256').update('evil.example').digest('hex'), severity: 'suspend', comment: 'harassment' },
    ]);
    const raw = await api(null, 'GET', '/api/v1/instance/domain_blocks');
    for (const b of raw.body) expectEntity('DomainBlock', b);
    expect(raw.headers['cache-control']).toBe('public, max-age=180');
  });
});

describe('what a block does', () => {
  it('silence: the domain\'s posts leave public timelines, except for their followers', async () => {
    const loud = await remote('loud.example');
    const post = await remotePost(loud, 'hello from loud');
    await s.ctx.db.query('INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2)', [fan.id, loud.id]);
    expect(await publicIds(null)).toContain(post);
    await masto.v1.admin.domainBlocks.create({ domain: 'loud.example', severity: 'silence' });
    expect(await publicIds(null)).not.toContain(post);
    expect(await publicIds(null, '&remote=true')).not.toContain(post);
    expect(await publicIds(plain)).not.toContain(post);
    expect(await publicIds(fan)).toContain(post);
    // their account is still there and not suspended
    expect((await api(plain, 'GET', `/api/v1/accounts/${loud.id}`)).body.suspended).toBeUndefined();
  });

  it('suspend: the domain\'s accounts (subdomains too) are suspended by a job, their posts vanish from home and public; unblocking lifts only that suspension', async () => {
    const [a, b, c, already] = [await remote('bad.example'), await remote('sub.bad.example'), await remote('good.example'), await remote('bad.example')];
    await s.ctx.db.query('UPDATE accounts SET suspended_at = now() - interval \'1 day\' WHERE id = $1', [already.id]);
    await s.ctx.db.query('INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2), ($1, $3)', [fan.id, a.id, c.id]);
    const [postA, postC] = [await remotePost(a, 'from bad'), await remotePost(c, 'from good')];
    expect(await eventually(async () => (await homeIds(fan)).includes(postA), true, 5000)).toBe(true);
    expect(await homeIds(fan)).toContain(postA); // the page is cached from here on
    const block = await masto.v1.admin.domainBlocks.create({ domain: 'bad.example', severity: 'suspend' });
    const suspended = async (acc: AccountRow) => (await api(fan, 'GET', `/api/v1/accounts/${acc.id}`)).body;
    expect(await eventually(async () => (await suspended(b)).suspended === true, true, 5000)).toBe(true);
    expect((await suspended(a)).suspended).toBe(true);
    expect((await suspended(c)).suspended).toBeUndefined();
    expect(await homeIds(fan)).not.toContain(postA);
    expect(await homeIds(fan)).toContain(postC);
    expect(await publicIds(null)).not.toContain(postA);
    expect(domainPolicy(s.ctx)).toBeTruthy();
    expect(await domainPolicy(s.ctx).refuses('https://sub.bad.example/users/x')).toBe(true);
    expect(await domainPolicy(s.ctx).refuses('good.example')).toBe(false);

    await masto.v1.admin.domainBlocks.$select(block.id).remove();
    expect(await eventually(async () => (await suspended(a)).suspended === undefined, true, 5000)).toBe(true);
    expect((await suspended(b)).suspended).toBeUndefined();
    const { rows } = await s.ctx.db.query('SELECT suspended_at FROM accounts WHERE id = $1', [already.id]);
    expect(rows[0].suspended_at).not.toBeNull(); // suspended before the block: still suspended
    expect(await homeIds(fan)).toContain(postA);
    expect(await domainPolicy(s.ctx).refuses('bad.example')).toBe(false);
  });

  it('reject_media: their avatars and attachments stop being shown inline, already stored ones too', async () => {
    const pics = await remote('pics.example');
    const before = await remotePost(pics, 'a cat', true);
    expect((await api(fan, 'GET', `/api/v1/statuses/${before}`)).body.media_attachments[0].type).toBe('image');
    await masto.v1.admin.domainBlocks.create({ domain: 'pics.example', severity: 'noop', rejectMedia: true });
    const shown = async () => (await api(fan, 'GET', `/api/v1/statuses/${before}`)).body;
    expect(await eventually(async () => (await shown()).media_attachments[0].type, 'unknown', 5000)).toBe('unknown');
    const status = await shown();
    expect(status.media_attachments[0].preview_url).toBeNull();
    expect(status.media_attachments[0].remote_url).toBe('https://pics.example/cat.png');
    expect(status.account.avatar).not.toContain('pics.example');
  });
});

describe('CLI: npm run cli -- domains …', () => {
  it('blocks with options, changes a block, lists, unblocks, allows and disallows', async () => {
    const victim = await remote('cli.example');
    expect(await cli('domains', 'block', 'cli.example', '--severity', 'suspend', '--reject-media', '--public-comment', 'spam wave')).toEqual([
      expect.stringMatching(/^cli\.example blocked \(suspend\), id \d+$/),
      '1 account(s) suspended; 1 avatar(s), header(s) or attachment(s) no longer shown inline',
    ]);
    expect((await api(fan, 'GET', `/api/v1/accounts/${victim.id}`)).body.suspended).toBe(true);
    // every process hears of it through the version key: a fresh look-up in this one agrees
    expect(await eventually(() => domainPolicy(s.ctx).refuses('cli.example'), true)).toBe(true);
    expect(await cli('domains', 'block', 'cli.example', '--severity', 'silence')).toEqual([
      expect.stringMatching(/^block on cli\.example changed: silence\s+cli\.example  \[reject-media\]  public: "spam wave"$/),
      '1 account(s) unsuspended',
    ]);
    await expect(cli('domains', 'block', 'x.cli.example')).rejects.toThrow(/covered by the block on cli\.example/);
    await expect(cli('domains', 'block', 'cli.example', '--severity', 'mild')).rejects.toThrow(/--severity/);
    await expect(cli('domains', 'block', 'not a domain')).rejects.toThrow(/not a valid domain/);
    await expect(cli('domains', 'unblock', 'nowhere.example')).rejects.toThrow(/not blocked/);
    expect(await cli('domains', 'allow', 'pals.example')).toEqual([expect.stringMatching(/^pals\.example allowed, id \d+$/)]);
    const list = await cli('domains', 'list');
    expect(list[0]).toMatch(/^silence\s+cli\.example/);
    expect(list.at(-1)).toBe('allow     pals.example');
    expect(list.some((l) => /^suspend\s+evil\.example  public: "harassment"$/.test(l))).toBe(true);
    expect(await cli('domains', 'unblock', 'cli.example')).toEqual(['cli.example unblocked']);
    expect(await cli('domains', 'disallow', 'pals.example')).toEqual(['pals.example is no longer allowed']);
    await expect(cli('domains', 'disallow', 'pals.example')).rejects.toThrow(/not on the allow list/);
    await expect(cli('domains', 'frobnicate')).rejects.toThrow(/unknown command/);
    expect((await api(admin, 'GET', '/api/v1/admin/domain_allows')).body).toEqual([]);
  });
});
