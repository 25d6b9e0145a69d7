// The instance's other endpoints (peers, activity, rules, about page, languages, trends, custom emojis, preferences),
// both instance entities with default settings and with every setting filled, the limits they announce checked
// against what the server enforces, the operators' `rules` commands, and masto's calls for each group.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { createRestAPIClient } from 'masto';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startListeningServer } from '../helpers/listen.ts';
import { authorizationCodeToken, bearer, createApp, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { instanceCacheKeys, weekStart } from '../../services/instance.ts';
import { defaultThumbnailSource, instanceThumbnail, makeThumbnail } from '../../services/instance-thumbnail.ts';
import { refreshTrends } from '../../services/trends.ts';
import { settingUpdatedAt } from '../../storage/instance.ts';
import { upsertRemoteAccount, markAccountGone, type AccountRow } from '../../storage/accounts.ts';
import { insertStatus, insertTags } from '../../storage/statuses.ts';
import { ConfigError, loadConfig } from '../../config.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

async function cli(server: TestServer, ...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, server.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(server.ctx.redis, server.config.redisPrefix, what));
  return lines;
}

async function get(server: TestServer, url: string, headers: Record<string, string> = {}) {
  const res = await server.app.inject({ method: 'GET', url, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res;
}
const getJson = async (server: TestServer, url: string, headers: Record<string, string> = {}): Promise<any> => (await get(server, url, headers)).json(); // eslint-disable-line @typescript-eslint/no-explicit-any

/** Peers, activity and trends are kept in Redis a few minutes; tests that change what they count start afresh. */
const forgetCaches = (server: TestServer) => Promise.all(instanceCacheKeys(server.config.redisPrefix).map((key) => server.ctx.redis.del(key)));

async function instances(server: TestServer): Promise<{ one: Json; two: Json }> {
  const one = await getJson(server, '/api/v1/instance');
  expectEntity('V1Instance', one);
  const two = await getJson(server, '/api/v2/instance');
  expectEntity('Instance', two);
  return { one, two };
}

let remoteSeq = 0;
function remote(server: TestServer, username: string, domain: string): Promise<AccountRow> {
  remoteSeq++;
  return upsertRemoteAccount(server.ctx.db, {
    uri: `https://${domain}/users/${username}`, username, domain, displayName: username, noteHtml: '', url: `https://${domain}/@${username}`,
    inboxUrl: `https://${domain}/users/${username}/inbox`, sharedInboxUrl: `https://${domain}/inbox`, outboxUrl: null, followersUrl: null,
    locked: false, bot: false, discoverable: true, avatarUrl: null, headerUrl: null, fields: [], createdAt: null,
  });
}

/** A status of a remote account, as the inbox would store it (public unless told otherwise). */
async function remoteStatus(server: TestServer, account: AccountRow, text: string, tags: string[], visibility: 'public' | 'unlisted' = 'public') {
  const status = await insertStatus(server.ctx.db, {
    accountId: account.id, text: '', content: `<p>${text}</p>`, spoilerText: '', sensitive: false, visibility, language: 'en',
    inReplyToId: null, inReplyToAccountId: null, reblogOfId: null, applicationId: null,
    uri: `https://${account.domain}/statuses/${remoteSeq}-${Math.random().toString(36).slice(2)}`, url: null, createdAt: new Date(),
  });
  await insertTags(server.ctx.db, status.id, tags);
  return status;
}

async function post(server: TestServer, user: TestUser, status: string, extra: Record<string, unknown> = {}): Promise<Json> {
  const res = await server.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload: { status, ...extra } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('every instance setting filled', () => {
  let s: TestServer;
  let dir: string;
  let boss: TestUser;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fedi-thumb-'));
    const thumbnail = join(dir, 'banner.jpg');
    await writeFile(thumbnail, await sharp({ create: { width: 3000, height: 1000, channels: 3, background: '#3a7' } }).jpeg().toBuffer());
    s = await startTestServer({
      INSTANCE_TITLE: 'Everything Social',
      INSTANCE_DESCRIPTION: 'Every setting set.',
      INSTANCE_CONTACT_EMAIL: 'staff@test.local',
      INSTANCE_CONTACT_USERNAME: '@boss',
      SOURCE_URL: 'https://code.example/fedi',
      REGISTRATIONS_MODE: 'none',
      REGISTRATIONS_CLOSED_MESSAGE: '<p>Closed for now; ask <a href="https://example.com/ask">here</a>.</p><script>alert(1)</script>',
      INSTANCE_EXTENDED_DESCRIPTION: '<h2>About us</h2><p onclick="x()">We <strong>talk</strong>.</p><script>steal()</script><img src="https://x/y.png">',
      INSTANCE_THUMBNAIL: thumbnail,
      INSTANCE_THUMBNAIL_DESCRIPTION: 'A green banner',
      INSTANCE_LANGUAGES: 'de, en',
      STATUS_PAGE_URL: 'https://status.example/',
      MAX_STATUS_CHARS: '640',
      MAX_IMAGE_BYTES: '40000',
      MAX_VIDEO_BYTES: '60000',
    });
    const [id] = await cli(s, 'accounts', 'create', 'boss', '--email', 'boss@example.com', '--password', 'boss-password');
    const client = await createApp(s.app);
    boss = { id: id!, username: 'boss', email: 'boss@example.com', password: 'boss-password', token: await authorizationCodeToken(s.app, client, 'boss@example.com', 'boss-password') };
    await cli(s, 'rules', 'add', 'Be kind.', '--hint', 'No harassment, no slurs.');
    await cli(s, 'rules', 'add', 'No spam.');
  });
  afterAll(async () => {
    await s?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('shows them all in v1 and v2, both valid against the schema', async () => {
    const { one, two } = await instances(s);
    expect(one).toMatchObject({
      uri: 'test.local', title: 'Everything Social', email: 'staff@test.local', languages: ['de', 'en'],
      registrations: false, approval_required: false,
      contact_account: { id: boss.id, username: 'boss' },
      rules: [{ text: 'Be kind.', hint: 'No harassment, no slurs.' }, { text: 'No spam.', hint: '' }],
      configuration: { statuses: { max_characters: 640 }, media_attachments: { image_size_limit: 40000, video_size_limit: 60000 } },
    });
    expect(one.thumbnail).toMatch(/^http:\/\/test\.local\/instance\/thumbnail@1x\.jpg\?v=[0-9a-f]{12}$/);
    expect(two).toMatchObject({
      title: 'Everything Social', source_url: 'https://code.example/fedi', languages: ['de', 'en'],
      contact: { email: 'staff@test.local', account: { id: boss.id } },
      registrations: { enabled: false, approval_required: false },
      configuration: { urls: { status: 'https://status.example/' }, statuses: { max_characters: 640 } },
      thumbnail: { url: one.thumbnail, description: 'A green banner', versions: { '@1x': one.thumbnail } },
    });
    expect(two.rules).toEqual(one.rules);
    // The closed-registrations message, sanitised as HTML from elsewhere is.
    expect(two.registrations.message).toContain('Closed for now');
    expect(two.registrations.message).toContain('href="https://example.com/ask"');
    expect(two.registrations.message).not.toContain('script');
    expect(two.thumbnail.blurhash).toMatch(/^[0-9A-Za-z#$%*+,\-.:;=?@[\]^_{|}~]{6,}$/);
  });

  it('serves the thumbnail it names, cropped to 1200×630 and 2400×1260', async () => {
    const { two } = await instances(s);
    for (const [size, width, height] of [['@1x', 1200, 630], ['@2x', 2400, 1260]] as const) {
      const res = await get(s, new URL(two.thumbnail.versions[size]).pathname + new URL(two.thumbnail.versions[size]).search);
      expect(res.headers['content-type']).toBe('image/jpeg');
      const meta = await sharp(res.rawPayload).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', width, height]);
    }
    expect((await s.app.inject({ method: 'GET', url: '/instance/thumbnail@1x.png' })).statusCode).toBe(404);
  });

  it('serves the extended description, sanitised, with the time it last changed', async () => {
    const about = await getJson(s, '/api/v1/instance/extended_description');
    expectEntity('ExtendedDescription', about);
    expect(about.content).toBe('<h2>About us</h2><p>We <strong>talk</strong>.</p>');
    const again = await getJson(s, '/api/v1/instance/extended_description');
    expect(again.updated_at).toBe(about.updated_at);
  });

  it('announces the limits it enforces: each accepted at the limit and refused one past it', async () => {
    const { two } = await instances(s);
    const c = two.configuration;
    const patch = (payload: unknown) => s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(boss.token), payload: payload as object });
    const pair = async (make: (n: number) => unknown, limit: number) => [(await patch(make(limit))).statusCode, (await patch(make(limit + 1))).statusCode];

    expect(await pair((n) => ({ display_name: 'd'.repeat(n) }), c.accounts.max_display_name_length)).toEqual([200, 422]);
    expect(await pair((n) => ({ note: 'n'.repeat(n) }), c.accounts.max_note_length)).toEqual([200, 422]);
    expect(await pair((n) => ({ fields_attributes: Array.from({ length: n }, (_, i) => ({ name: `f${i}`, value: 'v' })) }), c.accounts.max_profile_fields)).toEqual([200, 422]);
    expect(await pair((n) => ({ fields_attributes: [{ name: 'k'.repeat(n), value: 'v' }] }), c.accounts.profile_field_name_limit)).toEqual([200, 422]);
    expect(await pair((n) => ({ fields_attributes: [{ name: 'k', value: 'v'.repeat(n) }] }), c.accounts.profile_field_value_limit)).toEqual([200, 422]);

    // Characters, with every URL counted as characters_reserved_per_url whatever its length.
    const max = c.statuses.max_characters;
    const link = `https://example.com/${'a'.repeat(300)}`;
    const withLink = (n: number) => `${'x'.repeat(n - c.statuses.characters_reserved_per_url - 1)} ${link}`;
    const status = (text: string) => s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(boss.token), payload: { status: text } });
    expect((await status(withLink(max))).statusCode).toBe(200);
    expect((await status(withLink(max + 1))).statusCode).toBe(422);

    // Media: size by kind, description length, types by content, attachments per status.
    const upload = async (data: Buffer, fields: Record<string, string> = {}) => {
      const form = await multipart({ ...fields, file: { data, filename: 'f.png', type: 'image/png' } });
      return s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(boss.token), ...form.headers }, payload: form.payload });
    };
    const small = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#123' } }).png().toBuffer();
    // Over the image limit, under the video one (larger bodies are cut off at the largest limit with a 413).
    const big = await sharp({ create: { width: 120, height: 120, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
    expect(big.length).toBeGreaterThan(c.media_attachments.image_size_limit);
    expect(big.length).toBeLessThan(c.media_attachments.video_size_limit);
    expect((await upload(big)).statusCode).toBe(422);
    expect((await upload(small, { description: 'd'.repeat(c.media_attachments.description_limit) })).statusCode).toBe(202);
    expect((await upload(small, { description: 'd'.repeat(c.media_attachments.description_limit + 1) })).statusCode).toBe(422);
    expect((await upload(Buffer.from('plain text, not media'))).statusCode).toBe(422);
    expect(c.media_attachments.supported_mime_types).toEqual(expect.arrayContaining(['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'audio/mpeg']));
    expect(c.media_attachments.image_matrix_limit).toBe(3840 * 2160);
    const ids: string[] = [];
    for (let i = 0; i < c.statuses.max_media_attachments + 1; i++) ids.push((await upload(small)).json().id);
    const five = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(boss.token), payload: { status: 'many', media_ids: ids } });
    expect(five.statusCode).toBe(422);

    // Polls: each limit accepted at the limit and refused one past it.
    expect(c.polls).toEqual({ max_options: 4, max_characters_per_option: 50, min_expiration: 300, max_expiration: 2629746 });
    const postPoll = (poll: object) => s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(boss.token), payload: { status: 'vote', poll } });
    const atLimit = { options: ['a', 'b', 'c', 'x'.repeat(c.polls.max_characters_per_option)], expires_in: c.polls.min_expiration };
    expect((await postPoll(atLimit)).statusCode).toBe(200);
    expect((await postPoll({ ...atLimit, expires_in: c.polls.max_expiration })).statusCode).toBe(200);
    expect((await postPoll({ ...atLimit, options: [...atLimit.options, 'e'] })).statusCode).toBe(422);
    expect((await postPoll({ ...atLimit, options: ['a', 'x'.repeat(c.polls.max_characters_per_option + 1)] })).statusCode).toBe(422);
    expect((await postPoll({ ...atLimit, expires_in: c.polls.min_expiration - 1 })).statusCode).toBe(422);
    expect((await postPoll({ ...atLimit, expires_in: c.polls.max_expiration + 1 })).statusCode).toBe(422);
  });
});

