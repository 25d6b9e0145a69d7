// A small web client on its own origin, written as Elk and Phanpy work: it registers itself with the server
// (POST /api/v1/apps), signs in with OAuth's authorization code and PKCE, keeps its token in the browser, calls the
// API cross-origin with fetch, listens to the streaming API over a WebSocket, and pages the home timeline by the
// Link header. Each result goes into the DOM, for the test to read.

const SCOPES = 'read write follow push';
const CLIENT_NAME = 'Test Web Client';

const $ = (id) => document.getElementById(id);
const log = (line) => { $('log').textContent += `${line}\n`; };
const fail = (err) => {
  $('error').textContent = String(err && err.message ? err.message : err);
  log(`error: ${$('error').textContent}`);
};

function base64url(bytes) {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
const randomString = (bytes) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));
async function s256(verifier) {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

/** What the client keeps between pages: the pending sign-in, then the session (server, token, app). */
const stored = (key) => JSON.parse(sessionStorage.getItem(key) ?? 'null');
const store = (key, value) => (value === null ? sessionStorage.removeItem(key) : sessionStorage.setItem(key, JSON.stringify(value)));

async function checked(res, what) {
  if (!res.ok) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  return res;
}

/** The API with the session's token: JSON in, JSON out. */
async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const session = stored('session');
  const url = path.startsWith('http') ? path : `${session.server}${path}`;
  const res = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${session.token}`, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  return checked(res, `${method} ${url}`);
}

// --- Signing in -------------------------------------------------------------------------------------------------

async function startSignIn(serverInput) {
  const server = new URL(serverInput).origin;
  const redirectUri = new URL('/callback', location.href).href;
  log(`registering the app at ${server}`);
  const res = await checked(await fetch(`${server}/api/v1/apps`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_name: CLIENT_NAME, redirect_uris: redirectUri, scopes: SCOPES, website: location.origin }),
  }), 'POST /api/v1/apps');
  const app = await res.json();
  log(`app registered: client_id ${app.client_id ? 'received' : 'MISSING'}`);
  const verifier = randomString(32);
  const state = randomString(16);
  store('pending', { server, redirectUri, clientId: app.client_id, clientSecret: app.client_secret, verifier, state });
  const query = new URLSearchParams({
    client_id: app.client_id,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: SCOPES,
    state,
    code_challenge: await s256(verifier),
    code_challenge_method: 'S256',
  });
  location.assign(`${server}/oauth/authorize?${query}`);
}

async function finishSignIn() {
  const params = new URLSearchParams(location.search);
  const pending = stored('pending');
  // The code is used once: it leaves the address bar (and the history) at once.
  history.replaceState(null, '', '/');
  if (!pending) throw new Error('no sign-in was started in this tab');
  store('pending', null);
  if (params.get('error')) throw new Error(`the server refused: ${params.get('error')}: ${params.get('error_description')}`);
  if (params.get('state') !== pending.state) throw new Error('state mismatch');
  const code = params.get('code');
  if (!code) throw new Error('no code in the callback');
  log('state matches; exchanging the code');
  const res = await checked(await fetch(`${pending.server}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'authorization_code',
      client_id: pending.clientId,
      client_secret: pending.clientSecret,
      redirect_uri: pending.redirectUri,
      code,
      code_verifier: pending.verifier,
    }),
  }), 'POST /oauth/token');
  const token = await res.json();
  log(`token received: ${token.token_type}, scope "${token.scope}"`);
  store('session', { server: pending.server, token: token.access_token, clientId: pending.clientId, clientSecret: pending.clientSecret });
}

// --- Signed in --------------------------------------------------------------------------------------------------

function item(list, id, text, data = {}) {
  const li = document.createElement('li');
  li.dataset.id = id;
  for (const [k, v] of Object.entries(data)) li.dataset[k] = v;
  li.textContent = text;
  $(list).append(li);
}
const plain = (html) => new DOMParser().parseFromString(html, 'text/html').body.textContent ?? '';

