#!/usr/bin/env node
// Live federation checks against other servers on loopback (GoToSocial, Hollo, snac), as docs/interop.md describes.
// Not part of `npm test`: the peers are built and started by hand (docs/interop.md, ../shared/INTEROP.md).
//
//   npm run interop -- [scenario …]      (scenarios: emoji reactions profile thread media remote-follow video)
//
// Run it with the environment this server was started with (DATABASE_URL, REDIS_URL, DATA_DIR, …): our side's emoji
// is added through `npm run cli -- emoji add`. Prints one line per check and a Markdown table of the results.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const checkout = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = (name, fallback) => process.env[name] ?? fallback;
const PEERS = env('PEERS_DIR', join(process.env.TMPDIR ?? '/tmp', 'peers'));
const OURS = env('OURS_URL', 'https://ours.test');
const GTS = env('GTS_URL', 'https://gts.test');
const HOLLO = env('HOLLO_URL', 'https://quote.test');
const SNAC = env('SNAC_URL', 'https://snac.test');
const PASSWORD = env('INTEROP_PASSWORD', 'Interop-Passw0rd-123');
const ours = { email: env('OURS_EMAIL', 'alice@ours.test'), username: env('OURS_USERNAME', 'alice') };
const gts = { admin: env('GTS_ADMIN', 'bob'), other: env('GTS_OTHER', 'dave') };
const hollo = { email: env('HOLLO_EMAIL', 'quinn@quote.test'), username: 'quinn', tokenFile: env('HOLLO_TOKEN_FILE', join(PEERS, 'quote', 'quinn.token')) };
const snac = { user: env('SNAC_USER', 'carol'), password: env('SNAC_PASSWORD', ''), dir: env('SNAC_DIR', '') };
const UA = 'fedi-server-interop/1 (+live-federation.mjs)';
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.log(...a);

/** A cookie jar and fetch that follows nothing by itself. */
class Browser {
  cookies = new Map();
  async go(url, { method = 'GET', form, multipart, json, headers = {} } = {}) {
    const h = { 'user-agent': UA, accept: 'text/html', ...headers };
    if (this.cookies.size) h.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body;
    if (form) { body = new URLSearchParams(form).toString(); h['content-type'] = 'application/x-www-form-urlencoded'; }
    if (multipart) body = multipart;
    if (json) { body = JSON.stringify(json); h['content-type'] = 'application/json'; }
    const res = await fetch(url, { method, headers: h, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';'); const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
    }
    return res;
  }
}

