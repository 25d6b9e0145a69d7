import { createECDH, randomBytes, type ECDH } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { revokeUserTokens } from '../../storage/oauth.ts';

/** A device's side of a subscription: a P-256 key pair and a 16-byte auth secret, as a browser or phone makes them. */
interface DeviceKeys {
  ecdh: ECDH;
  p256dh: string;
  auth: string;
}

function deviceKeys(): DeviceKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { ecdh, p256dh: ecdh.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') };
}

const form = { 'content-type': 'application/x-www-form-urlencoded' };

describe('push subscription routes', () => {
  let s: TestServer;
  let client: RegisteredApp;
  let una: TestUser;
  let vic: TestUser;
  const endpoint = 'https://push.example/send/abc';

  beforeAll(async () => {
    s = await startTestServer();
    client = await createApp(s.app);
    [una, vic] = await Promise.all([registerUser(s.app, client, 'una'), registerUser(s.app, client, 'vic')]);
  });
  afterAll(async () => s?.close());

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', token: string, payload?: object | string, headers: Record<string, string> = {}) =>
    s.app.inject({ method, url: '/api/v1/push/subscription', headers: { ...bearer(token), ...headers }, ...(payload !== undefined ? { payload } : {}) });
  const rows = async (accountId: string) =>
    (await s.ctx.db.query<{ id: string; endpoint: string; access_token_id: string }>('SELECT id, endpoint, access_token_id FROM web_push_subscriptions WHERE account_id = $1', [accountId])).rows;

  it('answers 404 while the token has no subscription', async () => {
    for (const method of ['GET', 'PUT'] as const) {
      const res = await call(method, una.token, method === 'PUT' ? { data: { alerts: { mention: true } } } : undefined);
      expect(res.statusCode, method).toBe(404);
      expect(res.json()).toEqual({ error: 'Record not found' });
    }
  });

  it('needs the push scope and a user token', async () => {
    const readWrite = await authorizationCodeToken(s.app, client, una.email, una.password, 'read write follow');
    const keys = deviceKeys();
    const body = { subscription: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } } };
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
      const res = await call(method, readWrite, method === 'POST' ? body : undefined);
      expect(res.statusCode, method).toBe(403);
      expect(res.json()).toEqual({ error: 'This action is outside the authorized scopes' });
    }
    const appOnly = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: 'push' },
    });
    expect((await call('GET', appOnly.json().access_token)).statusCode).toBe(422);
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/push/subscription' })).statusCode).toBe(401);
  });

  it('creates a subscription from JSON and shows it as Mastodon does', async () => {
    const keys = deviceKeys();
    const res = await call('POST', una.token, {
      subscription: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } },
      data: { alerts: { mention: true, favourite: 'true', reblog: false, 'admin.sign_up': '1', quote: true } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const sub = res.json();
    expectEntity('WebPushSubscription', sub);
    expect(sub).toMatchObject({ endpoint, standard: false, policy: 'all' });
    expect(sub.alerts).toEqual({
      mention: true, status: false, reblog: false, follow: false, follow_request: false, favourite: true,
      poll: false, update: false, 'admin.sign_up': true, 'admin.report': false,
    });
    // One VAPID key everywhere apps look for it.
    const instance = (await s.app.inject({ method: 'GET', url: '/api/v2/instance' })).json();
    expect(sub.server_key).toBe(instance.configuration.vapid.public_key);
    expect(Buffer.from(sub.server_key, 'base64url')).toHaveLength(65);
    const verified = await s.app.inject({ method: 'GET', url: '/api/v1/apps/verify_credentials', headers: bearer(una.token) });
    expect(verified.json().vapid_key).toBe(sub.server_key);
    expect(client).toHaveProperty('vapid_key');
    expect((client as RegisteredApp & { vapid_key: string }).vapid_key).toBe(sub.server_key);
    // The v1 instance has no VAPID key in Mastodon either.
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/instance' })).json()).not.toHaveProperty('vapid');

    const shown = await call('GET', una.token);
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toEqual(sub);
  });

  it('replaces the token’s subscription on POST (form body), one per token', async () => {
    const before = (await call('GET', una.token)).json();
    const keys = deviceKeys();
    const body = new URLSearchParams({
      'subscription[endpoint]': 'https://push.example/send/def',
      'subscription[keys][p256dh]': keys.p256dh,
      'subscription[keys][auth]': keys.auth,
      'subscription[standard]': 'true',
      'data[alerts][follow]': '1',
      'data[alerts][admin.report]': 'true',
      'data[alerts][mention]': 'false',
      'data[policy]': 'follower',
    }).toString();
    const res = await call('POST', una.token, body, form);
    expect(res.statusCode, res.body).toBe(200);
    const sub = res.json();
    expectEntity('WebPushSubscription', sub);
    expect(sub.id).not.toBe(before.id);
    expect(sub).toMatchObject({ endpoint: 'https://push.example/send/def', standard: true, policy: 'follower' });
    expect(Object.entries(sub.alerts).filter(([, on]) => on).map(([a]) => a).sort()).toEqual(['admin.report', 'follow']);
    expect(await rows(una.id)).toHaveLength(1);

    // Another token of the same user has its own subscription, and does not see this one.
    const other = await authorizationCodeToken(s.app, client, una.email, una.password, 'push');
    expect((await call('GET', other)).statusCode).toBe(404);
    const otherKeys = deviceKeys();
    const second = await call('POST', other, { subscription: { endpoint: 'https://push.example/send/ghi', keys: { p256dh: otherKeys.p256dh, auth: otherKeys.auth } } });
    expect(second.statusCode).toBe(200);
    expect(Object.values(second.json().alerts).every((on) => on === false)).toBe(true);
    expect(await rows(una.id)).toHaveLength(2);
    expect((await call('GET', una.token)).json().id).toBe(sub.id);
  });

  it('PUT replaces the alerts and policy, from JSON or a form', async () => {
    const id = (await call('GET', una.token)).json().id;
    const res = await call('PUT', una.token, 'data[alerts][reblog]=true&data[alerts][mention]=on&data[policy]=followed', form);
    expect(res.statusCode, res.body).toBe(200);
    expectEntity('WebPushSubscription', res.json());
    expect(res.json()).toMatchObject({ id, endpoint: 'https://push.example/send/def', standard: true, policy: 'followed' });
    expect(Object.entries(res.json().alerts).filter(([, on]) => on).map(([a]) => a).sort()).toEqual(['mention', 'reblog']);

    const json = await call('PUT', una.token, { data: { alerts: { poll: true }, policy: 'none' } });
    expect(json.json()).toMatchObject({ id, policy: 'none' });
    expect(Object.entries(json.json().alerts).filter(([, on]) => on).map(([a]) => a)).toEqual(['poll']);
    // What is not sent goes back to Mastodon's defaults: no alerts, policy all.
    const bare = await call('PUT', una.token, {});
    expect(bare.json()).toMatchObject({ id, policy: 'all' });
    expect(Object.values(bare.json().alerts).every((on) => on === false)).toBe(true);

    for (const payload of [{ data: { policy: 'friends' } }, { data: { alerts: { mention: 'maybe' } } }]) {
      expect((await call('PUT', una.token, payload)).statusCode, JSON.stringify(payload)).toBe(422);
    }
    expect((await call('GET', una.token)).json().policy).toBe('all');
  });

  it('refuses bad endpoints and keys with 422, creating nothing', async () => {
    const good = deviceKeys();
    const longAuth = randomBytes(17).toString('base64url');
    const offCurve = Buffer.from(good.p256dh, 'base64url');
    offCurve[40] = offCurve[40]! ^ 1;
    const compressed = Buffer.concat([Buffer.from([2]), Buffer.from(good.p256dh, 'base64url').subarray(1, 33)]).toString('base64url');
    const cases: [object, string][] = [
      [{ endpoint: '', keys: { p256dh: good.p256dh, auth: good.auth } }, "Validation failed: Endpoint can't be blank"],
      [{ endpoint: 'not a url', keys: { p256dh: good.p256dh, auth: good.auth } }, 'Validation failed: Endpoint is invalid'],
      [{ endpoint: 'ftp://push.example/x', keys: { p256dh: good.p256dh, auth: good.auth } }, 'Validation failed: Endpoint is invalid'],
      // Plain http only with ALLOW_PRIVATE_ADDRESSES (tests).
      [{ endpoint: 'http://push.example/x', keys: { p256dh: good.p256dh, auth: good.auth } }, 'Validation failed: Endpoint is invalid'],
      [{ endpoint, keys: { auth: good.auth } }, "Validation failed: Key p256dh can't be blank"],
      [{ endpoint, keys: { p256dh: good.p256dh } }, "Validation failed: Key auth can't be blank"],
      [{ endpoint }, "Validation failed: Key p256dh can't be blank"],
      [{ endpoint, keys: { p256dh: good.p256dh.slice(0, -2), auth: good.auth } }, 'Validation failed: Key p256dh is not an uncompressed P-256 public key in base64url'],
      [{ endpoint, keys: { p256dh: offCurve.toString('base64url'), auth: good.auth } }, 'Validation failed: Key p256dh is not an uncompressed P-256 public key in base64url'],
      [{ endpoint, keys: { p256dh: compressed, auth: good.auth } }, 'Validation failed: Key p256dh is not an uncompressed P-256 public key in base64url'],
      [{ endpoint, keys: { p256dh: `${good.p256dh}!`, auth: good.auth } }, 'Validation failed: Key p256dh is not an uncompressed P-256 public key in base64url'],
      [{ endpoint, keys: { p256dh: good.p256dh, auth: good.auth.slice(0, -2) } }, 'Validation failed: Key auth is not 16 bytes in base64url'],
      [{ endpoint, keys: { p256dh: good.p256dh, auth: longAuth } }, 'Validation failed: Key auth is not 16 bytes in base64url'],
    ];
    for (const [subscription, error] of cases) {
      const res = await call('POST', vic.token, { subscription });
      expect(res.statusCode, JSON.stringify(subscription)).toBe(422);
      expect(res.json()).toEqual({ error });
    }
    for (const payload of [{}, { subscription: 'x' }, { subscription: { endpoint, keys: { p256dh: good.p256dh, auth: good.auth }, standard: 'sometimes' } },
      { subscription: { endpoint, keys: { p256dh: good.p256dh, auth: good.auth } }, data: { policy: 'everyone' } }]) {
      const res = await call('POST', vic.token, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error).toMatch(/^Validation failed/);
    }
    expect((await call('GET', vic.token)).statusCode).toBe(404);
    expect(await rows(vic.id)).toHaveLength(0);

    // Padded and standard-alphabet base64 are taken too (Mastodon decodes both).
    const padded = Buffer.from(good.p256dh, 'base64url').toString('base64');
    const ok = await call('POST', vic.token, { subscription: { endpoint, keys: { p256dh: padded, auth: Buffer.from(good.auth, 'base64url').toString('base64') } } });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('DELETE removes the subscription; deleting none is fine', async () => {
    const res = await call('DELETE', vic.token);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    expect((await call('GET', vic.token)).statusCode).toBe(404);
    expect((await call('DELETE', vic.token)).json()).toEqual({});
  });

  it('goes with its token when the token is revoked, or all of a user’s tokens are', async () => {
    const keys = deviceKeys();
    const body = { subscription: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } }, data: { alerts: { mention: true } } };
    expect((await call('POST', vic.token, body)).statusCode).toBe(200);
    const spare = await authorizationCodeToken(s.app, client, vic.email, vic.password, 'push');
    expect((await call('POST', spare, body)).statusCode).toBe(200);
    expect(await rows(vic.id)).toHaveLength(2);

    const revoked = await s.app.inject({ method: 'POST', url: '/oauth/revoke', payload: { token: vic.token, client_id: client.client_id, client_secret: client.client_secret } });
    expect(revoked.statusCode).toBe(200);
    expect(await rows(vic.id)).toHaveLength(1);
    expect((await call('GET', vic.token)).statusCode).toBe(401);
    expect((await call('GET', spare)).statusCode).toBe(200);

    // A password reset signs the user out of every app (cli: accounts reset-password).
    const userId = (await s.ctx.db.query<{ id: string }>('SELECT id FROM users WHERE account_id = $1', [vic.id])).rows[0]!.id;
    await revokeUserTokens(s.ctx.db, userId);
    expect(await rows(vic.id)).toHaveLength(0);
  });
});
