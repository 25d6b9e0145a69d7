import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import yauzl from 'yauzl';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { eventually } from '../helpers/eventually.ts';
import { buildAccountArchive, expireAccountArchives, setArchivePartBytes } from '../../jobs/account-archive.ts';
import { archivePartKey } from '../../services/exports.ts';

// Exports from /settings/export: Mastodon's CSV files, and the archive of one's posts and media made by a job.
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- documents read back

let s: TestServer;
let eve: TestUser;
let fay: TestUser;
let gus: TestUser;
let browser: WebClient;
let fayBrowser: WebClient;
let remoteId: string;
let fayStatus: Json;
let mediaId: string;

const api = (user: TestUser, method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
  s.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });

async function signedIn(user: TestUser): Promise<WebClient> {
  const b = new WebClient(s.app);
  const res = await b.signIn(user.email, user.password);
  expect(res.statusCode, res.body).toBe(303);
  return b;
}

/** The entries of a zip, by name. */
function unzip(data: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(data, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const entries = new Map<string, Buffer>();
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            entries.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
          stream.on('error', reject);
        });
      });
      zip.on('end', () => resolve(entries));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

beforeAll(async () => {
  s = await startTestServer();
  [eve, fay, gus] = await registerUsers(s.app, 'eve', 'fay', 'gus');
  // A remote account, as federation would have stored it (followed and muted below without asking its server).
  remoteId = (await s.ctx.db.query(
    `INSERT INTO accounts (username, domain, uri) VALUES ('Rita', 'remote.example', 'https://remote.example/users/rita') RETURNING id`,
  )).rows[0].id;

  expect((await api(eve, 'POST', `/api/v1/accounts/${fay.id}/follow`, { reblogs: false, notify: true, languages: ['en', 'de'] })).statusCode).toBe(200);
  await s.ctx.db.query(`INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2)`, [eve.id, remoteId]);
  await s.ctx.db.query(`UPDATE accounts SET following_count = following_count + 1 WHERE id = $1`, [eve.id]);
  expect((await api(fay, 'POST', `/api/v1/accounts/${eve.id}/follow`)).statusCode).toBe(200);
  const list = (await api(eve, 'POST', '/api/v1/lists', { title: 'Friends, "close" ones' })).json();
  expect((await api(eve, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [fay.id] })).statusCode).toBe(200);
  expect((await api(eve, 'POST', `/api/v1/accounts/${gus.id}/block`)).statusCode).toBe(200);
  await s.ctx.db.query(`INSERT INTO mutes (account_id, target_account_id, hide_notifications) VALUES ($1, $2, false)`, [eve.id, remoteId]);
  // A mute that ran out is not exported.
  await s.ctx.db.query(`INSERT INTO mutes (account_id, target_account_id, expires_at) VALUES ($1, $2, now() - interval '1 minute')`, [eve.id, fay.id]);
  expect((await api(eve, 'POST', '/api/v1/domain_blocks', { domain: 'spam.example' })).statusCode).toBe(200);
  fayStatus = (await api(fay, 'POST', '/api/v1/statuses', { status: 'Fay says hello' })).json();
  expect((await api(eve, 'POST', `/api/v1/statuses/${fayStatus.id}/bookmark`)).statusCode).toBe(200);
  expect((await api(eve, 'POST', `/api/v1/statuses/${fayStatus.id}/favourite`)).statusCode).toBe(200);

  // Eve's own posts: one with a picture, one reply, one boost.
  const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a6' } }).png().toBuffer();
  const form = await multipart({ file: { data: png, filename: 'pic.png', type: 'image/png' }, description: 'Green' });
  const upload = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(eve.token), ...form.headers }, payload: form.payload });
  expect(upload.statusCode, upload.body).toBeLessThan(300);
  mediaId = upload.json().id;
  expect(await eventually(async () => (await api(eve, 'GET', `/api/v1/media/${mediaId}`)).statusCode, 200, 10_000)).toBe(200);
  expect((await api(eve, 'POST', '/api/v1/statuses', { status: 'A green picture', media_ids: [mediaId] })).statusCode).toBe(200);
  expect((await api(eve, 'POST', '/api/v1/statuses', { status: 'Hello to you', in_reply_to_id: fayStatus.id, visibility: 'unlisted' })).statusCode).toBe(200);
  expect((await api(eve, 'POST', `/api/v1/statuses/${fayStatus.id}/reblog`)).statusCode).toBe(200);

  const avatarForm = await multipart({ avatar: { data: png, filename: 'me.png', type: 'image/png' } });
  const avatar = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { ...bearer(eve.token), ...avatarForm.headers }, payload: avatarForm.payload });
  expect(avatar.statusCode, avatar.body).toBe(200);

  [browser, fayBrowser] = await Promise.all([signedIn(eve), signedIn(fay)]);
}, 60_000);
afterAll(async () => {
  setArchivePartBytes(undefined);
  await s?.close();
});

