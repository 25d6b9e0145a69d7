import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { freePort } from '../helpers/listen.ts';
import { until } from '../helpers/instances.ts';

// The import job (jobs/imports.ts): queued through the outbox in the upload's transaction, so an import made while no
// worker runs is done once one starts; and its look-ups keep to the SSRF guard (no loopback without
// ALLOW_PRIVATE_ADDRESSES).

let s: TestServer;
let me: TestUser;
let browser: WebClient;
let loopback: Server;
let loopbackDomain: string;
let loopbackHits = 0;

beforeAll(async () => {
  s = await startTestServer(); // ALLOW_PRIVATE_ADDRESSES off, as in production
  const client = await createApp(s.app);
  [me] = [await registerUser(s.app, client, 'mover'), await registerUser(s.app, client, 'friend')];
  browser = new WebClient(s.app);
  expect((await browser.signIn(me!.email, me!.password)).statusCode).toBe(303);
  const port = await freePort();
  loopbackDomain = `localhost:${port}`;
  loopback = createServer({ cert: readFileSync(process.env.TEST_TLS_CERT_FILE!), key: readFileSync(process.env.TEST_TLS_KEY_FILE!) }, (_req, res) => {
    loopbackHits++;
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => loopback.listen(port, '127.0.0.1', r));
});
afterAll(async () => {
  await new Promise<void>((r) => (loopback ? loopback.close(() => r()) : r()));
  await s?.close();
});

async function upload(csv: string) {
  const page = await browser.get('/settings/import');
  const body = await multipart({ _csrf: csrfOf(page.body), type: 'following', mode: 'merge', data: { data: Buffer.from(csv), filename: 'following_accounts.csv', type: 'text/csv' } });
  const res = await s.app.inject({ method: 'POST', url: '/settings/import', payload: body.payload, headers: { ...body.headers, accept: 'text/html', cookie: browser.jar.header() } });
  expect(res.statusCode, res.body.slice(0, 500)).toBe(303);
  return String(res.headers.location);
}

const state = async (location: string) => (await s.ctx.db.query(`SELECT state, processed_items AS p, imported_items AS i FROM imports WHERE id = $1`, [location.split('/').pop()])).rows[0];

describe('the import job', () => {
  it('is queued with the upload: an import made while no worker runs is done once one starts', async () => {
    await s.stopWorkers();
    const location = await upload('Account address\nfriend\n');
    expect(await state(location)).toEqual({ state: 'scheduled', p: 0, i: 0 });
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'processImport'`)).rows[0].n).toBe(1);
    s.startWorkers();
    expect(await until(() => state(location), (v) => v.state === 'finished', 'import finished', 30_000)).toEqual({ state: 'finished', p: 1, i: 1 });
    expect((await s.ctx.db.query(`SELECT count(*)::int AS n FROM follows f JOIN accounts a ON a.id = f.target_account_id WHERE f.account_id = $1 AND a.username = 'friend'`, [me.id])).rows[0].n).toBe(1);
    await until(async () => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'processImport'`)).rows[0].n, (n) => n === 0, 'outbox row removed');
  });

  it('does not look up addresses on private addresses (SSRF guard): the row is reported, nothing is fetched', async () => {
    const location = await upload(`Account address\nsomeone@${loopbackDomain}\n`);
    expect(await until(() => state(location), (v) => v.state === 'finished', 'import finished', 30_000)).toEqual({ state: 'finished', p: 1, i: 0 });
    const page = await browser.get(location);
    expect(page.body).toContain(`<td>someone@${loopbackDomain}</td><td>Account not found</td>`);
    expect(loopbackHits).toBe(0);
  });
});
