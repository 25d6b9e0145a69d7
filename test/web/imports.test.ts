import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { freePort } from '../helpers/listen.ts';
import { until } from '../helpers/instances.ts';

// /settings/import (Mastodon's BulkImport): each kind of file, merge and overwrite, the form's errors, and a large
// follow import resolved by WebFinger against a loopback https host, through the job in batches.

let s: TestServer;
let client: RegisteredApp;
let host: FakeHost;
let alice: TestUser, bob: TestUser, carol: TestUser, dave: TestUser;
const users = (list: TestUser[]) => list as [TestUser, TestUser, TestUser, TestUser];
let browser: WebClient;

/** A remote server that answers WebFinger and actor documents for `u<n>` with n < known (others: 404), and 202s inbox POSTs. */
class FakeHost {
  readonly server: Server;
  readonly domain: string;
  webfingers = 0;
  private readonly pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  known: number;
  readonly port: number;
  constructor(port: number, known: number) {
    this.port = port;
    this.known = known;
    this.domain = `localhost:${port}`;
    this.server = createServer({ cert: readFileSync(process.env.TEST_TLS_CERT_FILE!), key: readFileSync(process.env.TEST_TLS_KEY_FILE!) }, (req, res) => {
      const url = new URL(req.url ?? '/', `https://${this.domain}`);
      const send = (status: number, body: unknown, type = 'application/activity+json') => {
        res.writeHead(status, { 'content-type': type });
        res.end(body === null ? '' : JSON.stringify(body));
      };
      if (req.method === 'POST') { req.resume(); return send(202, null); }
      const name = (n: string | undefined) => (n && /^u\d+$/.test(n) && Number(n.slice(1)) < this.known ? n : null);
      if (url.pathname === '/.well-known/webfinger') {
        this.webfingers++;
        const m = /^acct:([^@]+)@(.+)$/.exec(url.searchParams.get('resource') ?? '');
        const u = m && m[2] === this.domain ? name(m[1]) : null;
        if (!u) return send(404, { error: 'not found' }, 'application/json');
        return send(200, { subject: `acct:${u}@${this.domain}`, links: [{ rel: 'self', type: 'application/activity+json', href: this.actorId(u) }] }, 'application/jrd+json');
      }
      const u = name(/^\/users\/([^/]+)$/.exec(url.pathname)?.[1]);
      if (!u) return send(404, { error: 'not found' }, 'application/json');
      send(200, {
        '@context': ['https://www.w3.org/ns/activitystreams', 'https://w3id.org/security/v1'],
        id: this.actorId(u), type: 'Person', preferredUsername: u, name: `User ${u}`,
        inbox: `${this.actorId(u)}/inbox`, outbox: `${this.actorId(u)}/outbox`, followers: `${this.actorId(u)}/followers`,
        endpoints: { sharedInbox: `https://${this.domain}/inbox` },
        publicKey: { id: `${this.actorId(u)}#main-key`, owner: this.actorId(u), publicKeyPem: this.pem },
      });
    });
  }
  actorId(u: string) { return `https://${this.domain}/users/${u}`; }
  listen() { return new Promise<void>((r) => this.server.listen(this.port, '127.0.0.1', r)); }
  close() { return new Promise<void>((r) => { this.server.close(() => r()); this.server.closeAllConnections(); }); }
}