describe('the export page', () => {
  it('shows what the account holds, with a CSV link for each list', async () => {
    const page = await browser.get('/settings/export');
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    const row = (label: string) => new RegExp(`<th scope="row">${label}</th><td>(\\d+)</td>`).exec(page.body)?.[1];
    expect({
      media: row('Media files'), posts: row('Posts'), follows: row('Follows'), followers: row('Followers'), lists: row('Lists'),
      blocks: row('You block'), mutes: row('You mute'), domains: row('Domains you block'), bookmarks: row('Bookmarks'),
    }).toEqual({ media: '1', posts: '3', follows: '2', followers: '1', lists: '1', blocks: '1', mutes: '1', domains: '1', bookmarks: '1' });
    for (const name of ['follows', 'followers', 'lists', 'blocks', 'mutes', 'domain_blocks', 'bookmarks']) expect(page.body).toContain(`href="/settings/exports/${name}.csv"`);
    expect(page.body).toContain('aria-current="page"');
  });

  it('sends someone signed out to sign in, the page and the files alike', async () => {
    const anonymous = new WebClient(s.app);
    for (const url of ['/settings/export', '/settings/exports/follows.csv', '/settings/exports/archives/1']) {
      const res = await anonymous.get(url);
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`/auth/sign_in?return_to=${encodeURIComponent(url)}`);
    }
  });
});

