import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startS3 } from '../helpers/s3.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { S3FileHost } from '../../storage/filehost/s3.ts';
import { loadConfig } from '../../config.ts';

// The S3 driver against a real S3-compatible server on loopback, not a mock of the SDK.
let s3: Awaited<ReturnType<typeof startS3>>;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

describe('S3 file host', () => {
  it('puts, gets, serves at its public URL, and deletes', async () => {
    const host = new S3FileHost(loadConfig(s3.env).s3);
    try {
      await host.put('a/b c.txt', Buffer.from('hello bucket'), 'text/plain');
      expect((await host.get('a/b c.txt'))?.toString()).toBe('hello bucket');
      const url = host.url('a/b c.txt');
      expect(url).toBe(`${s3.endpoint}/${s3.bucket}/a/b%20c.txt`);
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain');
      expect(await res.text()).toBe('hello bucket');
      await host.delete('a/b c.txt');
      expect(await host.get('a/b c.txt')).toBeNull();
      expect((await fetch(url)).status).toBe(404);
    } finally {
      host.close();
    }
  });

  it('refuses to start without the bucket settings', () => {
    expect(() => loadConfig({ FILE_HOST: 's3' })).toThrow(/S3_BUCKET/);
  });
});

describe('media on S3', () => {
  let s: TestServer;
  let ida: TestUser;
  beforeAll(async () => {
    s = await startTestServer(s3.env);
    [ida] = await registerUsers(s.app, 'ida');
  });
  afterAll(async () => s?.close());

  it('uploads, processes and serves a photo and an avatar from the bucket', async () => {
    const png = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#246' } }).png().toBuffer();
    const form = await multipart({ file: { data: png, filename: 'p.png', type: 'image/png' }, description: 'on s3' });
    const res = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(ida.token), ...form.headers }, payload: form.payload });
    expect(res.statusCode, res.body).toBe(202);
    let media = res.json();
    for (let i = 0; i < 200 && media.url === null; i++) {
      await new Promise((r) => setTimeout(r, 25));
      media = (await s.app.inject({ method: 'GET', url: `/api/v1/media/${media.id}`, headers: bearer(ida.token) })).json();
    }
    expect(media.url.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    for (const [url, size] of [[media.url, [300, 200]], [media.preview_url, [media.meta.small.width, media.meta.small.height]]] as const) {
      const meta = await sharp(Buffer.from(await (await fetch(url)).arrayBuffer())).metadata();
      expect([meta.width, meta.height]).toEqual(size);
    }

    const avatar = await multipart({ avatar: { data: png, filename: 'a.png', type: 'image/png' } });
    const patched = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: { ...bearer(ida.token), ...avatar.headers }, payload: avatar.payload });
    expect(patched.statusCode, patched.body).toBe(200);
    const avatarUrl = patched.json().avatar as string;
    expect(avatarUrl.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    const fetched = await sharp(Buffer.from(await (await fetch(avatarUrl)).arrayBuffer())).metadata();
    expect([fetched.width, fetched.height]).toEqual([400, 400]);
  });
});
