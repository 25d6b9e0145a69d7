// The public pages a stranger reads (http/web/public-pages.ts): the about page and policies, profiles, posts with
// their threads, tags, RSS, oEmbed, the HTML 404 and error pages, and what never shows on any of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { expectValidHtml } from '../helpers/html.ts';
import * as xml from 'fast-xml-parser';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, authorizationCodeToken, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { eventually } from '../helpers/eventually.ts';
import { expectEntity } from '../helpers/schema.ts';
import { findAccountById, upsertRemoteAccount, type AccountRow } from '../../storage/accounts.ts';
import { hashSecret } from '../../storage/oauth.ts';
import { insertWebSession } from '../../storage/web-sessions.ts';
import { receiveRemoteStatus } from '../../services/statuses.ts';
import { updateAccountProfile } from '../../services/profile.ts';
import { makeAdmin } from '../helpers/admin.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let client: RegisteredApp;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let admin: TestUser;
let adminToken: string;
const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
const AP = { accept: 'application/activity+json' };
const posts: Json = {}; // the posts made in beforeAll, by name


const get = (url: string, headers: Record<string, string> = BROWSER) => s.app.inject({ method: 'GET', url, headers });
const api = async (who: TestUser | string | null, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
  const token = typeof who === 'string' ? who : who?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null };
};
const post = async (who: TestUser, payload: object) => {
  const res = await api(who, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Json;
};

let n = 0;
async function remoteAccount(domain: string, username: string): Promise<AccountRow> {
  return upsertRemoteAccount(s.ctx.db, {
    uri: `https://${domain}/users/${username}`, username, domain, displayName: username, noteHtml: '', url: `https://${domain}/@${username}`,
    inboxUrl: `https://${domain}/users/${username}/inbox`, sharedInboxUrl: null, outboxUrl: null, followersUrl: null,
    locked: false, bot: false, discoverable: true, avatarUrl: null, headerUrl: null, fields: [], createdAt: null,
  });
}
async function remotePost(author: AccountRow, text: string, tags: string[] = []): Promise<string> {
  const id = await receiveRemoteStatus(s.ctx.actors.deps, {
    accountId: author.id, uri: `${author.uri}/statuses/${++n}`, url: null, content: `<p>${text}</p>`, spoilerText: '', sensitive: false,
    visibility: 'public', language: null, parent: null, mentioned: [], tags, createdAt: null, media: [],
  });
  return id!;
}

/** A browser session for `user`, as signing in makes one (http/web/session.ts). */
async function sessionCookie(user: TestUser): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const { rows } = await s.ctx.db.query('SELECT id::text FROM users WHERE account_id = $1', [user.id]);
  await insertWebSession(s.ctx.db, { tokenHash: hashSecret(token), userId: rows[0].id, ip: null, userAgent: null });
  return `_session=${token}`;
}