beforeAll(async () => {
  s = await startTestServer({ ALLOW_PRIVATE_ADDRESSES: 'true' });
  client = await createApp(s.app);
  [alice, bob, carol, dave] = users(await Promise.all(['alice', 'bob', 'carol', 'dave'].map((u) => registerUser(s.app, client, u))));
  host = new FakeHost(await freePort(), 4_900);
  await host.listen();
  browser = new WebClient(s.app);
  expect((await browser.signIn(alice.email, alice.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await host?.close();
  await s?.close();
});

const one = async <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => (await s.ctx.db.query(sql, params)).rows[0] as T;
const count = async (sql: string, params: unknown[] = []) => (await one<{ n: number }>(sql, params)).n;

/** Uploads a file from the import page's form, as a browser does. */
async function upload(who: WebClient, type: string, mode: string, csv: string, filename = 'export.csv') {
  const page = await who.get('/settings/import');
  expect(page.statusCode).toBe(200);
  const body = await multipart({ _csrf: csrfOf(page.body), type, mode, data: { data: Buffer.from(csv), filename, type: 'text/csv' } });
  return who.app.inject({ method: 'POST', url: '/settings/import', payload: body.payload, headers: { ...body.headers, accept: 'text/html', cookie: who.jar.header() } });
}

/** Uploads, then waits for the job to finish the import; returns its page. */
async function importFile(type: string, mode: string, csv: string, who = browser, timeoutMs = 30_000) {
  const res = await upload(who, type, mode, csv);
  expect(res.statusCode, res.body.slice(0, 2000)).toBe(303);
  const location = String(res.headers.location);
  expect(location).toMatch(/^\/settings\/import\/\d+$/);
  return until(() => who.get(location).then((r) => r.body), (b) => b.includes('<dd>Finished</dd>'), `import ${location} finished`, timeoutMs);
}

const following = (id: string) => one<{ n: number; reblogs: boolean; notify: boolean; languages: string[] | null }>(
  `SELECT count(*)::int AS n, bool_and(show_reblogs) AS reblogs, bool_and(notify) AS notify, max(languages) AS languages FROM follows WHERE account_id = $1 AND target_account_id = $2`, [alice.id, id]);

describe('importing each kind of file', () => {
  it('follows with Mastodon\'s header (merge keeps, overwrite removes what the file does not list)', async () => {
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${dave.id}/follow`, headers: bearer(alice.token) });
    const page = await importFile('following', 'merge', [
      'Account address,Show boosts,Notify on new posts,Languages',
      'bob@test.local,true,false,',
      '@carol,false,true,"en,fr"',
      'nobody@test.local,true,false,',
    ].join('\n'));
    expect(page).toContain('3 of 3 rows processed');
    expect(page).toMatch(/id="imported">2</);
    expect(page).toMatch(/<tr class="import-failure"><td>nobody<\/td><td>Account not found<\/td>/);
    expect(await following(bob.id)).toMatchObject({ n: 1, reblogs: true, notify: false });
    expect(await following(carol.id)).toMatchObject({ n: 1, reblogs: false, notify: true, languages: ['en', 'fr'] });
    expect((await following(dave.id)).n).toBe(1); // merge: kept

    // GoToSocial's variant (two columns), overwriting: dave and carol go, bob stays with the new setting.
    await importFile('following', 'overwrite', 'Account address,Show boosts\nbob@test.local,false\n');
    expect(await following(bob.id)).toMatchObject({ n: 1, reblogs: false });
    expect((await following(carol.id)).n).toBe(0);
    expect((await following(dave.id)).n).toBe(0);
  });

  it('blocks from a file without a header, one address a line', async () => {
    await importFile('blocking', 'merge', 'bob@test.local\n@carol\n\n');
    const blocked = async () => (await s.ctx.db.query(`SELECT target_account_id::text AS id FROM blocks WHERE account_id = $1 ORDER BY 1`, [alice.id])).rows.map((r) => r.id);
    expect(await blocked()).toEqual([bob.id, carol.id].sort());
    // A block ends the follow, as through the API.
    expect((await following(bob.id)).n).toBe(0);
    await importFile('blocking', 'overwrite', 'Account address\ncarol@test.local\n');
    expect(await blocked()).toEqual([carol.id]);
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${carol.id}/unblock`, headers: bearer(alice.token) });
  });

  it('mutes with "Hide notifications"', async () => {
    await importFile('muting', 'merge', 'Account address,Hide notifications\nbob@test.local,false\ndave,true\n');
    const mutes = async () => (await s.ctx.db.query(`SELECT target_account_id::text AS id, hide_notifications AS h FROM mutes WHERE account_id = $1 ORDER BY 1`, [alice.id])).rows;
    expect(await mutes()).toEqual([{ id: bob.id, h: false }, { id: dave.id, h: true }].sort((a, b) => (a.id < b.id ? -1 : 1)));
    await importFile('muting', 'overwrite', 'Account address,Hide notifications\ndave,false\n');
    expect(await mutes()).toEqual([{ id: dave.id, h: false }]);
  });

  it('blocked domains', async () => {
    await importFile('domain_blocking', 'merge', '#domain\nspam.example\nEvil.Example\n');
    const domains = async () => (await s.ctx.db.query(`SELECT domain FROM account_domain_blocks WHERE account_id = $1 ORDER BY domain`, [alice.id])).rows.map((r) => r.domain);
    expect(await domains()).toEqual(['evil.example', 'spam.example']);
    await importFile('domain_blocking', 'overwrite', 'other.example\nspam.example\n');
    expect(await domains()).toEqual(['other.example', 'spam.example']);
  });

  it('bookmarks by URI: ours found, unknown ones listed', async () => {
    const post = async (text: string) => (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(bob.token), payload: { status: text } })).json();
    const [p1, p2] = [await post('one'), await post('two')];
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${p2.id}/bookmark`, headers: bearer(alice.token) });
    const gone = `https://${host.domain}/users/u1/statuses/404`;
    const page = await importFile('bookmarks', 'merge', `#uri\n${p1.uri}\n${gone}\n`);
    expect(page).toContain(gone);
    expect(page).toContain('Post not found');
    const marks = async () => (await s.ctx.db.query(`SELECT status_id::text AS id FROM bookmarks WHERE account_id = $1 ORDER BY 1`, [alice.id])).rows.map((r) => r.id);
    expect(await marks()).toEqual([p1.id, p2.id].sort());
    await importFile('bookmarks', 'overwrite', `#uri\n${p1.uri}\n`);
    expect(await marks()).toEqual([p1.id]);
  });

  it('lists (Mastodon\'s file has no header), following their members; overwrite replaces them', async () => {
    await importFile('lists', 'merge', 'Friends,bob@test.local\nFriends,carol\nWork,dave@test.local\n');
    const lists = async () => (await s.ctx.db.query(
      `SELECT l.title, array_agg(la.account_id::text ORDER BY la.account_id) AS members FROM lists l LEFT JOIN list_accounts la ON la.list_id = l.id
        WHERE l.account_id = $1 GROUP BY l.id, l.title ORDER BY l.title`, [alice.id])).rows; // by list: a title made twice shows twice
    expect(await lists()).toEqual([{ title: 'Friends', members: [bob.id, carol.id].sort() }, { title: 'Work', members: [dave.id] }]);
    expect((await following(carol.id)).n).toBe(1);
    await importFile('lists', 'overwrite', 'List name,Account address\nWork,bob\n');
    expect(await lists()).toEqual([{ title: 'Work', members: [bob.id] }]);
  });
});

