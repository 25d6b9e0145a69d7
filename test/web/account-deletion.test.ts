import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { generate } from 'otplib';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { until } from '../helpers/instances.ts';
import { KEPT_FOR_MODERATION, namingColumnCount, rowsNaming } from '../helpers/leftovers.ts';
import { archivePartKey } from '../../services/exports.ts';

// /settings/delete: a person deletes their own account, as on Mastodon; everything of it goes but the
// account row, which keeps the name reserved.
let s: TestServer;
let gone: TestUser, pal: TestUser, other: TestUser, careful: TestUser;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  s = await startTestServer();
  // While the users are registered, the instance actor is asked for: that loads the federation and makes the
  // instance's key pairs, once, as the first follow's delivery or the first actor served would.
  [[gone, pal, other, careful]] = await Promise.all([
    registerUsers(s.app, 'gone', 'pal', 'other', 'careful'),
    s.app.inject({ method: 'GET', url: '/users/instance.actor', headers: { accept: 'application/activity+json' } }).then((res) => expect(res.statusCode, res.body).toBe(200)),
  ]);
});
afterAll(async () => s?.close());

const api = async (user: TestUser, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, status = 200): Promise<any> => {
  const res = await s.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.body ? res.json() : null;
};
const browserOf = async (user: TestUser) => {
  const browser = new WebClient(s.app);
  const res = await browser.signIn(user.email, user.password);
  expect(res.statusCode, res.body).toBe(303);
  return browser;
};
const userIdOf = async (accountId: string) =>
  (await s.ctx.db.query<{ id: string }>(`SELECT id::text FROM users WHERE account_id = $1`, [accountId])).rows[0]?.id ?? null;