beforeAll(async () => {
  s = await startTestServer({
    LOCAL_DOMAIN: 'pages.example', INSTANCE_TITLE: 'Pages & Co', INSTANCE_DESCRIPTION: 'A place <for> tests',
    INSTANCE_CONTACT_EMAIL: 'admin@pages.example', INSTANCE_LANGUAGES: 'en,fr',
  });
  client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [alice, bob, carol, dave, admin] = await Promise.all(['alice', 'bob', 'carol', 'dave', 'boss'].map((u) => registerUser(s.app, client, u))) as [TestUser, TestUser, TestUser, TestUser, TestUser];
  await makeAdmin(s, admin);
  adminToken = await authorizationCodeToken(s.app, client, admin.email, admin.password, 'read write admin:read admin:write');

  await api(alice, 'PATCH', '/api/v1/accounts/update_credentials', {
    display_name: 'Alice <Liddell>', note: 'Down the rabbit hole & back. #wonder',
    fields_attributes: [{ name: 'Home', value: 'https://alice.example' }, { name: 'Mood', value: 'curious' }],
  });
  // Dave asks search engines to stay away (the settings page's choice, through the same service).
  await updateAccountProfile(s.ctx, (await findAccountById(s.ctx.db, dave.id))!, { noindex: true });

  // An image with a description, processed by the media job.
  const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c33' } }).png().toBuffer();
  const form = await multipart({ file: { data: png, filename: 'red.png', type: 'image/png' }, description: 'A red rectangle' });
  const media = (await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(alice.token), ...form.headers }, payload: form.payload })).json();
  await eventually(async () => (await api(alice, 'GET', `/api/v1/media/${media.id}`)).status, 200, 10_000);

  posts.public = await post(alice, { status: 'Hello #Garden world, public words', visibility: 'public', media_ids: [media.id] });
  posts.unlisted = await post(alice, { status: 'Quiet unlisted words', visibility: 'unlisted' });
  posts.private = await post(alice, { status: 'Secret followers-only words', visibility: 'private' });
  posts.direct = await post(alice, { status: '@bob secret direct words', visibility: 'direct' });
  posts.warned = await post(alice, { status: 'Behind the warning #garden', spoiler_text: 'Spoilers <ahead>', visibility: 'public' });
  posts.poll = await post(alice, { status: 'Tea or coffee?', poll: { options: ['Tea', 'Coffee'], expires_in: 3600 } });
  posts.reply = await post(bob, { status: '@alice a public reply', in_reply_to_id: posts.public.id });
  posts.privateReply = await post(bob, { status: '@alice a hidden private reply', in_reply_to_id: posts.public.id, visibility: 'private' });
  posts.selfReply = await post(alice, { status: 'Continuing my own thread', in_reply_to_id: posts.public.id });
  posts.carol = await post(carol, { status: 'Carol says #garden things', visibility: 'public' });
  await api(bob, 'POST', `/api/v1/polls/${posts.poll.poll.id}/votes`, { choices: [0] });
  await api(bob, 'POST', `/api/v1/statuses/${posts.public.id}/favourite`);
  await api(bob, 'POST', `/api/v1/statuses/${posts.public.id}/reblog`);
  await api(alice, 'POST', `/api/v1/statuses/${posts.unlisted.id}/pin`);
  await api(alice, 'PUT', `/api/v1/statuses/${posts.warned.id}`, { status: 'Behind the warning, edited #garden', spoiler_text: 'Spoilers <ahead>' });

  // Carol is suspended; a server is suspended after one of its accounts posted with the tag.
  expect((await api(adminToken, 'POST', `/api/v1/admin/accounts/${carol.id}/action`, { type: 'suspend' })).status).toBe(200);
  const blocked = await remoteAccount('blocked.example', 'villain');
  posts.blocked = { id: await remotePost(blocked, 'Blocked server says #garden things', ['garden']) };
  expect((await api(adminToken, 'POST', '/api/v1/admin/domain_blocks', { domain: 'blocked.example', severity: 'suspend' })).status).toBe(200);
  const suspended = async () => !!(await s.ctx.db.query('SELECT suspended_at FROM accounts WHERE id = $1', [blocked.id])).rows[0].suspended_at;
  expect(await eventually(suspended, true, 10_000)).toBe(true);
  await remoteAccount('fine.example', 'friend');
}, 120_000);
afterAll(async () => s?.close());

const SECRETS = ['Secret followers-only words', 'secret direct words', 'hidden private reply', 'Carol says', 'Blocked server says'];
const expectNoSecrets = (body: string, where: string) => {
  for (const secret of SECRETS) expect(body, `${where} shows "${secret}"`).not.toContain(secret);
};

