import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createApp, registerUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    INSTANCE_TITLE: 'Test Social', INSTANCE_CONTACT_EMAIL: 'admin@test.local', INSTANCE_CONTACT_USERNAME: 'boss',
    REGISTRATIONS_MODE: 'open', MAX_STATUS_CHARS: '1000', SOURCE_URL: 'https://code.example/fedi-server',
  });
});
afterAll(async () => s?.close());

describe('instance', () => {
  it('describes this server in v1 and v2, with its real settings', async () => {
    const boss = await registerUser(s.app, await createApp(s.app), 'boss');
    const v1 = await s.app.inject({ method: 'GET', url: '/api/v1/instance' });
    expect(v1.statusCode).toBe(200);
    expectEntity('V1Instance', v1.json());
    expect(v1.json()).toMatchObject({
      uri: 'test.local', title: 'Test Social', email: 'admin@test.local', registrations: true, approval_required: false,
      configuration: { statuses: { max_characters: 1000 } }, stats: { user_count: 1 },
    });
    expect(v1.json().contact_account.id).toBe(boss.id);

    const v2 = await s.app.inject({ method: 'GET', url: '/api/v2/instance' });
    expect(v2.statusCode).toBe(200);
    expectEntity('Instance', v2.json());
    expect(v2.json()).toMatchObject({
      domain: 'test.local', title: 'Test Social', source_url: 'https://code.example/fedi-server',
      registrations: { enabled: true, approval_required: false },
      contact: { email: 'admin@test.local' },
      configuration: { statuses: { max_characters: 1000, max_media_attachments: 4 }, accounts: { max_profile_fields: 4 } },
    });
    expect(v2.json().contact.account.username).toBe('boss');
    expect(v2.json().version).toMatch(/^4\.\d+\.\d+ \(compatible; /);
    const thumb = await s.app.inject({ method: 'GET', url: new URL(v2.json().thumbnail.url).pathname });
    expect(thumb.statusCode).toBe(200);
    expect(thumb.headers['content-type']).toBe('image/png');
  });

  it('counts users as they register', async () => {
    const before = (await s.app.inject({ method: 'GET', url: '/api/v1/instance' })).json().stats.user_count;
    await registerUser(s.app, await createApp(s.app), 'newbie');
    const after = (await s.app.inject({ method: 'GET', url: '/api/v1/instance' })).json().stats.user_count;
    expect(after).toBe(before + 1);
  });
});

describe('health', () => {
  it('answers 200 while PostgreSQL and Redis answer', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', postgres: 'ok', redis: 'ok' });
  });

  it('answers 503 when Redis does not', async () => {
    const other = await startTestServer();
    try {
      other.ctx.redis.disconnect();
      const res = await other.app.inject({ method: 'GET', url: '/health' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'unavailable', postgres: 'ok', redis: 'unavailable' });
    } finally {
      await other.ctx.redis.connect().catch(() => {});
      await other.close();
    }
  });

  it('carries a request id in every response', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/instance', headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers['x-request-id']).toBe('abc-123');
    const fresh = await s.app.inject({ method: 'GET', url: '/api/v1/instance' });
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers unknown API paths with Mastodon\'s 404 entity', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'Record not found' });
  });
});
