import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { loadConfig, ConfigError } from '../../config.ts';
import { metricsOf } from '../../services/metrics.ts';

const TOKEN = 'metrics-token-for-tests-0123';
let s: TestServer;
beforeAll(async () => { s = await startTestServer({ METRICS_TOKEN: TOKEN }); });
afterAll(async () => s?.close());

const scrape = async () => {
  const res = await s.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.statusCode).toBe(200);
  return res.body;
};

describe('GET /metrics', () => {
  it('counts requests by method, route pattern and status, never by raw URL', async () => {
    await s.app.inject({ method: 'GET', url: '/api/v1/accounts/123456' });
    await s.app.inject({ method: 'GET', url: '/api/v1/accounts/654321' });
    await s.app.inject({ method: 'GET', url: '/no/such/path?x=1' });
    await s.app.inject({ method: 'POST', url: '/users/nobody/inbox', payload: '{}', headers: { 'content-type': 'application/activity+json' } });
    const text = await scrape();
    expect(text).toMatch(/fedi_http_requests_total\{method="GET",route="\/api\/v1\/accounts\/:id",status="404"\} 2\b/);
    expect(text).toMatch(/fedi_http_requests_total\{method="GET",route="unmatched",status="404"\} 1\b/);
    expect(text).toMatch(/fedi_http_requests_total\{method="POST",route="\/users\/:username\/inbox",status="\d+"\} 1\b/);
    expect(text).toMatch(/fedi_http_request_seconds_total\{method="GET",route="unmatched",status="404"\} [\d.e-]+/);
    expect(text).not.toContain('123456');
    expect(text).toMatch(/fedi_process_resident_memory_bytes \d+/);
  });

  it('adds up events of every process through Redis', async () => {
    const metrics = metricsOf(s.ctx);
    metrics.count('deliveries', 'delivered');
    metrics.count('deliveries', 'delivered');
    metrics.count('inbound', 'Like', 'processed');
    await metrics.flush();
    // Another process's counts, already in Redis.
    await s.ctx.redis.hincrby(`${s.config.redisPrefix}metrics:events`, 'deliveries\u0000delivered', 5);
    const text = await scrape();
    expect(text).toMatch(/fedi_deliveries_total\{outcome="delivered"\} 7\b/);
    expect(text).toMatch(/fedi_inbound_activities_total\{type="Like",outcome="processed"\} 1\b/);
  });

  it('takes only a METRICS_TOKEN of 16 characters or more', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(ConfigError);
    expect(() => loadConfig({ METRICS_TOKEN: 'has a space in it 0123' })).toThrow(/METRICS_TOKEN/);
    expect(loadConfig({}).metricsToken).toBe('');
  });
});
