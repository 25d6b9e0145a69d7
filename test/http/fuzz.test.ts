// Every route the server registers, fed from its own schema with bad values (wrong types, empty, huge, NUL, lone
// surrogates, deep nesting, odd numbers and ids), with an all-scopes administrator's token, a made-up token and none.
// Passing: no answer >= 500, no request slower than SLOW_MS, and the server still answering afterwards. The routes
// come from Fastify itself (an onRoute hook added through Fastify's `fastify.initialization` diagnostics channel, as
// the app is built), so a new route is fuzzed without anyone adding it here.
// CI runs a fixed seed and count, and the systematic pass's values in turns; `npm run fuzz` runs longer with a random
// seed and gives every parameter every value (FUZZ_SEED, FUZZ_RUNS, FUZZ_SYSTEMATIC=full to choose).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { badValue, deep, encodePairs, formPairs, objectOf } from '../helpers/fuzz-values.ts';
import { ALL_SCOPES } from '../../http/oauth/scopes.ts';
import { channel } from 'node:diagnostics_channel';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { makeAdmin } from '../helpers/admin.ts';

const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 18);
/** Random requests per route (spread over the three tokens), after the systematic pass. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 6);
const SLOW_MS = 5000;
const CONCURRENCY = 4;

type Schema = Record<string, unknown>;
interface Route { method: string; url: string; query?: Schema; body?: Schema }
interface Req { method: string; url: string; headers: Record<string, string>; payload?: string | Buffer; what: string }

const seen: RouteOptions[] = [];
let s: TestServer;
let admin: TestUser;
let victim: TestUser;
let ids: string[] = [];

/**
 * Not fuzzed, because they cannot be: the streaming API's WebSocket upgrade (inject cannot upgrade) and its
 * server-sent-event streams (they answer by never ending). Their query checks run before the stream opens and are
 * covered by test/e2e/streaming.test.ts; `/api/v1/streaming/health` is fuzzed.
 */
const unfuzzable = (r: RouteOptions) => r.url.startsWith('/api/v1/streaming') && r.url !== '/api/v1/streaming/health';

/** Paths that Fedify answers (federation/mount.ts): not Fastify routes, so named here. */
const FEDIFY_ROUTES: Route[] = [
  { method: 'GET', url: '/users/:username' },
  { method: 'GET', url: '/users/:username/statuses/:id' },
  { method: 'GET', url: '/users/:username/followers', query: { type: 'object', properties: { cursor: { type: 'string' } } } },
  { method: 'GET', url: '/users/:username/following', query: { type: 'object', properties: { cursor: { type: 'string' } } } },
  { method: 'GET', url: '/users/:username/outbox', query: { type: 'object', properties: { cursor: { type: 'string' } } } },
  { method: 'GET', url: '/users/:username/collections/featured' },
  { method: 'GET', url: '/users/:username/collections/tags' },
  { method: 'GET', url: '/.well-known/webfinger', query: { type: 'object', properties: { resource: { type: 'string' } } } },
  { method: 'GET', url: '/.well-known/nodeinfo' },
  { method: 'GET', url: '/nodeinfo/2.1' },
  { method: 'POST', url: '/inbox' },
  { method: 'POST', url: '/users/:username/inbox' },
];

function routes(): Route[] {
  const out: Route[] = [];
  for (const r of seen) {
    if (unfuzzable(r)) continue;
    for (const method of [r.method].flat()) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      out.push({ method, url: r.url, query: r.schema?.querystring as Schema | undefined, body: r.schema?.body as Schema | undefined });
    }
  }
  return [...out, ...FEDIFY_ROUTES];
}

const pathParams = (url: string) => [...url.matchAll(/:(\w+)|\*/g)].map((m) => m[1] ?? '*');

function encodeSegment(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? 'undefined';
  try {
    return encodeURIComponent(text);
  } catch {
    return '%ED%A0%80'; // a lone surrogate has no UTF-8 form: its CESU-8 bytes, as a careless client would send
  }
}