describe('files the form refuses, writing nothing', () => {
  const imports = () => count(`SELECT count(*)::int AS n FROM imports`);

  it('followers (export only), malformed CSV, empty and mismatched files, too many rows, the follow limit', async () => {
    const before = await imports();
    const cases: [string, string, string, RegExp][] = [
      ['followers', 'merge', 'bob@test.local\n', /Followers cannot be imported/],
      ['following', 'merge', 'Account address,Show boosts\n"bob@test.local,true\n', /not valid CSV/],
      ['blocking', 'merge', '\n\n', /The file is empty/],
      ['domain_blocking', 'merge', 'Account address,Show boosts\nbob@test.local,true\n', /another kind of data/],
      ['blocking', 'merge', Array.from({ length: 20_001 }, (_, i) => `u${i}@${host.domain}`).join('\n'), /more than 20,000 rows/],
      ['following', 'sideways', 'bob\n', /merge or overwrite/],
      ['blocking', 'merge', `bob@test.local\n${','.repeat(2_000_000)}\n`, /line too long/],
    ];
    for (const [type, mode, csv, message] of cases) {
      const res = await upload(browser, type, mode, csv);
      expect(res.statusCode, `${type}: ${res.body.slice(0, 300)}`).toBe(422);
      expect(res.body).toMatch(message);
      expect(res.body).toContain('role="alert"');
    }
    // Mastodon's follow limit: 7,500 (what one already follows counts, unless overwriting).
    await s.ctx.db.query(`UPDATE accounts SET following_count = 7499 WHERE id = $1`, [alice.id]);
    try {
      const over = await upload(browser, 'following', 'merge', 'bob\ncarol\n');
      expect(over.statusCode).toBe(422);
      expect(over.body).toContain('cannot follow more than 7,500 accounts');
    } finally {
      await s.ctx.db.query(`UPDATE accounts SET following_count = (SELECT count(*) FROM follows WHERE account_id = $1) WHERE id = $1`, [alice.id]);
    }
    expect(await imports()).toBe(before);
    expect(await count(`SELECT count(*)::int AS n FROM import_rows WHERE import_id NOT IN (SELECT id FROM imports)`)).toBe(0);
  });

  it('asks a visitor to sign in, and shows nobody else\'s import', async () => {
    const visitor = new WebClient(s.app);
    const res = await visitor.get('/settings/import');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toContain('/auth/sign_in');
    const other = new WebClient(s.app);
    await other.signIn(bob.email, bob.password);
    const { id } = await one<{ id: string }>(`SELECT id::text FROM imports WHERE account_id = $1 LIMIT 1`, [alice.id]);
    expect((await other.get(`/settings/import/${id}`)).statusCode).toBe(404);
    expect((await browser.get(`/settings/import/${id}`)).statusCode).toBe(200);
  });
});

