// The custom emoji page (/admin/custom_emojis): an operator with manage_custom_emojis uploads this server's emoji,
// shows or hides them in the picker, disables, enables and removes them, and copies another server's into the local
// set; what the page does is what /api/v1/custom_emojis and posts then show. Others get 403.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { csrfOf, WebClient, signedInClient } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signedInContext } from '../helpers/browser-session.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { storeRemoteEmojis } from '../../services/custom-emojis.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';

let s: TestServer & { url: string };
let origin: Server;
let originUrl: string;
let browser: TestBrowser;
let owner: TestUser;
let moderator: TestUser;

const png = (color = '#f80') => sharp({ create: { width: 32, height: 32, channels: 4, background: color } }).png().toBuffer();

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix, config: s.config, fileHost: s.ctx.fileHost });
  return lines;
}
const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(s.app, user);
async function upload(web: WebClient, page: string, fields: Record<string, string>, image?: Buffer, filename = 'e.png') {
  const body = await multipart({ _csrf: csrfOf(page), ...fields, ...(image ? { image: { data: image, filename, type: 'image/png' } } : {}) });
  const res = await s.app.inject({ method: 'POST', url: '/admin/custom_emojis', payload: body.payload, headers: { ...body.headers, accept: 'text/html', cookie: web.jar.header() } });
  web.jar.take(res.headers['set-cookie']);
  return res;
}
const picker = async () => ((await s.app.inject({ method: 'GET', url: '/api/v1/custom_emojis' })).json() as { shortcode: string; category: string | null }[]);
async function emoji(shortcode: string, domain: string | null = null) {
  const { rows } = await s.ctx.db.query('SELECT id::text, disabled, visible_in_picker, category FROM custom_emojis WHERE shortcode = $1 AND domain IS NOT DISTINCT FROM $2', [shortcode, domain]);
  return rows[0] as { id: string; disabled: boolean; visible_in_picker: boolean; category: string | null } | undefined;
}