describe('the about page', () => {
  it('shows the instance, its figures, rules, languages, contact, apps and a way in, as valid HTML', async () => {
    await s.ctx.db.query(`INSERT INTO instance_rules (text, hint, priority) VALUES ('Be <kind>', 'Really.', 0)`);
    for (const path of ['/', '/about']) {
      const res = await get(path);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('<h1 id="about-heading">Pages &amp; Co</h1>');
      expect(res.body).toContain('A place &lt;for&gt; tests');
      expect(res.body).toContain('href="/auth/sign_up"');
      expect(res.body).toContain('href="/auth/sign_in"');
      expect(res.body).toContain('mailto:admin@pages.example');
      expect(res.body).toContain('English, French');
      for (const app of ['Tusky', 'Ivory', 'Ice Cubes', 'Elk', 'Phanpy', 'official apps']) expect(res.body).toContain(app);
      expect(res.body).toMatch(/<dt>People<\/dt><dd>\d+<\/dd>/);
      expect(res.body).toMatch(/<dt>Posts<\/dt><dd>\d+<\/dd>/);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      await expectValidHtml(res.body, path);
    }
  });

  it('has a privacy policy and terms of service, by default and in the API', async () => {
    const privacy = await get('/privacy-policy');
    expect(privacy.statusCode).toBe(200);
    for (const words of ['e-mail', 'hash', 'IP address', 'session cookie', 'form-protection cookie', 'other servers']) expect(privacy.body).toContain(words);
    await expectValidHtml(privacy.body, '/privacy-policy');
    const terms = await get('/terms-of-service');
    expect(terms.statusCode).toBe(200);
    await expectValidHtml(terms.body, '/terms-of-service');
    const apiPolicy = await api(null, 'GET', '/api/v1/instance/privacy_policy');
    expect(apiPolicy.status).toBe(200);
    expect(apiPolicy.body).toEqual({ updated_at: expect.any(String), content: expect.stringContaining('session cookie') });
    // No operator terms: the page shows defaults, the API answers 404 as Mastodon's does.
    const apiTerms = await api(null, 'GET', '/api/v1/instance/terms_of_service');
    expect(apiTerms.status).toBe(404);
  });

  it("shows the operator's texts, sanitised", async () => {
    const other = await startTestServer({ ROLE: 'web' });
    try {
      other.config.privacyPolicy = '<h1>Our policy</h1><p onclick="x()">We keep little.</p><script>alert(1)</script>';
      const res = await other.app.inject({ method: 'GET', url: '/privacy-policy', headers: BROWSER });
      expect(res.body).toContain('We keep little.');
      expect(res.body).not.toContain('<script');
      expect(res.body).not.toContain('onclick');
      expect(res.body).toContain('<h2>Our policy</h2>'); // the page's own h1 stays the only one
      const apiPolicy = (await other.app.inject({ method: 'GET', url: '/api/v1/instance/privacy_policy' })).json();
      expect(apiPolicy.content).toContain('We keep little.');
      expect(apiPolicy.content).not.toContain('<script');
      other.config.termsOfService = '<p>Be decent.</p>';
      const terms = await other.app.inject({ method: 'GET', url: '/api/v1/instance/terms_of_service' });
      expect(terms.statusCode).toBe(200);
      expectEntity('TermsOfService', terms.json());
      expect(terms.json()).toMatchObject({ effective: true, content: '<p>Be decent.</p>', succeeded_by: null });
      expect((await other.app.inject({ method: 'GET', url: `/api/v1/instance/terms_of_service/${terms.json().effective_date}` })).statusCode).toBe(200);
      expect((await other.app.inject({ method: 'GET', url: '/api/v1/instance/terms_of_service/2001-01-01' })).statusCode).toBe(404);
    } finally {
      await other.close();
    }
  });
});

