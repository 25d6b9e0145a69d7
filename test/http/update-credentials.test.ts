import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let dee: TestUser;

beforeAll(async () => {
  s = await startTestServer({ MAX_IMAGE_BYTES: '300000' });
  dee = await registerUser(s.app, await createApp(s.app), 'dee');
});
afterAll(async () => s?.close());

const patch = (payload: object | string | Buffer, headers: Record<string, string> = {}) =>
  s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { ...bearer(dee.token), ...headers }, payload });
const patchMultipart = async (fields: Parameters<typeof multipart>[0]) => {
  const body = await multipart(fields);
  return patch(body.payload, body.headers);
};

async function accountRow() {
  const { rows } = await s.ctx.db.query('SELECT * FROM accounts WHERE id = $1', [dee.id]);
  return rows[0];
}

async function storedFiles(): Promise<string[]> {
  const root = join(s.config.dataDir, 'files');
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(join(dir, entry.name));
      else out.push(join(dir, entry.name));
    }
  };
  await walk(root);
  return out.sort();
}

const image = (format: 'png' | 'jpeg' | 'gif' | 'webp', width = 600, height = 300) =>
  sharp({ create: { width, height, channels: 3, background: '#48c' } }).toFormat(format).toBuffer();

/** GET a file the local file host serves, through the app. */
async function fetchImage(url: string) {
  const res = await s.app.inject({ method: 'GET', url: new URL(url).pathname });
  expect(res.statusCode).toBe(200);
  return { contentType: res.headers['content-type'], cache: res.headers['cache-control'], meta: await sharp(res.rawPayload).metadata() };
}

describe('profile fields', () => {
  it('updates from JSON, escapes what was typed, and shows the source', async () => {
    const res = await patch({ display_name: 'Dee', note: 'Hi <script>alert(1)</script>\nsee https://dee.example', bot: true, discoverable: false, source: { privacy: 'private', sensitive: true, language: 'de' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expectEntity('CredentialAccount', body);
    expect(body.display_name).toBe('Dee');
    expect(body.note).not.toContain('<script>');
    expect(body.note).toContain('&lt;script&gt;');
    expect(body.note).toContain('<a href="https://dee.example"');
    expect(body.source.note).toBe('Hi <script>alert(1)</script>\nsee https://dee.example');
    expect(body.bot).toBe(true);
    expect(body.discoverable).toBe(false);
    expect(body.source).toMatchObject({ privacy: 'private', sensitive: true, language: 'de' });
    const me = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(dee.token) });
    expect(me.json().source.privacy).toBe('private');
  });

  it('accepts booleans as form strings', async () => {
    const on = await patch('locked=1&bot=false&discoverable=true', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(on.json()).toMatchObject({ locked: true, bot: false, discoverable: true });
    const off = await patch('locked=0', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(off.json().locked).toBe(false);
    const multi = await patchMultipart({ locked: 'true', bot: '0' });
    expect(multi.json()).toMatchObject({ locked: true, bot: false });
  });

  it('takes fields_attributes from forms and JSON, up to four', async () => {
    const form = await patch('fields_attributes[0][name]=Pronouns&fields_attributes[0][value]=they/them&fields_attributes[1][name]=Web&fields_attributes[1][value]=https://dee.example', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.statusCode, form.body).toBe(200);
    expect(form.json().fields.map((f: { name: string }) => f.name)).toEqual(['Pronouns', 'Web']);
    expect(form.json().fields[1].value).toContain('href="https://dee.example"');
    expect(form.json().source.fields[1].value).toBe('https://dee.example');

    const json = await patch({ fields_attributes: [{ name: 'Only', value: 'one' }] });
    expect(json.json().fields).toEqual([{ name: 'Only', value: 'one', verified_at: null }]);
    const tooMany = await patch({ fields_attributes: Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, value: 'v' })) });
    expect(tooMany.statusCode).toBe(422);
  });

  it('refuses bad input with a 4xx and leaves the row unchanged', async () => {
    const before = await accountRow();
    const cases: [object | string, Record<string, string>, number][] = [
      [{ locked: 'maybe' }, {}, 422],
      [{ bot: 'yes please' }, {}, 422],
      [{ display_name: 'x'.repeat(31) }, {}, 422],
      [{ note: 'x'.repeat(501) }, {}, 422],
      ['{"display_name": ', { 'content-type': 'application/json' }, 400],
      [{ source: { privacy: 'everyone' } }, {}, 422],
    ];
    for (const [payload, headers, status] of cases) {
      const res = await patch(payload, headers);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(typeof res.json().error).toBe('string');
    }
    expect(await accountRow()).toEqual(before);
  });

  it('needs write:accounts', async () => {
    const reader = await registerUser(s.app, await createApp(s.app), 'reader', 'read');
    const res = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(reader.token), payload: { display_name: 'x' } });
    expect(res.statusCode).toBe(403);
    const anon = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', payload: { display_name: 'x' } });
    expect(anon.statusCode).toBe(401);
  });
});