/** A Mastodon API client with a bearer token. */
function api(base, token) {
  const call = async (method, path, body) => {
    const headers = { authorization: `Bearer ${token}`, 'user-agent': UA, accept: 'application/json' };
    let payload;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) { payload = JSON.stringify(body); headers['content-type'] = 'application/json'; }
    const res = await fetch(new URL(path, base), { method, headers, body: payload });
    const text = await res.text();
    let data; try { data = JSON.parse(text); } catch { data = text; }
    return { status: res.status, headers: res.headers, data };
  };
  const ok = async (method, path, body) => {
    const r = await call(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${base}${path}: ${r.status} ${JSON.stringify(r.data).slice(0, 300)}`);
    return r.data;
  };
  return { call, get: (p) => ok('GET', p), post: (p, b) => ok('POST', p, b), put: (p, b) => ok('PUT', p, b), patch: (p, b) => ok('PATCH', p, b), del: (p) => ok('DELETE', p) };
}

const hiddenFields = (html) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)]
  .map((m) => [m[1], m[2].replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')]));

/** Our token: the authorize page, sign-in, approve (the browser flow; no password grant here, as in Mastodon). */
async function oursToken() {
  const redirect = 'https://interop.invalid/callback';
  const app = await (await fetch(`${OURS}/api/v1/apps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'interop', redirect_uris: redirect, scopes: 'read write follow push' }) })).json();
  const b = new Browser();
  const q = new URLSearchParams({ client_id: app.client_id, redirect_uri: redirect, response_type: 'code', scope: 'read write follow push' });
  let res = await b.go(`${OURS}/oauth/authorize?${q}`);
  const signIn = new URL(res.headers.get('location'), OURS);
  const page = await (await b.go(signIn.href)).text();
  res = await b.go(`${OURS}/auth/sign_in`, { method: 'POST', form: { ...hiddenFields(page), email: ours.email, password: PASSWORD, return_to: signIn.searchParams.get('return_to') } });
  if (res.status !== 303) throw new Error(`sign-in at ${OURS}: ${res.status}`);
  const authorize = await (await b.go(new URL(res.headers.get('location'), OURS).href)).text();
  res = await b.go(`${OURS}/oauth/authorize`, { method: 'POST', form: { ...hiddenFields(authorize), decision: 'approve' } });
  const code = new URL(res.headers.get('location')).searchParams.get('code');
  const tok = await (await fetch(`${OURS}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'authorization_code', code, client_id: app.client_id, client_secret: app.client_secret, redirect_uri: redirect }) })).json();
  if (!tok.access_token) throw new Error(`token at ${OURS}: ${JSON.stringify(tok)}`);
  return tok.access_token;
}

/** A GoToSocial token: its sign-in page (email as `username`), the authorize form, the out-of-band code. */
async function gtsToken(username) {
  const scopes = 'read write follow push admin';
  const oob = 'urn:ietf:wg:oauth:2.0:oob';
  const app = await (await fetch(`${GTS}/api/v1/apps`, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': UA }, body: JSON.stringify({ client_name: 'interop', redirect_uris: oob, scopes }) })).json();
  const b = new Browser();
  const q = new URLSearchParams({ client_id: app.client_id, redirect_uri: oob, response_type: 'code', scope: scopes });
  await b.go(`${GTS}/oauth/authorize?${q}`);
  let res = await b.go(`${GTS}/auth/sign_in`, { method: 'POST', form: { username: `${username}@gts.test`, password: PASSWORD } });
  res = await b.go(new URL(res.headers.get('location') ?? '/oauth/authorize', GTS).href);
  res = await b.go(`${GTS}/oauth/authorize`, { method: 'POST', form: {} });
  const code = new URL(res.headers.get('location'), GTS).searchParams.get('code');
  const tok = await (await fetch(`${GTS}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': UA }, body: JSON.stringify({ grant_type: 'authorization_code', code, client_id: app.client_id, client_secret: app.client_secret, redirect_uri: oob }) })).json();
  if (!tok.access_token) throw new Error(`token at ${GTS} for ${username}: ${JSON.stringify(tok)}`);
  return tok.access_token;
}

/** A small PNG of one colour with a letter-like bar (emoji, avatars, attachments). */
const png = (r, g, b, size = 64) => sharp({ create: { width: size, height: size, channels: 4, background: { r, g, b, alpha: 1 } } })
  .composite([{ input: { create: { width: Math.round(size / 4), height: Math.round(size / 1.5), channels: 4, background: { r: 255 - r, g: 255 - g, b: 255 - b, alpha: 1 } } }, top: Math.round(size / 6), left: Math.round(size / 3) }])
  .png().toBuffer();
const file = (buf, name, type = 'image/png') => new File([buf], name, { type });

async function until(what, fn, { timeout = 30_000, every = 1000, stopOn = () => false } = {}) {
  const end = Date.now() + timeout; let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (err) { last = err; if (stopOn(err)) throw new Error(`${what}: ${err.message}`); }
    await sleep(every);
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
}

/** Where a URL ends after redirects, and what it is. */
async function landing(url) {
  const res = await fetch(url, { headers: { 'user-agent': UA } });
  const body = Buffer.from(await res.arrayBuffer());
  return { url: res.url, status: res.status, type: res.headers.get('content-type') ?? '', bytes: body.length };
}

/** Search with resolve=true until the other side has it. */
const resolveStatus = (client, uri) => until(`${uri} to resolve`, async () => (await client.get(`/api/v2/search?type=statuses&resolve=true&q=${encodeURIComponent(uri)}`)).statuses?.[0]);
const resolveAccount = (client, acct) => until(`${acct} to resolve`, async () => (await client.get(`/api/v2/search?type=accounts&resolve=true&q=${encodeURIComponent(acct)}`)).accounts?.find((a) => a.acct.toLowerCase() === acct.replace(/^@/, '').toLowerCase()));

/** `who` follows `acct` (found by search) and waits for the Accept. */
async function follow(who, acct) {
  const target = await resolveAccount(who, acct);
  await who.post(`/api/v1/accounts/${target.id}/follow`);
  await until(`${acct} to accept the follow`, async () => (await who.get(`/api/v1/accounts/relationships?id[]=${target.id}`))[0]?.following, { timeout: 30_000 });
  return target;
}

const results = [];
async function check(scenario, name, fn) {
  try {
    const seen = await fn();
    results.push({ scenario, name, ok: true, seen: seen ?? '' });
    log(`PASS ${scenario} · ${name}${seen ? ` — ${seen}` : ''}`);
  } catch (err) {
    results.push({ scenario, name, ok: false, seen: err.message });
    log(`FAIL ${scenario} · ${name} — ${err.message}`);
  }
}
const expect = (cond, msg) => { if (!cond) throw new Error(msg); };
const onOurs = (url) => typeof url === 'string' && url.startsWith(`${OURS}/`);

const ctx = {};
async function setup() {
  ctx.ours = api(OURS, await oursToken());
  ctx.me = await ctx.ours.get('/api/v1/accounts/verify_credentials');
  try {
    ctx.bob = api(GTS, await gtsToken(gts.admin));
    ctx.dave = api(GTS, await gtsToken(gts.other));
  } catch (err) { log(`GoToSocial not usable: ${err.message}`); }
  if (existsSync(hollo.tokenFile)) ctx.quinn = api(HOLLO, readFileSync(hollo.tokenFile, 'utf8').trim());
  ctx.ourAcct = `${ours.username}@${new URL(OURS).host}`;
}

// 1. Custom emoji both ways: GoToSocial and Hollo.
async function emoji() {
  const S = '1 emoji';
  const dir = mkdtempSync(join(tmpdir(), 'interop-'));
  const ourPng = join(dir, 'ours_interop.png'); writeFileSync(ourPng, await png(200, 40, 40));
  const cli = spawnSync('npm', ['run', '-s', 'cli', '--', 'emoji', 'add', 'ours_interop', ourPng, '--overwrite'], { cwd: checkout, env: process.env, encoding: 'utf8' });
  await check(S, 'our emoji added with `npm run cli -- emoji add`', async () => { expect(cli.status === 0, `${cli.stdout}${cli.stderr}`.trim()); return cli.stdout.trim(); });
  const ourPost = await ctx.ours.post('/api/v1/statuses', { status: `Our emoji :ours_interop: ${stamp}`, visibility: 'public' });

  if (ctx.bob) await emojiWithGts(S, ourPost);
  else results.push({ scenario: S, name: 'GoToSocial', ok: false, seen: 'GoToSocial not reachable' });

  if (!ctx.quinn) { results.push({ scenario: S, name: 'Hollo', ok: false, seen: `no Hollo token at ${hollo.tokenFile}` }); return; }
  // Hollo: its /emojis form (signed in by cookie) makes the emoji.
  const b = new Browser();
  await b.go(`${HOLLO}/login`, { method: 'POST', form: { email: hollo.email, password: PASSWORD, next: '/emojis' }, headers: { origin: HOLLO } });
  const hf = new FormData(); hf.set('shortcode', ':hollo_interop:'); hf.set('category', ''); hf.set('image', file(await png(40, 40, 200), 'hollo_interop.png'));
  const hres = await b.go(`${HOLLO}/emojis`, { method: 'POST', multipart: hf, headers: { origin: HOLLO } });
  await check(S, 'Hollo /emojis form adds :hollo_interop:', async () => {
    // (A second run's form answers 500: the shortcode is taken. What counts is that Hollo lists it.)
    const listed = (await ctx.quinn.get('/api/v1/custom_emojis')).find((e) => e.shortcode === 'hollo_interop');
    expect(listed, `form answered ${hres.status}; not in Hollo's /api/v1/custom_emojis`);
    return `form ${hres.status}; listed, ${listed.url}`;
  });
  const holloPost = await ctx.quinn.post('/api/v1/statuses', { status: `Hollo emoji :hollo_interop: ${stamp}`, visibility: 'public' });
  await check(S, 'Hollo → ours: :hollo_interop: shown from our /media_proxy', async () => {
    const st = await resolveStatus(ctx.ours, holloPost.uri);
    const e = st.emojis.find((x) => x.shortcode === 'hollo_interop');
    expect(e, `no hollo_interop in emojis ${JSON.stringify(st.emojis)}`);
    expect(e.url.startsWith(`${OURS}/media_proxy/emojis/`) && e.static_url.startsWith(`${OURS}/media_proxy/emojis/`), `urls ${e.url} ${e.static_url}`);
    const got = await landing(e.url);
    expect(got.status === 200 && got.type.startsWith('image/') && onOurs(got.url), `${e.url} → ${got.status} ${got.type} ${got.url}`);
    return `${e.url} → ${got.url} (${got.type})`;
  });
  await check(S, 'ours → Hollo: :ours_interop: in Hollo\'s emojis', async () => {
    const st = await resolveStatus(ctx.quinn, ourPost.uri);
    const e = st.emojis.find((x) => x.shortcode === 'ours_interop');
    expect(e, `no ours_interop in emojis ${JSON.stringify(st.emojis)}`);
    return e.url;
  });
}

async function emojiWithGts(S, ourPost) {
  // GoToSocial: the admin API makes the emoji; a post uses it.
  const form = new FormData(); form.set('shortcode', 'gts_interop'); form.set('image', file(await png(40, 160, 40), 'gts_interop.png'));
  const made = await ctx.bob.call('POST', '/api/v1/admin/custom_emojis', form);
  await check(S, 'GoToSocial admin API adds :gts_interop:', async () => { expect(made.status === 200 || made.status === 409, `${made.status} ${JSON.stringify(made.data)}`); return `${made.status}`; });
  const gtsPost = await ctx.bob.post('/api/v1/statuses', { status: `GoToSocial emoji :gts_interop: ${stamp}`, visibility: 'public' });
  await check(S, 'GoToSocial → ours: :gts_interop: shown from our /media_proxy', async () => {
    const st = await resolveStatus(ctx.ours, gtsPost.uri);
    const e = st.emojis.find((x) => x.shortcode === 'gts_interop');
    expect(e, `no gts_interop in emojis ${JSON.stringify(st.emojis)}`);
    expect(e.url.startsWith(`${OURS}/media_proxy/emojis/`) && e.static_url.startsWith(`${OURS}/media_proxy/emojis/`), `urls ${e.url} ${e.static_url}`);
    const got = await landing(e.url);
    expect(got.status === 200 && got.type.startsWith('image/') && onOurs(got.url), `${e.url} → ${got.status} ${got.type} ${got.url}`);
    return `${e.url} → ${got.url} (${got.type}, ${got.bytes} B)`;
  });
  await check(S, 'ours → GoToSocial: :ours_interop: in GoToSocial\'s emojis', async () => {
    const st = await resolveStatus(ctx.bob, ourPost.uri);
    const e = st.emojis.find((x) => x.shortcode === 'ours_interop');
    expect(e, `no ours_interop in emojis ${JSON.stringify(st.emojis)}`);
    const got = await landing(e.url);
    expect(got.status === 200 && got.type.startsWith('image/'), `${e.url} → ${got.status} ${got.type}`);
    return `${e.url} (${got.type})`;
  });
}

// 2. Reactions and Likes from Hollo and snac counted as favourites; Undo takes them back.
async function reactions() {
  const S = '2 reactions';
  const post = await ctx.ours.post('/api/v1/statuses', { status: `React to this ${stamp}`, visibility: 'public' });
  const favs = async () => (await ctx.ours.get(`/api/v1/statuses/${post.id}`)).favourites_count;
  const byWhom = async () => (await ctx.ours.get(`/api/v1/statuses/${post.id}/favourited_by`)).map((a) => a.acct);
  const countIs = (n) => until(`favourites_count ${n}`, async () => (await favs()) === n, { timeout: 20_000 });
  if (ctx.quinn) {
    const there = await resolveStatus(ctx.quinn, post.uri);
    await check(S, 'Hollo emoji reaction 👍 → one favourite', async () => {
      await ctx.quinn.put(`/api/v1/statuses/${there.id}/emoji_reactions/${encodeURIComponent('👍')}`);
      await countIs(1); return `favourited_by ${(await byWhom()).join(', ')}`;
    });
    await check(S, 'Hollo removes the reaction → none', async () => {
      await ctx.quinn.del(`/api/v1/statuses/${there.id}/emoji_reactions/${encodeURIComponent('👍')}`);
      await countIs(0); return 'favourites_count 0';
    });
    await check(S, 'Hollo favourite (Like) → one; unfavourite → none', async () => {
      await ctx.quinn.post(`/api/v1/statuses/${there.id}/favourite`); await countIs(1);
      await ctx.quinn.post(`/api/v1/statuses/${there.id}/unfavourite`); await countIs(0);
      return 'counted, then taken back';
    });
  }
  if (snac.password) {
    const auth = `Basic ${Buffer.from(`${snac.user}:${snac.password}`).toString('base64')}`;
    const action = async (fields) => {
      const res = await fetch(`${SNAC}/${snac.user}/admin/action`, { method: 'POST', redirect: 'manual', headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
      expect(res.status < 400, `snac action ${fields.action}: ${res.status}`);
    };
    await check(S, 'snac Like → one favourite; Unlike → none', async () => {
      await action({ id: post.uri, action: 'Like' }); await countIs(1);
      const who = (await byWhom()).join(', ');
      await action({ id: post.uri, action: 'Unlike' }); await countIs(0);
      return `favourited_by ${who}, then taken back`;
    });
    await check(S, 'snac EmojiReact ⭐ → one favourite; EmojiUnreact → none', async () => {
      await action({ id: post.uri, action: 'EmojiReact', eid: '⭐' }); await countIs(1);
      await action({ id: post.uri, action: 'EmojiUnreact', eid: '⭐' }); await countIs(0);
      return 'counted, then taken back';
    });
  } else results.push({ scenario: S, name: 'snac', ok: false, seen: 'SNAC_PASSWORD not set' });
}

// 3. Our profile fields (PropertyValue) and bot (Service) as GoToSocial shows them; a rel=me link verified.
async function profile() {
  const S = '3 profile';
  if (snac.dir) {
    // snac's profile page shows its metadata links with rel="me": point one at our account.
    const f = join(snac.dir, 'user', snac.user, 'user.json');
    const u = JSON.parse(readFileSync(f, 'utf8')); u.metadata = { ...(u.metadata ?? {}), Elsewhere: `${OURS}/@${ours.username}` };
    writeFileSync(f, JSON.stringify(u, null, 4));
  }
  // GoToSocial hears of a profile change as a follower does: bob follows alice first.
  if (ctx.bob) await follow(ctx.bob, ctx.ourAcct);
  const snacPage = `${SNAC}/${snac.user}`;
  const form = new FormData();
  form.set('bot', 'true');
  form.set('fields_attributes[0][name]', 'snac'); form.set('fields_attributes[0][value]', snacPage);
  form.set('fields_attributes[1][name]', 'Pronouns'); form.set('fields_attributes[1][value]', 'they/them');
  form.set('note', `Interop run ${stamp}`);
  await ctx.ours.patch('/api/v1/accounts/update_credentials', form);
  await check(S, 'rel=me link to snac\'s profile page verified here', async () => {
    const me = await until('verified_at', async () => {
      const a = await ctx.ours.get('/api/v1/accounts/verify_credentials');
      return a.fields.find((x) => x.name === 'snac')?.verified_at ? a : null;
    }, { timeout: 30_000 });
    return `verified_at ${me.fields.find((x) => x.name === 'snac').verified_at}`;
  });
  await check(S, 'GoToSocial shows our fields and bot', async () => {
    const acct = await resolveAccount(ctx.bob, ctx.ourAcct);
    // A refresh of an account GoToSocial already had may lag: look it up until the new note shows.
    const a = await until('GoToSocial to see the update', async () => {
      const x = await ctx.bob.get(`/api/v1/accounts/${acct.id}`);
      return x.note.includes(stamp) ? x : null;
    }, { timeout: 40_000, every: 2000 });
    const names = a.fields.map((x) => `${x.name}=${x.value.replace(/<[^>]+>/g, '')}`);
    expect(a.bot === true, `bot ${a.bot}`);
    expect(a.fields.some((x) => x.name === 'snac' && x.value.includes(snacPage)), `fields ${JSON.stringify(a.fields)}`);
    expect(a.fields.some((x) => x.name === 'Pronouns' && x.value.includes('they/them')), `fields ${JSON.stringify(a.fields)}`);
    return `bot true; ${names.join('; ')}`;
  });
}

// 4. A thread whose replies live on GoToSocial, filled in when our user opens its context.
async function thread() {
  const S = '4 thread';
  const top = await ctx.bob.post('/api/v1/statuses', { status: `Thread top ${stamp}`, visibility: 'public' });
  const r1 = await ctx.dave.post('/api/v1/statuses', { status: `@${gts.admin} first reply ${stamp}`, visibility: 'public', in_reply_to_id: top.id });
  const r2 = await ctx.bob.post('/api/v1/statuses', { status: `@${gts.other} reply to the reply ${stamp}`, visibility: 'public', in_reply_to_id: r1.id });
  await check(S, 'opening the context fetches the replies from GoToSocial', async () => {
    const here = await resolveStatus(ctx.ours, top.uri);
    const first = await ctx.ours.call('GET', `/api/v1/statuses/${here.id}/context`);
    const refresh = first.headers.get('mastodon-async-refresh');
    expect(refresh, `no Mastodon-Async-Refresh; descendants ${first.data.descendants?.length}`);
    const id = /id="([^"]+)"/.exec(refresh)[1];
    const done = await until('the refresh to finish', async () => {
      const r = (await ctx.ours.get(`/api/v1_alpha/async_refreshes/${encodeURIComponent(id)}`)).async_refresh;
      return r.status === 'finished' ? r : null;
    }, { timeout: 60_000 });
    const ctxNow = await ctx.ours.get(`/api/v1/statuses/${here.id}/context`);
    const uris = ctxNow.descendants.map((s) => s.uri);
    expect(uris.includes(r1.uri) && uris.includes(r2.uri), `descendants ${JSON.stringify(uris)} (result_count ${done.result_count})`);
    return `result_count ${done.result_count}; descendants ${uris.length}`;
  });
}

// 5. Remote media from GoToSocial (avatar, header, attachment) served from our file host.
async function media() {
  const S = '5 media';
  // The new avatar and header reach us as a follower's server: alice follows dave first.
  // (GoToSocial makes accounts locked: dave opens his, and accepts a request left by an earlier run.)
  const unlock = new FormData(); unlock.set('locked', 'false');
  await ctx.dave.patch('/api/v1/accounts/update_credentials', unlock);
  for (const r of await ctx.dave.get('/api/v1/follow_requests')) await ctx.dave.post(`/api/v1/follow_requests/${r.id}/authorize`);
  await follow(ctx.ours, `${gts.other}@${new URL(GTS).host}`);
  const av = new FormData(); av.set('avatar', file(await png(250, 200, 0, 128), 'avatar.png')); av.set('header', file(await png(0, 120, 200, 300), 'header.png'));
  await ctx.dave.patch('/api/v1/accounts/update_credentials', av);
  const mf = new FormData(); mf.set('file', file(await png(120, 0, 160, 200), 'photo.png')); mf.set('description', 'a purple square');
  const m = await ctx.dave.post('/api/v1/media', mf);
  await until('GoToSocial to process the upload', async () => (await ctx.dave.call('GET', `/api/v1/media/${m.id}`)).status === 200);
  const post = await ctx.dave.post('/api/v1/statuses', { status: `Photo ${stamp}`, visibility: 'public', media_ids: [m.id] });
  await check(S, 'attachment copied to our file host', async () => {
    const st = await resolveStatus(ctx.ours, post.uri);
    const a = st.media_attachments[0];
    expect(a, 'no attachment');
    expect(onOurs(a.url) && onOurs(a.preview_url), `url ${a.url} preview ${a.preview_url} remote ${a.remote_url}`);
    const got = await landing(a.url);
    expect(got.status === 200 && got.type.startsWith('image/') && onOurs(got.url), `${a.url} → ${got.status} ${got.type} ${got.url}`);
    return `${a.url} (remote_url ${a.remote_url}; description "${a.description}")`;
  });
  await check(S, 'avatar and header copied to our file host', async () => {
    const acct = await resolveAccount(ctx.ours, `${gts.other}@${new URL(GTS).host}`);
    const a = await until('avatar and header', async () => {
      const x = await ctx.ours.get(`/api/v1/accounts/${acct.id}`);
      return onOurs(x.avatar) && onOurs(x.header) && !/missing|original\.png$/.test(x.avatar) ? x : null;
    }, { timeout: 30_000 });
    for (const u of [a.avatar, a.header, a.avatar_static, a.header_static]) {
      const got = await landing(u);
      expect(got.status === 200 && got.type.startsWith('image/') && onOurs(got.url), `${u} → ${got.status} ${got.type} ${got.url}`);
    }
    return `avatar ${a.avatar}; header ${a.header}`;
  });
}

// 7. Video and audio both ways with GoToSocial (which stores what it is sent as sent, and probes it with ffprobe).
const FFMPEG = env('FFMPEG_PATH', 'ffmpeg');
const FFPROBE = env('FFPROBE_PATH', 'ffprobe');
/** A 2 s clip made with ffmpeg: 320x240 at 25 fps (a test pattern) with a 440 Hz tone, in the codecs asked for. */
function clip(dir, name, args) {
  const out = join(dir, name);
  const made = spawnSync(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=s=320x240:r=25:d=2', '-f', 'lavfi', '-i', 'sine=f=440:d=2', ...args, '-shortest', out], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`ffmpeg ${name}: ${made.stderr}`);
  return readFileSync(out);
}
const CLIPS = {
  'H.264/AAC MP4': { name: 'clip.mp4', type: 'video/mp4', args: ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart'] },
  'VP9/Opus WebM': { name: 'clip.webm', type: 'video/webm', args: ['-c:v', 'libvpx-vp9', '-b:v', '200k', '-c:a', 'libopus'] },
  'HEVC/AAC MP4': { name: 'clip-hevc.mp4', type: 'video/mp4', args: ['-c:v', 'libx265', '-x265-params', 'log-level=error', '-tag:v', 'hvc1', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart'] },
  'MP3 audio': { name: 'clip.mp3', type: 'audio/mpeg', args: ['-map', '1:a', '-c:a', 'libmp3lame', '-q:a', '4'] },
  'Opus audio in Ogg': { name: 'clip.ogg', type: 'audio/ogg', args: ['-map', '1:a', '-c:a', 'libopus'] },
  // Matroska is not taken here (nor by Mastodon): it must show as a link to GoToSocial's file, not as a broken video.
  'H.264/AAC in Matroska': { name: 'clip.mkv', type: 'video/x-matroska', args: ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac'], link: true },
  'Theora/Vorbis in Ogg': { name: 'clip.ogv', type: 'video/ogg', args: ['-c:v', 'libtheora', '-q:v', '5', '-c:a', 'libvorbis'] },
};
/** The codecs of a file as ffprobe reads them, e.g. "h264+aac" (fetched to a temporary file). */
async function codecsOf(url, dir) {
  const res = await fetch(url, { headers: { 'user-agent': UA } });
  const path = join(dir, `probe-${Date.now()}`);
  writeFileSync(path, Buffer.from(await res.arrayBuffer()));
  const p = spawnSync(FFPROBE, ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', path], { encoding: 'utf8' });
  const j = JSON.parse(p.stdout || '{}');
  return { type: res.headers.get('content-type') ?? '', status: res.status, url: res.url, codecs: (j.streams ?? []).map((x) => x.codec_name).join('+'), format: j.format?.format_name ?? '' };
}
/** Our upload, once processed. */
async function uploadOurs(media, description) {
  const f = new FormData(); f.set('file', media); f.set('description', description);
  const m = await ctx.ours.post('/api/v2/media', f);
  return until('our media processing', async () => { const r = await ctx.ours.call('GET', `/api/v1/media/${m.id}`); expect(r.status !== 422, JSON.stringify(r.data)); return r.status === 200 ? r.data : null; }, { timeout: 90_000, stopOn: () => true });
}

async function video() {
  const S = '7 video';
  const dir = mkdtempSync(join(tmpdir(), 'interop-video-'));
  const made = Object.fromEntries(Object.entries(CLIPS).map(([k, c]) => [k, clip(dir, c.name, c.args)]));

  // Ours → GoToSocial: alice's video and audio as replies to a post of bob's (bob follows alice), so that
  // GoToSocial's web page of bob's thread shows them.
  await follow(ctx.bob, ctx.ourAcct);
  const top = await ctx.bob.post('/api/v1/statuses', { status: `Show me a video ${stamp}`, visibility: 'public' });
  const topHere = await resolveStatus(ctx.ours, top.uri);
  for (const [label, kind] of [['H.264/AAC MP4', 'video'], ['MP3 audio', 'audio']]) {
    const c = CLIPS[label];
    await check(S, `ours → GoToSocial: our ${kind} (${label} uploaded here)`, async () => {
      const m = await uploadOurs(file(made[label], c.name, c.type), `a ${kind} clip`);
      expect(m.type === kind, `our API: type ${m.type}`);
      const post = await ctx.ours.post('/api/v1/statuses', { status: `@${gts.admin}@${new URL(GTS).host} ${kind} ${stamp}`, visibility: 'public', media_ids: [m.id], in_reply_to_id: topHere.id });
      // Delivered (not fetched): it turns up among the replies of bob's post on GoToSocial.
      const there = await until('GoToSocial to receive the post', async () => (await ctx.bob.get(`/api/v1/statuses/${top.id}/context`)).descendants.find((x) => x.uri === post.uri), { timeout: 60_000 });
      const a = await until('GoToSocial to process the attachment', async () => {
        const x = (await ctx.bob.get(`/api/v1/statuses/${there.id}`)).media_attachments[0];
        return x && x.type !== 'unknown' && x.meta?.original ? x : null;
      }, { timeout: 60_000 });
      const o = a.meta.original;
      expect(a.type === kind, `GoToSocial's type ${a.type} (${JSON.stringify(a.meta)})`);
      expect(o.duration > 1.5 && o.duration < 2.5, `duration ${o.duration}`);
      if (kind === 'video') expect(o.width === 320 && o.height === 240, `size ${o.width}x${o.height}`);
      expect(kind === 'audio' || a.preview_url, `no preview_url: ${JSON.stringify(a)}`);
      const got = await landing(a.url);
      expect(got.status === 200 && got.type.startsWith(`${kind}/`), `${a.url} → ${got.status} ${got.type}`);
      // GoToSocial's web page of the thread: a <video> (GoToSocial plays audio in one too) whose source answers.
      const page = await (await fetch(`${GTS}/@${gts.admin}/statuses/${top.id}`, { headers: { 'user-agent': UA, accept: 'text/html' } })).text();
      const tag = [...page.matchAll(/<video[\s\S]*?<\/video>/g)].map((x) => x[0]).find((v) => v.includes(a.url));
      expect(tag, `no <video> with ${a.url} on GoToSocial's page of the thread`);
      const src = /<source type="([^"]+)" src="([^"]+)"/.exec(tag);
      const played = await landing(src[2].replace(/&amp;/g, '&'));
      expect(played.status === 200 && played.type === src[1], `<source type="${src[1]}"> ${src[2]} → ${played.status} ${played.type}`);
      return `type ${a.type}; meta.original ${JSON.stringify(o)}; preview_url ${a.preview_url ?? 'none'}; web page <source type="${src[1]}"> answers ${played.status} ${played.type}`;
    });
  }

  // GoToSocial → ours: dave's uploads (alice follows dave, whose account is opened as in scenario 5).
  const unlock = new FormData(); unlock.set('locked', 'false');
  await ctx.dave.patch('/api/v1/accounts/update_credentials', unlock);
  for (const r of await ctx.dave.get('/api/v1/follow_requests')) await ctx.dave.post(`/api/v1/follow_requests/${r.id}/authorize`);
  await follow(ctx.ours, `${gts.other}@${new URL(GTS).host}`);
  for (const label of Object.keys(CLIPS)) {
    const c = CLIPS[label];
    const kind = c.type.split('/')[0];
    const mf = new FormData(); mf.set('file', file(made[label], c.name, c.type)); mf.set('description', label);
    const up = await ctx.dave.call('POST', '/api/v2/media', mf);
    if (up.status >= 300) {
      results.push({ scenario: S, name: `GoToSocial → ours: ${label}`, ok: true, seen: `GoToSocial refuses the upload: ${up.status} ${JSON.stringify(up.data).slice(0, 200)}` });
      log(`NOTE ${S} · GoToSocial refuses ${label}: ${up.status}`);
      continue;
    }
    await until('GoToSocial to process the upload', async () => (await ctx.dave.call('GET', `/api/v1/media/${up.data.id}`)).status === 200, { timeout: 60_000 });
    const post = await ctx.dave.post('/api/v1/statuses', { status: `${label} ${stamp}`, visibility: 'public', media_ids: [up.data.id] });
    const theirs = post.media_attachments[0];
    if (c.link) {
      await check(S, `GoToSocial → ours: ${label} shown as a link to GoToSocial's file (not taken here, as Mastodon)`, async () => {
        const st = await resolveStatus(ctx.ours, post.uri);
        const a = await until('the attachment to be refused', async () => {
          const x = (await ctx.ours.get(`/api/v1/statuses/${st.id}`)).media_attachments[0];
          if (x?.type !== 'unknown') await landing(x.url); // a reader's first view: the proxy tries to copy it
          return x?.type === 'unknown' ? x : null;
        }, { timeout: 90_000, every: 2000 });
        expect(a.url === a.remote_url && a.url.startsWith(`${GTS}/`) && a.preview_url === null, `url ${a.url} preview ${a.preview_url}`);
        return `type unknown; url ${a.url}`;
      });
      continue;
    }
    let copied = null;
    await check(S, `GoToSocial → ours: ${label} (GoToSocial calls it ${theirs.type}, ${(await landing(theirs.url)).type})`, async () => {
      const st = await resolveStatus(ctx.ours, post.uri);
      // The copy is made by a job: until then `url` is the media proxy's (which makes it at once, or answers 404 when
      // it cannot be made) and there is no preview.
      let last;
      const a = await until('our copy of the attachment', async () => {
        last = (await ctx.ours.get(`/api/v1/statuses/${st.id}`)).media_attachments[0];
        if (last && onOurs(last.preview_url) && last.meta?.original) return last;
        const got = last?.url ? await landing(last.url) : null;
        if (got?.status === 404) throw Object.assign(new Error('not served'), { final: true });
        return null;
      }, { timeout: 90_000, every: 2000, stopOn: (err) => err.final }).catch(async (err) => {
        const got = last?.url ? await landing(last.url) : null;
        throw new Error(`${err.message}; our API: type ${last?.type}, url ${last?.url} → ${got?.status} ${got?.type}, preview_url ${last?.preview_url}, meta ${JSON.stringify(last?.meta)}`);
      });
      const o = a.meta.original;
      expect(a.type === kind, `type ${a.type}`);
      expect(o.duration > 1.5 && o.duration < 2.5, `meta.original ${JSON.stringify(o)}`);
      if (kind === 'video') expect(o.width === 320 && o.height === 240 && /^25(\/1)?$/.test(String(o.frame_rate)), `meta.original ${JSON.stringify(o)}`);
      const preview = await landing(a.preview_url);
      expect(preview.status === 200 && preview.type.startsWith('image/') && onOurs(preview.url), `preview ${a.preview_url} → ${preview.status} ${preview.type} ${preview.url}`);
      const served = await codecsOf(a.url, dir);
      expect(served.status === 200 && onOurs(served.url) && served.type.startsWith(`${kind}/`), `${a.url} → ${served.status} ${served.type} ${served.url}`);
      copied = st;
      return `type ${a.type}; meta.original ${JSON.stringify(o)}; preview ${preview.type}; url → ${served.type} (${served.codecs})`;
    });
    // What every browser plays: H.264 + AAC in MP4, or MP3. Another server's other codecs are converted here.
    const playable = kind === 'video' ? (x) => x.type === 'video/mp4' && x.codecs === 'h264+aac' : (x) => x.type === 'audio/mpeg' && x.codecs === 'mp3';
    await check(S, `GoToSocial → ours: ${label} served as ${kind === 'video' ? 'H.264/AAC MP4' : 'MP3'}`, async () => {
      expect(copied, 'no copy here (above)');
      let served;
      await until('a file every browser plays on our file host', async () => {
        const a = (await ctx.ours.get(`/api/v1/statuses/${copied.id}`)).media_attachments[0];
        served = await codecsOf(a.url, dir);
        return playable(served) ? served : null;
      }, { timeout: 90_000, every: 3000 }).catch(() => {});
      expect(served && playable(served), `served ${served?.status} ${served?.type} (${served?.codecs}, ${served?.format})`);
      return `${served.type} (${served.codecs})`;
    });
  }
}

// 6. Remote follow from our public page toward GoToSocial.
async function remoteFollow() {
  const S = '6 remote follow';
  await check(S, 'our /remote_interaction sends a GoToSocial user to their server', async () => {
    const b = new Browser();
    const start = await b.go(`${OURS}/users/${ours.username}/remote_follow`);
    const pageUrl = new URL(start.headers.get('location'), OURS).href;
    const page = await (await b.go(pageUrl)).text();
    const res = await b.go(`${OURS}/remote_interaction`, { method: 'POST', form: { ...hiddenFields(page), acct: `${gts.admin}@${new URL(GTS).host}` } });
    const where = res.headers.get('location');
    if (res.status === 303 && where?.startsWith(`${GTS}/`)) return `303 → ${where}`;
    const said = /role="alert"[^>]*>([^<]*)</.exec(await res.text())?.[1];
    const jrd = await (await fetch(`${GTS}/.well-known/webfinger?resource=acct:${gts.admin}@${new URL(GTS).host}`, { headers: { 'user-agent': UA } })).json();
    throw new Error(`${res.status}: "${said}"; GoToSocial's WebFinger links: ${jrd.links.map((l) => l.rel).join(', ')}`);
  });
}

const ALL = { emoji, reactions, profile, thread, media, 'remote-follow': remoteFollow, video };
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(ALL);
await setup();
for (const name of wanted) {
  if (!ALL[name]) throw new Error(`no scenario ${name}; known: ${Object.keys(ALL).join(', ')}`);
  try { await ALL[name](); } catch (err) { results.push({ scenario: name, name: 'set-up', ok: false, seen: err.message }); log(`FAIL ${name} set-up — ${err.message}`); }
}
const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: checkout, encoding: 'utf8' }).stdout.trim();
log(`\n${new Date().toISOString().slice(0, 10)}, commit ${commit}, npm run interop -- ${process.argv.slice(2).join(' ')}\n`);
log('| scenario | check | result | seen |\n|---|---|---|---|');
for (const r of results) log(`| ${r.scenario} | ${r.name} | ${r.ok ? 'pass' : 'FAIL'} | ${String(r.seen).replace(/\|/g, '\\|').replace(/\n/g, ' ').slice(0, 300)} |`);
process.exitCode = results.every((r) => r.ok) ? 0 : 1;
