// The relays page (/admin/relays): a relay added there is followed by the instance actor (the strict peer as the
// relay's server), and its Accept shows as its state; removing it sends the Undo. Only roles with manage_federation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { WebClient, signedInClient } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signedInContext } from '../helpers/browser-session.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { pendingOutbox } from '../../storage/outbox.ts';
import { listRelays } from '../../storage/relays.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';

const AS = 'https://www.w3.org/ns/activitystreams';
let ours: Instance;
let peer: StrictPeer;
let browser: TestBrowser;
let owner: TestUser;
let moderator: TestUser;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, ours.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(ours.ctx.redis, ours.config.redisPrefix, what), { redis: ours.ctx.redis, redisPrefix: ours.config.redisPrefix, config: ours.config });
  return lines;
}

const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(ours.app, user);

/** What a running server's outbox sweeper does with the rows written (it passes every 30 s). */
async function sweep(): Promise<void> {
  await ours.ctx.jobs.enqueueMany(await pendingOutbox(ours.ctx.db, 0, 100));
}

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  await peer.addActor('relay', { type: 'Application', locked: true, autoAccept: false });
  const client = await createApp(ours.app);
  [owner, moderator] = await Promise.all(['relayowner', 'relaymod'].map((u) => registerUser(ours.app, client, u))) as [TestUser, TestUser];
  await cli('accounts', 'role', 'relayowner', 'Admin');
  await cli('accounts', 'role', 'relaymod', 'Moderator');
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([ours?.close(), peer?.close()]);
});

describe('relays page', () => {
  it('adds a relay, which the instance actor follows; its Accept shows as its state; removing it sends the Undo', async () => {
    const web = await signedIn(owner);
    const page = await web.get('/admin/relays');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('No relays.');
    const added = await web.post('/admin/relays', { url: `${peer.url}/inbox` }, page.body);
    expect(added.statusCode).toBe(303);
    expect(added.headers.location).toBe('/admin/relays?notice=added');
    await sweep();
    const follow = await peer.waitFor((d) => d.inbox === '/inbox' && d.activity.type === 'Follow');
    expect(follow.verified, follow.reason).toBe(true);
    const listed = await web.get('/admin/relays');
    await expectValidHtml(listed.body, '/admin/relays');
    expect(listed.body).toContain(`${peer.url}/inbox`);
    expect(listed.body).toContain('Waiting for its answer');

    expect(await peer.send('relay', `${ours.url}/inbox`, {
      '@context': AS, id: `${peer.actorId('relay')}#accepts/1`, type: 'Accept', actor: peer.actorId('relay'), object: follow.activity,
    })).toBe(202);
    const accepted = await until(async () => (await web.get('/admin/relays')).body, (b) => b.includes('<td>Accepted</td>'), 'the relay accepted');
    expect(accepted).toContain('<td>mastodon</td>');
    // The CLI sees the same row.
    expect(await cli('relay', 'list')).toEqual([`${peer.url}/inbox  accepted  mastodon`]);

    const removed = await web.post('/admin/relays/remove', { url: `${peer.url}/inbox` }, listed.body);
    expect(removed.statusCode).toBe(303);
    await sweep();
    const undo = await peer.waitFor((d) => d.inbox === '/inbox' && d.activity.type === 'Undo');
    expect(undo.activity.object).toMatchObject({ id: follow.activity.id, type: 'Follow' });
    expect(await listRelays(ours.ctx.db)).toEqual([]);
    // Both are in the audit log as the operator's (Mastodon logs no relays; this server does).
    const logged = await actionLogsPage(ours.ctx.db, { targetType: 'Relay' }, { limit: 10 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([[owner.id, 'destroy', `${peer.url}/inbox`], [owner.id, 'create', `${peer.url}/inbox`]]);
  });

  it('refuses a URL that is no relay URL or one added twice with 422, and removing one that is not a relay with 404', async () => {
    const web = await signedIn(owner);
    const page = await web.get('/admin/relays');
    const ftp = await web.post('/admin/relays', { url: 'ftp://relay.example/inbox' }, page.body);
    expect(ftp.statusCode).toBe(422);
    expect(ftp.body).toContain('a relay URL is http(s)');
    expect(ftp.body).toContain('value="ftp://relay.example/inbox"');
    expect((await web.post('/admin/relays', { url: 'not a url' }, page.body)).statusCode).toBe(422);
    expect((await web.post('/admin/relays', { url: 'https://relay.example/inbox' }, page.body)).statusCode).toBe(303);
    const twice = await web.post('/admin/relays', { url: 'https://relay.example/inbox' }, page.body);
    expect(twice.statusCode).toBe(422);
    expect(twice.body).toContain('already a relay here');
    expect((await web.post('/admin/relays/remove', { url: 'https://other.example/inbox' }, page.body)).statusCode).toBe(404);
    // The command line's additions and removals are logged without an operator.
    await cli('relay', 'add', 'https://cli.example/inbox');
    await cli('relay', 'remove', 'https://cli.example/inbox');
    expect((await actionLogsPage(ours.ctx.db, { targetType: 'Relay' }, { limit: 2 })).map((r) => [r.account_id, r.action, r.human_identifier]))
      .toEqual([[null, 'destroy', 'https://cli.example/inbox'], [null, 'create', 'https://cli.example/inbox']]);
    expect((await listRelays(ours.ctx.db)).map((r) => r.url)).toEqual(['https://relay.example/inbox']);
  });

  it('needs manage_federation: a moderator gets 403 and changes nothing; a form without its token is refused', async () => {
    const web = await signedIn(moderator);
    expect((await web.get('/admin/relays')).statusCode).toBe(403);
    const own = await web.get('/settings/profile');
    expect((await web.post('/admin/relays', { url: 'https://sneaky.example/inbox' }, own.body)).statusCode).toBe(403);
    expect((await web.post('/admin/relays/remove', { url: 'https://relay.example/inbox' }, own.body)).statusCode).toBe(403);
    const admin = await signedIn(owner);
    await admin.get('/admin/relays');
    expect((await admin.post('/admin/relays', { url: 'https://tokenless.example/inbox' })).statusCode).toBe(403);
    expect((await listRelays(ours.ctx.db)).map((r) => r.url)).toEqual(['https://relay.example/inbox']);
  });

  it('in Chromium: passes axe; without scripts, a relay is removed', async () => {
    const withScripts = await signedInContext(browser, ours.url, owner, true);
    try {
      await withScripts.page.goto(`${ours.url}/admin/relays`);
      await expectAccessible(withScripts.page, 'relays');
    } finally {
      await withScripts.context.close();
    }
    const { context, page } = await signedInContext(browser, ours.url, owner, false);
    try {
      await page.goto(`${ours.url}/admin/relays`);
      await Promise.all([page.waitForURL(/notice=removed/), page.click('button[aria-label="Remove https://relay.example/inbox"]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('The relay is removed');
      expect(await listRelays(ours.ctx.db)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