describe('CSV files in Mastodon\'s formats', () => {
  const csv = async (name: string, client = browser) => {
    const res = await client.get(`/settings/exports/${name}.csv`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    return { body: res.body, disposition: res.headers['content-disposition'] };
  };

  it('follows: a header, then each account with its boosts, notify and languages, newest first', async () => {
    const { body, disposition } = await csv('follows');
    expect(disposition).toBe('attachment; filename="following_accounts.csv"');
    expect(body).toBe([
      'Account address,Show boosts,Notify on new posts,Languages',
      'Rita@remote.example,true,false,',
      'fay@test.local,false,true,"en, de"',
      '',
    ].join('\n'));
  });

  it('followers, blocks, domain blocks: one address or domain a line, no header', async () => {
    expect((await csv('followers')).body).toBe('fay@test.local\n');
    expect((await csv('blocks')).body).toBe('gus@test.local\n');
    expect((await csv('domain_blocks')).body).toBe('spam.example\n');
  });

  it('mutes with their notification setting, lists by title, bookmarks by status URI', async () => {
    expect((await csv('mutes')).body).toBe('Account address,Hide notifications\nRita@remote.example,false\n');
    expect((await csv('lists')).body).toBe('"Friends, ""close"" ones",fay@test.local\n');
    expect((await csv('bookmarks')).body).toBe(`${s.config.publicUrl}/users/fay/statuses/${fayStatus.id}\n`);
  });

  it('reads storage a page at a time: more rows than a page come out whole and in order', async () => {
    // 1,203 domain blocks: three pages of 500 and a short one.
    await s.ctx.db.query(
      `INSERT INTO account_domain_blocks (account_id, domain) SELECT $1, 'd' || lpad(n::text, 4, '0') || '.example' FROM generate_series(1, 1203) n`, [gus.id],
    );
    const gusBrowser = await signedIn(gus);
    const lines = (await csv('domain_blocks', gusBrowser)).body.trimEnd().split('\n');
    expect(lines.length).toBe(1203);
    expect(new Set(lines).size).toBe(1203);
    expect(lines[0]).toBe('d1203.example'); // newest first
    expect(lines.at(-1)).toBe('d0001.example');
  });

  it('knows no other file', async () => {
    expect((await browser.get('/settings/exports/passwords.csv')).statusCode).toBe(404);
  });
});

describe('the archive', () => {
  const archiveRows = async (accountId: string) => (await s.ctx.db.query(
    `SELECT id, parts, size_bytes::int AS size, key_prefix, ready_at, expires_at FROM account_archives WHERE account_id = $1 ORDER BY id`, [accountId],
  )).rows;

  it('is asked for on the page, built by a job in parts, and offered for download as one zip', async () => {
    setArchivePartBytes(2048); // small parts, so that even this archive is stored in several
    const page = await browser.get('/settings/export');
    expect(page.body).toContain('Request your archive');
    const res = await browser.post('/settings/export', {}, page.body);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/settings/export?notice=archive_requested');
    const ready = await eventually(async () => (await archiveRows(eve.id))[0]?.ready_at != null, true, 20_000);
    expect(ready).toBe(true);
    const [archive] = await archiveRows(eve.id);
    expect(archive.parts).toBeGreaterThan(1);
    expect(archive.expires_at.getTime() - archive.ready_at.getTime()).toBe(7 * 24 * 3_600_000);
    // The job's outbox row is gone; the delayed expiry's is there, waiting for its time.
    const outboxKinds = async () => (await s.ctx.db.query(`SELECT kind FROM outbox WHERE kind LIKE '%AccountArchive%' ORDER BY id`)).rows.map((r) => r.kind).join();
    expect(await eventually(outboxKinds, 'expireAccountArchives', 5000)).toBe('expireAccountArchives');

    const listed = await browser.get('/settings/export');
    expect(listed.body).toContain(`href="/settings/exports/archives/${archive.id}"`);
    expect(listed.body).not.toContain('<button type="submit">Request your archive</button>');
    const download = await browser.get(`/settings/exports/archives/${archive.id}`);
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('application/zip');
    expect(download.headers['content-disposition']).toMatch(/^attachment; filename="archive-\d{14}-\d+\.zip"$/);
    expect(download.rawPayload.length).toBe(archive.size);

    const entries = await unzip(download.rawPayload);
    const media = (await s.ctx.db.query(`SELECT original_key FROM media_attachments WHERE id = $1`, [mediaId])).rows[0].original_key as string;
    const avatarKey = (await s.ctx.db.query(`SELECT avatar_file FROM accounts WHERE id = $1`, [eve.id])).rows[0].avatar_file as string;
    const avatarName = `avatar${avatarKey.slice(avatarKey.lastIndexOf('.'))}`;
    expect([...entries.keys()].sort()).toEqual(['actor.json', avatarName, 'bookmarks.json', 'likes.json', media, 'outbox.json'].sort());
    expect(entries.get(avatarName)!.equals((await s.ctx.fileHost.get(avatarKey))!)).toBe(true);
    expect(entries.get(media)!.equals((await s.ctx.fileHost.get(media))!)).toBe(true);

    const outboxJson: Json = JSON.parse(entries.get('outbox.json')!.toString());
    expect(outboxJson).toMatchObject({ id: 'outbox.json', type: 'OrderedCollection', totalItems: 3 });
    expect(outboxJson['@context']).toBeTruthy();
    const items: Json[] = outboxJson.orderedItems;
    expect(items.map((i) => i.type)).toEqual(['Announce', 'Create', 'Create']); // newest first
    expect(items[0]!.object).toBe(`${s.config.publicUrl}/users/fay/statuses/${fayStatus.id}`);
    const [reply, picture] = [items[1]!, items[2]!];
    expect(reply.object).toMatchObject({ type: 'Note', content: expect.stringContaining('Hello to you'), inReplyTo: `${s.config.publicUrl}/users/fay/statuses/${fayStatus.id}` });
    expect(reply.actor).toBe(`${s.config.publicUrl}/users/eve`);
    expect(picture.object.content).toContain('A green picture');
    const attachment = [picture.object.attachment].flat()[0];
    expect(attachment).toMatchObject({ url: media, name: 'Green' });
    // Rendered as federation renders a Create: the same Note the outbox collection serves.
    expect(picture.id).toBe(`${picture.object.id}/activity`);

    const actor: Json = JSON.parse(entries.get('actor.json')!.toString());
    expect(actor).toMatchObject({ type: 'Person', preferredUsername: 'eve', outbox: 'outbox.json', likes: 'likes.json', bookmarks: 'bookmarks.json', icon: { url: avatarName } });
    const statusUri = `${s.config.publicUrl}/users/fay/statuses/${fayStatus.id}`;
    expect(JSON.parse(entries.get('likes.json')!.toString())).toMatchObject({ id: 'likes.json', type: 'OrderedCollection', totalItems: 1, orderedItems: [statusUri] });
    expect(JSON.parse(entries.get('bookmarks.json')!.toString())).toMatchObject({ id: 'bookmarks.json', totalItems: 1, orderedItems: [statusUri] });
  });

  it('may be asked for once a week: a second request is refused and queues nothing', async () => {
    const page = await browser.get('/settings/export');
    expect(page.body).toContain('You can ask for the next one after');
    expect(page.body).not.toContain('action="/settings/export"');
    // A form kept open in another tab still posts: refused.
    const res = await browser.post('/settings/export', {}, (await browser.get('/settings/profile')).body);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('once every 7 days');
    expect(await archiveRows(eve.id)).toHaveLength(1);
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'buildAccountArchive'`)).rows[0].n).toBe(0);
  });

  it('is refused without the form token', async () => {
    const res = await fayBrowser.post('/settings/export', {});
    expect(res.statusCode).toBe(403);
    expect(await archiveRows(fay.id)).toHaveLength(0);
  });

  it('is downloaded by its owner only', async () => {
    const [archive] = await archiveRows(eve.id);
    const other = await fayBrowser.get(`/settings/exports/archives/${archive.id}`);
    expect(other.statusCode).toBe(404);
    expect(other.headers['content-type']).toContain('text/html');
    expect((await browser.get('/settings/exports/archives/99999999')).statusCode).toBe(404);
    expect((await browser.get('/settings/exports/archives/not-an-id')).statusCode).toBe(404);
  });

  it('starts over after a failed attempt, removing what the attempt stored', async () => {
    // A request made by hand (as the page would), built by calling the job: the file host fails on the third part.
    setArchivePartBytes(1024);
    const archiveId = (await s.ctx.db.query(`INSERT INTO account_archives (account_id) VALUES ($1) RETURNING id`, [fay.id])).rows[0].id;
    const put = s.ctx.fileHost.put.bind(s.ctx.fileHost);
    let puts = 0;
    s.ctx.fileHost.put = async (key, data, type) => {
      if (key.startsWith('archives/') && ++puts === 3) throw new Error('file host away');
      return put(key, data, type);
    };
    try {
      await expect(buildAccountArchive(s.ctx, archiveId)).rejects.toThrow('file host away');
    } finally {
      s.ctx.fileHost.put = put;
    }
    const [failed] = await archiveRows(fay.id);
    expect(failed.ready_at).toBeNull();
    expect(failed.parts).toBe(3);
    expect(await s.ctx.fileHost.get(archivePartKey(failed.key_prefix, 0))).not.toBeNull();

    await buildAccountArchive(s.ctx, archiveId);
    const [built] = await archiveRows(fay.id);
    expect(built.ready_at).not.toBeNull();
    expect(built.key_prefix).not.toBe(failed.key_prefix);
    for (let n = 0; n < 3; n++) expect(await s.ctx.fileHost.get(archivePartKey(failed.key_prefix, n))).toBeNull();
    // Run again (a job queued twice), it leaves the archive as it is.
    await buildAccountArchive(s.ctx, archiveId);
    expect((await archiveRows(fay.id))[0].key_prefix).toBe(built.key_prefix);
    const entries = await unzip((await fayBrowser.get(`/settings/exports/archives/${archiveId}`)).rawPayload);
    expect(JSON.parse(entries.get('outbox.json')!.toString()).orderedItems[0].object.content).toContain('Fay says hello');
  });

  it('is removed, files and all, once its week is over', async () => {
    const [archive] = await archiveRows(eve.id);
    await s.ctx.db.query(`UPDATE account_archives SET expires_at = now() - interval '1 second' WHERE id = $1`, [archive.id]);
    // Past its time it is no longer offered, even before the clean-up ran.
    expect((await browser.get(`/settings/exports/archives/${archive.id}`)).statusCode).toBe(404);
    // A request whose job gave up a week ago goes too, with what its attempt stored.
    await s.ctx.db.query(
      `INSERT INTO account_archives (account_id, key_prefix, parts, created_at) VALUES ($1, 'archives/given-up', 1, now() - interval '8 days')`, [gus.id],
    );
    await s.ctx.fileHost.put(archivePartKey('archives/given-up', 0), Buffer.from('PK'), 'application/zip');
    await expireAccountArchives(s.ctx);
    expect(await archiveRows(eve.id)).toHaveLength(0);
    expect(await archiveRows(gus.id)).toHaveLength(0);
    expect(await s.ctx.fileHost.get(archivePartKey('archives/given-up', 0))).toBeNull();
    for (let n = 0; n < archive.parts; n++) expect(await s.ctx.fileHost.get(archivePartKey(archive.key_prefix, n))).toBeNull();
    // Fay's archive, still in its week, stays.
    expect(await archiveRows(fay.id)).toHaveLength(1);
  });

  it('pages through an account with more posts than a page, newest first, each once', async () => {
    await s.ctx.db.query(
      `INSERT INTO statuses (account_id, text, content, visibility) SELECT $1, 'n' || n, '<p>n' || n || '</p>', 'public' FROM generate_series(1, 230) n`, [gus.id],
    );
    const archiveId = (await s.ctx.db.query(`INSERT INTO account_archives (account_id) VALUES ($1) RETURNING id`, [gus.id])).rows[0].id;
    setArchivePartBytes(undefined);
    await buildAccountArchive(s.ctx, archiveId);
    const [archive] = await archiveRows(gus.id);
    expect(archive.parts).toBe(1);
    const zip = (await s.ctx.fileHost.get(archivePartKey(archive.key_prefix, 0)))!;
    const outbox: Json = JSON.parse((await unzip(zip)).get('outbox.json')!.toString());
    expect(outbox.totalItems).toBe(230);
    const contents = outbox.orderedItems.map((i: Json) => i.object.content);
    expect(contents[0]).toBe('<p>n230</p>');
    expect(contents.at(-1)).toBe('<p>n1</p>');
    expect(new Set(contents).size).toBe(230);
  });
});