function fillPath(url: string, values: unknown[]): string {
  let i = 0;
  return url.replace(/:(\w+)|\*/g, () => encodeSegment(values[i++]));
}

type Encoding = 'json' | 'form' | 'multipart' | 'raw' | 'none';
const RAW_BODIES = ['{"a":', '[1,2,3]', '"text"', '\0', '{"status":"\\u0000"}', '{"a":"\\ud800"}', 'null', '1e999', '{"__proto__":{"x":1}}'];

/** A file part: uploads take media, avatars, headers and thumbnails; some are images, some garbage, some oddly named. */
interface FilePart { field: string; filename: string; bytes: 'png' | 'garbage' | 'empty' }
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const fileArb = fc.option(fc.record({
  field: fc.constantFrom('file', 'avatar', 'header', 'thumbnail'),
  filename: fc.constantFrom('a.png', '', 'a\0b.png', '\ud800.jpg', 'x'.repeat(300)),
  bytes: fc.constantFrom<FilePart['bytes']>('png', 'garbage', 'empty'),
}), { freq: 3 });

async function multipartOf(body: Record<string, unknown>, file: FilePart | null): Promise<{ payload: Buffer; type: string }> {
  const form = new FormData();
  for (const [name, value] of formPairs(body)) form.append(name, value);
  if (file) {
    const bytes = file.bytes === 'png' ? PNG_1PX : file.bytes === 'garbage' ? Buffer.from('GIF89a\0\0not really') : Buffer.alloc(0);
    form.append(file.field, new Blob([new Uint8Array(bytes)], { type: file.bytes === 'png' ? 'image/png' : 'image/gif' }), file.filename);
  }
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return { payload: Buffer.from(await request.arrayBuffer()), type: request.headers.get('content-type')! };
}

async function buildRequest(route: Route, params: unknown[], query: Record<string, unknown>, body: Record<string, unknown>, encoding: Encoding, raw: string, token: string | null, file: FilePart | null = null): Promise<Req> {
  const search = encodePairs(formPairs(query));
  const url = fillPath(route.url, params) + (search ? `?${search}` : '');
  const headers: Record<string, string> = token ? bearer(token) : {};
  if (route.url.startsWith('/users/') || route.url === '/inbox') headers.accept = 'application/activity+json';
  const what = `${route.method} ${url.slice(0, 300)} ${encoding} token=${token === null ? 'none' : token === admin.token ? 'admin' : 'invalid'}`;
  if (route.method === 'GET' || encoding === 'none') return { method: route.method, url, headers, what };
  if (encoding === 'json') return { method: route.method, url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body), what: `${what} ${JSON.stringify(body).slice(0, 300)}` };
  if (encoding === 'form') return { method: route.method, url, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, payload: encodePairs(formPairs(body)), what: `${what} ${encodePairs(formPairs(body)).slice(0, 300)}` };
  if (encoding === 'multipart') {
    const { payload, type } = await multipartOf(body, file);
    return { method: route.method, url, headers: { ...headers, 'content-type': type }, payload, what: `${what} ${JSON.stringify(body).slice(0, 300)} ${JSON.stringify(file)}` };
  }
  return { method: route.method, url, headers: { ...headers, 'content-type': 'application/json' }, payload: raw, what: `${what} ${JSON.stringify(raw)}` };
}

/** A request for a route, each part drawn from its schema (fitting or bad). */
function requestArb(route: Route) {
  const params = pathParams(route.url);
  const pathValue = fc.oneof(fc.constantFrom(...ids), badValue(ids), fc.constantFrom('moddy', 'vic', 'instance.actor', 'tag', 'moddy@test.local'));
  return fc.record({
    params: fc.tuple(...params.map(() => pathValue)),
    query: objectOf(route.query, ids),
    body: objectOf(route.body, ids),
    encoding: fc.constantFrom<Encoding>('json', 'json', 'form', 'multipart', 'raw', 'none'),
    raw: fc.constantFrom(...RAW_BODIES),
    file: fileArb,
  });
}

