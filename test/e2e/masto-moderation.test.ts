// Reports and the admin API as a Mastodon app (and a moderation tool) drives them with masto.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestAPIClient, type mastodon } from 'masto';
import { mastoAccounts } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import { createApp, registerUser } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';
import { makeAdmin } from '../helpers/admin.ts';

let s: TestServer & { url: string };
let pia: mastodon.rest.Client;
let rex: mastodon.rest.Client;
let admin: mastodon.rest.Client;
let rexId: string;

beforeAll(async () => {
  s = await startListeningServer();
  ({ pia, rex } = (await mastoAccounts(s.url, 'masto moderation', 'pia', 'rex')) as Record<'pia' | 'rex', mastodon.rest.Client>);
  rexId = (await rex.v1.accounts.verifyCredentials()).id;
  // An administrator signed in with the admin scopes, as a moderation app would be.
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  const mod = await registerUser(s.app, client, 'mona', 'read write admin:read admin:write');
  await makeAdmin(s, mod);
  admin = createRestAPIClient({ url: s.url, accessToken: mod.token });
  // The token cache of this process hears of the change through Redis.
  for (let i = 0; i < 50; i++) {
    if (await admin.v1.admin.reports.list().then(() => true, () => false)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
});
afterAll(async () => s?.close());

describe('masto: reports and the admin API', () => {
  it('files a report, and a moderator assigns, resolves and reopens it', async () => {
    const post = await rex.v1.statuses.create({ status: 'spam spam spam' });
    const report = await pia.v1.reports.create({ accountId: rexId, statusIds: [post.id], comment: 'spam', category: 'spam' });
    expect(report).toMatchObject({ category: 'spam', comment: 'spam', actionTaken: false });
    const listed = await admin.v1.admin.reports.list();
    expect(listed.map((r) => r.id)).toEqual([report.id]);
    const fetched = await admin.v1.admin.reports.$select(report.id).fetch();
    expect(fetched.targetAccount.id).toBe(rexId);
    expect(fetched.statuses.map((x) => x.id)).toEqual([post.id]);
    expect((await admin.v1.admin.reports.$select(report.id).assignToSelf()).assignedAccount).not.toBeNull();
    expect((await admin.v1.admin.reports.$select(report.id).unassign()).assignedAccount).toBeNull();
    expect((await admin.v1.admin.reports.$select(report.id).resolve()).actionTaken).toBe(true);
    expect((await admin.v1.admin.reports.$select(report.id).reopen()).actionTaken).toBe(false);
    await expect(pia.v1.admin.reports.list()).rejects.toMatchObject({ statusCode: 403 });
  });

  it('lists accounts, silences and unsilences one, and suspends and unsuspends it', async () => {
    const locals = await admin.v1.admin.accounts.list({ local: true });
    expect(locals.map((a) => a.username)).toEqual(expect.arrayContaining(['pia', 'rex', 'mona']));
    expect((await admin.v1.admin.accounts.$select(rexId).fetch()).username).toBe('rex');
    await admin.v1.admin.accounts.$select(rexId).action.create({ type: 'silence' });
    expect((await admin.v1.admin.accounts.$select(rexId).fetch()).silenced).toBe(true);
    expect((await admin.v1.admin.accounts.$select(rexId).unsilence()).silenced).toBe(false);
    await admin.v1.admin.accounts.$select(rexId).action.create({ type: 'suspend' });
    expect((await admin.v1.admin.accounts.$select(rexId).fetch()).suspended).toBe(true);
    await expect(rex.v1.accounts.verifyCredentials()).rejects.toMatchObject({ statusCode: 403 });
    expect((await admin.v1.admin.accounts.$select(rexId).unsuspend()).suspended).toBe(false);
  });

  it('blocks and allows domains, and the instance publishes its blocks', async () => {
    const block = await admin.v1.admin.domainBlocks.create({ domain: 'bad.example', severity: 'suspend', publicComment: 'spam' });
    expect(block).toMatchObject({ domain: 'bad.example', severity: 'suspend' });
    expect((await admin.v1.admin.domainBlocks.list()).map((b) => b.domain)).toEqual(['bad.example']);
    expect((await admin.v1.admin.domainBlocks.$select(block.id).update({ severity: 'silence' })).severity).toBe('silence');
    const published = await pia.v1.instance.domainBlocks.fetch();
    expect(published).toEqual([expect.objectContaining({ domain: 'bad.example', severity: 'silence', comment: 'spam' })]);
    await admin.v1.admin.domainBlocks.$select(block.id).remove();
    expect(await admin.v1.admin.domainBlocks.list()).toEqual([]);

    const allow = await admin.v1.admin.domainAllows.create({ domain: 'good.example' });
    expect((await admin.v1.admin.domainAllows.list()).map((a) => a.domain)).toEqual(['good.example']);
    await admin.v1.admin.domainAllows.$select(allow.id).remove();
    expect(await admin.v1.admin.domainAllows.list()).toEqual([]);
  });
});
