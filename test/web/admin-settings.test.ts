// The operators' settings page (/admin/settings): the run-time settings are stored in PostgreSQL, and a change made
// through one server instance reaches another one sharing PostgreSQL and Redis (its instance entities, posting
// limits, sign-up and pages) within a second, told over Redis pub/sub. Only roles with manage_settings may open it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningServer } from '../helpers/listen.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, appToken, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { WebClient, signedInClient } from '../helpers/web.ts';
import { eventually } from '../helpers/eventually.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signedInContext } from '../helpers/browser-session.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { closeContext } from '../../server.ts';
import { readServerSettings } from '../../storage/server-settings.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';

let a: TestServer & { url: string };
/** A second server instance on A's PostgreSQL and Redis, started with other environment values. */
let b: TestServer;
let browser: TestBrowser;
let client: RegisteredApp;
let owner: TestUser;
let moderator: TestUser;

const FORM = {
  site_title: 'Settled Place',
  site_short_description: 'A place whose settings changed while it ran.',
  site_extended_description: '<p>About us: <strong>friendly</strong>.</p><script>alert(1)</script>',
  site_contact_email: 'admins@settled.example',
  site_contact_username: 'setowner',
  registrations_mode: 'approved',
  closed_registrations_message: '',
  languages: 'de, en',
  site_terms: '<p>Be kind to each other.</p>',
  privacy_policy: '<p>We keep little.</p>',
  status_max_characters: '20',
  media_image_max_mb: '2',
  media_video_max_mb: '10',
};

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, a.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(a.ctx.redis, a.config.redisPrefix, what), { redis: a.ctx.redis, redisPrefix: a.config.redisPrefix });
  return lines;
}

const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(a.app, user);

const instanceOf = async (s: TestServer, version: 'v1' | 'v2') => (await s.app.inject({ method: 'GET', url: `/api/${version}/instance` })).json();

beforeAll(async () => {
  a = await startListeningServer({ INSTANCE_TITLE: 'First Title', MAX_STATUS_CHARS: '500', REGISTRATIONS_MODE: 'open' });
  b = await startTestServer({
    DATABASE_URL: a.config.databaseUrl, REDIS_PREFIX: a.config.redisPrefix, DATA_DIR: a.config.dataDir, LOCAL_DOMAIN: a.config.localDomain,
    ROLE: 'web', INSTANCE_TITLE: 'Title From B Environment', MAX_STATUS_CHARS: '9000',
  });
  client = await createApp(a.app, 'read write follow push');
  [owner, moderator] = await Promise.all(['setowner', 'setmod'].map((u) => registerUser(a.app, client, u))) as [TestUser, TestUser];
  await cli('accounts', 'role', 'setowner', 'Admin');
  await cli('accounts', 'role', 'setmod', 'Moderator');
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  if (b) {
    await b.app.close();
    await closeContext(b.ctx);
  }
  await a?.close();
});