describe('a profile', () => {
  it("shows the account's header, bio, fields, counts, pins and posts a stranger may see, as valid HTML", async () => {
    const res = await get('/@alice');
    expect(res.statusCode).toBe(200);
    const body = res.body;
    expect(body).toContain('<h1 id="profile-name">Alice &lt;Liddell&gt;</h1>');
    expect(body).toContain('@alice@pages.example');
    expect(body).toContain('Down the rabbit hole &amp; back.');
    expect(body).toContain('<dt>Mood</dt>');
    expect(body).toContain('alt="Avatar of Alice &lt;Liddell&gt;"'); // no description given: whose it is
    expect(body).toMatch(/<strong>\d+<\/strong> posts/);
    expect(body).toContain('Pinned posts');
    expect(body).toContain('Hello <a');
    expect(body).toContain('Quiet unlisted words'); // unlisted posts show on profiles, as on Mastodon
    expect(body).toContain('Continuing my own thread'); // one's own thread stays on "Posts"
    expect(body).toContain('alt="A red rectangle"');
    expectNoSecrets(body, '/@alice');
    expect(body).not.toContain('noindex');
    await expectValidHtml(body, '/@alice');
  });

  it('has OpenGraph and Twitter cards, an ActivityPub alternate and an RSS link', async () => {
    const { body } = await get('/@alice');
    expect(body).toContain('<meta property="og:type" content="profile">');
    expect(body).toContain('<meta property="og:title" content="Alice &lt;Liddell&gt; (@alice@pages.example)">');
    expect(body).toContain('<meta property="og:url" content="http://pages.example/@alice">');
    expect(body).toContain('<meta name="twitter:card" content="summary">');
    expect(body).toContain('<link rel="alternate" type="application/activity+json" href="http://pages.example/users/alice">');
    expect(body).toContain('type="application/rss+xml" href="http://pages.example/@alice.rss"');
  });

  it('shows boosts, replies to others on their tab, and media on its own', async () => {
    const bobs = await get('/@bob');
    expect(bobs.body).toContain('boosted');
    expect(bobs.body).not.toContain('a public reply'); // a reply to someone else
    const withReplies = await get('/@bob/with_replies');
    expect(withReplies.body).toContain('a public reply');
    expectNoSecrets(withReplies.body, '/@bob/with_replies');
    await expectValidHtml(withReplies.body, '/@bob/with_replies');
    const media = await get('/@alice/media');
    expect(media.statusCode).toBe(200);
    expect(media.body).toContain('alt="A red rectangle"');
    expect(media.body).not.toContain('Quiet unlisted words');
    expect(media.body).toContain('aria-current="page">Media');
    await expectValidHtml(media.body, '/@alice/media');
  });

  it('pages through older posts with max_id', async () => {
    const paging = await registerUser(s.app, client, 'pager');
    const made: string[] = [];
    for (let i = 0; i < 23; i++) made.push((await post(paging, { status: `numbered post ${i}` })).id);
    const first = await get('/@pager');
    expect(first.body).toContain('numbered post 22');
    expect(first.body).not.toContain('numbered post 2<');
    const older = /href="(\/@pager\?max_id=\d+)" rel="next"/.exec(first.body);
    expect(older).not.toBeNull();
    const second = await get(older![1]!);
    expect(second.body).toContain('numbered post 0');
    expect(second.body).toContain('numbered post 2<');
    expect(second.body).not.toContain('numbered post 22');
    expect(second.body).toContain('Newest posts');
    expect(second.body).not.toContain('rel="next"');
    await expectValidHtml(second.body, 'second page');
  });

  it('hides the counts of an account that hides its collections, and marks noindex', async () => {
    await api(dave, 'PATCH', '/api/v1/accounts/update_credentials', { hide_collections: true });
    const { body } = await get('/@dave');
    expect(body).toContain('<meta name="robots" content="noindex, noarchive">');
    const davesPost = await post(dave, { status: 'not for search engines' });
    expect((await get(`/@dave/${davesPost.id}`)).body).toContain('<meta name="robots" content="noindex, noarchive">');
    expect(body).not.toContain('following</li>');
    expect(body).not.toContain('followers</li>');
  });

  it('sends ActivityPub clients to the actor, and keeps the actor JSON at /users/', async () => {
    const redirect = await get('/@alice', AP);
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('http://pages.example/users/alice');
    const actor = await get('/users/alice', AP);
    expect(actor.statusCode).toBe(200);
    expect(actor.headers['content-type']).toMatch(/activity\+json|ld\+json/);
    expect(actor.json()).toMatchObject({ type: 'Person', preferredUsername: 'alice' });
    const browser = await get('/users/alice');
    expect(browser.statusCode).toBe(302);
    expect(browser.headers.location).toBe('/@alice');
  });

  it('answers missing, suspended and unknown remote accounts with the 404 page, and sends known remote ones to their server', async () => {
    for (const path of ['/@nobody', '/@carol', '/@someone@elsewhere.example', '/@villain@blocked.example', '/@nobody.rss', '/@carol/media']) {
      const res = await get(path);
      expect(res.statusCode, path).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/^text\/html/);
      expect(res.body, path).toContain('Page not found');
      await expectValidHtml(res.body, path);
    }
    const remote = await get('/@friend@fine.example');
    expect(remote.statusCode).toBe(302);
    expect(remote.headers.location).toBe('https://fine.example/@friend');
  });
});

