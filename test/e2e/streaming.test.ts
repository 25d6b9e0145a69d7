import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createStreamingAPIClient, type mastodon } from 'masto';
import generator from 'megalodon';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { setAccountFlag } from '../../storage/moderation.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/listen.ts';
import { NODE_COMPILE_CACHE } from '../helpers/processes.ts';

// Two server processes on one PostgreSQL and one Redis: A (in this process) runs the workers and takes the writes,
// B (a `node main.ts` child with ROLE=streaming) only holds streaming sockets. Every event must cross from A to B through Redis.
let a: TestServer & { url: string };
let b: ChildProcess;
let bOutput = '';
let bUrl: string;
let ana: TestUser; // posts
let ben: TestUser; // follows ana
let cy: TestUser; // a stranger

beforeAll(async () => {
  a = await startListeningServer();
  // B is a real server process (`node main.ts`, as `npm start` runs it) with ROLE=streaming, as Mastodon's
  // streaming server is, on the same PostgreSQL and Redis.
  const port = await freePort();
  b = spawn(process.execPath, ['main.ts'], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_COMPILE_CACHE, ROLE: 'streaming', PORT: String(port), BIND: '127.0.0.1',
      // Two processes share the port (node:cluster), so sockets land on either and events must reach both.
      STREAMING_PROCESSES: '2',
      DATABASE_URL: a.config.databaseUrl, REDIS_URL: a.config.redisUrl, REDIS_PREFIX: a.config.redisPrefix,
      LOCAL_DOMAIN: a.config.localDomain, DATA_DIR: a.config.dataDir, LOG_LEVEL: 'warn', RATE_LIMITS: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  b.stdout!.on('data', (d) => (bOutput += d));
  b.stderr!.on('data', (d) => (bOutput += d));
  bUrl = `ws://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
    if (i > 200 || b.exitCode !== null) throw new Error(`the streaming process did not start:\n${bOutput}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  [ana, ben, cy] = await registerUsers(a.app, 'ana', 'ben', 'cy');
  expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${ana.id}/follow`, headers: bearer(ben.token) })).statusCode).toBe(200);
  // Home feeds are built when first read, as an app does at start.
  for (const u of [ana, ben, cy]) await a.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(u.token) });
}, 60_000);
afterAll(async () => {
  if (b && b.exitCode === null) {
    b.kill('SIGTERM');
    await new Promise((r) => b.once('exit', r));
  }
  await a?.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const post = async (user: TestUser, payload: object): Promise<Json> => {
  const res = await a.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

/** A raw WebSocket client that keeps every message, for what a library would hide. */
async function rawSocket(query: string, options: { protocol?: string; headers?: Record<string, string> } = {}) {
  const ws = new WebSocket(`${bUrl}/api/v1/streaming${query}`, options.protocol ? [options.protocol] : [], { headers: options.headers ?? {} });
  const messages: Json[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Json));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
  const waitFor = async (pred: (m: Json) => boolean, ms = 5000): Promise<Json> => {
    const end = Date.now() + ms;
    for (;;) {
      const found = messages.find(pred);
      if (found) return found;
      if (Date.now() > end) throw new Error(`no such message; got ${JSON.stringify(messages).slice(0, 800)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  // Subscriptions are made asynchronously: a round trip proves them in place.
  const settle = () => new Promise((r) => setTimeout(r, 150));
  await settle();
  return { ws, messages, closed, waitFor, settle };
}

/** Reads a masto subscription in the background (it subscribes when first read), keeping every event. */
function collect(subscription: mastodon.streaming.Subscription) {
  const events: mastodon.streaming.Event[] = [];
  void (async () => {
    try {
      for await (const e of subscription) events.push(e);
    } catch {
      // the client was closed
    }
  })();
  return async (pred: (e: mastodon.streaming.Event) => boolean, ms = 5000): Promise<mastodon.streaming.Event> => {
    const end = Date.now() + ms;
    for (;;) {
      const found = events.find(pred);
      if (found) return found;
      if (Date.now() > end) throw new Error(`timed out waiting for a streaming event; got ${JSON.stringify(events.map((e) => e.event))}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
}

describe('the streaming API across processes', () => {
  it('brings a followed account\'s post, its deletion and a mention to a masto client on the other process', async () => {
    const client = createStreamingAPIClient({ streamingApiUrl: bUrl, accessToken: ben.token, retry: false });
    try {
    const user = collect(client.user.subscribe());
    const notifications = collect(client.user.notification.subscribe());
    // masto subscribes once its connection is up: a probe post that arrives shows the subscription in place.
    for (let i = 0; ; i++) {
      const probe = await post(ana, { status: `probe ${i}` });
      if (await user((e) => e.event === 'update' && e.payload.id === probe.id, 300).catch(() => null)) break;
      if (i > 20) throw new Error('the masto client never got a post');
    }
    const status = await post(ana, { status: 'live from A' });
    const update = await user((e) => e.event === 'update' && e.payload.id === status.id);
    // masto hands over entities with camelCase keys; the raw payloads are checked against the schema below.
    expect(update.payload).toMatchObject({ content: expect.stringContaining('live from A'), favourited: false, account: { username: 'ana' } });

    expect((await a.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${status.id}`, headers: bearer(ana.token) })).statusCode).toBe(200);
    const deleted = await user((e) => e.event === 'delete');
    expect(deleted.payload).toBe(status.id);

    const mention = await post(cy, { status: '@ben hello there' });
    const note = await notifications((e) => e.event === 'notification');
    expect(note.payload).toMatchObject({ type: 'mention', status: { id: mention.id }, account: { username: 'cy' } });
    } finally {
      client.close();
    }
  });

  it('brings an update to megalodon\'s streaming client, which sends its token as ?access_token=', async () => {
    const client = generator('mastodon', a.url, ben.token);
    const stream = await client.userStreaming();
    const updates: { id: string; content: string }[] = [];
    stream.on('update', (status: { id: string; content: string }) => updates.push(status));
    await new Promise<void>((resolve) => stream.on('connect', () => resolve()));
    try {
      for (let i = 0; updates.length === 0; i++) {
        await post(ana, { status: `for megalodon ${i}` });
        await new Promise((r) => setTimeout(r, 250));
        if (i > 20) throw new Error('megalodon never got an update');
      }
      expect(updates[0]!.content).toContain('for megalodon');
    } finally {
      stream.stop();
    }
  });

  it('sends public posts on the public streams, rendered with the receiver\'s own flags', async () => {
    const s = await rawSocket('?stream=public:local', { protocol: cy.token });
    const tagged = await rawSocket('?stream=hashtag&tag=Streams', { headers: bearer(cy.token) });
    const status = await post(ana, { status: 'public and #streams' });
    const event = await s.waitFor((m) => m.event === 'update');
    expect(event.stream).toEqual(['public:local']);
    expect(typeof event.payload).toBe('string');
    expectEntity('Status', JSON.parse(event.payload));
    expect((await tagged.waitFor((m) => m.event === 'update')).stream).toEqual(['hashtag', 'Streams']);

    // ben favourites it, then ana boosts it: ben's home stream shows the boost with ben's favourite on it.
    const benSocket = await rawSocket(`?stream=user&access_token=${ben.token}`);
    await a.app.inject({ method: 'POST', url: `/api/v1/statuses/${status.id}/favourite`, headers: bearer(ben.token) });
    await a.app.inject({ method: 'POST', url: `/api/v1/statuses/${status.id}/reblog`, headers: bearer(ana.token) });
    const boost = await benSocket.waitFor((m) => m.event === 'update' && JSON.parse(m.payload).reblog?.id === status.id);
    expect(JSON.parse(boost.payload)).toMatchObject({ favourited: true, reblog: { favourited: true } });
    // ...while cy's view of the same boost (if cy followed) would not: the public stream is not sent boosts at all.
    expect(s.messages.filter((m) => m.event === 'update').map((m) => JSON.parse(m.payload).id)).toEqual([status.id]);
    // A notification on the user stream, as the raw payload a client parses.
    await post(cy, { status: '@ben look' });
    const note = await benSocket.waitFor((m) => m.event === 'notification');
    expectEntity('Notification', JSON.parse(note.payload));
    for (const c of [s, tagged, benSocket]) c.ws.close();
  });

  it('sends a followers-only post to a follower and to nobody else', async () => {
    const follower = await rawSocket('?stream=user', { protocol: ben.token });
    const stranger = await rawSocket('?stream=user', { protocol: cy.token });
    const publicSocket = await rawSocket('?stream=public', { protocol: cy.token });
    const status = await post(ana, { status: 'only followers', visibility: 'private' });
    const got = await follower.waitFor((m) => m.event === 'update');
    expect(JSON.parse(got.payload)).toMatchObject({ id: status.id, visibility: 'private' });
    const later = await post(ana, { status: 'a public one after it' });
    await publicSocket.waitFor((m) => m.event === 'update' && JSON.parse(m.payload).id === later.id);
    expect(stranger.messages.filter((m) => m.event === 'update')).toEqual([]);
    expect(publicSocket.messages.some((m) => m.event === 'update' && JSON.parse(m.payload).id === status.id)).toBe(false);
    for (const c of [follower, stranger, publicSocket]) c.ws.close();
  });

  it('builds the home feed of someone who listens to it before ever reading it, so fan-out reaches them', async () => {
    const [eli] = await registerUsers(a.app, 'eli');
    await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${ana.id}/follow`, headers: bearer(eli.token) });
    const s = await rawSocket('?stream=user', { protocol: eli.token });
    await new Promise((r) => setTimeout(r, 300));
    const status = await post(ana, { status: 'to a feed built on demand' });
    await s.waitFor((m) => m.event === 'update' && JSON.parse(m.payload).id === status.id);
    s.ws.close();
  });

  it('applies the receiver\'s filters to streamed posts, and says when they change', async () => {
    const s = await rawSocket('?stream=user', { protocol: ben.token });
    const made = await a.app.inject({ method: 'POST', url: '/api/v2/filters', headers: bearer(ben.token), payload: { title: 'Greens', context: ['home'], filter_action: 'hide', keywords_attributes: [{ keyword: 'kale' }, { keyword: 'chard' }] } });
    expect(made.statusCode).toBe(200);
    expect(await s.waitFor((m) => m.event === 'filters_changed')).toEqual({ stream: ['user'], event: 'filters_changed' });
    await a.app.inject({ method: 'PUT', url: `/api/v2/filters/${made.json().id}`, headers: bearer(ben.token), payload: { filter_action: 'warn', keywords_attributes: [{ id: made.json().keywords[1].id, _destroy: true }] } });
    const hidden = await post(ana, { status: 'kale smoothie' });
    const shown = await post(ana, { status: 'a plain one' });
    await s.waitFor((m) => m.event === 'update' && JSON.parse(m.payload).id === shown.id);
    const warned = JSON.parse(s.messages.find((m) => m.event === 'update' && JSON.parse(m.payload).id === hidden.id)!.payload);
    expect(warned.filtered).toEqual([expect.objectContaining({ keyword_matches: ['kale'] })]);
    await a.app.inject({ method: 'PUT', url: `/api/v2/filters/${made.json().id}`, headers: bearer(ben.token), payload: { filter_action: 'hide' } });
    const gone = await post(ana, { status: 'more kale' });
    const after = await post(ana, { status: 'after the kale' }); // "kale" whole-word matches here too
    const last = await post(ana, { status: 'plain again' });
    await s.waitFor((m) => m.event === 'update' && JSON.parse(m.payload).id === last.id);
    const updates = s.messages.filter((m) => m.event === 'update').map((m) => JSON.parse(m.payload).id);
    expect(updates).not.toContain(gone.id);
    expect(updates).not.toContain(after.id);
    await a.app.inject({ method: 'DELETE', url: `/api/v2/filters/${made.json().id}`, headers: bearer(ben.token) });
    s.ws.close();
  });

  it('closes a socket at once when its token is revoked through the other process', async () => {
    const client = await createApp(a.app);
    const dee = await registerUser(a.app, client, 'dee');
    const s = await rawSocket('?stream=user', { protocol: dee.token });
    const revoked = await a.app.inject({ method: 'POST', url: '/oauth/revoke', payload: { client_id: client.client_id, client_secret: client.client_secret, token: dee.token } });
    expect(revoked.statusCode).toBe(200);
    const closed = await Promise.race([s.closed, new Promise<null>((r) => setTimeout(() => r(null), 3000))]);
    expect(closed).not.toBeNull();
  });

  it('answers like Mastodon\'s streaming server: 401 before the upgrade, errors as messages, health as OK', async () => {
    const refused = new WebSocket(`${bUrl}/api/v1/streaming?stream=user`);
    const status = await new Promise<number>((resolve) => refused.on('unexpected-response', (req, res) => { resolve(res.statusCode ?? 0); req.destroy(); }));
    expect(status).toBe(401);
    const bad = new WebSocket(`${bUrl}/api/v1/streaming?stream=user&access_token=nope`);
    expect(await new Promise<number>((resolve) => bad.on('unexpected-response', (req, res) => { resolve(res.statusCode ?? 0); req.destroy(); }))).toBe(401);

    const s = await rawSocket('', { protocol: cy.token });
    s.ws.send(JSON.stringify({ type: 'subscribe', stream: 'nonsense' }));
    expect(await s.waitFor((m) => 'error' in m)).toEqual({ error: 'Unknown stream type', status: 400 });
    s.ws.send(JSON.stringify({ type: 'subscribe', stream: 'hashtag' }));
    expect(await s.waitFor((m) => m.error === 'Missing tag name parameter')).toMatchObject({ status: 400 });
    s.ws.send('not json');
    await s.waitFor((m) => m.error === 'Invalid JSON');
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close();

    const health = await fetch(`${bUrl.replace('ws', 'http')}/api/v1/streaming/health`);
    expect(await health.text()).toBe('OK');
    // A streaming process serves nothing else.
    expect((await fetch(`${bUrl.replace('ws', 'http')}/api/v1/instance`)).status).toBe(404);
  });

  it('streams as server-sent events too', async () => {
    const controller = new AbortController();
    const res = await fetch(`${bUrl.replace('ws', 'http')}/api/v1/streaming/public/local`, { headers: bearer(cy.token), signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    await new Promise((r) => setTimeout(r, 150));
    const status = await post(ana, { status: 'as an event' });
    let text = '';
    const end = Date.now() + 5000;
    while (!text.includes(status.id) && Date.now() < end) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toMatch(/event: update\ndata: \{/);
    controller.abort();
    const unauthorized = await fetch(`${bUrl.replace('ws', 'http')}/api/v1/streaming/user`);
    expect(unauthorized.status).toBe(401);
    expect(await unauthorized.json()).toEqual({ error: 'Missing access token' });
  });
  it('keeps blocked and muted accounts\' posts off the user and public streams, an author who blocks the viewer, and limited accounts off public ones', async () => {
    const [dee, eve, fay, gil, hal] = await registerUsers(a.app, 'rdee', 'reve', 'rfay', 'rgil', 'rhal');
    await setAccountFlag(a.ctx.db, hal.id, 'silenced', true); // as the admin API's silence does
    for (const target of [eve, fay]) expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${target.id}/follow`, headers: bearer(dee.token) })).statusCode).toBe(200);
    await a.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(dee.token) });
    expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${eve.id}/mute`, headers: bearer(dee.token) })).statusCode).toBe(200);
    expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${dee.id}/block`, headers: bearer(gil.token) })).statusCode).toBe(200);
    const user = await rawSocket('?stream=user', { protocol: dee.token });
    const pub = await rawSocket('?stream=public:local', { protocol: dee.token });
    const muted = await post(eve, { status: 'muted by dee' });
    const blocker = await post(gil, { status: 'gil blocks dee' });
    const limited = await post(hal, { status: 'hal is silenced' });
    const control = await post(fay, { status: 'dee sees this' });
    const isUpdate = (id: string) => (m: Json) => m.event === 'update' && JSON.parse(m.payload).id === id;
    await user.waitFor(isUpdate(control.id));
    await pub.waitFor(isUpdate(control.id));
    for (const s of [user, pub]) {
      expect(s.messages.some(isUpdate(muted.id))).toBe(false);
      expect(s.messages.some(isUpdate(blocker.id))).toBe(false);
    }
    expect(pub.messages.some(isUpdate(limited.id))).toBe(false);
    user.ws.close();
    pub.ws.close();
  });
  it('sends each receiver what REST shows them, and applies a mute or block made while the socket is open to the next post', async () => {
    const [kim, lou, max, nia, ned] = await registerUsers(a.app, 'vkim', 'vlou', 'vmax', 'vnia', 'vned');
    for (const u of [lou, max, ned]) {
      for (const target of [kim, nia]) expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${target.id}/follow`, headers: bearer(u.token) })).statusCode).toBe(200);
    }
    for (const u of [kim, lou, max, ned]) await a.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(u.token) });
    const louHome = await rawSocket('?stream=user', { protocol: lou.token });
    const maxPublic = await rawSocket('?stream=public:local', { protocol: max.token });
    const kimHome = await rawSocket('?stream=user', { protocol: kim.token });
    // The author on a public stream: the fan-out's message reaches them there, and must show the post as theirs.
    const kimPublic = await rawSocket('?stream=public:local', { protocol: kim.token });
    const nedHome = await rawSocket('?stream=user', { protocol: ned.token });
    const isUpdate = (id: string, event = 'update') => (m: Json) => m.event === event && JSON.parse(m.payload).id === id;
    const asRest = async (u: TestUser, id: string) => (await a.app.inject({ method: 'GET', url: `/api/v1/statuses/${id}`, headers: bearer(u.token) })).json();
    const call = async (u: TestUser, method: 'POST' | 'PUT', url: string, payload?: object) => {
      const res = await a.app.inject({ method, url, headers: bearer(u.token), ...(payload ? { payload } : {}) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };

    const first = await post(kim, { status: 'shown as REST shows it', poll: { options: ['yes', 'no'], expires_in: 3600 } });
    for (const [socket, u] of [[louHome, lou], [maxPublic, max], [nedHome, ned]] as const) {
      const payload = JSON.parse((await socket.waitFor(isUpdate(first.id))).payload);
      expectEntity('Status', payload);
      expect(payload).toEqual(await asRest(u, first.id));
    }
    // The author's own post shows as theirs (pinned, the poll as its owner's), on their home and on a public stream.
    for (const socket of [kimHome, kimPublic]) {
      const own = JSON.parse((await socket.waitFor(isUpdate(first.id))).payload);
      expect(own).toEqual(await asRest(kim, first.id));
      expect(own).toMatchObject({ pinned: false, poll: { voted: true } });
    }
    // A followers-only post, to a follower's home as REST shows it to them; not on the public stream.
    const privately = await post(kim, { status: 'for followers', visibility: 'private' });
    expect(JSON.parse((await louHome.waitFor(isUpdate(privately.id))).payload)).toEqual(await asRest(lou, privately.id));

    // An edit, to receivers who bookmarked the post, voted in its poll or favourited it: each sees it as REST does.
    await call(lou, 'POST', `/api/v1/statuses/${first.id}/bookmark`);
    await call(lou, 'POST', `/api/v1/polls/${first.poll.id}/votes`, { choices: [1] });
    await call(max, 'POST', `/api/v1/statuses/${first.id}/favourite`);
    await call(kim, 'PUT', `/api/v1/statuses/${first.id}`, { status: 'shown as REST shows it, edited', poll: { options: ['yes', 'no'], expires_in: 3600 } });
    for (const [socket, u] of [[louHome, lou], [maxPublic, max], [nedHome, ned], [kimHome, kim]] as const) {
      const payload = JSON.parse((await socket.waitFor(isUpdate(first.id, 'status.update'))).payload);
      expectEntity('Status', payload);
      expect(payload).toEqual(await asRest(u, first.id));
    }
    expect(JSON.parse(louHome.messages.find(isUpdate(first.id, 'status.update'))!.payload)).toMatchObject({ bookmarked: true, poll: { voted: true, own_votes: [1] } });
    expect(JSON.parse(maxPublic.messages.find(isUpdate(first.id, 'status.update'))!.payload)).toMatchObject({ favourited: true, favourites_count: 1 });

    // lou mutes kim and max blocks kim, through process A, with their sockets open since the first post.
    expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${kim.id}/mute`, headers: bearer(lou.token) })).statusCode).toBe(200);
    expect((await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${kim.id}/block`, headers: bearer(max.token) })).statusCode).toBe(200);
    const second = await post(kim, { status: 'after the mute and the block' });
    // The same fan-out reached another follower's home and the public stream (the author's socket there), and the
    // messages to lou and max left with them: what they were to be sent, they have been by now.
    await nedHome.waitFor(isUpdate(second.id));
    await kimPublic.waitFor(isUpdate(second.id));
    await new Promise((r) => setTimeout(r, 300));
    expect(louHome.messages.some(isUpdate(second.id))).toBe(false);
    expect(maxPublic.messages.some(isUpdate(second.id))).toBe(false);
    expect(maxPublic.messages.some(isUpdate(privately.id))).toBe(false);

    // Undone: the next post reaches them again.
    await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${kim.id}/unmute`, headers: bearer(lou.token) });
    await a.app.inject({ method: 'POST', url: `/api/v1/accounts/${kim.id}/unblock`, headers: bearer(max.token) });
    const third = await post(kim, { status: 'after both were undone' });
    await louHome.waitFor(isUpdate(third.id));
    await maxPublic.waitFor(isUpdate(third.id));
    for (const c of [louHome, maxPublic, kimHome, kimPublic, nedHome]) c.ws.close();
  });
  it('streams a list to its owner, and refuses another person\'s list', async () => {
    const [owner, member, other] = await registerUsers(a.app, 'lown', 'lmem', 'loth');
    const api = async (u: TestUser, method: 'POST' | 'GET', url: string, payload?: object) =>
      (await a.app.inject({ method, url, headers: bearer(u.token), ...(payload ? { payload } : {}) })).json();
    await api(owner, 'POST', `/api/v1/accounts/${member.id}/follow`);
    const list = await api(owner, 'POST', '/api/v1/lists', { title: 'Streamed' });
    await api(owner, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [member.id] });
    const s = await rawSocket(`?stream=list&list=${list.id}`, { protocol: owner.token });
    const status = await post(member, { status: 'for the list stream' });
    const update = await s.waitFor((m) => m.event === 'update' && JSON.parse(m.payload).id === status.id);
    expect(update.stream).toEqual(['list', list.id]);
    expectEntity('Status', JSON.parse(update.payload));
    await a.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${status.id}`, headers: bearer(member.token) });
    expect((await s.waitFor((m) => m.event === 'delete')).payload).toBe(status.id);
    s.ws.close();

    const stranger = await rawSocket('', { protocol: other.token });
    stranger.ws.send(JSON.stringify({ type: 'subscribe', stream: 'list', list: list.id }));
    expect(await stranger.waitFor((m) => 'error' in m)).toEqual({ error: 'Not authorized to stream this list', status: 401 });
    stranger.ws.close();
  });
});