/**
 * The systematic pass: each parameter of each route alone gets bad values, the others fitting. The values come in
 * kinds, each handled its own way (text PostgreSQL cannot store, empty, huge, odd numbers, wrong shapes).
 */
const FOCUSED_KINDS: unknown[][] = [['\0', 'a\0b', '\ud800'], [''], ['x'.repeat(5000)], [-1, 1e308, '99999999999999999999999'], [{ a: 1 }, ['a', 'b'], deep(200, 'array')]];
/**
 * `full` (npm run fuzz): every parameter gets every value. Otherwise every parameter gets a value of each kind, the
 * kind's values taking turns over a route's parameters, so that every value still reaches every route: 8,800
 * requests rather than 15,000 (a parameter given '\0' is refused by the same check as one given 'a\0b').
 */
const SYSTEMATIC_FULL = process.env.FUZZ_SYSTEMATIC === 'full';

/** The values parameter `index` of `count` gets: of each kind, those whose turn it is (all of them in a full pass). */
function focusedFor(index: number, count: number): unknown[] {
  if (SYSTEMATIC_FULL) return FOCUSED_KINDS.flat();
  return FOCUSED_KINDS.flatMap((kind) => kind.filter((_, v) => (count >= kind.length ? v === index % kind.length : v % count === index)));
}

async function systematic(route: Route): Promise<Req[]> {
  const out: Req[] = [];
  const fit = (schema: Schema | undefined) => fc.sample(objectOf(schema, ids, 0), { seed: SEED, numRuns: 1 })[0]!;
  const baseParams: unknown[] = pathParams(route.url).map(() => ids[0]);
  const baseQuery = fit(route.query);
  const baseBody = fit(route.body);
  const bodyEncoding: Encoding = route.method === 'GET' ? 'none' : 'json';
  const queryNames = Object.keys((route.query?.properties ?? {}) as Schema);
  const bodyNames = route.method === 'GET' ? [] : Object.keys((route.body?.properties ?? {}) as Schema);
  // Every parameter of the route in one list, so that a kind's values take turns over all of them.
  const count = baseParams.length + queryNames.length + bodyNames.length;
  let index = 0;
  for (let i = 0; i < baseParams.length; i++) {
    for (const bad of focusedFor(index++, count)) {
      const p = [...baseParams];
      p[i] = bad;
      out.push(await buildRequest(route, p, baseQuery, baseBody, bodyEncoding, '', admin.token));
    }
  }
  for (const name of queryNames) {
    for (const bad of focusedFor(index++, count)) out.push(await buildRequest(route, baseParams, { ...baseQuery, [name]: bad }, baseBody, bodyEncoding, '', admin.token));
  }
  for (const name of bodyNames) {
    for (const bad of focusedFor(index++, count)) {
      out.push(await buildRequest(route, baseParams, baseQuery, { ...baseBody, [name]: bad }, bodyEncoding, '', admin.token));
      if (typeof bad === 'string') out.push(await buildRequest(route, baseParams, baseQuery, { ...baseBody, [name]: bad }, 'form', '', admin.token));
    }
  }
  return out;
}

async function randomized(route: Route, index: number): Promise<Req[]> {
  const tokens = [admin.token, 'made-up-token-0123456789', null];
  const samples = fc.sample(requestArb(route), { seed: SEED + index, numRuns: RUNS });
  return Promise.all(samples.map((x, i) => buildRequest(route, x.params, x.query, x.body, x.encoding, x.raw, tokens[i % tokens.length]!, x.file)));
}

interface Failure { what: string; status: number; ms: number; body: string }
/** Answers by status, printed once per pass: a pass that only ever got 401s or 404s would be testing little. */
const tally = (statuses: number[]) => Object.entries(Object.groupBy(statuses, (x) => String(x))).map(([k, v]) => `${k}×${v!.length}`).join(' ');