describe('a post', () => {
  it('shows the post with its public thread, media, counts and marks, as valid HTML', async () => {
    const res = await get(`/@alice/${posts.public.id}`);
    expect(res.statusCode).toBe(200);
    const body = res.body;
    expect(body).toContain('status-focus');
    expect(body).toContain('alt="A red rectangle"');
    expect(body).toContain('a public reply');
    expect(body).toContain('Continuing my own thread');
    expect(body).toMatch(/1 boost</);
    expect(body).toMatch(/1 favourite</);
    expect(body).toMatch(/3 replies</); // as the API counts them, the hidden private reply included
    expectNoSecrets(body, 'post page');
    await expectValidHtml(body, 'post page');
    const reply = await get(`/@bob/${posts.reply.id}`);
    expect(reply.body).toContain('Earlier in the thread');
    expect(reply.body).toContain('Hello <a');
  });

  it('has OpenGraph, Twitter, ActivityPub and oEmbed discovery', async () => {
    const { body } = await get(`/@alice/${posts.public.id}`);
    expect(body).toContain('<meta property="og:type" content="article">');
    expect(body).not.toContain('noindex');
    expect(body).toContain(`<meta property="og:url" content="http://pages.example/@alice/${posts.public.id}">`);
    expect(body).toContain('<meta property="og:image:alt" content="A red rectangle">');
    expect(body).toContain('<meta name="twitter:card" content="summary_large_image">');
    expect(body).toContain(`<link rel="alternate" type="application/activity+json" href="${posts.public.uri}">`);
    expect(body).toContain(`type="application/json+oembed" href="http://pages.example/api/oembed?format=json&amp;url=${encodeURIComponent(posts.public.url)}"`);
  });

  it('collapses a content warning in <details>, marks edits and shows poll results', async () => {
    const warned = await get(`/@alice/${posts.warned.id}`);
    expect(warned.body).toMatch(/<details class="status-cw">\s*<summary>Content warning: Spoilers &lt;ahead&gt;<\/summary>[\s\S]*Behind the warning, edited/);
    expect(warned.body).toContain('Edited <time');
    expect(warned.body).toContain('<meta property="og:description" content="Content warning: Spoilers &lt;ahead&gt;">');
    await expectValidHtml(warned.body, 'warned post');
    const poll = await get(`/@alice/${posts.poll.id}`);
    expect(poll.body).toMatch(/Tea<\/span>\s*<span class="poll-percent">100%/);
    expect(poll.body).toContain('1 person');
    await expectValidHtml(poll.body, 'poll');
  });

  it('is a 404 page for private, direct, boosted-away, suspended and missing posts', async () => {
    for (const path of [`/@alice/${posts.private.id}`, `/@alice/${posts.direct.id}`, `/@carol/${posts.carol.id}`, `/@bob/${posts.public.id}`, '/@alice/123456789', '/@alice/nonsense']) {
      const res = await get(path);
      expect(res.statusCode, path).toBe(404);
      expect(res.body, path).toContain('Page not found');
      expectNoSecrets(res.body, path);
    }
    expect((await get(`/@alice/${posts.private.id}`, AP)).statusCode).toBe(302); // to the Note's id, which Fedify refuses
    expect((await get(new URL(posts.private.uri).pathname, AP)).statusCode).toBe(404);
  });
});

