import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { FederationHealth, excerpt } from '../../federation/health.ts';
import { listServerHealth } from '../../storage/federation-health.ts';

let s: TestServer;
beforeAll(async () => { s = await startTestServer({ ROLE: 'web' }); });
afterAll(async () => s?.close());

describe('per-server federation health', () => {
  it('adds up what several processes saw, keeping the latest failure, drop and signature spec', async () => {
    const a = new FederationHealth(s.ctx), b = new FederationHealth(s.ctx);
    a.delivered('Peer.example:8443');
    a.delivered('peer.example:8443');
    a.deliveryFailed('peer.example:8443', 500, 'HTTP 500: oops', 'https://peer.example:8443/inbox');
    a.signatureSpec('peer.example:8443', 'draft-cavage-http-signatures-12');
    a.droppedInbound('peer.example:8443', 'Follow: actor could not be fetched: HTTP 401');
    await a.flush();
    b.fetched('peer.example:8443');
    b.fetchFailed('peer.example:8443', 410);
    b.fetchFailedAt({ url: 'https://peer.example:8443/users/gone', status: 410, detail: `HTTP 410: ${'x'.repeat(1000)}` });
    await b.flush();
    await a.flush(); // nothing pending: no change

    const [row] = (await listServerHealth(s.ctx.db)).filter((r) => r.host === 'peer.example:8443');
    expect(row).toMatchObject({
      deliveries: 2, delivery_failures: 1, fetches: 1, fetch_failures: 1, dropped_inbound: 1,
      last_failure_kind: 'fetch', last_failure_status: 410, last_failure_url: 'https://peer.example:8443/users/gone',
      last_drop_reason: 'Follow: actor could not be fetched: HTTP 401', signature_spec: 'draft-cavage-http-signatures-12',
    });
    expect(row!.last_failure_detail!.length).toBeLessThanOrEqual(301);
    expect(row!.last_delivery_at).not.toBeNull();
    expect(b.recentFetchFailure('https://peer.example:8443/users/gone')).toMatchObject({ status: 410 });
    expect(b.recentFetchFailure('https://peer.example:8443/users/other')).toBeNull();
    await Promise.all([a.close(), b.close()]);
  });

  it('keeps excerpts short and on one line', () => {
    expect(excerpt('a\n  b\tc')).toBe('a b c');
    expect(excerpt('y'.repeat(400))).toHaveLength(301);
  });
});