describe('avatar and header', () => {
  it.each(['png', 'jpeg', 'gif', 'webp'] as const)('accepts a %s avatar by its content, resized to 400x400', async (format) => {
    // A misleading name and content type: the bytes decide.
    const res = await patchMultipart({ avatar: { data: await image(format), filename: 'notes.txt', type: 'text/plain' } });
    expect(res.statusCode, res.body).toBe(200);
    const got = await fetchImage(res.json().avatar);
    expect([got.meta.width, got.meta.height, got.meta.format]).toEqual([400, 400, format === 'jpeg' ? 'jpeg' : format]);
    expect(got.cache).toContain('max-age=31536000');
  });

  it('takes a header alone, resized to 1500x500, keeping the avatar', async () => {
    const avatarBefore = (await accountRow()).avatar_file;
    const res = await patchMultipart({ header: { data: await image('png', 3000, 2000), filename: 'h.png', type: 'image/png' } });
    expect(res.statusCode).toBe(200);
    const got = await fetchImage(res.json().header);
    expect([got.meta.width, got.meta.height]).toEqual([1500, 500]);
    expect((await accountRow()).avatar_file).toBe(avatarBefore);
  });

  it('removes the replaced file', async () => {
    const before = await storedFiles();
    const res = await patchMultipart({ avatar: { data: await image('png'), filename: 'a.png', type: 'image/png' } });
    expect(res.statusCode).toBe(200);
    const after = await storedFiles();
    expect(after).toHaveLength(before.length);
    expect(after).not.toEqual(before);
  });

  it('drops EXIF metadata such as location', async () => {
    const withExif = await sharp({ create: { width: 500, height: 500, channels: 3, background: '#aaa' } })
      .jpeg().withExif({ IFD0: { Copyright: 'Dee', ImageDescription: 'home' } }).toBuffer();
    expect((await sharp(withExif).metadata()).exif).toBeTruthy();
    const res = await patchMultipart({ avatar: { data: withExif, filename: 'me.jpg', type: 'image/jpeg' } });
    const got = await fetchImage(res.json().avatar);
    expect(got.meta.exif).toBeUndefined();
  });

  it('refuses non-images, truncated, empty and oversized files, storing nothing', async () => {
    const row = await accountRow();
    const files = await storedFiles();
    const png = await image('png');
    const noise = await sharp({ create: { width: 800, height: 800, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
    expect(noise.length).toBeGreaterThan(300_000);
    const cases: [string, Buffer, string, number][] = [
      ['text named .png', Buffer.from('hello, I am not an image'), 'image/png', 422],
      ['truncated png', png.subarray(0, Math.floor(png.length / 2)), 'image/png', 422],
      ['empty', Buffer.alloc(0), 'image/png', 422],
      ['oversized', noise, 'image/png', 413],
    ];
    for (const [label, data, type, status] of cases) {
      const res = await patchMultipart({ display_name: 'Should not stick', avatar: { data, filename: 'avatar.png', type } });
      expect(res.statusCode, label).toBe(status);
      expect(typeof res.json().error, label).toBe('string');
    }
    const svg = await patchMultipart({ header: { data: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'), filename: 'h.svg', type: 'image/svg+xml' } });
    expect(svg.statusCode).toBe(422);
    expect(await accountRow()).toEqual(row);
    expect(await storedFiles()).toEqual(files);
  });
});
