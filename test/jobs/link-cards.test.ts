import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { LINK_CARD_LIMITS, fetchLinkCard, joinedLinkCardFetches } from '../../jobs/link-cards.ts';
import { PULL_CONCURRENCY } from '../../jobs/worker.ts';
import { firstCardLink, pageEncoding, parsePage } from '../../services/preview-cards.ts';
import { upsertRemoteAccount, type AccountRow } from '../../storage/accounts.ts';
import { receiveRemoteStatus } from '../../services/statuses.ts';
import { insertDomainBlock } from '../../storage/instance-domain-blocks.ts';
import { publishDomainPolicyChange } from '../../services/domain-policy.ts';

// Link preview cards: a page served on loopback by the test, read by the fetchLinkCard job.
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer;
let amy: TestUser;
let ben: TestUser;
let pages: Server;
let base: string;
const requests = new Map<string, number>();
/** Answers of `/held` pages, kept until the test lets them go. */
const held: (() => void)[] = [];
let png: Buffer;

const ARTICLE = `<!doctype html><html><head><title>Plain title</title>
<meta property="og:title" content="The &amp; Article">
<meta property="og:description" content="What it is about">
<meta property="og:type" content="article">
<meta property="og:site_name" content="Loopback News">
<meta property="og:image" content="/image.png">
<meta name="description" content="not this one">
</head><body><p>Hello</p></body></html>`;

/** Pages of the Mastodon 4.3 additions (JSON-LD, languages, charsets, fediverse:creator), by path. */
const EXTRA_PAGES = new Map<string, { type: string; body: () => Buffer }>();
const page = (path: string, type: string, body: string | Buffer) => EXTRA_PAGES.set(path, { type, body: () => (typeof body === 'string' ? Buffer.from(body) : body) });
const JSON_LD = `<!doctype html><html lang="de"><head><title>HTML title</title>
<meta property="og:title" content="OpenGraph title">
<meta property="og:description" content="OpenGraph description">
<meta property="og:site_name" content="OG Site">
<meta property="og:image:alt" content="A red square">
<script type="application/ld+json">{ this is not JSON }</script>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Organization","name":"Not the page"}</script>
<script type="application/ld+json">
//<![CDATA[
{"@context":"https://schema.org","@graph":[{"@type":"WebSite","name":"Site"},{"@type":["NewsArticle"],
 "headline":"Structured &amp; headline","description":"Structured description",
 "author":[{"@type":"Person","name":"Jane Writer","url":"/authors/jane"},{"@type":"Person","name":"Second"}],
 "publisher":{"@type":"Organization","name":"Loopback Times","logo":{"url":"/logo.png"}},
 "image":[{"@type":"ImageObject","url":"/image.png"}],"datePublished":"2025-03-04T05:06:07Z","inLanguage":"fr-FR"}]}
//]]>
</script></head><body><script type="application/ld+json">{"@type":"NewsArticle","headline":"Later block"}</script></body></html>`;

