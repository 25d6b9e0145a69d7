// PATCH /api/v1/accounts/update_credentials as Mastodon apps send it (JSON, form-urlencoded, multipart): profile text,
// flags, fields, posting defaults, and avatar/header images checked by content, resized and stripped of metadata.
// Every refusal leaves the account row as it was and no new file on the file host.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let client: RegisteredApp;
let dee: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  dee = await registerUser(s.app, client, 'dee');
});
afterAll(async () => s?.close());

type Fields = Parameters<typeof multipart>[0];
type Res = Awaited<ReturnType<TestServer['app']['inject']>>;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const patch = (payload: object | string | Buffer | undefined, headers: Record<string, string> = {}, server = s, token = dee.token) =>
  server.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { ...bearer(token), ...headers }, ...(payload === undefined ? {} : { payload }) });
const patchForm = (body: string) => patch(body, FORM);
async function patchMultipart(fields: Fields, server = s, token = dee.token) {
  const body = await multipart(fields);
  return patch(body.payload, body.headers, server, token);
}
const verify = (token = dee.token) => s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
const file = (data: Buffer, filename = 'upload.bin', type = 'application/octet-stream') => ({ data, filename, type });

function ok(res: Res) {
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  expectEntity('CredentialAccount', body);
  return body;
}

/**
 * The account row and the user's posting defaults, as stored. The key pairs (RSA and Ed25519) are left out:
 * they are made on first use, by whichever delivery job or actor fetch signs first, so a profile
 * update queued by an earlier test may make them at any moment.
 */
async function snapshot(server = s, accountId = dee.id) {
  const { rows } = await server.ctx.db.query(
    `SELECT a.*, u.default_privacy, u.default_sensitive, u.default_language
       FROM accounts a JOIN users u ON u.account_id = a.id WHERE a.id = $1`, [accountId]);
  const { ed25519_public_jwk: _public, ed25519_private_jwk: _private, public_key_pem: _rsaPublic, private_key_pem: _rsaPrivate, ...row } = rows[0];
  return row;
}

/** Every file under the file host's root (temporary files included). */
async function storedFiles(server = s): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(join(dir, entry.name));
      else out.push(join(dir, entry.name));
    }
  };
  await walk(join(server.config.dataDir, 'files'));
  return out.sort();
}

/** Asserts that `fn` neither changed the account row (nor the posting defaults) nor left a file behind. */
async function changesNothing(fn: () => Promise<void>, server = s, accountId = dee.id) {
  const row = await snapshot(server, accountId);
  const files = await storedFiles(server);
  await fn();
  expect(await snapshot(server, accountId)).toEqual(row);
  expect(await storedFiles(server)).toEqual(files);
}

function expectError(res: Res, status: number, label = '') {
  expect(res.statusCode, `${label} ${res.body}`).toBe(status);
  expect(typeof res.json().error, label).toBe('string');
}

type Format = 'png' | 'jpeg' | 'gif' | 'webp';
const image = (format: Format | 'tiff', width = 600, height = 300, background = '#48c') =>
  sharp({ create: { width, height, channels: 3, background } }).toFormat(format).toBuffer();
