import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import type { TestServer } from '../helpers/server.ts';

let s: TestServer & { url: string };
let ada: mastodon.rest.Client;
let bob: mastodon.rest.Client;

beforeAll(async () => {
  s = await startListeningServer();
  const clients = await mastoAccounts(s.url, 'compression test', 'ada', 'bob');
  ada = clients.ada!;
  bob = clients.bob!;
  const bobId = (await bob.v1.accounts.verifyCredentials()).id;
  await ada.v1.accounts.$select(bobId).follow();
});
afterAll(async () => s?.close());

/** A GET over a socket, its body as the bytes sent (Node's fetch would decode them). */
function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${s.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function untilInHome(id: string) {
  for (let i = 0; i < 200; i++) {
    if ((await ada.v1.timelines.home.list()).some((st) => st.id === id)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${id} never reached the home timeline`);
}

describe('kept pages sent compressed', () => {
  it('send the home timeline as each app asks: brotli, gzip or as it is, the same page every way, and a new page after a change', async () => {
    for (let i = 0; i < 5; i++) await bob.v1.statuses.create({ status: `Post ${i}, long enough to be worth compressing: ${'words and more words '.repeat(10)}` });
    const last = await bob.v1.statuses.create({ status: 'the newest' });
    await untilInHome(last.id); // masto's fetch asks for compressed answers and reads them as an app does
    const auth = { authorization: `Bearer ${tokenOf(ada)}` };
    const home = '/api/v1/timelines/home';

    const plain = await rawGet(home, auth);
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(String(plain.headers.vary)).toMatch(/Accept-Encoding/);
    const page = JSON.parse(plain.body.toString()) as { id: string }[];
    expect(page[0]!.id).toBe(last.id);
    expect(page).toHaveLength(6);

    const br = await rawGet(home, { ...auth, 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(String(br.headers.vary)).toMatch(/Accept-Encoding/);
    expect(Number(br.headers['content-length'])).toBe(br.body.length);
    expect(br.body.length).toBeLessThan(plain.body.length / 3);
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);

    // OkHttp (Tusky, Moshidon) and most HTTP libraries ask for gzip alone; a q of 0 refuses an encoding.
    for (const accept of ['gzip', 'br;q=0, gzip', 'deflate, gzip;q=0.5']) {
      const gz = await rawGet(home, { ...auth, 'accept-encoding': accept });
      expect(gz.headers['content-encoding'], accept).toBe('gzip');
      expect(gunzipSync(gz.body).equals(plain.body), accept).toBe(true);
    }
    for (const accept of ['identity', 'deflate', 'gzip;q=0, br;q=0']) {
      const none = await rawGet(home, { ...auth, 'accept-encoding': accept });
      expect(none.headers['content-encoding'], accept).toBeUndefined();
      expect(none.body.equals(plain.body), accept).toBe(true);
    }

    // Asked again, the same kept bytes; after a new post, the new page, never the compressed old one.
    expect((await rawGet(home, { ...auth, 'accept-encoding': 'br' })).body.equals(br.body)).toBe(true);
    const newer = await bob.v1.statuses.create({ status: 'newer still' });
    await untilInHome(newer.id);
    const after = await rawGet(home, { ...auth, 'accept-encoding': 'br' });
    const shown = JSON.parse(brotliDecompressSync(after.body).toString()) as { id: string; content: string }[];
    expect(shown[0]!.id).toBe(newer.id);
    expect(shown.map((x) => x.id).slice(1)).toEqual(page.map((x) => x.id));
  });

  it('leave a short answer as it is', async () => {
    const { carl } = await mastoAccounts(s.url, 'compression test', 'carl');
    const empty = await rawGet('/api/v1/timelines/home', { authorization: `Bearer ${tokenOf(carl!)}`, 'accept-encoding': 'gzip, br' });
    expect(empty.status).toBe(200);
    expect(empty.headers['content-encoding']).toBeUndefined();
    expect(empty.body.toString()).toBe('[]');
  });

  it('send a public page kept for strangers compressed, as it was kept', async () => {
    const plain = await rawGet('/@bob', { accept: 'text/html' });
    expect(plain.status).toBe(200);
    expect(plain.body.toString()).toContain('newer still');
    const gz = await rawGet('/@bob', { accept: 'text/html', 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(String(gz.headers.vary)).toBe('Accept, Accept-Language, Cookie, Accept-Encoding');
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    const br = await rawGet('/@bob', { accept: 'text/html', 'accept-encoding': 'br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
  });
});