beforeAll(async () => {
  page('/jsonld', 'text/html; charset=utf-8', JSON_LD);
  // windows-1252 named only by <meta charset> (as iso-8859-1, which browsers read as windows-1252), none in the header.
  page('/latin1', 'text/html', Buffer.concat([Buffer.from('<html><head><meta charset="iso-8859-1"><title>'), Buffer.from('436166e9206372e86d6520962064e96ae0', 'hex'), Buffer.from('</title></head></html>')]));
  // Shift_JIS named only by the header; the page's language from <html lang>.
  page('/sjis', 'text/html; charset=Shift_JIS', Buffer.concat([Buffer.from('<html lang="ja-JP"><head><title>'), Buffer.from('93fa967b8cea', 'hex'), Buffer.from('</title></head></html>')]));
  // KOI8-R named by an http-equiv; the language from og:locale.
  page('/koi8', 'text/html', Buffer.concat([Buffer.from('<html lang="xx"><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><meta property="og:locale" content="ru_RU"><title>'), Buffer.from('f0d2c9d7c5d4', 'hex'), Buffer.from('</title></head></html>')]));
  const creatorPage = (handle: string) => `<html><head><title>By someone</title><meta name="fediverse:creator" content="${handle}"><meta property="og:author" content="Page Author"></head></html>`;
  page('/creator-remote', 'text/html', creatorPage('@rem@127.0.0.1'));
  page('/creator-amy', 'text/html', creatorPage('@amy@test.local'));
  page('/creator-unknown', 'text/html', creatorPage('@nobody@unknown.invalid'));
  page('/creator-bad', 'text/html', creatorPage('not a handle'));
  png = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 200, g: 40, b: 90 } } }).png().toBuffer();
  pages = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    requests.set(req.url!, (requests.get(req.url!) ?? 0) + 1);
    if (path.startsWith('/held')) {
      held.push(() => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>Held page</title></head></html>'));
      return;
    }
    if (path.startsWith('/article')) return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ARTICLE);
    const extra = EXTRA_PAGES.get(path);
    if (extra) return res.writeHead(200, { 'content-type': extra.type }).end(extra.body());
    if (path === '/image.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (path === '/plain') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title> Only a\n title </title><meta name="description" content="Plain description"></head><body></body></html>');
    if (path === '/redirect') return res.writeHead(302, { location: '/plain' }).end();
    if (path === '/video') {
      return res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>A video</title>
        <link rel="alternate" type="application/json+oembed" href="/oembed.json"></head></html>`);
    }
    if (path === '/oembed.json') {
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        version: '1.0', type: 'video', title: 'The video', author_name: 'Vic', author_url: 'https://video.example/vic', provider_name: 'VideoSite',
        provider_url: 'https://video.example/', width: 480, height: 270,
        html: '<script>alert(1)</script><iframe src="https://video.example/embed/1" width="480" height="270" onload="x()"></iframe>',
      }));
    }
    if (path === '/big') {
      // Chunked (no length said): the limit is found while reading.
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<html><head><title>Too big</title></head><body>');
      const chunk = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 20; i++) res.write(chunk);
      return res.end('</body></html>');
    }
    if (path === '/slow') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<html><head><title>Slow</title>'); // and never more
      return;
    }
    if (path === '/json') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"title":"json"}');
    if (path === '/missing') return res.writeHead(404, { 'content-type': 'text/html' }).end('<title>Not found</title>');
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  s = await startTestServer({ ALLOW_PRIVATE_ADDRESSES: 'true' });
  [amy, ben] = await registerUsers(s.app, 'amy', 'ben');
  await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${amy.id}/follow`, headers: bearer(ben.token) });
}, 60_000);
afterAll(async () => {
  pages?.closeAllConnections();
  await new Promise((r) => pages?.close(r));
  await s?.close();
});

