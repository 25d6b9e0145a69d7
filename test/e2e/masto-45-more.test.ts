import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOAuthAPIClient, createRestAPIClient, type mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { mastoAccounts } from '../helpers/masto.ts';
import { expectEntity } from '../helpers/schema.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { appToken, authorizationCodeToken, createApp } from '../helpers/oauth.ts';
import { setAnnualReportClock } from '../../services/annual-reports.ts';
import { refreshTrends } from '../../services/trends.ts';

/**
 * The rest of Mastodon 4.4–4.6's added calls as an app makes them through masto: link cards and link trends, the quotes of a post
 * and their revocation, a post's interaction policy, the instance's texts, annual reports and the admin dashboard.
 * masto's typings lack a few of these paths; its proxy builds any path, so those go through `loose`.
 */
type Loose = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- masto's proxy, for paths its typings lack
const loose = (client: mastodon.rest.Client): Loose => client;

/** Retries `check` until it stops throwing (work done by a job), for up to 10 s; returns what it returned. */
async function eventually<T>(check: () => Promise<T>): Promise<T> {
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

let s: TestServer & { url: string };
let c: Record<string, mastodon.rest.Client>;
let admin: mastodon.rest.Client;
let adminToken: string;
let pages: Server;
let pageBase: string;

beforeAll(async () => {
  pages = createServer((req, res) => {
    if (req.url?.startsWith('/story')) {
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><head><title>t</title>
        <meta property="og:title" content="A story worth sharing"><meta property="og:description" content="It has a card">
        <meta property="og:site_name" content="Loopback Times"></head><body></body></html>`);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pageBase = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  s = await startListeningServer({ ALLOW_PRIVATE_ADDRESSES: 'true' });
  c = await mastoAccounts(s.url, 'More app', 'lou', 'max', 'nia', 'oli');
  // An operator signs in through an app that asked for the admin scopes.
  const anonymous = createRestAPIClient({ url: s.url });
  const app = await anonymous.v1.apps.create({ clientName: 'Admin app', redirectUris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write admin:read admin:write' });
  const appToken = await createOAuthAPIClient({ url: s.url }).token.create({
    grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: 'urn:ietf:wg:oauth:2.0:oob', scope: 'read write',
  });
  const token = await createRestAPIClient({ url: s.url, accessToken: appToken.accessToken }).v1.accounts.create({
    username: 'opal', email: 'opal@example.com', password: 'opal password', agreement: true, locale: 'en',
  });
  adminToken = token.accessToken;
  admin = createRestAPIClient({ url: s.url, accessToken: token.accessToken });
  await makeAdmin(s, await admin.v1.accounts.verifyCredentials());
}, 60_000);
afterAll(async () => {
  await s?.close();
  await new Promise((resolve) => pages?.close(resolve));
});

describe('masto: cards, quotes, policies, texts, reports and the dashboard', () => {
  it('shows a link card under a post, and the link among trends once an operator approves it', async () => {
    const url = `${pageBase}/story`;
    const posts: mastodon.v1.Status[] = [];
    for (const name of ['lou', 'max', 'nia', 'oli']) posts.push(await c[name]!.v1.statuses.create({ status: `read this ${url}` }));
    const withCard = await eventually(async () => {
      const status = await c.max!.v1.statuses.$select(posts[0]!.id).fetch();
      expect(status.card).toMatchObject({ title: 'A story worth sharing', description: 'It has a card', providerName: 'Loopback Times', type: 'link' });
      return status;
    });
    expect(withCard.card!.url).toBe(url);
    for (const p of posts) await eventually(async () => expect((await c.lou!.v1.statuses.$select(p.id).fetch()).card?.url).toBe(url));
    // Links trend from five accounts on (services/trends.ts, Mastodon's threshold): four posts and a boost; the
    // refreshTrends job scores them (run here rather than waiting its five minutes).
    await admin.v1.statuses.$select(posts[0]!.id).reblog();
    await refreshTrends(s.ctx);
    // Not trending before review, as Mastodon: the link timeline is a 404 until then.
    expect((await c.lou!.v1.trends.links.list()).map((l) => l.url)).not.toContain(url);
    await expect(c.lou!.v1.timelines.link.list({ url })).rejects.toMatchObject({ statusCode: 404 });
    const pending = await eventually(async () => {
      const links = await admin.v1.admin.trends.links.list();
      const link = links.find((l) => l.url === url);
      expect(link).toBeDefined();
      return link!;
    });
    await admin.v1.admin.trends.links.$select((pending as unknown as { id: string }).id).approve();
    expect((await c.lou!.v1.trends.links.list()).map((l) => l.url)).toContain(url);
    const timeline = await c.lou!.v1.timelines.link.list({ url });
    expect(timeline.map((st) => st.id)).toEqual(expect.arrayContaining(posts.map((p) => p.id)));
  });

  it('lists the quotes of a post, lets its author revoke one, and changes who may quote it', async () => {
    const original = await c.lou!.v1.statuses.create({ status: 'quotable', quoteApprovalPolicy: 'public' });
    const quoting = await c.max!.v1.statuses.create({ status: 'quoting you', quotedStatusId: original.id });
    expect(quoting.quote).toMatchObject({ state: 'accepted' });
    expect((await c.lou!.v1.statuses.$select(original.id).quotes.list()).map((st) => st.id)).toEqual([quoting.id]);

    const revoked = await loose(c.lou!).v1.statuses.$select(original.id).quotes.$select(quoting.id).revoke.create();
    expect(revoked.quote).toMatchObject({ state: 'revoked' });
    expect((await c.max!.v1.statuses.$select(quoting.id).fetch()).quote).toMatchObject({ state: 'revoked' });
    expect(await c.lou!.v1.statuses.$select(original.id).quotes.list()).toEqual([]);
    // Only the quoted post's author may revoke (Mastodon's QuotePolicy#revoke?: 403 for others).
    await expect(loose(c.nia!).v1.statuses.$select(original.id).quotes.$select(quoting.id).revoke.create()).rejects.toMatchObject({ statusCode: 403 });

    const changed = await loose(c.lou!).v1.statuses.$select(original.id).interactionPolicy.update({ quoteApprovalPolicy: 'nobody' });
    expect(changed.quoteApproval).toMatchObject({ automatic: [], manual: [] });
    // Mastodon answers a post that may not be quoted as one that does not exist.
    await expect(c.nia!.v1.statuses.create({ status: 'may I?', quotedStatusId: original.id })).rejects.toMatchObject({ statusCode: 404 });
    // Someone else's post's policy is not theirs to change.
    await expect(loose(c.nia!).v1.statuses.$select(original.id).interactionPolicy.update({ quoteApprovalPolicy: 'public' })).rejects.toMatchObject({ statusCode: 404 });
  });

  it('lists no announcements, refuses unknown ones as Mastodon does, and asks for a user with the read scope', async () => {
    expect(await c.nia!.v1.announcements.list()).toEqual([]);
    for (const call of [
      () => c.nia!.v1.announcements.$select('12345').dismiss(),
      () => c.nia!.v1.announcements.$select('12345').reactions.$select('👍').update(),
      () => c.nia!.v1.announcements.$select('12345').reactions.$select('👍').remove(),
    ]) await expect(call()).rejects.toMatchObject({ statusCode: 404, message: 'Record not found' });
    // Mastodon's `doorkeeper_authorize! :read`: a narrower read scope is not enough, an app without a user neither.
    const client = await createApp(s.app, 'read:statuses read');
    const narrow = await authorizationCodeToken(s.app, client, 'nia@example.com', 'nia password', 'read:statuses');
    await expect(createRestAPIClient({ url: s.url, accessToken: narrow }).v1.announcements.list()).rejects.toMatchObject({ statusCode: 403 });
    const appOnly = await appToken(s.app, client, 'read');
    await expect(createRestAPIClient({ url: s.url, accessToken: appOnly }).v1.announcements.list()).rejects.toMatchObject({ statusCode: 422 });
    await expect(createRestAPIClient({ url: s.url }).v1.announcements.list()).rejects.toMatchObject({ statusCode: 401 });
  });

  it('reads the instance texts an operator has or has not set', async () => {
    const extended = await c.nia!.v1.instance.extendedDescription.fetch();
    expect(extended.content).toBe('');
    expect(extended.updatedAt).toBeNull();
    const privacy = await loose(c.nia!).v1.instance.privacyPolicy.fetch();
    expect(privacy.content).toContain('<');
    await expect(loose(c.nia!).v1.instance.termsOfService.fetch()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('asks for an annual report and reads it when the job has made it', async () => {
    // During Mastodon's campaign (from 10 December) this year's report may be asked for.
    const year = String(new Date().getUTCFullYear());
    setAnnualReportClock(() => new Date(`${year}-12-15T12:00:00Z`));
    onTestFinished(() => setAnnualReportClock(undefined));
    await c.lou!.v1.annualReports.$select(year).generate();
    const report = await eventually(async () => {
      const state = await c.lou!.v1.annualReports.$select(year).state.fetch();
      expect(state.state).toBe('available');
      return c.lou!.v1.annualReports.$select(year).fetch();
    });
    expect(report.annualReports[0]).toMatchObject({ year: Number(year) });
    await c.lou!.v1.annualReports.$select(year).read();
  });

  it('gives an operator the dashboard figures, and nobody else', async () => {
    const day = 86_400_000;
    const range = { startAt: new Date(Date.now() - 7 * day).toISOString(), endAt: new Date().toISOString() };
    const measures = await admin.v1.admin.measures.create({ keys: ['new_users', 'active_users', 'interactions'], ...range });
    expect(measures.map((m) => m.key)).toEqual(['new_users', 'active_users', 'interactions']);
    expect(Number(measures[0]!.total)).toBeGreaterThanOrEqual(4);
    const dimensions = await admin.v1.admin.dimensions.create({ keys: ['languages', 'software_versions'], ...range });
    expect(dimensions.map((d) => d.key)).toEqual(['languages', 'software_versions']);
    const retention = await admin.v1.admin.retention.create({ ...range, frequency: 'day' });
    expect(retention.length).toBeGreaterThan(0);
    await expect(c.lou!.v1.admin.measures.create({ keys: ['new_users'], ...range })).rejects.toMatchObject({ statusCode: 403 });
    // Dimensions asked for without dates, as masto's own specs ask Mastodon: the facts of now, and empty ranged keys.
    const undated = await admin.v1.admin.dimensions.create({ keys: ['languages', 'sources', 'software_versions'] });
    expect(undated.map((d) => [d.key, d.data.length > 0])).toEqual([['languages', false], ['sources', false], ['software_versions', true]]);
  });

  it('lets an operator delete a suspended account\'s data, and only once it is suspended', async () => {
    const { pip } = await mastoAccounts(s.url, 'Leaving app', 'pip');
    const pipId = (await pip!.v1.accounts.verifyCredentials()).id;
    await expect(loose(admin).v1.admin.accounts.$select(pipId).remove()).rejects.toMatchObject({ statusCode: 403 });
    await admin.v1.admin.accounts.$select(pipId).action.create({ type: 'suspend' });
    const deleted = await loose(admin).v1.admin.accounts.$select(pipId).remove();
    expect(deleted).toMatchObject({ id: pipId, username: 'pip', suspended: true });
    // The same Admin::Account as Mastodon's entity, read raw.
    const raw = await fetch(`${s.url}/api/v1/admin/accounts/${pipId}`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(raw.status).toBe(200);
    expectEntity('AdminAccount', await raw.json());
    // The name stays taken.
    await expect(mastoAccounts(s.url, 'Again app', 'pip')).rejects.toMatchObject({ statusCode: 422 });
  });
});