describe('a tag', () => {
  it("lists the tag's public posts and nothing of suspended accounts or servers, as valid HTML", async () => {
    const res = await get('/tags/garden');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<h1 id="tag-heading">#garden</h1>');
    expect(res.body).toContain('Hello <a');
    expect(res.body).toContain('Content warning: Spoilers');
    expectNoSecrets(res.body, '/tags/garden');
    await expectValidHtml(res.body, '/tags/garden');
    const upper = await get('/tags/Garden');
    expect(upper.body).toContain('Hello <a');
    expect((await get('/tags/not-a-tag!')).statusCode).toBe(404);
  });
});

describe('RSS', () => {
  const parse = (text: string) => {
    expect(xml.validate(text)).toBe(true);
    // fast-xml-parser 3 leaves entities as they are: decoded here, as any feed reader does.
    const decode = (v: string) => v.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
    return xml.parse(text, { ignoreAttributes: false, attributeNamePrefix: '@_', tagValueProcessor: decode, attrValueProcessor: decode });
  };

  it("publishes a profile's public posts as well-formed RSS 2.0, escaped, without what a stranger may not see", async () => {
    const res = await get('/@alice.rss', {});
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/rss\+xml/);
    const feed = parse(res.body);
    expect(feed.rss['@_version']).toBe('2.0');
    expect(feed.rss.channel.title).toBe('Alice <Liddell>');
    const items = [feed.rss.channel.item].flat();
    expect(items.map((i: Json) => i.link)).toContain(posts.public.url);
    expect(items.find((i: Json) => i.link === posts.public.url).description).toContain('<p>Hello');
    expect(items.find((i: Json) => i.link === posts.public.url)['media:content']['@_url']).toMatch(/^http/);
    expectNoSecrets(res.body, '/@alice.rss');
    expect(res.body).not.toContain('a public reply');
  });

  it("publishes a tag's public posts", async () => {
    const res = await get('/tags/garden.rss', {});
    const feed = parse(res.body);
    const items = [feed.rss.channel.item].flat();
    expect(items.length).toBeGreaterThanOrEqual(2);
    expectNoSecrets(res.body, '/tags/garden.rss');
  });
});

describe('oEmbed', () => {
  it("answers Mastodon's oEmbed JSON for a public post, and 404 for what is not public", async () => {
    const res = await get(`/api/oembed?url=${encodeURIComponent(posts.public.url)}`, {});
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      type: 'rich', version: '1.0', author_name: 'Alice <Liddell>', author_url: 'http://pages.example/@alice',
      provider_name: 'pages.example', provider_url: 'http://pages.example/', cache_age: 86400, width: 400, height: null,
    });
    expect(res.json().html).toContain('Hello');
    const byUri = await get(`/api/oembed?url=${encodeURIComponent(posts.public.uri)}`, {});
    expect(byUri.statusCode).toBe(200);
    for (const url of [posts.private.url, posts.direct.url, posts.carol.url, 'https://elsewhere.example/@alice/1', 'nonsense']) {
      const refused = await get(`/api/oembed?url=${encodeURIComponent(url)}`, {});
      expect(refused.statusCode, url).toBe(404);
      expect(refused.json()).toEqual({ error: 'Record not found' });
    }
  });
});