async function send(requests: Req[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  const statuses: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const r = requests[next++]!;
      const started = performance.now();
      const res = await s.app.inject({ method: r.method as 'GET', url: r.url, headers: r.headers, ...(r.payload !== undefined ? { payload: r.payload } : {}) });
      const ms = performance.now() - started;
      statuses.push(res.statusCode);
      if (res.statusCode >= 500 || ms > SLOW_MS) failures.push({ what: r.what, status: res.statusCode, ms: Math.round(ms), body: res.body.slice(0, 300) });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(`${requests.length} requests: ${tally(statuses)}`);
  return failures;
}

beforeAll(async () => {
  const init = channel('fastify.initialization');
  const watch = (message: unknown) => (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', (r) => void seen.push(r));
  init.subscribe(watch);
  try {
    s = await startTestServer();
  } finally {
    init.unsubscribe(watch);
  }
  const client = await createApp(s.app, ALL_SCOPES.join(' '));
  [admin, victim] = await Promise.all([registerUser(s.app, client, 'moddy', ALL_SCOPES.join(' ')), registerUser(s.app, client, 'vic')]);
  await makeAdmin(s, admin);
  const post = async (who: TestUser, payload: object) => (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(who.token), payload })).json().id as string;
  const list = await s.app.inject({ method: 'POST', url: '/api/v1/lists', headers: bearer(admin.token), payload: { title: 'l' } });
  // Real ids, so requests also reach past "not found": the victim, posts, a poll, a list.
  ids = [victim.id, await post(victim, { status: 'hi #tag' }), await post(admin, { status: 'mine', poll: { options: ['a', 'b'], expires_in: 3600 } }), list.json().id];
  await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${victim.id}/follow`, headers: bearer(admin.token) });
  // More things that exist, each by its id: a direct conversation, a notification, a filter, a media attachment, a
  // scheduled post and a report.
  const as = (payload: object, url: string, who = admin) => s.app.inject({ method: 'POST', url, headers: bearer(who.token), payload }).then((r) => r.json().id as string | undefined);
  await post(victim, { status: '@moddy psst', visibility: 'direct' });
  // The direct post reaches the conversations by its fan-out job: waited for, not assumed done.
  const conversationId = async () => {
    for (let i = 0; i < 100; i++) {
      const id = (await s.app.inject({ method: 'GET', url: '/api/v1/conversations', headers: bearer(admin.token) })).json()[0]?.id as string | undefined;
      if (id) return id;
      await new Promise((r) => setTimeout(r, 100));
    }
    return undefined;
  };
  const png = await multipartOf({}, { field: 'file', filename: 'a.png', bytes: 'png' });
  const upload = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(admin.token), 'content-type': png.type }, payload: png.payload });
  const more = [
    (await s.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: bearer(admin.token) })).json()[0]?.id,
    await conversationId(),
    await as({ title: 'f', context: ['home'], keywords_attributes: [{ keyword: 'x' }] }, '/api/v2/filters'),
    upload.json().id,
    await as({ status: 'later', scheduled_at: new Date(Date.now() + 3600_000).toISOString() }, '/api/v1/statuses'),
    await as({ account_id: victim.id, comment: 'r' }, '/api/v1/reports'),
  ];
  ids.push(...more.filter((x): x is string => typeof x === 'string'));
  expect(ids.length, JSON.stringify(more)).toBe(10);
}, 60_000);
afterAll(async () => s?.close());

describe('text PostgreSQL cannot store (NUL, lone surrogates)', () => {
  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: string | Buffer, type = 'application/json') =>
    s.app.inject({ method, url, headers: { ...bearer(admin.token), ...(payload !== undefined ? { 'content-type': type } : {}) }, ...(payload !== undefined ? { payload } : {}) });
  const statusCount = async () => (await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n as number;

  it('refuses it in bodies (JSON, form, multipart; values and names) with 422, writing nothing', async () => {
    const before = await statusCount();
    const form = new FormData();
    form.append('status', 'a\0b');
    const multipart = new Request('http://localhost/', { method: 'POST', body: form });
    const cases = [
      await send('POST', '/api/v1/statuses', JSON.stringify({ status: '\0' })),
      await send('POST', '/api/v1/statuses', JSON.stringify({ status: 'a\0b' })),
      await send('POST', '/api/v1/statuses', '{"status":"x\\ud800y"}'),
      await send('POST', '/api/v1/statuses', 'status=a%00b', 'application/x-www-form-urlencoded'),
      await send('POST', '/api/v1/statuses', 'status=ok&st%00atus=x', 'application/x-www-form-urlencoded'),
      await send('POST', '/api/v1/statuses', Buffer.from(await multipart.arrayBuffer()), multipart.headers.get('content-type')!),
      await send('POST', '/api/v1/statuses', JSON.stringify({ status: 'ok', poll: { options: ['a', 'b\0'], expires_in: 3600 } })),
      await send('PATCH', '/api/v1/accounts/update_credentials', JSON.stringify({ display_name: '\0' })),
      await send('PATCH', '/api/v1/accounts/update_credentials', 'display_name=%00', 'application/x-www-form-urlencoded'),
      await send('PATCH', '/api/v1/accounts/update_credentials', JSON.stringify({ fields_attributes: { 0: { name: 'n', value: 'v\0' } } })),
    ];
    for (const res of cases) {
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().error).toMatch(/not allowed/);
    }
    expect(await statusCount()).toBe(before);
  });

  it('refuses it in a query with 422 and in a path with 404, Fedify\'s paths included', async () => {
    for (const url of ['/api/v1/accounts/lookup?acct=%00', '/api/v1/accounts/lookup?acct=a%00b', '/api/v2/search?q=a%00', '/.well-known/webfinger?resource=acct:%00@test.local']) {
      expect((await send('GET', url)).statusCode, url).toBe(422);
    }
    for (const url of ['/api/v1/timelines/tag/%00', '/api/v1/timelines/tag/a%00b', '/users/%00', '/users/moddy/statuses/%00', '/@a%00b']) {
      const res = await send('GET', url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual({ error: 'Record not found' });
    }
  });
});

describe('route fuzz', () => {
  it('finds the routes from Fastify', () => {
    const all = routes();
    expect(all.length).toBeGreaterThan(100);
    expect(all.some((r) => r.method === 'POST' && r.url === '/api/v1/statuses' && r.body)).toBe(true);
  });

  it('gives every parameter a bad value of each kind, and every route each bad value', () => {
    for (let count = 1; count <= 12; count++) {
      const given = Array.from({ length: count }, (_, i) => focusedFor(i, count));
      for (const values of given) for (const kind of FOCUSED_KINDS) expect(values.some((v) => kind.includes(v)), `${count} parameters`).toBe(true);
      expect(new Set(given.flat()), `${count} parameters`).toEqual(new Set(FOCUSED_KINDS.flat()));
    }
  });

  it('answers each parameter of each route given bad values of every kind (each value on every route) with < 500, promptly', async () => {
    const requests = (await Promise.all(routes().map(systematic))).flat();
    const failures = await send(requests);
    expect(failures, `${requests.length} requests`).toEqual([]);
  }, 300_000);

  it(`answers random requests from the schemas (seed ${SEED}, ${RUNS} a route) with < 500, promptly`, async () => {
    const requests = (await Promise.all(routes().map(randomized))).flat();
    const failures = await send(requests);
    expect(failures, `${requests.length} requests, seed ${SEED}`).toEqual([]);
  }, Math.max(120_000, RUNS * 20_000));

  it('still answers afterwards', async () => {
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/instance' })).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: '/health' })).statusCode).toBeLessThan(500);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/timelines/public' })).statusCode).toBe(200);
  });
});