describe('a large follow import', () => {
  it('resolves many addresses on another server by WebFinger, in batches through the job, listing the unknown ones', async () => {
    const mass = new WebClient(s.app);
    await mass.signIn(dave.email, dave.password);
    // 300 rows by default (three job runs of 100, progress shown between them), to keep the suite fast: an import
    // runs at ~20-50 follows a second on this 2-core machine (each remote follow is a WebFinger look-up, a signed
    // actor fetch, a transaction with an outbox row and a signed delivery, through the account's actor, as from the
    // API). IMPORT_ROWS=5000 runs it at a larger scale (docs/web.md, "Account portability").
    const N = Number(process.env.IMPORT_ROWS ?? 300);
    host.known = N - 100;
    const rows = Array.from({ length: N }, (_, i) => `u${i}@${host.domain},true,false,`);
    const started = Date.now();
    const res = await upload(mass, 'following', 'merge', `Account address,Show boosts,Notify on new posts,Languages\n${rows.join('\n')}\n`);
    expect(res.statusCode, res.body.slice(0, 500)).toBe(303);
    const location = String(res.headers.location);
    // Progress shows while it runs.
    const midway = await until(() => mass.get(location).then((r) => r.body), (b) => new RegExp(`id="progress">[1-9]\\d* of ${N}`).test(b), 'progress shown', 30_000);
    expect(midway).toContain(`of ${N} rows processed`);
    const page = await until(() => mass.get(location).then((r) => r.body), (b) => b.includes('<dd>Finished</dd>'), 'the import finished', N * 200);
    const seconds = (Date.now() - started) / 1000;
    console.log(`${N}-row follow import: ${seconds.toFixed(1)} s (${(N / seconds).toFixed(0)} rows/s)`);
    expect(page).toContain(`${N} of ${N} rows processed`);
    expect(page).toMatch(new RegExp(`id="imported">${N - 100}<`));
    expect(page).toMatch(/id="failed">100</);
    expect(page).toContain(`<td>u${N - 1}@${host.domain}</td><td>Account not found</td>`);
    expect(page).not.toContain(`<td>u${N - 101}@${host.domain}</td>`);
    expect(host.webfingers).toBeGreaterThanOrEqual(N); // every address looked up by WebFinger
    // Remote follows are requests until accepted (the fake host never accepts).
    expect(await count(`SELECT count(*)::int AS n FROM follow_requests WHERE account_id = $1`, [dave.id])).toBe(N - 100);
    expect(await count(`SELECT count(*)::int AS n FROM import_rows r JOIN imports i ON i.id = r.import_id WHERE i.account_id = $1 AND r.failure IS NULL`, [dave.id])).toBe(0);
  }, Number(process.env.IMPORT_ROWS ?? 300) * 200 + 30_000);
});
