// The admin API as a moderation app drives it with masto, one block for each of masto's own admin specs (accounts,
// reports, domain blocks and allows, e-mail domain blocks, IP blocks, canonical e-mail blocks, measures, dimensions,
// retention, trends), with what those specs leave for later (approving and rejecting sign-ups and trends) too. Every
// answer is read raw as well and checked against Mastodon's entity.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createOAuthAPIClient, createRestAPIClient, type mastodon } from 'masto';
import { mastoAccounts } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { expectEntity } from '../helpers/schema.ts';
import { refreshTrends } from '../../services/trends.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let s: TestServer & { url: string };
let admin: mastodon.rest.Client;
let adminToken: string;
let selfId: string;
let made = 0;

/** The same call as the app's, answered as JSON for the entity checks (masto hands back camel-cased objects). */
async function raw(method: string, path: string, body?: object): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() as Json };
}

/** A fresh signed-in account, as masto's specs take one from their pool of sessions. */
async function someone(): Promise<{ client: mastodon.rest.Client; id: string }> {
  const name = `member${++made}`;
  const client = (await mastoAccounts(s.url, 'Member app', name))[name]!;
  return { client, id: (await client.v1.accounts.verifyCredentials()).id };
}

beforeAll(async () => {
  s = await startListeningServer();
  // An operator signs in through an app that asked for the admin scopes.
  const anonymous = createRestAPIClient({ url: s.url });
  const app = await anonymous.v1.apps.create({ clientName: 'Moderation app', redirectUris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write admin:read admin:write' });
  const appToken = await createOAuthAPIClient({ url: s.url }).token.create({
    grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: 'urn:ietf:wg:oauth:2.0:oob', scope: 'read write',
  });
  const token = await createRestAPIClient({ url: s.url, accessToken: appToken.accessToken }).v1.accounts.create({
    username: 'ada', email: 'ada@example.com', password: 'ada password', agreement: true, locale: 'en',
  });
  adminToken = token.accessToken;
  admin = createRestAPIClient({ url: s.url, accessToken: adminToken });
  selfId = (await admin.v1.accounts.verifyCredentials()).id;
  await makeAdmin(s, { id: selfId });
  // The token cache of this process hears of the change through Redis.
  for (let i = 0; i < 100 && (await raw('GET', '/api/v1/admin/accounts')).status !== 200; i++) await new Promise((r) => setTimeout(r, 50));
}, 60_000);
afterAll(async () => s?.close());

describe('the operator\'s token', () => {
  it('is not had through the password grant masto\'s own harness asks for: Mastodon removed that grant in 4.3', async () => {
    const app = await createRestAPIClient({ url: s.url }).v1.apps.create({ clientName: 'Harness', redirectUris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write admin:read admin:write' });
    const asked = createOAuthAPIClient({ url: s.url }).token.create({
      grantType: 'password', clientId: app.clientId!, clientSecret: app.clientSecret!, username: 'ada@example.com', password: 'ada password',
      scope: 'read write admin:read admin:write', redirectUri: 'urn:ietf:wg:oauth:2.0:oob',
    } as unknown as Parameters<ReturnType<typeof createOAuthAPIClient>['token']['create']>[0]);
    await expect(asked).rejects.toMatchObject({ statusCode: 400 });
    const res = await fetch(`${s.url}/oauth/token`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'password', client_id: app.clientId, client_secret: app.clientSecret, username: 'ada@example.com', password: 'ada password' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });
});

describe('masto admin spec: accounts', () => {
  it('fetches an account and lists accounts', async () => {
    const { id } = await someone();
    const account = await admin.v1.admin.accounts.$select(id).fetch();
    expect(account.id).toBe(id);
    expect(account.account.id).toBe(id);
    expectEntity('AdminAccount', (await raw('GET', `/api/v1/admin/accounts/${id}`)).body);
    const accounts = await admin.v1.admin.accounts.list();
    expect(accounts.length).toBeGreaterThan(0);
    expect(accounts.map((a) => a.id)).toContain(id);
    for (const a of (await raw('GET', '/api/v1/admin/accounts')).body as Json[]) expectEntity('AdminAccount', a);
  });

  it('disables an account and enables it again', async () => {
    const { client, id } = await someone();
    await admin.v1.admin.accounts.$select(id).action.create({ type: 'disable' });
    expect((await admin.v1.admin.accounts.$select(id).fetch()).disabled).toBe(true);
    // A disabled login's token no longer works (Mastodon: 403 "Your login is currently disabled").
    await expect(client.v1.accounts.verifyCredentials()).rejects.toMatchObject({ statusCode: 403 });
    const enabled = await admin.v1.admin.accounts.$select(id).enable();
    expect(enabled.disabled).toBe(false);
    expectEntity('AdminAccount', (await raw('GET', `/api/v1/admin/accounts/${id}`)).body);
  });

  it('suspends an account and unsuspends it', async () => {
    const { id } = await someone();
    await admin.v1.admin.accounts.$select(id).action.create({ type: 'suspend' });
    expect((await admin.v1.admin.accounts.$select(id).fetch()).suspended).toBe(true);
    expect((await admin.v1.admin.accounts.$select(id).unsuspend()).suspended).toBe(false);
  });

  it('silences an account and unsilences it', async () => {
    const { id } = await someone();
    await admin.v1.admin.accounts.$select(id).action.create({ type: 'silence' });
    expect((await admin.v1.admin.accounts.$select(id).fetch()).silenced).toBe(true);
    expect((await admin.v1.admin.accounts.$select(id).unsilence()).silenced).toBe(false);
  });

  it('marks an account as sensitive and takes the mark off', async () => {
    const { id } = await someone();
    await admin.v1.admin.accounts.$select(id).action.create({ type: 'sensitive' });
    expect((await admin.v1.admin.accounts.$select(id).fetch()).sensitized).toBe(true);
    expect((await admin.v1.admin.accounts.$select(id).unsensitive()).sensitized).toBe(false);
  });

  it('approves one sign-up and rejects another while sign-ups need approval', async () => {
    await s.ctx.settings.change({ registrationsMode: 'approved' });
    onTestFinished(() => s.ctx.settings.change({ registrationsMode: 'open' }));
    const anonymous = createRestAPIClient({ url: s.url });
    const app = await anonymous.v1.apps.create({ clientName: 'Sign-up app', redirectUris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write' });
    const asApp = createRestAPIClient({
      url: s.url,
      accessToken: (await createOAuthAPIClient({ url: s.url }).token.create({ grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: 'urn:ietf:wg:oauth:2.0:oob', scope: 'read write' })).accessToken,
    });
    const join = (username: string) => asApp.v1.accounts.create({ username, email: `${username}@example.com`, password: `${username} password`, agreement: true, locale: 'en', reason: 'I would like to join' });
    const joiner = createRestAPIClient({ url: s.url, accessToken: (await join('quinn')).accessToken });
    await join('rory');
    const pending = await admin.v1.admin.accounts.list({ pending: true });
    expect(pending.map((a) => a.username).sort()).toEqual(['quinn', 'rory']);
    expect(pending.every((a) => !a.approved)).toBe(true);
    await expect(joiner.v1.accounts.verifyCredentials()).rejects.toMatchObject({ statusCode: 403 });

    const quinn = pending.find((a) => a.username === 'quinn')!;
    const approved = await admin.v1.admin.accounts.$select(quinn.id).approve();
    expect(approved).toMatchObject({ id: quinn.id, approved: true });
    for (let i = 0; i < 100 && !(await joiner.v1.accounts.verifyCredentials().then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 50));
    expect((await joiner.v1.accounts.verifyCredentials()).username).toBe('quinn');

    const rory = pending.find((a) => a.username === 'rory')!;
    expectEntity('AdminAccount', (await raw('POST', `/api/v1/admin/accounts/${rory.id}/reject`)).body);
    await expect(admin.v1.admin.accounts.$select(rory.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
    expect(await admin.v1.admin.accounts.list({ pending: true })).toEqual([]);
    // Approving or rejecting someone already approved is refused as Mastodon does.
    await expect(admin.v1.admin.accounts.$select(quinn.id).reject()).rejects.toMatchObject({ statusCode: 403 });
  });
});

describe('masto admin spec: reports', () => {
  it('lists, fetches, assigns, unassigns, resolves and reopens a report the operator filed', async () => {
    const { id } = await someone();
    await admin.v1.reports.create({ accountId: id });
    let report = (await admin.v1.admin.reports.list()).find((r) => r.targetAccount.id === id);
    expect(report).toBeDefined();
    report = await admin.v1.admin.reports.$select(report!.id).fetch();
    expect(report.targetAccount.id).toBe(id);
    expectEntity('AdminReport', (await raw('GET', `/api/v1/admin/reports/${report.id}`)).body);
    report = await admin.v1.admin.reports.$select(report.id).assignToSelf();
    expect(report.assignedAccount?.id).toBe(selfId);
    report = await admin.v1.admin.reports.$select(report.id).unassign();
    expect(report.assignedAccount).toBeNull();
    report = await admin.v1.admin.reports.$select(report.id).resolve();
    expect(report.actionTaken).toBe(true);
    report = await admin.v1.admin.reports.$select(report.id).reopen();
    expect(report.actionTaken).toBe(false);
    expectEntity('AdminReport', (await raw('GET', `/api/v1/admin/reports/${report.id}`)).body);
  });
});

describe('masto admin spec: blocks and allows', () => {
  it('blocks a domain with its media rejected, changes that, and lists the block as fetched', async () => {
    let block = await admin.v1.admin.domainBlocks.create({ domain: 'example.com', rejectMedia: true });
    onTestFinished(async () => {
      await admin.v1.admin.domainBlocks.$select(block.id).remove();
    });
    expect(block.domain).toBe('example.com');
    expect(block.rejectMedia).toBe(true);
    await admin.v1.admin.domainBlocks.$select(block.id).update({ rejectMedia: false });
    block = await admin.v1.admin.domainBlocks.$select(block.id).fetch();
    expect(block.rejectMedia).toBe(false);
    expect(await admin.v1.admin.domainBlocks.list()).toContainEqual(block);
    expectEntity('AdminDomainBlock', (await raw('GET', `/api/v1/admin/domain_blocks/${block.id}`)).body);
  });

  it('allows a domain, fetches the allow, and lists it as fetched', async () => {
    let allow = await admin.v1.admin.domainAllows.create({ domain: 'example.domain.to.allow.com' });
    try {
      allow = await admin.v1.admin.domainAllows.$select(allow.id).fetch();
      expect(allow.domain).toBe('example.domain.to.allow.com');
      expect(await admin.v1.admin.domainAllows.list()).toContainEqual(allow);
      expectEntity('AdminDomainAllow', (await raw('GET', `/api/v1/admin/domain_allows/${allow.id}`)).body);
    } finally {
      await admin.v1.admin.domainAllows.$select(allow.id).remove();
    }
    await expect(admin.v1.admin.domainAllows.$select(allow.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('blocks an e-mail domain, fetches the block, and lists it as fetched', async () => {
    let block = await admin.v1.admin.emailDomainBlocks.create({ domain: 'example.domain.to.block.com' });
    try {
      block = await admin.v1.admin.emailDomainBlocks.$select(block.id).fetch();
      expect(block.domain).toBe('example.domain.to.block.com');
      expect(await admin.v1.admin.emailDomainBlocks.list()).toContainEqual(block);
      expectEntity('AdminEmailDomainBlock', (await raw('GET', `/api/v1/admin/email_domain_blocks/${block.id}`)).body);
    } finally {
      await admin.v1.admin.emailDomainBlocks.$select(block.id).remove();
    }
    await expect(admin.v1.admin.emailDomainBlocks.$select(block.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('blocks an address as a /32 range, changes its severity, and lists it as changed', async () => {
    let block = await admin.v1.admin.ipBlocks.create({ ip: '65.10.51.60', severity: 'no_access' });
    try {
      block = await admin.v1.admin.ipBlocks.$select(block.id).fetch();
      expect(block.ip).toBe('65.10.51.60/32');
      block = await admin.v1.admin.ipBlocks.$select(block.id).update({ severity: 'sign_up_requires_approval' });
      expect(block.severity).toBe('sign_up_requires_approval');
      expect(await admin.v1.admin.ipBlocks.list()).toContainEqual(block);
      expectEntity('AdminIpBlock', (await raw('GET', `/api/v1/admin/ip_blocks/${block.id}`)).body);
    } finally {
      await admin.v1.admin.ipBlocks.$select(block.id).remove();
    }
    await expect(admin.v1.admin.ipBlocks.$select(block.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('blocks a canonical e-mail address, finds it by testing the address, and lists it as fetched', async () => {
    let block = await admin.v1.admin.canonicalEmailBlocks.create({ email: 'test@example.com' });
    try {
      block = await admin.v1.admin.canonicalEmailBlocks.$select(block.id).fetch();
      expect(block.canonicalEmailHash).toEqual(expect.any(String));
      expect(await admin.v1.admin.canonicalEmailBlocks.test({ email: 'test@example.com' })).toContainEqual(block);
      expect(await admin.v1.admin.canonicalEmailBlocks.list()).toContainEqual(block);
      expectEntity('AdminCanonicalEmailBlock', (await raw('GET', `/api/v1/admin/canonical_email_blocks/${block.id}`)).body);
    } finally {
      await admin.v1.admin.canonicalEmailBlocks.$select(block.id).remove();
    }
    expect(await admin.v1.admin.canonicalEmailBlocks.test({ email: 'test@example.com' })).toEqual([]);
  });
});

describe('masto admin spec: the dashboard', () => {
  it('fetches dimensions without dates', async () => {
    const dimensions = await admin.v1.admin.dimensions.create({ keys: ['languages', 'sources'] });
    expect(dimensions).toEqual(expect.arrayContaining([expect.objectContaining({ key: 'languages' }), expect.objectContaining({ key: 'sources' })]));
    for (const d of (await raw('POST', '/api/v1/admin/dimensions', { keys: ['languages', 'sources'] })).body as Json[]) expectEntity('AdminDimension', d);
  });

  it('fetches measures of a day long past', async () => {
    const range = { startAt: new Date('2019-01-01').toISOString(), endAt: new Date('2019-01-02').toISOString() };
    const measures = await admin.v1.admin.measures.create({ keys: ['active_users'], ...range });
    expect(measures).toEqual(expect.arrayContaining([expect.objectContaining({ key: 'active_users' })]));
    const answer = await raw('POST', '/api/v1/admin/measures', { keys: ['active_users'], start_at: range.startAt, end_at: range.endAt });
    for (const m of answer.body as Json[]) expectEntity('AdminMeasure', m);
  });

  it('fetches daily retention of a range long past', async () => {
    const range = { startAt: new Date('2023-04-07').toISOString(), endAt: new Date('2023-04-08').toISOString() };
    expect(await admin.v1.admin.retention.create({ ...range, frequency: 'day' })).toEqual(expect.any(Array));
    const answer = await raw('POST', '/api/v1/admin/retention', { start_at: range.startAt, end_at: range.endAt, frequency: 'day' });
    expect(answer.status).toBe(200);
    for (const c of answer.body as Json[]) expectEntity('AdminCohort', c);
  });
});

describe('masto admin spec: trends', () => {
  it('lists links, link publishers, statuses and tags', async () => {
    expect(await admin.v1.admin.trends.links.list()).toEqual(expect.any(Array));
    expect(await admin.v1.admin.trends.links.publishers.list()).toEqual(expect.any(Array));
    expect(await admin.v1.admin.trends.statuses.list()).toEqual(expect.any(Array));
    expect(await admin.v1.admin.trends.tags.list()).toEqual(expect.any(Array));
  });

  it('approves and rejects a trending tag and a trending status, and a link publisher', async () => {
    // Five accounts use a tag and favourite one post: both trend from five accounts on (services/trends.ts).
    const people = [] as { client: mastodon.rest.Client; id: string }[];
    for (let i = 0; i < 5; i++) people.push(await someone());
    const post = await people[0]!.client.v1.statuses.create({ status: 'a #surging topic' });
    for (const p of people.slice(1)) await p.client.v1.statuses.create({ status: 'me too #surging' });
    for (const p of people) await p.client.v1.statuses.$select(post.id).favourite();
    await refreshTrends(s.ctx);

    const reader = people[1]!.client;
    // Tags and statuses trend before review here (docs/api.md, Trends): an operator rejects them, or approves them back.
    const tag = (await admin.v1.admin.trends.tags.list()).find((t) => t.name === 'surging');
    expect(tag).toMatchObject({ requiresReview: true, trendable: true });
    for (const t of (await raw('GET', '/api/v1/admin/trends/tags')).body as Json[]) expectEntity('AdminTag', t);
    expect((await reader.v1.trends.tags.list()).map((t) => t.name)).toContain('surging');
    expect(await admin.v1.admin.trends.tags.$select(tag!.id).reject()).toMatchObject({ name: 'surging', trendable: false, requiresReview: false });
    expect((await reader.v1.trends.tags.list()).map((t) => t.name)).not.toContain('surging');
    expect((await admin.v1.admin.trends.tags.list()).find((t) => t.name === 'surging')).toMatchObject({ trendable: false });
    expect(await admin.v1.admin.trends.tags.$select(tag!.id).approve()).toMatchObject({ name: 'surging', trendable: true, requiresReview: false });
    expect((await reader.v1.trends.tags.list()).map((t) => t.name)).toContain('surging');

    const listed = (await admin.v1.admin.trends.statuses.list()).find((st) => st.id === post.id);
    expect(listed).toBeDefined();
    for (const st of (await raw('GET', '/api/v1/admin/trends/statuses')).body as Json[]) expectEntity('Status', st);
    expect((await reader.v1.trends.statuses.list()).map((st) => st.id)).toContain(post.id);
    expect((await admin.v1.admin.trends.statuses.$select(post.id).reject()).id).toBe(post.id);
    expect((await reader.v1.trends.statuses.list()).map((st) => st.id)).not.toContain(post.id);
    expect((await admin.v1.admin.trends.statuses.list()).map((st) => st.id)).toContain(post.id);
    expect((await admin.v1.admin.trends.statuses.$select(post.id).approve()).id).toBe(post.id);
    expect((await reader.v1.trends.statuses.list()).map((st) => st.id)).toContain(post.id);

    // A publisher nobody linked yet may be decided in advance, by its domain.
    const approved = await admin.v1.admin.trends.links.publishers.$select('news.example').approve() as unknown as Json;
    expect(approved).toMatchObject({ domain: 'news.example', trendable: true, requiresReview: false });
    const rejected = await admin.v1.admin.trends.links.publishers.$select(approved.id).reject() as unknown as Json;
    expect(rejected).toMatchObject({ id: approved.id, domain: 'news.example', trendable: false });
    expect((await admin.v1.admin.trends.links.publishers.list() as unknown as Json[]).map((p) => p.domain)).toContain('news.example');

    // Someone without the admin scopes or role is refused.
    await expect(reader.v1.admin.trends.tags.list()).rejects.toMatchObject({ statusCode: 403 });
    await expect(reader.v1.admin.trends.tags.$select(tag!.id).approve()).rejects.toMatchObject({ statusCode: 403 });
  });
});