describe('server settings at run time', () => {
  it('start from the environment of the first start: a later instance with other values reads the stored ones', async () => {
    expect((await instanceOf(a, 'v2')).title).toBe('First Title');
    expect((await instanceOf(b, 'v2')).title).toBe('First Title');
    expect((await instanceOf(b, 'v2')).configuration.statuses.max_characters).toBe(500);
    const stored = await readServerSettings(a.ctx.db);
    expect(stored.get('site_title')).toBe('First Title');
    expect(stored.get('registrations_mode')).toBe('open');
  });

  it('a change on one instance reaches the other within a second: instance entities, posting limit, sign-up, pages', async () => {
    const web = await signedIn(owner);
    const page = await web.get('/admin/settings');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/admin/settings');
    expect(page.body).toContain('value="First Title"');
    const saved = await web.post('/admin/settings', FORM, page.body);
    expect(saved.statusCode, saved.body).toBe(303);
    expect(saved.headers.location).toBe('/admin/settings?notice=saved');
    // The audit log has the change as the operator's, named by the settings that changed.
    const [entry] = await actionLogsPage(a.ctx.db, { targetType: 'AdminSettings' }, { limit: 1 });
    expect(entry).toMatchObject({ account_id: owner.id, action: 'update', target_id: null });
    expect(entry!.human_identifier.split(', ')).toEqual(expect.arrayContaining(['site_title', 'registrations_mode', 'status_max_characters']));

    // No fixed wait: B is asked until it answers with the new title, for at most a second.
    expect(await eventually(async () => (await instanceOf(b, 'v2')).title, 'Settled Place', 1000)).toBe('Settled Place');
    const v2 = await instanceOf(b, 'v2');
    expectEntity('Instance', v2);
    expect(v2).toMatchObject({
      description: FORM.site_short_description,
      languages: ['de', 'en'],
      contact: { email: 'admins@settled.example', account: { username: 'setowner' } },
      registrations: { enabled: true, approval_required: true },
      configuration: { statuses: { max_characters: 20 }, media_attachments: { image_size_limit: 2 * 1024 * 1024, video_size_limit: 10 * 1024 * 1024 } },
    });
    const v1 = await instanceOf(b, 'v1');
    expect(v1).toMatchObject({ title: 'Settled Place', short_description: FORM.site_short_description, email: 'admins@settled.example', approval_required: true, languages: ['de', 'en'] });
    expect(v1.configuration.statuses.max_characters).toBe(20);

    // Posting on B holds to the new limit, with Mastodon's error.
    const long = await b.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(owner.token), payload: { status: 'x'.repeat(21) } });
    expect(long.statusCode).toBe(422);
    expect(long.json().error).toBe('Validation failed: Text character limit of 20 exceeded');
    expect((await b.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(owner.token), payload: { status: 'x'.repeat(20) } })).statusCode).toBe(200);

    // The texts, sanitised, with the time they changed.
    const about = (await b.app.inject({ method: 'GET', url: '/api/v1/instance/extended_description' })).json();
    expect(about.content).toContain('<strong>friendly</strong>');
    expect(about.content).not.toContain('script');
    expect((await b.app.inject({ method: 'GET', url: '/api/v1/instance/terms_of_service' })).json().content).toBe('<p>Be kind to each other.</p>');
    expect((await b.app.inject({ method: 'GET', url: '/api/v1/instance/privacy_policy' })).json().content).toBe('<p>We keep little.</p>');
    // B's cached public pages show the new title.
    expect((await b.app.inject({ method: 'GET', url: '/about', headers: { accept: 'text/html' } })).body).toContain('Settled Place');
  });

  it('closing sign-ups applies everywhere: the API refuses, the instance entity shows the message', async () => {
    const web = await signedIn(owner);
    const page = await web.get('/admin/settings');
    const res = await web.post('/admin/settings', { ...FORM, registrations_mode: 'none', closed_registrations_message: '<p>Full for now.</p>' }, page.body);
    expect(res.statusCode).toBe(303);
    expect(await eventually(async () => (await instanceOf(b, 'v2')).registrations.enabled, false, 1000)).toBe(false);
    expect((await instanceOf(b, 'v2')).registrations.message).toContain('Full for now.');
    const token = await appToken(b.app, client);
    const join = await b.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: bearer(token), payload: { username: 'latecomer', email: 'late@example.com', password: 'pw-latecomer-secret', agreement: true, locale: 'en' } });
    expect(join.statusCode).toBe(403);
    expect(join.json()).toEqual({ error: 'Registrations are closed' });
  });

  it('wrong values are refused field by field with 422, and nothing is stored', async () => {
    const web = await signedIn(owner);
    const before = await readServerSettings(a.ctx.db);
    const page = await web.get('/admin/settings');
    const res = await web.post('/admin/settings', {
      ...FORM, site_title: '  ', site_contact_email: 'not an address', site_contact_username: 'nobody_here', languages: 'en, xx',
      status_max_characters: 'many', media_image_max_mb: '100000', registrations_mode: 'sometimes',
    }, page.body);
    expect(res.statusCode).toBe(422);
    await expectValidHtml(res.body, 'refused settings');
    for (const message of ['The title may not be empty.', 'not an e-mail address', 'no account named nobody_here', 'Not an ISO 639 language code: xx', 'The character limit must be a whole number', 'The image size limit must be a whole number', 'Sign-ups must be open']) {
      expect(res.body).toContain(message);
    }
    // What was typed stays in the form.
    expect(res.body).toContain('value="not an address"');
    expect(await readServerSettings(a.ctx.db)).toEqual(before);
  });

  it('the content cache retention period is set here and reaches the other instance; a wrong one is refused', async () => {
    const web = await signedIn(owner);
    let page = await web.get('/admin/settings');
    expect(page.body).toContain('id="content-cache-retention-days"');
    expect((await web.post('/admin/settings', { ...FORM, content_cache_retention_days: '45' }, page.body)).statusCode).toBe(303);
    expect(a.ctx.config.contentCacheRetentionDays).toBe(45);
    expect(await eventually(async () => b.ctx.config.contentCacheRetentionDays, 45, 1000)).toBe(45);
    expect((await readServerSettings(a.ctx.db)).get('content_cache_retention_period')).toBe(45);
    page = await web.get('/admin/settings');
    expect(page.body).toContain('value="45"');
    const refused = await web.post('/admin/settings', { ...FORM, content_cache_retention_days: 'forever' }, page.body);
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('The content cache retention period must be a whole number from 0 to 36500.');
    // A form without the field leaves it as it is.
    expect((await web.post('/admin/settings', FORM, page.body)).statusCode).toBe(303);
    expect(a.ctx.config.contentCacheRetentionDays).toBe(45);
    expect((await web.post('/admin/settings', { ...FORM, content_cache_retention_days: '0' }, page.body)).statusCode).toBe(303);
    expect(a.ctx.config.contentCacheRetentionDays).toBe(0);
  });

  it('needs manage_settings: a moderator gets 403, a stranger is sent to sign in, a form without its token is refused', async () => {
    const web = await signedIn(moderator);
    expect((await web.get('/admin/settings')).statusCode).toBe(403);
    const own = await web.get('/settings/profile');
    expect((await web.post('/admin/settings', { ...FORM, site_title: 'Taken Over' }, own.body)).statusCode).toBe(403);
    const stranger = new WebClient(a.app);
    const away = await stranger.get('/admin/settings');
    expect(away.statusCode).toBe(303);
    expect(away.headers.location).toBe('/auth/sign_in?return_to=%2Fadmin%2Fsettings');
    const admin = await signedIn(owner);
    await admin.get('/admin/settings');
    expect((await admin.post('/admin/settings', { ...FORM, site_title: 'No Token' })).statusCode).toBe(403);
    // A form missing fields is refused as a whole, not a change.
    const page = await admin.get('/admin/settings');
    expect((await admin.post('/admin/settings', { site_title: 'Half A Form' }, page.body)).statusCode).toBe(422);
    expect((await readServerSettings(a.ctx.db)).get('site_title')).toBe('Settled Place');
  });

  it('in Chromium: passes axe; without scripts, saving a change shows the notice', async () => {
    const withScripts = await signedInContext(browser, a.url, owner, true);
    try {
      await withScripts.page.goto(`${a.url}/admin/settings`);
      await expectAccessible(withScripts.page, 'settings');
    } finally {
      await withScripts.context.close();
    }
    const { context, page } = await signedInContext(browser, a.url, owner, false);
    try {
      await page.goto(`${a.url}/admin/settings`);
      await page.fill('#site-title', 'Browser Title');
      await page.check('#registrations-open');
      await Promise.all([page.waitForURL(/notice=saved/), page.click('form[action="/admin/settings"] button[type=submit]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('The settings are saved');
      expect(await page.inputValue('#site-title')).toBe('Browser Title');
      expect(await eventually(async () => (await instanceOf(b, 'v1')).title, 'Browser Title', 1000)).toBe('Browser Title');
      expect((await instanceOf(b, 'v1')).registrations).toBe(true);
    } finally {
      await context.close();
    }
  }, 60_000);
});