describe('what is cached for strangers', () => {
  it('serves a kept page until what it shows changes, and never a signed-in rendering to strangers', async () => {
    const writer = await registerUser(s.app, client, 'writer');
    const first = await post(writer, { status: 'first words' });
    expect((await get('/@writer')).body).toContain('first words');
    // A change that bumps no version is not seen: the page is served from memory.
    await s.ctx.db.query(`UPDATE statuses SET content = '<p>changed behind its back</p>' WHERE id = $1`, [first.id]);
    expect((await get('/@writer')).body).toContain('first words');
    // The same change with its version bumped, as every write does, is.
    await s.ctx.versions.bump({ statuses: [first.id] });
    expect((await get('/@writer')).body).toContain('changed behind its back');
    // New posts, deletions and suspensions show at once.
    const second = await post(writer, { status: 'second words' });
    expect((await get('/@writer')).body).toContain('second words');
    expect((await get(`/@writer/${second.id}`)).statusCode).toBe(200);
    await api(writer, 'DELETE', `/api/v1/statuses/${second.id}`);
    expect((await get('/@writer')).body).not.toContain('second words');
    expect((await get(`/@writer/${second.id}`)).statusCode).toBe(404);
    const reply = await post(alice, { status: 'a late reply', in_reply_to_id: first.id });
    expect((await get(`/@writer/${first.id}`)).body).toContain('a late reply');
    await api(alice, 'DELETE', `/api/v1/statuses/${reply.id}`);
    expect((await get(`/@writer/${first.id}`)).body).not.toContain('a late reply');

    const cookie = await sessionCookie(writer);
    const signedIn = await get('/@writer', { ...BROWSER, cookie });
    expect(signedIn.body).toContain('href="/settings/profile"');
    const stranger = await get('/@writer');
    expect(stranger.body).not.toContain('href="/settings/profile"');
    expect(stranger.body).toContain('href="/auth/sign_in"');

    expect((await api(adminToken, 'POST', `/api/v1/admin/accounts/${writer.id}/action`, { type: 'suspend' })).status).toBe(200);
    expect((await get('/@writer')).statusCode).toBe(404);
    expect((await get(`/@writer/${first.id}`)).statusCode).toBe(404);
    expect((await get('/@writer.rss')).statusCode).toBe(404);
  });

  it('drops a tag page when a new post carries the tag', async () => {
    const before = await get('/tags/freshtag');
    expect(before.statusCode).toBe(200);
    expect(before.body).toContain('No public posts with this tag yet.');
    await post(bob, { status: 'now with #freshtag' });
    expect((await get('/tags/freshtag')).body).toContain('now with');
  });
});

describe('errors for browsers and for programs', () => {
  it('answers a browser on an unknown page with the HTML 404 page, and keeps JSON for the API and ActivityPub', async () => {
    const page = await get('/no/such/page');
    expect(page.statusCode).toBe(404);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('Page not found');
    await expectValidHtml(page.body, '404 page');
    for (const path of ['/api/v1/no-such-thing', '/api/v1/accounts/999999', '/users/nobody/outbox', '/nodeinfo/9.9']) {
      const res = await get(path);
      expect(res.statusCode, path).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/json/);
    }
    const json = await get('/no/such/page', { accept: 'application/json' });
    expect(json.statusCode).toBe(404);
    expect(json.json()).toEqual({ error: 'Record not found' });
    const nobody = await get('/users/nobody');
    expect(nobody.statusCode).toBe(404);
    expect(nobody.headers['content-type']).toMatch(/^text\/html/);
    expect((await get('/users/nobody', AP)).statusCode).toBe(404);
  });

  it('renders a refused form (CSRF) as an HTML page saying to reload it', async () => {
    const res = await s.app.inject({ method: 'POST', url: '/auth/sign_in', headers: { ...BROWSER, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a&password=b' });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('Invalid or expired form; go back, reload and try again');
    await expectValidHtml(res.body, 'CSRF page');
  });

  it('serves robots.txt and the favicons', async () => {
    const robots = await get('/robots.txt', {});
    expect(robots.statusCode).toBe(200);
    expect(robots.body).toContain('User-agent: *');
    const ico = await get('/favicon.ico', {});
    expect(ico.statusCode).toBe(200);
    expect(ico.rawPayload.subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]));
    const svg = await get('/favicon.svg', {});
    expect(svg.statusCode).toBe(200);
    expect(svg.headers['content-type']).toMatch(/svg/);
  });

  it('redirects the ActivityPub id of a public post to its page, and host-meta still answers', async () => {
    const res = await get(new URL(posts.public.uri).pathname);
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`/@alice/${posts.public.id}`);
    const hostMeta = await get('/.well-known/host-meta', {});
    expect(hostMeta.statusCode).toBe(200);
    expect(hostMeta.body).toContain('/.well-known/webfinger?resource={uri}');
  });
});