describe('settings that cannot work stop start-up', () => {
  it('names INSTANCE_LANGUAGES, INSTANCE_THUMBNAIL and STATUS_PAGE_URL', async () => {
    const base = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x' };
    expect(() => loadConfig({ ...base, INSTANCE_LANGUAGES: 'en,klingon' })).toThrow(/INSTANCE_LANGUAGES: not an ISO 639 language code: "klingon"/);
    expect(() => loadConfig({ ...base, INSTANCE_THUMBNAIL: '/nonexistent/banner.png' })).toThrow(/INSTANCE_THUMBNAIL: no such file/);
    expect(() => loadConfig({ ...base, STATUS_PAGE_URL: 'ftp://status' })).toThrow(/STATUS_PAGE_URL/);
    const dir = await mkdtemp(join(tmpdir(), 'fedi-thumb-'));
    try {
      await writeFile(join(dir, 'not-an-image.png'), 'hello');
      const config = loadConfig({ ...base, INSTANCE_THUMBNAIL: join(dir, 'not-an-image.png') });
      const err = await instanceThumbnail(config).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).setting).toBe('INSTANCE_THUMBNAIL');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('an instance with default settings', () => {
  let s: TestServer;
  let amy: TestUser;
  let ben: TestUser;
  let cat: TestUser;

  beforeAll(async () => {
    s = await startTestServer();
    [amy, ben, cat] = await registerUsers(s.app, 'amy', 'ben', 'cat');
  });
  afterAll(async () => s?.close());

  it('shows valid entities with no rules, English, and a generated thumbnail that is served', async () => {
    const { one, two } = await instances(s);
    expect(one).toMatchObject({ rules: [], languages: ['en'], registrations: true });
    expect(two).toMatchObject({ rules: [], languages: ['en'], registrations: { enabled: true, message: null }, configuration: { urls: { status: null } } });
    expect(two.thumbnail.description).toBeNull();
    expect(two.thumbnail.url).toBe(one.thumbnail);
    const res = await get(s, new URL(one.thumbnail).pathname);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['cache-control']).toBe('public, max-age=86400');
    const meta = await sharp(res.rawPayload).metadata();
    expect([meta.width, meta.height]).toEqual([1200, 630]);
    const large = await get(s, new URL(two.thumbnail.versions['@2x']).pathname);
    expect([(await sharp(large.rawPayload).metadata()).width, large.headers['content-type']]).toEqual([2400, 'image/png']);
    // The entity names the default banner without making it (sharp is not loaded to answer it): its blurhash, kept
    // in the code, is the one of the images served.
    const made = await makeThumbnail(defaultThumbnailSource());
    expect(two.thumbnail.blurhash).toBe(made.blurhash);
    expect(res.rawPayload.equals(made['@1x'].data)).toBe(true);
  });

  it('answers an empty extended description with no date when none is set, as Mastodon does', async () => {
    const about = await getJson(s, '/api/v1/instance/extended_description');
    // Mastodon's answer breaks its own documented schema (updated_at is documented as a date): the one exception.
    expect(about).toEqual({ updated_at: null, content: '' });
  });

  it('records the time an extended description was first seen, and a new one for another text', async () => {
    const first = await settingUpdatedAt(s.ctx.db, 'extended_description', 'a digest');
    const same = await settingUpdatedAt(s.ctx.db, 'extended_description', 'a digest');
    expect(same.getTime()).toBe(first.getTime());
    await new Promise((r) => setTimeout(r, 5));
    const changed = await settingUpdatedAt(s.ctx.db, 'extended_description', 'another digest');
    expect(changed.getTime()).toBeGreaterThan(same.getTime());
  });

  it('lists ISO 639 languages, no translation pairs and no custom emojis before any is added', async () => {
    const languages = await getJson(s, '/api/v1/instance/languages');
    expect(languages).toContainEqual({ code: 'en', name: 'English' });
    expect(languages).toContainEqual({ code: 'de', name: 'German' });
    expect(languages.length).toBeGreaterThan(180);
    for (const l of languages) expect(l.code).toMatch(/^[a-z]{2,3}$/);
    expect(await getJson(s, '/api/v1/instance/translation_languages')).toEqual({});
    expect(await getJson(s, '/api/v1/custom_emojis')).toEqual([]);
  });

  it('lists peers: domains of known remote accounts, lowercased, once each, not suspended ones', async () => {
    expect(await getJson(s, '/api/v1/instance/peers')).toEqual([]);
    await remote(s, 'ann', 'remote.example');
    await remote(s, 'bob', 'remote.example');
    await remote(s, 'cy', 'Other.Example:8443');
    const gone = await remote(s, 'dee', 'gone.example');
    await markAccountGone(s.ctx.db, gone.id);
    // Kept in Redis a few minutes: what changes meanwhile shows afterwards.
    expect(await getJson(s, '/api/v1/instance/peers')).toEqual([]);
    await forgetCaches(s);
    const peers = await getJson(s, '/api/v1/instance/peers');
    expect(peers).toEqual(['other.example:8443', 'remote.example']);
    expect(await s.ctx.redis.ttl(`${s.config.redisPrefix}instance:peers`)).toBeGreaterThan(200);
    // The skip scan uses the index made for it.
    const plan = await s.ctx.db.query(`EXPLAIN SELECT lower(domain) FROM accounts WHERE domain IS NOT NULL AND suspended_at IS NULL AND lower(domain) > 'a' ORDER BY lower(domain) LIMIT 1`);
    await s.ctx.db.query('SET enable_seqscan = off');
    const forced = await s.ctx.db.query(`EXPLAIN SELECT lower(domain) FROM accounts WHERE domain IS NOT NULL AND suspended_at IS NULL AND lower(domain) > 'a' ORDER BY lower(domain) LIMIT 1`);
    await s.ctx.db.query('RESET enable_seqscan');
    expect(JSON.stringify([plan.rows, forced.rows])).toContain('accounts_peer_domains');
  });

  it('reports twelve weeks of activity, this week first: local posts, sign-ins and registrations', async () => {
    await forgetCaches(s);
    const first = await post(s, amy, 'one');
    await post(s, ben, 'two');
    const gone = await post(s, cat, 'three (deleted)');
    expect((await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${gone.id}`, headers: bearer(cat.token) })).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${first.id}/reblog`, headers: bearer(ben.token) })).statusCode).toBe(200);
    const old = await post(s, amy, 'two weeks ago');
    await s.ctx.db.query(`UPDATE statuses SET created_at = now() - interval '14 days' WHERE id = $1`, [old.id]);
    await s.ctx.db.query(`UPDATE users SET created_at = now() - interval '21 days' WHERE account_id = $1`, [cat.id]);
    await remoteStatus(s, await remote(s, 'ann', 'remote.example'), 'not ours', []);

    const weeks = await getJson(s, '/api/v1/instance/activity');
    expect(weeks).toHaveLength(12);
    const monday = weekStart(new Date()).getTime() / 1000;
    expect(weeks.map((w: Json) => Number(w.week))).toEqual(Array.from({ length: 12 }, (_, i) => monday - i * 7 * 86400));
    for (const w of weeks) expect(Object.values(w).every((v) => typeof v === 'string')).toBe(true);
    // Tokens are the only record of signing in: three users were given one this week.
    expect(weeks[0]).toMatchObject({ statuses: '2', logins: '3', registrations: '2' });
    expect(weeks[2]).toMatchObject({ statuses: '1', logins: '0', registrations: '0' });
    expect(weeks[3]).toMatchObject({ statuses: '0', registrations: '1' });
    expect(weeks.slice(4).every((w: Json) => w.statuses === '0' && w.logins === '0' && w.registrations === '0')).toBe(true);
  });

  it('serves the operator\'s rules, in order, in both entities', async () => {
    const kind = (await cli(s, 'rules', 'add', 'Be kind.'))[0]!;
    const first = (await cli(s, 'rules', 'add', 'Read these first.', '--hint', 'They apply everywhere.', '--priority=-1'))[0]!;
    const rules = await getJson(s, '/api/v1/instance/rules');
    for (const r of rules) expectEntity('Rule', r);
    expect(rules).toEqual([
      { id: first, text: 'Read these first.', hint: 'They apply everywhere.' },
      { id: kind, text: 'Be kind.', hint: '' },
    ]);
    const { one, two } = await instances(s);
    expect(one.rules).toEqual(rules);
    expect(two.rules).toEqual(rules);
    await cli(s, 'rules', 'remove', first);
    expect((await getJson(s, '/api/v1/instance/rules')).map((r: Json) => r.id)).toEqual([kind]);
  });

  it('does not look at tokens on instance endpoints; trends take a valid token or none', async () => {
    const bad = { authorization: 'Bearer not-a-token' };
    for (const url of ['/api/v1/instance/peers', '/api/v1/instance/activity', '/api/v1/instance/rules', '/api/v1/instance/languages', '/api/v1/custom_emojis']) {
      expect((await s.app.inject({ method: 'GET', url, headers: bad })).statusCode, url).toBe(200);
    }
    for (const url of ['/api/v1/trends/tags', '/api/v1/trends/statuses', '/api/v1/trends/links']) {
      expect((await s.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
      expect((await s.app.inject({ method: 'GET', url, headers: bearer(amy.token) })).statusCode, url).toBe(200);
      const refused = await s.app.inject({ method: 'GET', url, headers: bad });
      expect(refused.statusCode, url).toBe(401);
      expect(refused.json()).toEqual({ error: 'The access token is invalid' });
    }
  });

  // Trends are scored by the refreshTrends job (services/trends.ts) as Mastodon's: five distinct accounts today at
  // least, more than the day before. These tests used to rank from one account up; they now bring four more users
  // (remote ones, for tags) so that what trended before still does.
  it('ranks trending tags by the accounts that used them today in public over yesterday, with a week of history', async () => {
    await forgetCaches(s);
    const ann = await remote(s, 'ann', 'remote.example');
    const crowd = await Promise.all(['rho', 'sig', 'tau', 'ups'].map((n) => remote(s, n, 'remote.example')));
    for (const u of [amy, ben, cat]) await post(s, u, `#Alpha from ${u.username}`);
    for (const a of crowd) await remoteStatus(s, a, '#alpha too', ['alpha']);
    await post(s, amy, '#beta here');
    await remoteStatus(s, ann, '#beta there', ['beta']);
    for (const a of crowd) await remoteStatus(s, a, '#beta too', ['beta']);
    for (let i = 0; i < 3; i++) await post(s, cat, `#gamma ${i}`);
    for (const a of crowd) await remoteStatus(s, a, '#gamma too', ['gamma']);
    // Not counted: unlisted and private posts, posts older than two days, suspended authors.
    await post(s, amy, '#hidden', { visibility: 'unlisted' });
    await post(s, ben, '#hidden', { visibility: 'private' });
    const old = await post(s, ben, '#gamma long ago');
    await s.ctx.db.query(`UPDATE statuses SET created_at = now() - interval '3 days' WHERE id = $1`, [old.id]);
    const oldish = await post(s, amy, '#stale');
    await s.ctx.db.query(`UPDATE statuses SET created_at = now() - interval '3 days' WHERE id = $1`, [oldish.id]);
    for (let i = 0; i < 5; i++) await remoteStatus(s, await remote(s, `z${i}`, 'bad.example'), '#spam', ['spam']);
    await s.ctx.db.query(`UPDATE accounts SET suspended_at = now() WHERE domain = 'bad.example'`);
    // Below the threshold: four accounts. At yesterday's level: as many accounts yesterday as today.
    for (const a of crowd) await remoteStatus(s, a, '#fewer', ['fewer']);
    for (const a of [ann, ...crowd]) {
      await remoteStatus(s, a, '#steady today', ['steady']);
      const before = await remoteStatus(s, a, '#steady yesterday', ['steady']);
      await s.ctx.db.query(`UPDATE statuses SET created_at = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 hour' WHERE id = $1`, [before.id]);
    }
    await refreshTrends(s.ctx);

    const res = await get(s, '/api/v1/trends/tags');
    const tags = res.json();
    for (const t of tags) expectEntity('Tag', t);
    expect(tags.map((t: Json) => t.name)).toEqual(['alpha', 'beta', 'gamma']);
    const today = Math.floor(Date.now() / 86_400_000) * 86_400;
    const alpha = tags[0];
    expect(alpha.url).toBe('http://test.local/tags/alpha');
    expect(alpha.history).toHaveLength(7);
    expect(alpha.history.map((h: Json) => Number(h.day))).toEqual(Array.from({ length: 7 }, (_, i) => today - i * 86_400));
    expect(alpha.history[0]).toEqual({ day: String(today), uses: '7', accounts: '7' });
    const gamma = tags[2];
    expect(gamma.history[0]).toMatchObject({ uses: '7', accounts: '5' });
    // The old #gamma post is in its history (three days ago, by ben), not in its rank.
    const threeDaysAgo = Math.floor((Date.now() - 3 * 86_400_000) / 86_400_000) * 86_400;
    expect(gamma.history.find((h: Json) => Number(h.day) === threeDaysAgo)).toMatchObject({ uses: '1', accounts: '1' });

    // Offset paging with Mastodon's Link header.
    const page = await get(s, '/api/v1/trends/tags?limit=1&offset=1');
    expect(page.json().map((t: Json) => t.name)).toEqual(['beta']);
    expect(page.headers.link).toBe('<http://test.local/api/v1/trends/tags?limit=1&offset=2>; rel="next", <http://test.local/api/v1/trends/tags?limit=1&offset=0>; rel="prev"');
    expect((await getJson(s, '/api/v1/trends?limit=2')).map((t: Json) => t.name)).toEqual(['alpha', 'beta']);
    // limit is clamped to 20, as Mastodon does.
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/trends/tags?limit=500' })).statusCode).toBe(200);
  });

  it('ranks trending statuses by boosts and favourites, decaying with age, rendered for the viewer', async () => {
    await forgetCaches(s);
    const more = await registerUsers(s.app, 'dot', 'eli', 'fox', 'gus');
    const everyone = [amy, ben, cat, ...more];
    const favouredBySix = await post(s, amy, 'liked by six');
    const boostedAndLiked = await post(s, ben, 'boosted thrice, liked twice');
    const quiet = await post(s, cat, 'liked by four');
    const unlisted = await post(s, cat, 'unlisted, liked', { visibility: 'unlisted' });
    const reply = await post(s, cat, 'a reply, liked', { in_reply_to_id: quiet.id });
    const yesterday = await post(s, cat, 'popular two days ago');
    const act = async (user: TestUser, id: string, what: 'favourite' | 'reblog') =>
      expect((await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${id}/${what}`, headers: bearer(user.token) })).statusCode).toBe(200);
    for (const u of everyone.filter((u) => u !== amy)) await act(u, favouredBySix.id, 'favourite');
    for (const u of [amy, cat, more[0]!]) await act(u, boostedAndLiked.id, 'reblog');
    for (const u of [more[1]!, more[2]!]) await act(u, boostedAndLiked.id, 'favourite');
    for (const u of [amy, ben, more[0]!, more[1]!]) await act(u, quiet.id, 'favourite');
    for (const u of [amy, ben, more[0]!, more[1]!, more[2]!]) {
      await act(u, unlisted.id, 'favourite');
      await act(u, reply.id, 'favourite');
      await act(u, yesterday.id, 'favourite');
    }
    await s.ctx.db.query(`UPDATE statuses SET created_at = now() - interval '2 days' WHERE id = $1`, [yesterday.id]);
    await refreshTrends(s.ctx);

    const res = await get(s, '/api/v1/trends/statuses', bearer(ben.token));
    const statuses = res.json();
    for (const st of statuses) expectEntity('Status', st);
    const ids = statuses.map((st: Json) => st.id);
    expect(ids).toEqual([favouredBySix.id, boostedAndLiked.id]);
    expect(statuses[0]).toMatchObject({ favourites_count: 6, favourited: true });
    expect(statuses[1]).toMatchObject({ reblogs_count: 3, favourites_count: 2 });
    expect(res.headers.vary).toContain('Accept-Language');
    const anonymous = await getJson(s, '/api/v1/trends/statuses?limit=1');
    expect(anonymous.map((st: Json) => st.id)).toEqual([favouredBySix.id]);
    expect(anonymous[0].favourited).toBeUndefined(); // as Mastodon: no viewer, no viewer's flags

    expect(await getJson(s, '/api/v1/trends/links')).toEqual([]);
  });

  it('gives a user their preferences from their posting defaults, with read:accounts', async () => {
    const before = await getJson(s, '/api/v1/preferences', bearer(amy.token));
    expectEntity('Preferences', before);
    expect(before).toEqual({
      'posting:default:visibility': 'public', 'posting:default:sensitive': false, 'posting:default:language': null,
      'posting:default:quote_policy': 'public', 'reading:expand:media': 'default', 'reading:expand:spoilers': false,
    });
    const patched = await s.app.inject({
      method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(amy.token),
      payload: { source: { privacy: 'unlisted', sensitive: true, language: 'de' } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const after = await getJson(s, '/api/v1/preferences', bearer(amy.token));
    expectEntity('Preferences', after);
    expect(after).toMatchObject({ 'posting:default:visibility': 'unlisted', 'posting:default:sensitive': true, 'posting:default:language': 'de' });

    expect((await s.app.inject({ method: 'GET', url: '/api/v1/preferences' })).statusCode).toBe(401);
    const client = await createApp(s.app, 'read write');
    const writeOnly = await authorizationCodeToken(s.app, client, ben.email, ben.password, 'write');
    const refused = await s.app.inject({ method: 'GET', url: '/api/v1/preferences', headers: bearer(writeOnly) });
    expect(refused.statusCode).toBe(403);
    const narrow = await authorizationCodeToken(s.app, client, ben.email, ben.password, 'read:accounts');
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/preferences', headers: bearer(narrow) })).statusCode).toBe(200);
  });
});

describe('rules on the command line', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('adds, lists and removes rules', async () => {
    const [a] = await cli(s, 'rules', 'add', '  No spam.  ');
    expect(a).toMatch(/^\d+$/);
    const [b] = await cli(s, 'rules', 'add', 'Mark sensitive media.', '--hint', 'Use content warnings.');
    expect(await cli(s, 'rules', 'list')).toEqual([`${a}  No spam.`, `${b}  Mark sensitive media.  (Use content warnings.)`]);
    expect(await cli(s, 'rules', 'remove', a!)).toEqual([`rule ${a} removed`]);
    expect(await cli(s, 'rules', 'list')).toEqual([`${b}  Mark sensitive media.  (Use content warnings.)`]);
  });

  it('refuses empty or long rules, bad priorities and unknown ids, changing nothing', async () => {
    const before = await cli(s, 'rules', 'list');
    const cases: [string[], RegExp][] = [
      [['rules', 'add', '   '], /1 to 300 characters/],
      [['rules', 'add', 'x'.repeat(301)], /1 to 300 characters/],
      [['rules', 'add', 'ok', '--hint', 'h'.repeat(1001)], /hint/],
      [['rules', 'add', 'ok', '--priority', 'first'], /priority/],
      [['rules', 'add'], /one argument/],
      [['rules', 'add', 'two', 'words'], /one argument/],
      [['rules', 'remove', '12345'], /no rule with id 12345/],
      [['rules', 'remove', 'abc'], /no rule with id abc/],
      [['rules', 'remove'], /id of a rule/],
      [['rules', 'frobnicate'], /unknown command: rules frobnicate/],
    ];
    for (const [args, message] of cases) await expect(cli(s, ...args), args.join(' ')).rejects.toThrow(message);
    expect(await cli(s, 'rules', 'list')).toEqual(before);
    // 300 characters (not bytes) is still a rule.
    expect((await cli(s, 'rules', 'add', 'é'.repeat(300)))[0]).toMatch(/^\d+$/);
  });
});

describe('masto: instance, trends, custom emojis and preferences', () => {
  let s: TestServer & { url: string };
  beforeAll(async () => {
    s = await startListeningServer({ INSTANCE_LANGUAGES: 'en,fr' });
  });
  afterAll(async () => s?.close());

  it('reads every group through the client', async () => {
    const [dan, eve, ...fans] = await registerUsers(s.app, 'dan', 'eve', 'fan1', 'fan2', 'fan3', 'fan4');
    await remote(s, 'fay', 'far.example');
    await cli(s, 'rules', 'add', 'Be excellent to each other.');
    const popular = await post(s, dan, 'Hello #masto');
    await post(s, eve, 'Me too #masto');
    // Five accounts at least make a trend (services/trends.ts).
    for (const u of fans) await post(s, u, 'Me three #masto');
    for (const u of [eve, ...fans]) {
      expect((await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${popular.id}/favourite`, headers: bearer(u.token) })).statusCode).toBe(200);
    }
    await refreshTrends(s.ctx);

    const anonymous = createRestAPIClient({ url: s.url });
    expect(await anonymous.v1.instance.peers.list()).toEqual(['far.example']);
    const activity = await anonymous.v1.instance.activity.list();
    expect(activity).toHaveLength(12);
    expect(activity[0]).toMatchObject({ statuses: '6', registrations: '6' });
    const languages = (await anonymous.v1.instance.languages.list()) as unknown as { code: string; name: string }[];
    expect(languages).toContainEqual({ code: 'fr', name: 'French' });
    expect(await anonymous.v1.instance.extendedDescription.fetch()).toEqual({ updatedAt: null, content: '' });
    expect(await anonymous.v1.instance.translationLanguages.list()).toEqual({});
    const v2 = await anonymous.v2.instance.fetch();
    expect(v2.languages).toEqual(['en', 'fr']);
    expect(v2.rules.map((r) => r.text)).toEqual(['Be excellent to each other.']);
    expect((await anonymous.v1.instance.fetch()).rules).toHaveLength(1);

    const tags = await anonymous.v1.trends.tags.list();
    expect(tags.map((t) => t.name)).toEqual(['masto']);
    expect(tags[0]!.history?.[0]).toMatchObject({ uses: '6', accounts: '6' });
    expect((await anonymous.v1.trends.statuses.list()).map((st) => st.id)).toEqual([popular.id]);
    expect(await anonymous.v1.trends.links.list()).toEqual([]);
    expect(await anonymous.v1.customEmojis.list()).toEqual([]);

    const asDan = createRestAPIClient({ url: s.url, accessToken: dan.token });
    const preferences = await asDan.v1.preferences.fetch();
    expect(preferences).toMatchObject({ 'posting:default:visibility': 'public', 'reading:expand:spoilers': false });
  });
});