const accountRow = async (id: string) => (await s.ctx.db.query(`SELECT * FROM accounts WHERE id = $1`, [id])).rows[0] as Json;
const deletionJobsLeft = async () =>
  (await s.ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'deleteAccount'`)).rows[0]!.n;

/** An uploaded picture, processed, with the file host's keys of its files. */
async function picture(user: TestUser): Promise<{ id: string; keys: string[] }> {
  const data = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#4a8' } }).jpeg().toBuffer();
  const form = await multipart({ file: { data, filename: 'p.jpg', type: 'image/jpeg' } });
  const res = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(user.token), ...form.headers }, payload: form.payload });
  expect([200, 202]).toContain(res.statusCode);
  const id = res.json().id as string;
  const row = await until(async () => (await s.ctx.db.query(`SELECT * FROM media_attachments WHERE id = $1`, [id])).rows[0] as Json,
    (r) => r.state === 'ready', 'the picture is processed');
  return { id, keys: [row.original_key, row.small_key].filter(Boolean) };
}

describe('deleting one\'s own account at /settings/delete', () => {
  it('asks to sign in first, and the form refuses a wrong password without changing anything', async () => {
    const anonymous = await new WebClient(s.app).get('/settings/delete');
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toContain('/auth/sign_in');

    const browser = await browserOf(gone);
    const page = await browser.get('/settings/delete');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('@gone');
    expect(page.body).not.toContain('name="otp_code"');
    // Without the form's token, nothing happens.
    const forged = await browser.post('/settings/delete', { current_password: gone.password });
    expect(forged.statusCode).toBe(403);
    const wrong = await browser.post('/settings/delete', { current_password: 'not-my-password' }, page.body);
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain('The current password is wrong.');
    expect((await accountRow(gone.id)).suspended_at).toBeNull();
    await api(gone, 'GET', '/api/v1/accounts/verify_credentials');
  });

  it('suspends and signs out at once, then removes everything of the account but its row; the name stays taken', async () => {
    // A full account: posts with media, a poll and an edit; follows both ways; favourites, boosts, bookmarks and a
    // reply of others on its posts; its own favourite and boost of another's post; lists, filters, mutes, blocks,
    // notes, markers, featured tags, a report, a conversation, a scheduled post, a domain block, a followed tag.
    const pic = await picture(gone);
    const post = await api(gone, 'POST', '/api/v1/statuses', { status: 'first #deletion post', media_ids: [pic.id] });
    await api(gone, 'PUT', `/api/v1/statuses/${post.id}`, { status: 'first #deletion post, edited', media_ids: [pic.id] });
    const poll = await api(gone, 'POST', '/api/v1/statuses', { status: 'a poll', poll: { options: ['yes', 'no'], expires_in: 3600 } });
    await api(gone, 'POST', `/api/v1/statuses/${post.id}/pin`);
    await api(gone, 'POST', `/api/v1/accounts/${pal.id}/follow`);
    await api(pal, 'POST', `/api/v1/accounts/${gone.id}/follow`);
    const palPost = await api(pal, 'POST', '/api/v1/statuses', { status: 'pal speaks' });
    await api(gone, 'POST', `/api/v1/statuses/${palPost.id}/favourite`);
    await api(gone, 'POST', `/api/v1/statuses/${palPost.id}/reblog`);
    await api(gone, 'POST', `/api/v1/statuses/${palPost.id}/bookmark`);
    await api(pal, 'POST', `/api/v1/statuses/${post.id}/favourite`);
    await api(pal, 'POST', `/api/v1/statuses/${post.id}/bookmark`);
    await api(pal, 'POST', `/api/v1/statuses/${post.id}/reblog`);
    await api(pal, 'POST', `/api/v1/polls/${poll.poll.id}/votes`, { choices: [0] });
    const reply = await api(pal, 'POST', '/api/v1/statuses', { status: '@gone nice', in_reply_to_id: post.id });
    await api(gone, 'POST', '/api/v1/statuses', { status: '@pal just us', visibility: 'direct' });
    // pal's answer stays in pal's conversation with it after the deletion.
    await api(pal, 'POST', '/api/v1/statuses', { status: '@gone sure', visibility: 'direct' });
    const list = await api(gone, 'POST', '/api/v1/lists', { title: 'friends' });
    await api(gone, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [pal.id] });
    await api(gone, 'POST', '/api/v2/filters', { title: 'no spoilers', context: ['home'], keywords_attributes: [{ keyword: 'spoiler' }] });
    await api(gone, 'POST', `/api/v1/accounts/${other.id}/mute`);
    await api(other, 'POST', `/api/v1/accounts/${gone.id}/block`);
    await api(gone, 'POST', `/api/v1/accounts/${pal.id}/note`, { comment: 'a friend' });
    await api(gone, 'POST', '/api/v1/markers', { home: { last_read_id: palPost.id } });
    await api(gone, 'POST', '/api/v1/featured_tags', { name: 'deletion' });
    await api(gone, 'POST', '/api/v1/reports', { account_id: other.id, comment: 'rude' });
    // A report about it naming a post of its own with a picture: kept, with the post, for the moderators.
    const reportedPic = await picture(gone);
    const reported = await api(gone, 'POST', '/api/v1/statuses', { status: 'buy now', media_ids: [reportedPic.id] });
    const report = await api(other, 'POST', '/api/v1/reports', { account_id: gone.id, status_ids: [reported.id], comment: 'spam' });
    // An archive of its posts, stored in parts on the file host.
    const archivePrefix = `archives/${gone.id}/deletion-test`;
    await s.ctx.db.query(`INSERT INTO account_archives (account_id, key_prefix, parts) VALUES ($1, $2, 2)`, [gone.id, archivePrefix]);
    for (const n of [0, 1]) await s.ctx.fileHost.put(archivePartKey(archivePrefix, n), Buffer.from(`part ${n}`), 'application/zip');
    await api(gone, 'POST', '/api/v1/statuses', { status: 'later', scheduled_at: new Date(Date.now() + 3600_000).toISOString() });
    await api(gone, 'POST', '/api/v1/domain_blocks', { domain: 'spam.example' });
    await api(gone, 'POST', '/api/v1/tags/deletion/follow');
    const palBefore = await api(pal, 'GET', `/api/v1/accounts/${pal.id}`);
    expect(palBefore.followers_count).toBe(1);
    expect(palBefore.following_count).toBe(1);
    // Notifications to it (pal's follow, favourite, boost, reply) and from it (its follow, favourite, boost of pal's).
    await until(async () => (await api(pal, 'GET', '/api/v1/notifications')).length as number, (n) => n >= 3, 'pal is notified by gone');
    const palTalks = async () => ((await api(pal, 'GET', '/api/v1/conversations')) as Json[]).flatMap((c) => c.accounts.map((a: Json) => a.id));
    await until(palTalks, (ids) => ids.includes(gone.id), 'pal\'s conversation shows gone');
    const userId = await userIdOf(gone.id);
    expect(Object.keys(await rowsNaming(s.ctx.db, gone.id, userId)).length).toBeGreaterThan(15);
    for (const key of pic.keys) expect(await s.ctx.fileHost.get(key)).not.toBeNull();

    const browser = await browserOf(gone);
    const page = await browser.get('/settings/delete');
    const done = await browser.post('/settings/delete', { current_password: gone.password }, page.body);
    expect([done.statusCode, done.headers.location]).toEqual([303, '/auth/done/account_deleted']);
    expect((await browser.get(done.headers.location as string)).body).toContain('Your account is being deleted');
    // Signed out: the page's session and the app's token are both refused at once.
    const after = await browser.get('/settings/profile');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toContain('/auth/sign_in');
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(gone.token) })).statusCode).toBe(401);
    expect((await new WebClient(s.app).signIn(gone.email, gone.password)).statusCode).not.toBe(303);
    // The actor is gone for good, and says so.
    const actor = await s.app.inject({ method: 'GET', url: '/users/gone', headers: { accept: 'application/activity+json' } });
    expect(actor.statusCode).toBe(410);
    // Its WebFinger too (Mastodon's WebfingerController answers 410 for an account suspended for good), by its
    // address and by its actor's id; an unknown name is still a 404.
    for (const resource of ['acct:gone@test.local', `${s.config.publicUrl}/users/gone`]) {
      const finger = await s.app.inject({ method: 'GET', url: `/.well-known/webfinger?resource=${encodeURIComponent(resource)}` });
      expect(finger.statusCode, resource).toBe(410);
    }
    expect((await s.app.inject({ method: 'GET', url: '/.well-known/webfinger?resource=acct:never@test.local' })).statusCode).toBe(404);

    await until(async () => (await deletionJobsLeft()) === 0 && Object.keys(await rowsNaming(s.ctx.db, gone.id, userId, KEPT_FOR_MODERATION)).length === 0,
      (ok) => ok, 'the deletion job removed every row naming the account', 20_000);
    expect(await rowsNaming(s.ctx.db, gone.id, userId, KEPT_FOR_MODERATION)).toEqual({});
    expect(await namingColumnCount(s.ctx.db)).toBeGreaterThan(30);
    // What Mastodon keeps for the moderators: the reports by and about it, and the reported post with its picture;
    // nothing else of it.
    expect((await s.ctx.db.query(`SELECT id::text FROM reports WHERE account_id = $1 OR target_account_id = $1 ORDER BY id`, [gone.id])).rows
      .map((r) => r.id)).toHaveLength(2);
    expect((await s.ctx.db.query(`SELECT id::text FROM statuses WHERE account_id = $1`, [gone.id])).rows.map((r) => r.id)).toEqual([reported.id]);
    for (const key of reportedPic.keys) expect(await s.ctx.fileHost.get(key)).not.toBeNull();
    const adminView = await s.ctx.db.query(`SELECT status_ids::text[] AS ids FROM reports WHERE id = $1`, [report.id]);
    expect(adminView.rows[0].ids).toEqual([reported.id]);
    // The reported post is out of timelines all the same.
    expect(((await api(pal, 'GET', '/api/v1/timelines/home')) as Json[]).map((h) => h.id)).not.toContain(reported.id);
    // Its archive's parts are gone from the file host with the row.
    for (const n of [0, 1]) expect(await s.ctx.fileHost.get(archivePartKey(archivePrefix, n))).toBeNull();
    // Its direct conversation with pal no longer shows it.
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM account_conversations WHERE account_id = $1`, [pal.id])).rows[0].n).toBeGreaterThan(0);
    expect(await palTalks()).not.toContain(gone.id);

    const row = await accountRow(gone.id);
    expect(row).toMatchObject({ username: 'gone', domain: null, display_name: '', note_html: '', fields: [], statuses_count: 0, followers_count: 0, following_count: 0 });
    expect(row.suspended_at).not.toBeNull();
    expect(row.deleted_at).not.toBeNull();
    for (const key of pic.keys) expect(await s.ctx.fileHost.get(key)).toBeNull();
    // Others' rows on its posts went with them, and the counts they moved are given back.
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM statuses WHERE id = ANY($1::bigint[])`, [[post.id, poll.id]])).rows[0].n).toBe(0);
    const palPostNow = await api(pal, 'GET', `/api/v1/statuses/${palPost.id}`);
    expect(palPostNow).toMatchObject({ favourites_count: 0, reblogs_count: 0 });
    expect(await api(pal, 'GET', `/api/v1/accounts/${pal.id}`)).toMatchObject({ followers_count: 0, following_count: 0 });
    expect((await api(pal, 'GET', '/api/v1/bookmarks')) as Json[]).toEqual([]);
    const replyNow = await api(pal, 'GET', `/api/v1/statuses/${reply.id}`);
    expect(replyNow.in_reply_to_id).toBeNull();
    const home = (await api(pal, 'GET', '/api/v1/timelines/home')) as Json[];
    expect(home.map((h) => h.account.id)).not.toContain(gone.id);
    expect(((await api(pal, 'GET', '/api/v1/notifications')) as Json[]).filter((n) => n.account.id === gone.id)).toEqual([]);

    // The name cannot be registered again.
    const client = await createApp(s.app);
    const signUp = await s.app.inject({
      method: 'POST', url: '/api/v1/accounts', headers: bearer(await appToken(s.app, client)),
      payload: { username: 'gone', email: 'another@example.com', password: 'another-password', agreement: true, locale: 'en' },
    });
    expect(signUp.statusCode).toBe(422);
    expect(signUp.json().details.username[0].error).toBe('ERR_TAKEN');
    // Its page is no more.
    expect((await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${gone.id}/statuses` })).json()).toEqual([]);
  });

  it('asks for the second factor when two-factor sign-in is on', async () => {
    const browser = await browserOf(careful);
    await browser.submit('/settings/two_factor', '/settings/two_factor/new', {});
    const setup = await browser.get('/settings/two_factor');
    const secret = /id="otp-secret">([A-Z2-7]+)</.exec(setup.body)![1]!;
    expect((await browser.post('/settings/two_factor', { code: await generate({ secret }), current_password: careful.password }, setup.body)).statusCode).toBe(303);
    const on = await browser.get('/settings/two_factor');

    const page = await browser.get('/settings/delete');
    expect(page.body).toContain('name="otp_code"');
    const noCode = await browser.post('/settings/delete', { current_password: careful.password }, page.body);
    expect(noCode.statusCode).toBe(422);
    const badCode = await browser.post('/settings/delete', { current_password: careful.password, otp_code: '000000' }, page.body);
    expect(badCode.statusCode).toBe(422);
    expect((await accountRow(careful.id)).suspended_at).toBeNull();
    // A recovery code stands for the app's code, as at sign-in (the enrolment code's time step is spent).
    const recovery = /<li>([0-9a-f]{10})<\/li>/.exec(on.body)![1]!;
    const done = await browser.post('/settings/delete', { current_password: careful.password, otp_code: recovery }, page.body);
    expect(done.statusCode, done.body).toBe(303);
    expect((await accountRow(careful.id)).deleted_at).not.toBeNull();
  });
});