const noise = (side: number) =>
  sharp({ create: { width: side, height: side, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();

/** GETs a file the local file host serves (at /system/…), through the app. */
async function fetchImage(url: string, server = s) {
  const res = await server.app.inject({ method: 'GET', url: new URL(url).pathname });
  expect(res.statusCode, url).toBe(200);
  return { res, contentType: res.headers['content-type'], meta: await sharp(res.rawPayload).metadata(), data: res.rawPayload };
}

/** The tags of a JPEG's EXIF IFD0 (0x8825 points to the GPS IFD). */
function exifIfd0Tags(exif: Buffer): number[] {
  const tiff = exif.subarray(0, 6).toString('latin1') === 'Exif\0\0' ? exif.subarray(6) : exif;
  const le = tiff.toString('latin1', 0, 2) === 'II';
  const u16 = (o: number) => (le ? tiff.readUInt16LE(o) : tiff.readUInt16BE(o));
  const ifd = le ? tiff.readUInt32LE(4) : tiff.readUInt32BE(4);
  return Array.from({ length: u16(ifd) }, (_, i) => u16(ifd + 2 + i * 12));
}

describe('profile text and flags', () => {
  it('updates from JSON: display_name, note rendered to HTML with the source kept, and the flags', async () => {
    const note = 'Hi <script>alert(1)</script> & "you"\nsee https://dee.example/x?a=1&b=2\n\nbye';
    const body = ok(await patch({ display_name: 'Dee <b>D</b>', note, locked: true, bot: true, discoverable: true }));
    expect(body).toMatchObject({ display_name: 'Dee <b>D</b>', locked: true, bot: true, discoverable: true });
    // What the person typed is escaped, never markup: no <script>, no <b>.
    expect(body.note).not.toMatch(/<script|<b>/i);
    expect(body.note).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(body.note).toContain('&amp;');
    expect(body.note).toMatch(/^<p>Hi .*<br \/>see <a href="https:\/\/dee\.example\/x\?a=1&amp;b=2"[^>]*>.*<\/a><\/p><p>bye<\/p>$/);
    expect(body.source.note).toBe(note);
    expect(body.source.discoverable).toBe(true);

    const me = ok(await verify());
    expect(me).toMatchObject({ display_name: 'Dee <b>D</b>', note: body.note, locked: true, bot: true, source: { note } });
    const pub = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${dee.id}` });
    expectEntity('Account', pub.json());
    expect(pub.json()).toMatchObject({ display_name: 'Dee <b>D</b>', note: body.note, locked: true, bot: true });
    expect(pub.json().source).toBeUndefined();

    const off = ok(await patch({ locked: false, bot: false, discoverable: false }));
    expect(off).toMatchObject({ locked: false, bot: false, discoverable: false, display_name: 'Dee <b>D</b>' });
  });

  it('takes the flags as "true"/"false"/"1"/"0" from forms and multipart bodies', async () => {
    expect(ok(await patchForm('locked=true&bot=1&discoverable=1'))).toMatchObject({ locked: true, bot: true, discoverable: true });
    expect(ok(await patchForm('locked=false&bot=0&discoverable=false'))).toMatchObject({ locked: false, bot: false, discoverable: false });
    expect(ok(await patchMultipart({ locked: '1', bot: 'true', discoverable: 'true' }))).toMatchObject({ locked: true, bot: true, discoverable: true });
    expect(ok(await patchMultipart({ locked: '0', bot: 'false', discoverable: '0' }))).toMatchObject({ locked: false, bot: false, discoverable: false });
    // JSON apps sometimes send strings too.
    expect(ok(await patch({ locked: 'true', bot: '0' }))).toMatchObject({ locked: true, bot: false });
    expect(ok(await patchForm('indexable=1'))).toMatchObject({ indexable: true, source: { indexable: true } });
    expect(ok(await patch({ indexable: false }))).toMatchObject({ indexable: false, source: { indexable: false } });
    expect((await snapshot()).locked).toBe(true);
    ok(await patch({ locked: false }));
  });

  it('takes display_name and note from forms and multipart bodies, with line breaks as typed', async () => {
    const form = ok(await patchForm(`display_name=${encodeURIComponent('Form Dee')}&note=${encodeURIComponent('one\r\ntwo <i>')}`));
    expect(form.display_name).toBe('Form Dee');
    expect(form.source.note).toBe('one\ntwo <i>');
    expect(form.note).toBe('<p>one<br />two &lt;i&gt;</p>');
    const multi = ok(await patchMultipart({ display_name: 'Multi Dee', note: 'three\r\nfour' }));
    expect(multi).toMatchObject({ display_name: 'Multi Dee', source: { note: 'three\nfour' } });
    expect(multi.note).toBe('<p>three<br />four</p>');
  });

  it('refuses a flag that is not a boolean ("maybe") with 422, in every encoding, changing nothing', async () => {
    await changesNothing(async () => {
      for (const flag of ['locked', 'bot', 'discoverable']) {
        for (const value of ['maybe', 'yes please', null, { a: 1 }, 2]) {
          expectError(await patch({ display_name: 'Should not stick', [flag]: value }), 422, `${flag}=${JSON.stringify(value)}`);
        }
        const form = await patchForm(`display_name=Nope&${flag}=maybe`);
        expectError(form, 422, `form ${flag}`);
        expect(form.json().error).toContain(flag);
        expectError(await patchMultipart({ display_name: 'Nope', [flag]: 'maybe' }), 422, `multipart ${flag}`);
      }
    });
  });

  it('limits display_name to 30 characters (counted as characters, not UTF-16 units) and note to 500', async () => {
    expect(ok(await patch({ display_name: 'x'.repeat(30) })).display_name).toBe('x'.repeat(30));
    expect(ok(await patch({ display_name: '😀'.repeat(30) })).display_name).toBe('😀'.repeat(30));
    expect(ok(await patch({ note: 'n'.repeat(500) })).source.note).toBe('n'.repeat(500));
    await changesNothing(async () => {
      const long = await patch({ display_name: 'x'.repeat(31) });
      expectError(long, 422, 'display_name 31');
      expect(long.json().error).toContain('display_name');
      expectError(await patch({ display_name: '😀'.repeat(31) }), 422, 'display_name 31 emoji');
      expectError(await patchForm(`display_name=${'y'.repeat(31)}`), 422, 'form display_name 31');
      expectError(await patchMultipart({ display_name: 'z'.repeat(31) }), 422, 'multipart display_name 31');
      expectError(await patch({ note: 'n'.repeat(501) }), 422, 'note 501');
    });
    // Empty strings clear them.
    expect(ok(await patch({ display_name: '', note: '' }))).toMatchObject({ display_name: '', note: '', source: { note: '' } });
  });

  it('changes only what is sent', async () => {
    ok(await patch({ display_name: 'Kept', note: 'kept note', fields_attributes: [{ name: 'k', value: 'v' }], source: { privacy: 'unlisted' } }));
    const before = await snapshot();
    const body = ok(await patch({ bot: true }));
    expect(body).toMatchObject({ display_name: 'Kept', source: { note: 'kept note', privacy: 'unlisted', fields: [{ name: 'k', value: 'v' }] }, bot: true });
    const after = await snapshot();
    expect({ ...after, bot: before.bot, updated_at: before.updated_at }).toEqual(before);
    // An empty PATCH (no body, or {}) changes nothing visible and still answers with the account.
    expect(ok(await patch(undefined)).display_name).toBe('Kept');
    expect(ok(await patch({})).display_name).toBe('Kept');
    ok(await patch({ bot: false, source: { privacy: 'public' } }));
  });
});

describe('profile fields', () => {
  const names = (body: { fields: { name: string }[] }) => body.fields.map((f) => f.name);

  it('takes fields_attributes from a form, rendering values as HTML and keeping the source', async () => {
    const body = ok(await patchForm(
      'fields_attributes[0][name]=Pronouns&fields_attributes[0][value]=they%2Fthem&fields_attributes[1][name]=Web&fields_attributes[1][value]=https%3A%2F%2Fdee.example'
      + '&fields_attributes[2][name]=Tag&fields_attributes[2][value]=%3Cb%3Ebold%3C%2Fb%3E',
    ));
    expect(names(body)).toEqual(['Pronouns', 'Web', 'Tag']);
    expect(body.fields[0]).toEqual({ name: 'Pronouns', value: 'they/them', verified_at: null });
    expect(body.fields[1].value).toMatch(/^<a href="https:\/\/dee\.example"[^>]*>/);
    expect(body.fields[2].value).toBe('&lt;b&gt;bold&lt;/b&gt;');
    expect(body.source.fields).toEqual([
      { name: 'Pronouns', value: 'they/them', verified_at: null },
      { name: 'Web', value: 'https://dee.example', verified_at: null },
      { name: 'Tag', value: '<b>bold</b>', verified_at: null },
    ]);
    expect(names(ok(await verify()))).toEqual(['Pronouns', 'Web', 'Tag']);
  });

  it('takes fields_attributes as a JSON array, a JSON object keyed by index, or multipart parts', async () => {
    expect(names(ok(await patch({ fields_attributes: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] })))).toEqual(['A', 'B']);
    expect(names(ok(await patch({ fields_attributes: { 1: { name: 'Second', value: '2' }, 0: { name: 'First', value: '1' } } })))).toEqual(['First', 'Second']);
    const multi = ok(await patchMultipart({ 'fields_attributes[0][name]': 'M', 'fields_attributes[0][value]': 'multi' }));
    expect(multi.fields).toEqual([{ name: 'M', value: 'multi', verified_at: null }]);
    // Rows left blank are dropped (that is how apps remove a field); an empty list clears them all.
    expect(names(ok(await patch({ fields_attributes: [{ name: 'Keep', value: 'me' }, { name: '', value: '' }, { name: '  ', value: ' ' }] })))).toEqual(['Keep']);
    expect(ok(await patch({ fields_attributes: [] })).fields).toEqual([]);
  });

  it('ignores a fields_attributes that is not a list or hash of objects, as Rails\' parameter filtering does', async () => {
    ok(await patch({ fields_attributes: [{ name: 'Stays', value: 'put' }] }));
    for (const [label, send] of [
      ['form undefined', () => patchForm('fields_attributes=undefined&display_name=Dee')],
      ['form string', () => patchForm('fields_attributes=abc')],
      ['form scalar row', () => patchForm('fields_attributes[0]=abc')],
      ['JSON string', () => patch({ fields_attributes: 'abc' })],
      ['JSON null', () => patch({ fields_attributes: null })],
      ['JSON number', () => patch({ fields_attributes: 3 })],
      ['JSON list of strings', () => patch({ fields_attributes: ['a', 'b'] })],
      ['multipart string', () => patchMultipart({ fields_attributes: 'undefined' })],
    ] as const) {
      const body = ok(await send());
      expect(body.fields, label).toEqual([{ name: 'Stays', value: 'put', verified_at: null }]);
    }
    expect(ok(await verify()).display_name).toBe('Dee');
  });

  it('refuses more than 4 fields, and names or values over 255 characters, with 422 in every encoding', async () => {
    ok(await patch({ fields_attributes: [{ name: 'Before', value: 'x' }] }));
    const five = Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, value: `v${i}` }));
    const fiveForm = five.map((f, i) => `fields_attributes[${i}][name]=${f.name}&fields_attributes[${i}][value]=${f.value}`).join('&');
    const fiveParts = Object.fromEntries(five.flatMap((f, i) => [[`fields_attributes[${i}][name]`, f.name], [`fields_attributes[${i}][value]`, f.value]]));
    await changesNothing(async () => {
      expectError(await patch({ fields_attributes: five }), 422, 'JSON array');
      expectError(await patch({ fields_attributes: Object.fromEntries(five.map((f, i) => [String(i), f])) }), 422, 'JSON object');
      expectError(await patchForm(fiveForm), 422, 'form');
      expectError(await patchMultipart(fiveParts), 422, 'multipart');
      expectError(await patch({ fields_attributes: [{ name: 'n'.repeat(256), value: 'v' }] }), 422, 'long name');
      expectError(await patch({ fields_attributes: [{ name: 'n', value: 'v'.repeat(256) }] }), 422, 'long value');
    });
    const four = ok(await patch({ fields_attributes: five.slice(0, 4).map((f) => ({ ...f, name: f.name.padEnd(255, 'n') })) }));
    expect(four.fields).toHaveLength(4);
  });
});

describe('posting defaults (source)', () => {
  it('reflects source[privacy], [sensitive] and [language] from a form in verify_credentials', async () => {
    const body = ok(await patchForm('source[privacy]=private&source[sensitive]=true&source[language]=de'));
    expect(body.source).toMatchObject({ privacy: 'private', sensitive: true, language: 'de' });
    const me = ok(await verify());
    expect(me.source).toMatchObject({ privacy: 'private', sensitive: true, language: 'de' });
    const { rows } = await s.ctx.db.query('SELECT default_privacy FROM users WHERE account_id = $1', [dee.id]);
    expect(rows[0].default_privacy).toBe('private');
    expect(ok(await patch({ source: { privacy: 'unlisted', sensitive: false } })).source).toMatchObject({ privacy: 'unlisted', sensitive: false, language: 'de' });
    expect(ok(await patchMultipart({ 'source[privacy]': 'public' })).source.privacy).toBe('public');
  });

  it('refuses unknown privacy values and bad languages, changing nothing', async () => {
    await changesNothing(async () => {
      expectError(await patch({ display_name: 'No', source: { privacy: 'everyone' } }), 422, 'privacy');
      expectError(await patchForm('display_name=No&source[privacy]=everyone'), 422, 'form privacy');
      expectError(await patch({ source: { sensitive: 'maybe' } }), 422, 'sensitive');
      expectError(await patch({ source: { language: 'english' } }), 422, 'language');
      expectError(await patchForm('source=abc'), 422, 'source string');
    });
  });
});

describe('refusals', () => {
  it('answers malformed and mistyped bodies with a 4xx error entity, never a 500, changing nothing', async () => {
    await changesNothing(async () => {
      expectError(await patch('{"display_name": ', { 'content-type': 'application/json' }), 400, 'malformed JSON');
      expectError(await patch('{"display_name": "x",}', { 'content-type': 'application/json' }), 400, 'trailing comma');
      expectError(await patch('{"__proto__": {"locked": true}}', { 'content-type': 'application/json' }), 400, '__proto__');
      for (const json of ['[]', '"x"', '42', '[{"display_name": "x"}]']) {
        const res = await patch(json, { 'content-type': 'application/json' });
        expect(res.statusCode, json).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, json).toBeLessThan(500);
        expect(typeof res.json().error, json).toBe('string');
      }
      expectError(await patch({ display_name: { a: 1 } }), 422, 'object display_name');
      expectError(await patchForm('display_name[]=a&display_name[]=b'), 422, 'array display_name');
      expectError(await patch('--x\r\nContent-Disposition: form-data; name="display_name"\r\n\r\nNo', { 'content-type': 'multipart/form-data; boundary=x' }), 400, 'truncated multipart');
      const noBoundary = await patch('display_name=No', { 'content-type': 'multipart/form-data' });
      expect(noBoundary.statusCode).toBeGreaterThanOrEqual(400);
      expect(noBoundary.statusCode).toBeLessThan(500);
      const text = await patch('display_name=No', { 'content-type': 'text/plain' });
      expect(text.statusCode).toBeGreaterThanOrEqual(400);
      expect(text.statusCode).toBeLessThan(500);
      expectError(await patch('display_name=No', { 'content-type': 'application/xml' }), 415, 'xml');
    });
  });

  it('needs a user token with write:accounts: 401 without one, 403 without the scope, 422 for an app token', async () => {
    const reader = await registerUser(s.app, client, 'reader', 'read');
    const appOnly = await appToken(s.app, client, 'write');
    await changesNothing(async () => {
      expectError(await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', payload: { display_name: 'x' } }), 401, 'none');
      expectError(await patch({ display_name: 'x' }, { authorization: 'Bearer nope' }), 401, 'unknown');
      const scoped = await patch({ display_name: 'x' }, {}, s, reader.token);
      expectError(scoped, 403, 'read only');
      expect(scoped.json().error).toBe('This action is outside the authorized scopes');
      const app = await patch({ display_name: 'x' }, {}, s, appOnly);
      expectError(app, 422, 'app token');
      expect(app.json().error).toBe('This method requires an authenticated user');
    }, s, reader.id);
    // A granular write:accounts token is enough.
    const granular = await registerUser(s.app, client, 'granular', 'write:accounts read:accounts');
    expect(ok(await patch({ display_name: 'Granular' }, {}, s, granular.token)).display_name).toBe('Granular');
  });

  it('shows the new profile in statuses rendered before the change (no stale cached account)', async () => {
    const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(dee.token), payload: { status: 'hello' } });
    expect(posted.statusCode, posted.body).toBe(200);
    const read = () => s.app.inject({ method: 'GET', url: `/api/v1/statuses/${posted.json().id}` }).then((r) => r.json().account);
    ok(await patch({ display_name: 'Before' }));
    expect((await read()).display_name).toBe('Before');
    const updated = ok(await patchMultipart({ display_name: 'After', avatar: file(await image('png'), 'a.png', 'image/png') }));
    const account = await read();
    expect(account.display_name).toBe('After');
    expect(account.avatar).toBe(updated.avatar);
  });
});

describe('avatar and header images', () => {
  it.each(['png', 'jpeg', 'gif', 'webp'] as const)('takes a %s avatar by its content (named x.txt, sent as text/plain), resized to 400x400', async (format) => {
    const body = ok(await patchMultipart({ avatar: file(await image(format, 900, 500), 'x.txt', 'text/plain') }));
    expect(body.avatar).toMatch(new RegExp(`^http://test\\.local/system/accounts/${dee.id}/avatar-[0-9a-f]+\\.${format === 'jpeg' ? 'jpg' : format}$`));
    expect(body.avatar_static).toBe(body.avatar);
    const got = await fetchImage(body.avatar);
    expect(got.contentType).toBe(`image/${format}`);
    expect(got.res.headers['cache-control']).toContain('max-age=31536000');
    expect([got.meta.format, got.meta.width, got.meta.height]).toEqual([format, 400, 400]);
    expect((await snapshot()).avatar_content_type).toBe(`image/${format}`);
  });

  it.each(['png', 'jpeg', 'gif', 'webp'] as const)('takes a %s header by its content, resized to 1500x500', async (format) => {
    const body = ok(await patchMultipart({ header: file(await image(format, 800, 800), 'header', 'application/octet-stream') }));
    expect(body.header_static).toBe(body.header);
    const got = await fetchImage(body.header);
    expect(got.contentType).toBe(`image/${format}`);
    expect([got.meta.format, got.meta.width, got.meta.height]).toEqual([format, 1500, 500]);
  });

  it('takes each image alone, leaving the other as it was, or both at once', async () => {
    const both = ok(await patchMultipart({ avatar: file(await image('png'), 'a.png', 'image/png'), header: file(await image('jpeg'), 'h.jpg', 'image/jpeg') }));
    expect((await fetchImage(both.avatar)).meta).toMatchObject({ format: 'png', width: 400, height: 400 });
    expect((await fetchImage(both.header)).meta).toMatchObject({ format: 'jpeg', width: 1500, height: 500 });

    const avatarOnly = ok(await patchMultipart({ avatar: file(await image('webp'), 'a.webp', 'image/webp') }));
    expect(avatarOnly.avatar).not.toBe(both.avatar);
    expect(avatarOnly.header).toBe(both.header);
    const headerOnly = ok(await patchMultipart({ header: file(await image('gif'), 'h.gif', 'image/gif') }));
    expect(headerOnly.header).not.toBe(both.header);
    expect(headerOnly.avatar).toBe(avatarOnly.avatar);
    // A text-only edit keeps both images.
    const textOnly = ok(await patch({ display_name: 'Pictured' }));
    expect([textOnly.avatar, textOnly.header]).toEqual([headerOnly.avatar, headerOnly.header]);
    // An empty file input (no file chosen in a browser form: filename="") is no upload at all; so is an empty part
    // without a filename, as undici's FormData sends it.
    const browser = '--b\r\nContent-Disposition: form-data; name="display_name"\r\n\r\nStill pictured\r\n'
      + '--b\r\nContent-Disposition: form-data; name="avatar"; filename=""\r\nContent-Type: application/octet-stream\r\n\r\n\r\n--b--\r\n';
    const noFile = ok(await patch(browser, { 'content-type': 'multipart/form-data; boundary=b' }));
    expect(noFile.display_name).toBe('Still pictured');
    expect(noFile.avatar).toBe(headerOnly.avatar);
    const unnamed = ok(await patchMultipart({ header: file(Buffer.alloc(0), '', 'application/octet-stream') }));
    expect(unnamed.header).toBe(headerOnly.header);
  });

  it('removes the replaced file from the file host', async () => {
    const first = ok(await patchMultipart({ avatar: file(await image('png'), 'a.png', 'image/png'), header: file(await image('png'), 'h.png', 'image/png') }));
    const files = await storedFiles();
    expect(files).toHaveLength(2);
    const second = ok(await patchMultipart({ avatar: file(await image('jpeg'), 'b.jpg', 'image/jpeg'), header: file(await image('webp'), 'h.webp', 'image/webp') }));
    const after = await storedFiles();
    expect(after).toHaveLength(2);
    for (const old of files) expect(after).not.toContain(old);
    expect((await s.app.inject({ method: 'GET', url: new URL(first.avatar).pathname })).statusCode).toBe(404);
    expect((await s.app.inject({ method: 'GET', url: new URL(first.header).pathname })).statusCode).toBe(404);
    await fetchImage(second.avatar);
    await fetchImage(second.header);
  });

  it('leaves exactly one avatar file when two replacements race', async () => {
    const [a, b] = await Promise.all([
      patchMultipart({ avatar: file(await image('png', 300, 300, '#f00'), 'a.png', 'image/png') }),
      patchMultipart({ avatar: file(await image('png', 300, 300, '#0f0'), 'b.png', 'image/png') }),
    ]);
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    const row = await snapshot();
    const avatars = (await storedFiles()).filter((f) => f.includes('/avatar-'));
    expect(avatars).toEqual([join(s.config.dataDir, 'files', row.avatar_file)]);
  });

  it('drops EXIF metadata, GPS location included', async () => {
    const withGps = await sharp({ create: { width: 500, height: 500, channels: 3, background: '#aaa' } })
      .jpeg()
      .withExif({ IFD0: { Make: 'PhoneCam', Copyright: 'Dee' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '0/1 7/1 0/1' } })
      .toBuffer();
    const input = await sharp(withGps).metadata();
    expect(exifIfd0Tags(input.exif!)).toContain(0x8825);
    for (const kind of ['avatar', 'header'] as const) {
      const body = ok(await patchMultipart({ [kind]: file(withGps, 'me.jpg', 'image/jpeg') }));
      const got = await fetchImage(body[kind]);
      expect(got.meta.exif, kind).toBeUndefined();
      expect(got.meta.xmp, kind).toBeUndefined();
      expect(got.data.includes('PhoneCam'), kind).toBe(false);
    }
  });

  it('applies the EXIF orientation before cropping', async () => {
    // Stored 200x400, red above blue; orientation 6 shows it turned a quarter clockwise: blue on the left, red on the right.
    const stored = await sharp({ create: { width: 200, height: 400, channels: 3, background: '#f00' } })
      .composite([{ input: { create: { width: 200, height: 200, channels: 3, background: '#00f' } }, top: 200, left: 0 }])
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    expect((await sharp(stored).metadata()).orientation).toBe(6);
    const body = ok(await patchMultipart({ avatar: file(stored, 'turned.jpg', 'image/jpeg') }));
    const got = await fetchImage(body.avatar);
    expect(got.meta.orientation).toBeUndefined();
    const { data, info } = await sharp(got.data).raw().toBuffer({ resolveWithObject: true });
    const pixel = (x: number, y: number) => Array.from(data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3));
    const [lr, , lb] = pixel(50, 200);
    const [rr, , rb] = pixel(350, 200);
    expect(lb).toBeGreaterThan(200);
    expect(lr).toBeLessThan(60);
    expect(rr).toBeGreaterThan(200);
    expect(rb).toBeLessThan(60);
  });

  it('takes an image larger than the 1 MB limit on other bodies (the image limit applies)', async () => {
    const big = await noise(1000);
    expect(big.length).toBeGreaterThan(2 * 1024 * 1024);
    const body = ok(await patchMultipart({ header: file(big, 'big.png', 'image/png') }));
    expect((await fetchImage(body.header)).meta).toMatchObject({ width: 1500, height: 500 });
  });

  it('refuses what is not a whole PNG, JPEG, GIF or WebP with 422, changing nothing and storing nothing', async () => {
    const png = await image('png', 400, 400);
    const jpeg = await sharp(await noise(400)).jpeg().toBuffer();
    const bomb = await sharp({ create: { width: 6000, height: 6000, channels: 3, background: '#fff' } }).png({ compressionLevel: 9 }).toBuffer();
    const cases: [string, Buffer, string, string][] = [
      ['text named avatar.png', Buffer.from('hello, I am not an image at all'), 'avatar.png', 'image/png'],
      ['PNG signature then garbage', Buffer.concat([png.subarray(0, 8), Buffer.from('garbage garbage garbage')]), 'avatar.png', 'image/png'],
      ['truncated PNG', png.subarray(0, Math.floor(png.length / 2)), 'avatar.png', 'image/png'],
      ['truncated JPEG', jpeg.subarray(0, Math.floor(jpeg.length / 2)), 'avatar.jpg', 'image/jpeg'],
      ['empty file', Buffer.alloc(0), 'avatar.png', 'image/png'],
      ['TIFF', await image('tiff'), 'avatar.tiff', 'image/tiff'],
      ['SVG', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'), 'avatar.svg', 'image/svg+xml'],
      ['36-megapixel PNG (decompression bomb)', bomb, 'avatar.png', 'image/png'],
    ];
    await changesNothing(async () => {
      for (const [label, data, filename, type] of cases) {
        for (const kind of ['avatar', 'header']) {
          const res = await patchMultipart({ display_name: 'Should not stick', locked: 'true', [kind]: file(data, filename, type) });
          expectError(res, 422, `${kind}: ${label}`);
          expect(res.json().error, label).toContain(kind);
        }
      }
      // A good avatar with a bad header: neither is kept.
      const mixed = await patchMultipart({ avatar: file(png, 'a.png', 'image/png'), header: file(png.subarray(0, 100), 'h.png', 'image/png') });
      expectError(mixed, 422, 'good avatar, bad header');
      // A good image with a bad text field: the image is not stored either.
      expectError(await patchMultipart({ display_name: 'x'.repeat(31), avatar: file(png, 'a.png', 'image/png') }), 422, 'long display_name');
      expectError(await patchMultipart({ locked: 'maybe', header: file(png, 'h.png', 'image/png') }), 422, 'bad flag');
    });
  });

  it('keeps animated GIFs animated, each frame resized', async () => {
    const frame = (background: string) => sharp({ create: { width: 600, height: 300, channels: 3, background } }).png().toBuffer();
    const animated = await sharp([await frame('#f00'), await frame('#00f')], { join: { animated: true } }).gif({ delay: [100, 100] }).toBuffer();
    expect((await sharp(animated).metadata()).pages).toBe(2);
    const body = ok(await patchMultipart({ avatar: file(animated, 'anim.gif', 'image/gif') }));
    const got = await fetchImage(body.avatar);
    expect(got.meta).toMatchObject({ format: 'gif', pages: 2, width: 400 });
    expect(got.meta.pageHeight ?? got.meta.height).toBe(400);
  });
});

describe('DELETE /api/v1/profile/avatar and /header', () => {
  const remove = (kind: string, token?: string) =>
    s.app.inject({ method: 'DELETE', url: `/api/v1/profile/${kind}`, headers: token ? bearer(token) : {} });

  it('removes each image from the file host, falls back to the default one, refreshes caches and tells other servers', async () => {
    const fay = await registerUser(s.app, client, 'fay');
    const both = ok(await patchMultipart({ avatar: file(await image('png'), 'a.png', 'image/png'), header: file(await image('jpeg'), 'h.jpg', 'image/jpeg') }, s, fay.token));
    const row = await snapshot(s, fay.id);
    const stored = (key: string) => join(s.config.dataDir, 'files', key);
    expect(await storedFiles()).toContain(stored(row.avatar_file));
    // A status rendered (and cached) before the removal shows the new avatar after it.
    const posted = (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(fay.token), payload: { status: 'hi' } })).json();
    const author = async () => (await s.app.inject({ method: 'GET', url: `/api/v1/statuses/${posted.id}` })).json().account;
    expect((await author()).avatar).toBe(both.avatar);

    const enqueue = vi.spyOn(s.ctx.jobs, 'enqueue');
    try {
      const res = remove('avatar', fay.token);
      const body = ok(await res);
      expect(body.avatar).toBe('http://test.local/avatars/original/missing.png');
      expect(body.avatar_static).toBe(body.avatar);
      expect(body.header).toBe(both.header);
      expect(enqueue.mock.calls.map(([r]) => r.payload)).toContainEqual({ activity: 'UpdatePerson', accountId: fay.id });
    } finally {
      enqueue.mockRestore();
    }
    expect(await storedFiles()).not.toContain(stored(row.avatar_file));
    expect(await storedFiles()).toContain(stored(row.header_file));
    expect((await s.app.inject({ method: 'GET', url: new URL(both.avatar).pathname })).statusCode).toBe(404);
    expect((await author()).avatar).toBe('http://test.local/avatars/original/missing.png');
    expect(ok(await verify(fay.token)).avatar).toBe('http://test.local/avatars/original/missing.png');

    const header = ok(await remove('header', fay.token));
    expect(header.header).toBe('http://test.local/headers/original/missing.png');
    expect(header.header_static).toBe(header.header);
    expect(await storedFiles()).not.toContain(stored(row.header_file));
    expect(await snapshot(s, fay.id)).toMatchObject({ avatar_file: null, avatar_content_type: null, header_file: null, header_content_type: null });
    // Removing what is not there is no error.
    expect(ok(await remove('avatar', fay.token)).avatar).toBe('http://test.local/avatars/original/missing.png');
  });

  it('needs a user token with write:accounts', async () => {
    const reader = await registerUser(s.app, client, 'avatarreader', 'read');
    const appOnly = await appToken(s.app, client, 'write:accounts');
    await changesNothing(async () => {
      expectError(await remove('avatar'), 401, 'no token');
      expectError(await remove('header', reader.token), 403, 'read token');
      expectError(await remove('avatar', appOnly), 422, 'app token'); // Mastodon's require_user!
    }, s, reader.id);
  });
});

describe('image size limit', () => {
  let small: TestServer;
  let eli: TestUser;
  beforeAll(async () => {
    small = await startTestServer({ MAX_IMAGE_BYTES: '100000' });
    eli = await registerUser(small.app, await createApp(small.app), 'eli');
  });
  afterAll(async () => small?.close());

  it('answers an image over MAX_IMAGE_BYTES with 422 and an error, as Mastodon\'s validation does, changing nothing and storing nothing', async () => {
    const big = await noise(300);
    expect(big.length).toBeGreaterThan(180_000);
    expect(big.length).toBeLessThan(300_000);
    await changesNothing(async () => {
      for (const kind of ['avatar', 'header']) {
        const res = await patchMultipart({ display_name: 'Should not stick', [kind]: file(big, 'big.png', 'image/png') }, small, eli.token);
        expectError(res, 422, kind);
      }
      // A good image beside the big one is not kept either.
      const mixed = await patchMultipart({ avatar: file(await image('png', 100, 100), 'a.png', 'image/png'), header: file(big, 'big.png', 'image/png'), display_name: 'No' }, small, eli.token);
      expectError(mixed, 422, 'mixed');
    }, small, eli.id);
    // Under the limit is fine.
    const fine = await patchMultipart({ avatar: file(await image('png', 300, 300), 'a.png', 'image/png') }, small, eli.token);
    expect(fine.statusCode, fine.body).toBe(200);
    expect((await fetchImage(fine.json().avatar, small)).meta).toMatchObject({ width: 400, height: 400 });
  });
});

describe('bio links and hidden collections', () => {
  it('links @mentions of known accounts and #hashtags in the note, as in statuses', async () => {
    const friend = await registerUser(s.app, client, 'notefriend');
    const res = ok(await patch({ note: `Friends with @${friend.username} and @nobody_here, into #Gardening` }));
    expect(res.note).toContain(`href="http://test.local/@${friend.username}" class="u-url mention"`);
    expect(res.note).toContain('@nobody_here'); // unknown: plain text
    expect(res.note).not.toContain('href="http://test.local/@nobody_here"');
    expect(res.note).toContain('href="http://test.local/tags/gardening" class="mention hashtag"');
    expect(res.source.note).toBe(`Friends with @${friend.username} and @nobody_here, into #Gardening`);
  });

  it('hides followers and following from others, not from the account itself', async () => {
    const fan = await registerUser(s.app, client, 'collectionfan');
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${dee.id}/follow`, headers: bearer(fan.token) });
    const hidden = ok(await patch({ hide_collections: 'true' }));
    expect(hidden.hide_collections).toBe(true);
    expect(hidden.source.hide_collections).toBe(true);
    const list = (token?: string) => s.app.inject({ method: 'GET', url: `/api/v1/accounts/${dee.id}/followers`, headers: token ? bearer(token) : {} });
    expect((await list()).json()).toEqual([]);
    expect((await list(fan.token)).json()).toEqual([]);
    expect((await list(dee.token)).json().map((a: { id: string }) => a.id)).toContain(fan.id);
    ok(await patch({ hide_collections: false }));
    expect((await list()).json().map((a: { id: string }) => a.id)).toContain(fan.id);
  });
});