beforeAll(async () => {
  s = await startListeningServer({ ALLOW_PRIVATE_ADDRESSES: 'true' });
  const image = await png('#0a0');
  origin = createServer((req, res) => {
    if (req.url === '/emoji/blobcat.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(image);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
  const client = await createApp(s.app);
  [owner, moderator] = await Promise.all(['emojiowner', 'emojimod'].map((u) => registerUser(s.app, client, u))) as [TestUser, TestUser];
  await cli('accounts', 'role', 'emojiowner', 'Admin');
  await cli('accounts', 'role', 'emojimod', 'Moderator');
  // Other servers' emoji, stored as the inbox stores the Emoji tags of their posts.
  await storeRemoteEmojis({ db: s.ctx.db, versions: s.ctx.versions }, [
    { shortcode: 'blobcat', domain: 'cats.example', uri: 'https://cats.example/emojis/1', image_remote_url: `${originUrl}/emoji/blobcat.png`, updated: null },
    { shortcode: 'blobdog', domain: 'dogs.example', uri: 'https://dogs.example/emojis/1', image_remote_url: `${originUrl}/emoji/missing.png`, updated: null },
  ]);
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
  await new Promise((resolve) => origin?.close(resolve));
});

describe('custom emoji page', () => {
  it('uploads an emoji with its category; hides it from the picker, disables, enables and removes it', async () => {
    const web = await signedIn(owner);
    let page = await web.get('/admin/custom_emojis');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/admin/custom_emojis');
    const added = await upload(web, page.body, { shortcode: 'party', category: 'Fun', visible_in_picker: '1' }, await png());
    expect(added.statusCode).toBe(303);
    expect(added.headers.location).toBe('/admin/custom_emojis?notice=added');
    page = await web.get(added.headers.location as string);
    expect(page.body).toContain('The emoji is added.');
    expect(page.body).toContain('alt=":party:"');
    expect(await picker()).toContainEqual(expect.objectContaining({ shortcode: 'party', category: 'Fun' }));

    const { id } = (await emoji('party'))!;
    const unlisted = await web.post(`/admin/custom_emojis/${id}/unlist`, { back: '/admin/custom_emojis?shortcode=par' }, page.body);
    expect(unlisted.statusCode).toBe(303);
    expect(unlisted.headers.location).toBe('/admin/custom_emojis?shortcode=par&notice=unlisted');
    expect((await picker()).map((e) => e.shortcode)).not.toContain('party');
    expect((await emoji('party'))!.visible_in_picker).toBe(false);
    expect((await web.post(`/admin/custom_emojis/${id}/list`, {}, page.body)).statusCode).toBe(303);
    expect((await picker()).map((e) => e.shortcode)).toContain('party');

    expect((await web.post(`/admin/custom_emojis/${id}/disable`, {}, page.body)).statusCode).toBe(303);
    expect((await emoji('party'))!.disabled).toBe(true);
    expect((await picker()).map((e) => e.shortcode)).not.toContain('party');
    expect((await web.post(`/admin/custom_emojis/${id}/enable`, {}, page.body)).statusCode).toBe(303);
    expect((await emoji('party'))!.disabled).toBe(false);

    // Search by shortcode.
    expect((await upload(web, page.body, { shortcode: 'other_one', category: '', visible_in_picker: '1' }, await png('#00f'))).statusCode).toBe(303);
    const found = await web.get('/admin/custom_emojis?shortcode=part');
    expect(found.body).toContain('alt=":party:"');
    expect(found.body).not.toContain('alt=":other_one:"');

    expect((await web.post(`/admin/custom_emojis/${id}/remove`, {}, page.body)).statusCode).toBe(303);
    expect(await emoji('party')).toBeUndefined();
    expect((await web.post(`/admin/custom_emojis/${id}/remove`, {}, page.body)).statusCode).toBe(404);
    expect((await web.post('/admin/custom_emojis/not-an-id/disable', {}, page.body)).statusCode).toBe(404);
    // Each action is in the audit log as the operator's, newest first.
    const logged = await actionLogsPage(s.ctx.db, { targetType: 'CustomEmoji' }, { limit: 20 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([
      [owner.id, 'destroy', 'party'], [owner.id, 'create', 'other_one'], [owner.id, 'enable', 'party'], [owner.id, 'disable', 'party'],
      [owner.id, 'update', 'party'], [owner.id, 'update', 'party'], [owner.id, 'create', 'party'],
    ]);
  });

  it('refuses a bad upload with 422 keeping the shortcode and category', async () => {
    const web = await signedIn(owner);
    const page = await web.get('/admin/custom_emojis');
    const bad = await upload(web, page.body, { shortcode: 'bad code', category: 'Kept category' }, await png());
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('is not a shortcode');
    expect(bad.body).toContain('value="bad code"');
    expect(bad.body).toContain('value="Kept category"');
    await expectValidHtml(bad.body, 'refused emoji');
    const notImage = await upload(web, page.body, { shortcode: 'notimage' }, Buffer.from('hello'), 'x.png');
    expect(notImage.statusCode).toBe(422);
    expect(notImage.body).toContain('not an image');
    expect((await upload(web, page.body, { shortcode: 'nofile' })).statusCode).toBe(422);
    expect((await upload(web, page.body, { shortcode: 'other_one' }, await png())).statusCode).toBe(422);
    expect(await emoji('notimage')).toBeUndefined();
    expect(await emoji('bad code')).toBeUndefined();
  });

  it("lists other servers' emoji by domain; disables one and copies one to this server's set", async () => {
    const web = await signedIn(owner);
    const all = await web.get('/admin/custom_emojis?origin=remote');
    expect(all.body).toContain('alt=":blobcat@cats.example:"');
    expect(all.body).toContain('alt=":blobdog@dogs.example:"');
    const cats = await web.get('/admin/custom_emojis?origin=remote&by_domain=CATS.example');
    expect(cats.body).toContain('alt=":blobcat@cats.example:"');
    expect(cats.body).not.toContain('blobdog');
    await expectValidHtml(cats.body, 'remote emoji');

    const blobcat = (await emoji('blobcat', 'cats.example'))!;
    const copied = await web.post(`/admin/custom_emojis/${blobcat.id}/copy`, { back: '/admin/custom_emojis?origin=remote&by_domain=cats.example' }, cats.body);
    expect(copied.statusCode).toBe(303);
    expect(copied.headers.location).toBe('/admin/custom_emojis?origin=remote&by_domain=cats.example&notice=copied');
    expect((await picker()).map((e) => e.shortcode)).toContain('blobcat');
    // Copying again: the shortcode is taken here.
    const again = await web.post(`/admin/custom_emojis/${blobcat.id}/copy`, {}, cats.body);
    expect(again.statusCode).toBe(422);
    expect(again.body).toContain('already has an emoji :blobcat:');
    // An image that cannot be had copies nothing.
    const blobdog = (await emoji('blobdog', 'dogs.example'))!;
    const missing = await web.post(`/admin/custom_emojis/${blobdog.id}/copy`, {}, cats.body);
    expect(missing.statusCode).toBe(422);
    expect(await emoji('blobdog')).toBeUndefined();
    // Another server's emoji cannot be removed or put in the picker, only disabled.
    expect((await web.post(`/admin/custom_emojis/${blobdog.id}/remove`, {}, cats.body)).statusCode).toBe(422);
    expect((await web.post(`/admin/custom_emojis/${blobdog.id}/list`, {}, cats.body)).statusCode).toBe(422);
    expect((await web.post(`/admin/custom_emojis/${blobdog.id}/disable`, {}, cats.body)).statusCode).toBe(303);
    expect((await emoji('blobdog', 'dogs.example'))!.disabled).toBe(true);
    // A return address elsewhere is not followed.
    const away = await web.post(`/admin/custom_emojis/${blobdog.id}/enable`, { back: 'https://elsewhere.example/' }, cats.body);
    expect(away.headers.location).toBe('/admin/custom_emojis?notice=enabled');
    const logged = await actionLogsPage(s.ctx.db, { targetType: 'CustomEmoji' }, { limit: 3 });
    expect(logged.map((r) => [r.account_id, r.action, r.human_identifier])).toEqual([
      [owner.id, 'enable', 'blobdog@dogs.example'], [owner.id, 'disable', 'blobdog@dogs.example'], [owner.id, 'copy', 'blobcat'],
    ]);
  });

  it('needs manage_custom_emojis: a moderator gets 403 and changes nothing; a form without its token is refused', async () => {
    const web = await signedIn(moderator);
    expect((await web.get('/admin/custom_emojis')).statusCode).toBe(403);
    const own = await web.get('/settings/profile');
    expect((await upload(web, own.body, { shortcode: 'modemoji' }, await png())).statusCode).toBe(403);
    const target = (await emoji('other_one'))!;
    expect((await web.post(`/admin/custom_emojis/${target.id}/remove`, {}, own.body)).statusCode).toBe(403);
    expect(await emoji('modemoji')).toBeUndefined();
    expect(await emoji('other_one')).toBeDefined();
    const admin = await signedIn(owner);
    await admin.get('/admin/custom_emojis');
    expect((await admin.post(`/admin/custom_emojis/${target.id}/disable`, {})).statusCode).toBe(403);
    expect((await emoji('other_one'))!.disabled).toBe(false);
  });

  it('in Chromium: passes axe; without scripts, an emoji is uploaded and disabled', async () => {
    const withScripts = await signedInContext(browser, s.url, owner, true);
    try {
      await withScripts.page.goto(`${s.url}/admin/custom_emojis`);
      await expectAccessible(withScripts.page, 'custom emojis');
      await withScripts.page.goto(`${s.url}/admin/custom_emojis?origin=remote`);
      await expectAccessible(withScripts.page, 'remote custom emojis');
    } finally {
      await withScripts.context.close();
    }
    const { context, page } = await signedInContext(browser, s.url, owner, false);
    try {
      await page.goto(`${s.url}/admin/custom_emojis`);
      await page.fill('#emoji-shortcode', 'browser_made');
      await page.setInputFiles('#emoji-image', { name: 'b.png', mimeType: 'image/png', buffer: await png('#909') });
      await Promise.all([page.waitForURL(/notice=added/), page.click('form[action="/admin/custom_emojis"] button[type=submit]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('The emoji is added.');
      await Promise.all([page.waitForURL(/notice=disabled/), page.click('button[aria-label="Disable :browser_made:"]')]);
      expect((await emoji('browser_made'))!.disabled).toBe(true);
    } finally {
      await context.close();
    }
  }, 60_000);
});