const post = async (user: TestUser, status: string, server = s): Promise<Json> => {
  const res = await server.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload: { status } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const get = async (url: string, user: TestUser = amy, server = s): Promise<Json> => {
  const res = await server.app.inject({ method: 'GET', url, headers: bearer(user.token) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
/** Waits until no link card job is left (each job's outbox row goes when it ends). */
const cardJobsDone = async (server = s) => {
  const left = await eventually(async () => {
    const { rows } = await server.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'fetchLinkCard'`);
    return rows[0].n as number;
  }, 0, 8000);
  expect(left).toBe(0);
};
const cardOf = async (id: string, server = s, user = amy) => (await get(`/api/v1/statuses/${id}`, user, server)).card as Json | null;
const cardEventually = (id: string) => eventually(async () => (await cardOf(id)) !== null, true, 8000);

describe('link preview cards', () => {
  it('gives a post linking to a page its OpenGraph card, with the image resized on the file host', async () => {
    const st = await post(amy, `Read this: ${base}/article?x=1#part`);
    expect(st.card).toBeNull(); // the job has not run yet when the post is answered
    expect(await cardEventually(st.id)).toBe(true);
    const status = await get(`/api/v1/statuses/${st.id}`);
    expectEntity('Status', status);
    expect(status.card).toMatchObject({
      url: `${base}/article?x=1`, title: 'The & Article', description: 'What it is about', type: 'link',
      provider_name: 'Loopback News', html: '', width: 400, height: 300,
    });
    expect(status.card.blurhash).toMatch(/^[0-9A-Za-z#$%*+,-.:;=?@[\]^_{|}~]{6,}$/);
    const image = await s.app.inject({ method: 'GET', url: new URL(status.card.image).pathname });
    expect(image.statusCode).toBe(200);
    const meta = await sharp(image.rawPayload).metadata();
    expect([meta.width, meta.height]).toEqual([400, 300]);
    // The home timelines (the author's and a follower's) show it too.
    for (const user of [amy, ben]) {
      const home = (await get('/api/v1/timelines/home', user)) as unknown as Json[];
      expect(home.find((x) => x.id === st.id)?.card?.title).toBe('The & Article');
    }
  });

  it('fetches a page once for all the jobs wanting its card at the same moment', async () => {
    const url = `${base}/held-shared`;
    const before = joinedLinkCardFetches();
    const [a, b] = [await post(amy, `one ${url}`), await post(ben, `two ${url}`)];
    // The two posts' own jobs and two more runs of the job, all while the page has not answered.
    const direct = [fetchLinkCard(s.ctx, a.id), fetchLinkCard(s.ctx, b.id)];
    expect(await eventually(async () => joinedLinkCardFetches() - before >= 3, true, 8000)).toBe(true);
    expect(requests.get('/held-shared')).toBe(1);
    for (const answer of held.splice(0)) answer();
    // Each status's card is attached once, by its queued job or by the direct run, whichever ends first: the other
    // finds it there already.
    for (const outcome of await Promise.all(direct)) expect(['attached', 'unchanged']).toContain(outcome);
    await cardJobsDone();
    expect((await cardOf(a.id))?.title).toBe('Held page');
    expect((await cardOf(b.id, s, ben))?.title).toBe('Held page');
    expect(requests.get('/held-shared')).toBe(1);
  });

  it('runs on a queue of its own, a few fetches at a time: pages that hang hold none of the slots fan-out needs', async () => {
    const links = Array.from({ length: PULL_CONCURRENCY + 2 }, (_, n) => `${base}/held-pull-${n}`);
    const linked = [];
    for (const link of links) linked.push(await post(amy, `pulled ${link}`));
    const heldNow = () => links.filter((l) => requests.has(new URL(l).pathname)).length;
    try {
      // As many fetches at once as the pull queue has slots in this process, the other two waiting for one to end.
      expect(await eventually(async () => heldNow(), PULL_CONCURRENCY, 8000)).toBe(PULL_CONCURRENCY);
      const { rows } = await s.ctx.db.query(`SELECT id::text FROM outbox WHERE kind = 'fetchLinkCard' AND payload->>'statusId' = $1`, [linked[0]!.id]);
      expect(await s.ctx.jobs.pull.getJob(`outbox-${rows[0].id}`)).toBeTruthy();
      expect(await s.ctx.jobs.fanout.getJob(`outbox-${rows[0].id}`)).toBeFalsy();
      // Meanwhile a new post is fanned out (its outbox row goes when its job has run) and its followers see it.
      const later = await post(amy, 'posted while the pages hang');
      const fanOutLeft = async () => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'fanOutStatus' AND payload->>'statusId' = $1`, [later.id])).rows[0].n;
      expect(await eventually(fanOutLeft, 0, 8000)).toBe(0);
      expect(heldNow()).toBe(PULL_CONCURRENCY);
    } finally {
      // Every page answered, those asked for later too (for at most 8 s).
      for (let i = 0; i < 400 && (heldNow() < links.length || held.length > 0); i++) {
        for (const answer of held.splice(0)) answer();
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    for (const st of linked) expect(await cardEventually(st.id)).toBe(true);
  });

  it('stores one card per URL: a later post of the link shows it at once, in its answer and its update, with no job or fetch', async () => {
    const sub = new Redis(s.config.redisUrl);
    const seen: Json[] = [];
    await sub.subscribe(s.ctx.events.channelName('timeline:public'));
    sub.on('message', (_c, text) => seen.push(JSON.parse(text)));
    try {
      const st = await post(ben, `again ${base}/article?x=1`);
      expectEntity('Status', st);
      expect(st.card).toMatchObject({ url: `${base}/article?x=1`, title: 'The & Article', description: 'What it is about' });
      const { rows: jobs } = await s.ctx.db.query(`SELECT 1 FROM outbox WHERE kind = 'fetchLinkCard' AND payload->>'statusId' = $1`, [st.id]);
      expect(jobs).toHaveLength(0);
      const { rows } = await s.ctx.db.query(`SELECT count(*)::int AS n FROM preview_cards WHERE url = $1`, [`${base}/article?x=1`]);
      expect(rows[0].n).toBe(1);
      // Its update on the public stream carries it (the view rendered by the fan-out job), and read back it is there.
      const isUpdate = (m: Json) => m.event === 'update' && m.statusId === st.id;
      expect(await eventually(async () => seen.some(isUpdate), true, 3000)).toBe(true);
      expect(JSON.parse(seen.find(isUpdate)!.view).card).toMatchObject({ title: 'The & Article' });
      expect((await get(`/api/v1/statuses/${st.id}`, ben)).card).toEqual(st.card);
      expect(requests.get('/article?x=1')).toBe(1); // stored: not fetched again
    } finally {
      sub.disconnect();
    }
  });

  it('fetches a stored card again once it is two weeks old, and tells the streams of the new one (status.update)', async () => {
    const url = `${base}/article?x=1`;
    await s.ctx.db.query(`UPDATE preview_cards SET updated_at = now() - interval '15 days', title = 'Old title' WHERE url = $1`, [url]);
    const sub = new Redis(s.config.redisUrl);
    const seen: Json[] = [];
    await sub.subscribe(s.ctx.events.channelName('timeline:public'));
    sub.on('message', (_c, text) => seen.push(JSON.parse(text)));
    try {
      const st = await post(ben, `stale ${url}`);
      expect(st.card).toBeNull(); // not the stale one: the job fetches the page
      expect(await eventually(async () => (await get(`/api/v1/statuses/${st.id}`, ben)).card?.title ?? null, 'The & Article', 8000)).toBe('The & Article');
      expect(requests.get('/article?x=1')).toBe(2);
      expect(await eventually(async () => seen.some((m) => m.event === 'status.update' && m.statusId === st.id), true, 3000)).toBe(true);
    } finally {
      sub.disconnect();
    }
  });

  it('takes the <title> and description of a page without OpenGraph, after a redirect', async () => {
    const st = await post(amy, `plain ${base}/redirect`);
    expect(await cardEventually(st.id)).toBe(true);
    const status = await get(`/api/v1/statuses/${st.id}`);
    expectEntity('Status', status);
    expect(status.card).toMatchObject({ url: `${base}/redirect`, title: 'Only a title', description: 'Plain description', image: null, blurhash: null, width: 0, height: 0 });
  });

  it('reads oEmbed for the embed, keeping only its iframe', async () => {
    const st = await post(amy, `watch ${base}/video`);
    expect(await cardEventually(st.id)).toBe(true);
    const status = await get(`/api/v1/statuses/${st.id}`);
    expectEntity('Status', status);
    expect(status.card).toMatchObject({ type: 'video', title: 'A video', author_name: 'Vic', provider_name: 'VideoSite', width: 480, height: 270 });
    expect(status.card.html).toBe('<iframe src="https://video.example/embed/1" width="480" height="270" frameborder="0" allowfullscreen="true"></iframe>');
  });

  it('gives no card, and no error, for pages too big, too slow, not HTML or answering an error', async () => {
    const timeout = LINK_CARD_LIMITS.timeoutMs;
    LINK_CARD_LIMITS.timeoutMs = 1000;
    try {
      const posts = [];
      for (const path of ['/big', '/slow', '/json', '/missing']) posts.push(await post(amy, `bad ${base}${path}`));
      await cardJobsDone();
      for (const path of ['/big', '/slow', '/json', '/missing']) expect(requests.get(path), path).toBe(1);
      for (const st of posts) expect(await cardOf(st.id)).toBeNull();
      const { rows } = await s.ctx.db.query(`SELECT count(*)::int AS n FROM preview_cards WHERE url LIKE '%/big' OR url LIKE '%/slow' OR url LIKE '%/json' OR url LIKE '%/missing'`);
      expect(rows[0].n).toBe(0);
    } finally {
      LINK_CARD_LIMITS.timeoutMs = timeout;
    }
  });

  it('gives no card for hashtags, mentions, links to this server or posts with media, and fetches nothing', async () => {
    const before = requests.size;
    const posts = [await post(amy, 'a #hashtag only'), await post(amy, 'hi @ben'), await post(amy, 'me: http://test.local/@amy and https://test.local/tags/x')];
    const upload = await s.app.inject({
      method: 'POST', url: '/api/v2/media', headers: { ...bearer(amy.token), 'content-type': 'multipart/form-data; boundary=b' },
      payload: Buffer.concat([Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n'), png, Buffer.from('\r\n--b--\r\n')]),
    });
    expect([200, 202]).toContain(upload.statusCode);
    const mediaUrl = `/api/v1/media/${upload.json().id}`;
    expect(await eventually(async () => (await s.app.inject({ method: 'GET', url: mediaUrl, headers: bearer(amy.token) })).statusCode, 200, 8000)).toBe(200);
    const withMedia = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(amy.token), payload: { status: `media ${base}/article-media`, media_ids: [upload.json().id] } });
    expect(withMedia.statusCode, withMedia.body).toBe(200);
    posts.push(withMedia.json());
    const { rows } = await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'fetchLinkCard'`);
    expect(rows[0].n).toBe(0); // nothing was even queued
    await cardJobsDone();
    for (const st of posts) expect(await cardOf(st.id)).toBeNull();
    expect(requests.size).toBe(before);
    expect(requests.has('/article-media')).toBe(false);
  });

  it('picks the first link that is not a hashtag or a mention, in our HTML and in other servers\'', () => {
    const own = new Set(['test.local']);
    expect(firstCardLink('<p><a href="https://x.example/tags/a" class="mention hashtag" rel="tag">#<span>a</span></a> <a href="https://x.example/@b" class="u-url mention">@b</a> <a href="https://news.example/1#top">n</a> <a href="https://later.example/">l</a></p>', own)).toBe('https://news.example/1');
    // Other servers' links that only read as hashtags or mentions.
    expect(firstCardLink('<p><a href="https://x.example/t/a">#a</a> <a href="https://x.example/u/b"><span>@</span>b</a> <a href="http://test.local/x">ours</a> <a href="javascript:alert(1)">js</a> <a href="https://ok.example/">ok</a></p>', own)).toBe('https://ok.example/');
    expect(firstCardLink('<p>no links</p>', own)).toBeNull();
    const page = parsePage('<html><head><meta name="twitter:title" content="T"><meta name="twitter:image" content="https://img.example/a.png"></head><body><title>not in head</title></body></html>', 'https://p.example/');
    expect(page).toMatchObject({ title: 'T', image: 'https://img.example/a.png' });
  });

  it('gives statuses from other servers their card; a server whose media is rejected gets it without the image', async () => {
    const remote = async (domain: string): Promise<AccountRow> => upsertRemoteAccount(s.ctx.db, {
      uri: `https://${domain}/users/rem`, username: 'rem', domain, displayName: 'rem', noteHtml: '', url: `https://${domain}/@rem`,
      inboxUrl: `https://${domain}/users/rem/inbox`, sharedInboxUrl: null, outboxUrl: null, followersUrl: null,
      locked: false, bot: false, discoverable: true, avatarUrl: null, headerUrl: null, fields: [], createdAt: null,
    });
    await insertDomainBlock(s.ctx.db, 'nomedia.example', { severity: 'noop', reject_media: true, reject_reports: false, private_comment: null, public_comment: null, obfuscate: false });
    await publishDomainPolicyChange(s.ctx.redis, s.config.redisPrefix);
    let n = 0;
    const receive = async (author: AccountRow, content: string) => (await receiveRemoteStatus(s.ctx.actors.deps, {
      accountId: author.id, uri: `${author.uri}/statuses/${++n}`, url: null, content, spoilerText: '', sensitive: false,
      visibility: 'public', language: null, parent: null, mentioned: [], tags: [], createdAt: null, media: [],
    }))!;
    const [fine, blocked] = [await remote('remote.example'), await remote('nomedia.example')];
    const link = `${base}/article?remote=1`;
    const a = await receive(fine, `<p><a href="https://remote.example/tags/x">#x</a> <a href="${link}" rel="nofollow">article</a></p>`);
    const b = await receive(blocked, `<p><a href="${link}">article</a></p>`);
    expect(await cardEventually(a)).toBe(true);
    expect(await cardEventually(b)).toBe(true);
    const [ca, cb] = [await cardOf(a), await cardOf(b)];
    expect(ca).toMatchObject({ url: link, title: 'The & Article', width: 400, height: 300 });
    expect(ca!.image).toMatch(/^http:\/\/test\.local\/system\//);
    expect(cb).toMatchObject({ url: link, title: 'The & Article', image: null, blurhash: null });
    expectEntity('Status', await get(`/api/v1/statuses/${b}`));

    // The other way round: the card stored without its image first gets it for the next post, not for the first.
    const late = `${base}/article?late=1`;
    const c = await receive(blocked, `<p><a href="${late}">article</a></p>`);
    expect(await cardEventually(c)).toBe(true);
    expect((await cardOf(c))!.image).toBeNull();
    const d = await receive(fine, `<p><a href="${late}">article</a></p>`);
    expect(await eventually(async () => typeof (await cardOf(d))?.image, 'string', 8000)).toBe('string');
    expect((await cardOf(c))!.image).toBeNull();
    expect(requests.get('/article?late=1')).toBe(1);
  });

  it('follows an edit: a new link gets its card, a removed link takes it away', async () => {
    const st = await post(amy, `first ${base}/article?edit=1`);
    expect(await cardEventually(st.id)).toBe(true);
    const edit = (status: string) => s.app.inject({ method: 'PUT', url: `/api/v1/statuses/${st.id}`, headers: bearer(amy.token), payload: { status } });
    expect((await edit(`now ${base}/plain`)).statusCode).toBe(200);
    expect(await eventually(async () => (await cardOf(st.id))?.title, 'Only a title', 8000)).toBe('Only a title');
    expect((await edit('no link any more')).statusCode).toBe(200);
    expect(await eventually(async () => await cardOf(st.id), null, 8000)).toBeNull();
  });
});

describe('without ALLOW_PRIVATE_ADDRESSES', () => {
  it('never fetches a loopback page', async () => {
    const strict = await startTestServer({ ALLOW_PRIVATE_ADDRESSES: 'false' });
    try {
      const [cal] = await registerUsers(strict.app, 'cal');
      const st = await post(cal, `local ${base}/article?private=1 and http://localhost:${new URL(base).port}/article?private=2`, strict);
      await cardJobsDone(strict);
      expect(await cardOf(st.id, strict, cal)).toBeNull();
      expect(requests.has('/article?private=1')).toBe(false);
      expect(requests.has('/article?private=2')).toBe(false);
    } finally {
      await strict.close();
    }
  });
});

describe('Mastodon 4.3 card details', () => {
  it('reads JSON-LD before OpenGraph: headline, description, author, publisher, image, date and language', async () => {
    const st = await post(amy, `structured ${base}/jsonld`);
    expect(await cardEventually(st.id)).toBe(true);
    const status = await get(`/api/v1/statuses/${st.id}`);
    expectEntity('Status', status);
    expect(status.card).toMatchObject({
      title: 'Structured & headline', description: 'Structured description', provider_name: 'Loopback Times',
      author_name: 'Jane Writer', author_url: `${base}/authors/jane`, published_at: '2025-03-04T05:06:07.000Z',
      language: 'fr', image_description: 'A red square', width: 400, height: 300,
    });
    // The image named only by the JSON-LD is fetched.
    expect(status.card.image).toMatch(/^http:\/\/test\.local\/system\//);
    expect(status.card.authors).toEqual([{ name: 'Jane Writer', url: `${base}/authors/jane`, account: null }]);
  });

  it('decodes pages in legacy charsets, named by <meta charset>, the Content-Type header or an http-equiv', async () => {
    const cases: [string, string, string | null][] = [['/latin1', 'Café crème – déjà', null], ['/sjis', '日本語', 'ja'], ['/koi8', 'Привет', 'ru']];
    const posts = [];
    for (const [path] of cases) posts.push(await post(amy, `charset ${base}${path}`));
    await cardJobsDone();
    for (const [i, [path, title, language]] of cases.entries()) {
      const status = await get(`/api/v1/statuses/${posts[i]!.id}`);
      expectEntity('Status', status);
      expect(status.card, path).toMatchObject({ title, language });
    }
  });

  it('credits the fediverse:creator account when the page is on a site of theirs, and only then', async () => {
    const rem = await upsertRemoteAccount(s.ctx.db, {
      uri: 'https://127.0.0.1/users/rem', username: 'rem', domain: '127.0.0.1', displayName: 'Rem', noteHtml: '', url: 'https://127.0.0.1/@rem',
      inboxUrl: 'https://127.0.0.1/users/rem/inbox', sharedInboxUrl: null, outboxUrl: null, followersUrl: null,
      locked: false, bot: false, discoverable: true, avatarUrl: null, headerUrl: null, fields: [], createdAt: null,
    });
    // A page on the account's own server's domain.
    const a = await post(amy, `by rem ${base}/creator-remote`);
    expect(await cardEventually(a.id)).toBe(true);
    const status = await get(`/api/v1/statuses/${a.id}`);
    expectEntity('Status', status);
    expect(status.card).toMatchObject({ author_name: 'Page Author', author_url: 'about:blank' });
    expect(status.card.authors).toHaveLength(1);
    expect(status.card.authors[0]).toMatchObject({ name: 'Page Author', url: 'about:blank', account: { id: rem.id, acct: 'rem@127.0.0.1' } });
    expectEntity('PreviewCardAuthor', status.card.authors[0]);
    // The home timeline shows it too.
    const home = (await get('/api/v1/timelines/home', amy)) as unknown as Json[];
    expect(home.find((x) => x.id === a.id)?.card?.authors?.[0]?.account?.id).toBe(rem.id);

    // A page elsewhere naming amy: not credited (anyone could name anyone), the card made all the same. Nor an
    // account that cannot be found, nor something that is not a handle.
    const spoof = await post(ben, `by amy? ${base}/creator-amy?first`);
    const unknown = await post(ben, `nobody ${base}/creator-unknown`);
    const bad = await post(ben, `bad ${base}/creator-bad`);
    await cardJobsDone();
    for (const st of [spoof, unknown, bad]) {
      const card = (await get(`/api/v1/statuses/${st.id}`)).card;
      expect(card).toMatchObject({ title: 'By someone', author_name: 'Page Author' });
      expect(card.authors).toEqual([{ name: 'Page Author', url: 'about:blank', account: null }]);
    }
    // Once amy's profile has a verified link to the site, its pages may credit her.
    await s.ctx.db.query(`UPDATE accounts SET fields = $2::jsonb WHERE id = $1`, [amy.id, JSON.stringify([{
      name: 'Site', value: `${base}/`, value_html: `<a href="${base}/" rel="nofollow noopener me" target="_blank">${base}/</a>`, verified_at: new Date().toISOString(),
    }])]);
    const credited = await post(ben, `by amy ${base}/creator-amy?second`);
    expect(await cardEventually(credited.id)).toBe(true);
    const shown = await get(`/api/v1/statuses/${credited.id}`, ben);
    expectEntity('Status', shown);
    expect(shown.card.authors[0].account).toMatchObject({ id: amy.id, acct: 'amy' });
    await s.ctx.db.query(`UPDATE accounts SET fields = '[]'::jsonb WHERE id = $1`, [amy.id]);
  });

  it('reads pages as browsers would: handles, languages and charsets', () => {
    const p = parsePage(`<html xml:lang="en"><head><meta property="fediverse:creator" content=" @Someone@Social.Example "><title>t</title>
      <script type="application/ld+json">[{"@type":"WebPage","name":"x","inLanguage":{"@type":"Language","name":"Spanish","alternateName":"es"},"author":"Plain Name"}]</script></head></html>`, 'https://p.example/');
    expect(p).toMatchObject({ creator: 'Someone@social.example', language: 'es', author: 'Plain Name', authorUrl: '', title: 't' });
    expect(parsePage('<html lang="klingon"><title>t</title></html>', 'https://p.example/').language).toBeNull();
    // A JSON-LD block larger than the limit is not read.
    const huge = `<html><head><title>t</title><script type="application/ld+json">{"@type":"NewsArticle","headline":"${'h'.repeat(300 * 1024)}"}</script></head></html>`;
    expect(parsePage(huge, 'https://p.example/').title).toBe('t');
    const bytes = (s: string) => Buffer.from(s, 'latin1');
    expect(pageEncoding(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes('<meta charset="koi8-r">')]), 'shift_jis')).toBe('utf-8');
    expect(pageEncoding(bytes('<meta charset="koi8-r">'), 'shift_jis')).toBe('shift_jis');
    expect(pageEncoding(bytes('<meta charset="koi8-r">'), 'no-such-charset')).toBe('koi8-r');
    expect(pageEncoding(bytes('<meta charset="utf-16">'), null)).toBe('utf-8');
    expect(pageEncoding(bytes('<meta charset="nonsense">'), null)).toBe('utf-8');
    expect(pageEncoding(bytes('<p>nothing said</p>'), null)).toBe('utf-8');
  });
});

describe('one card per URL', () => {
  it('keeps the image when a later fetch of the same page was made without it (a post of a server whose media is rejected)', async () => {
    const { upsertCard } = await import('../../storage/preview-cards.ts');
    const page = {
      url: 'https://race.example/article', title: 'Race', description: '', type: 'link' as const, author_name: '', author_url: '',
      provider_name: '', provider_url: '', html: '', embed_url: '', published_at: null, image_remote_url: 'https://race.example/a.png',
    };
    await upsertCard(s.ctx.db, { ...page, width: 400, height: 300, image_key: 'cards/race.webp', blurhash: 'LKO2?U%2Tw=w]~RBVZRi};RPxuwH' });
    const later = await upsertCard(s.ctx.db, { ...page, title: 'Race, again', width: 0, height: 0, image_key: null, blurhash: null });
    expect(later.card).toMatchObject({ title: 'Race, again', image_key: 'cards/race.webp', width: 400, height: 300 });
    expect(later.replacedImageKey).toBeNull();
    // A page whose image changed gets the new one (or none), and the old file is given back to be removed.
    const changed = await upsertCard(s.ctx.db, { ...page, image_remote_url: 'https://race.example/b.png', width: 0, height: 0, image_key: null, blurhash: null });
    expect(changed.card.image_key).toBeNull();
    expect(changed.replacedImageKey).toBe('cards/race.webp');
  });
});
