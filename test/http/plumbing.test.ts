import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.close());

describe('plumbing', () => {
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