/** Opens a user stream as Mastodon's web clients do; `via` says where the token goes (protocol or query). */
function openStream(streamingUrl, token, via) {
  const indicator = $(via === 'protocol' ? 'socket' : 'socket-query');
  const url = new URL('/api/v1/streaming', streamingUrl);
  url.searchParams.set('stream', 'user');
  if (via === 'query') url.searchParams.set('access_token', token);
  const ws = via === 'protocol' ? new WebSocket(url, token) : new WebSocket(url);
  const state = (s) => { indicator.dataset.state = s; indicator.textContent = s; };
  state('connecting');
  ws.addEventListener('open', () => { state('open'); log(`stream open (${via}), protocol "${ws.protocol}"`); });
  ws.addEventListener('close', (e) => { state('closed'); log(`stream closed (${via}): ${e.code}`); });
  ws.addEventListener('error', () => log(`stream error (${via})`));
  ws.addEventListener('message', (e) => {
    const message = JSON.parse(e.data);
    if (message.error) return log(`stream says (${via}): ${message.error}`);
    if (message.event !== 'update') return;
    const status = JSON.parse(message.payload);
    log(`streamed update (${via}): ${status.id}`);
    item('streamed', status.id, plain(status.content), { via });
  });
}

async function post(text) {
  // One key per post: a retry after a lost answer must not post twice.
  const key = crypto.randomUUID();
  const status = await (await api('/api/v1/statuses', { method: 'POST', headers: { 'Idempotency-Key': key }, body: { status: text, visibility: 'public' } })).json();
  log(`posted ${status.id}`);
  item('posted', status.id, plain(status.content), { idempotencyKey: key });
}

/** The next page named by a Link header (RFC 8288), as Mastodon sends it. */
function nextOf(link) {
  for (const part of (link ?? '').split(',')) {
    const m = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part);
    if (m && m[2].split(/\s+/).includes('next')) return m[1];
  }
  return null;
}

async function loadTimeline(url, append) {
  const res = await api(url);
  const statuses = await res.json();
  const link = res.headers.get('Link');
  const timeline = $('timeline');
  if (!append) timeline.replaceChildren();
  timeline.dataset.pages = String(Number(append ? timeline.dataset.pages : 0) + 1);
  timeline.dataset.lastStatus = String(res.status);
  timeline.dataset.link = link ?? '';
  log(`timeline page ${timeline.dataset.pages}: ${res.status}, ${statuses.length} statuses, Link ${link === null ? 'not readable' : 'readable'}`);
  for (const s of statuses) item('timeline', s.id, plain(s.content));
  const next = nextOf(link);
  $('more').hidden = !next;
  $('more').dataset.next = next ?? '';
}

async function showSession() {
  const session = stored('session');
  const account = await (await api('/api/v1/accounts/verify_credentials')).json();
  $('account').textContent = `@${account.acct}`;
  $('account').dataset.username = account.username;
  $('account').dataset.id = account.id;
  log(`verified: @${account.username} (${account.id})`);
  // Where the stream is, as masto.js finds it: the instance's configuration.
  const instance = await (await checked(await fetch(`${session.server}/api/v2/instance`), 'GET /api/v2/instance')).json();
  const streamingUrl = instance.configuration.urls.streaming;
  log(`streaming at ${streamingUrl}`);
  $('signed-in').hidden = false;
  openStream(streamingUrl, session.token, 'protocol');
  openStream(streamingUrl, session.token, 'query');

  $('compose').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('text').value;
    $('text').value = '';
    post(text).catch(fail);
  });
  $('refresh').addEventListener('click', () => loadTimeline('/api/v1/timelines/home?limit=1', false).catch(fail));
  $('more').addEventListener('click', () => loadTimeline($('more').dataset.next, true).catch(fail));
}

async function main() {
  if (location.pathname === '/callback') await finishSignIn();
  if (stored('session')) return showSession();
  $('login').hidden = false;
  $('server-form').addEventListener('submit', (e) => {
    e.preventDefault();
    startSignIn($('server').value).catch(fail);
  });
}

main().then(() => document.body.dataset.ready = 'true', fail);
