import { createECDH, createPublicKey, randomBytes, verify, type ECDH } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { decrypt } from 'http_ece';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { loadOrCreateVapidKeys } from '../../services/web-push.ts';
import { pushableSubscriptionIds } from '../../storage/web-push.ts';
import { revokeUserTokens } from '../../storage/oauth.ts';
import { postPush, PrivateAddressError } from '../../jobs/web-push.ts';
import { loadConfig, ConfigError } from '../../config.ts';

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

interface Push {
  path: string;
  headers: IncomingHttpHeaders;
  /** The decrypted JSON, with notification_id kept as the digits sent (a JSON number too big for a double). */
  json: Record<string, unknown>;
  /** The VAPID key and claims the Authorization header carried, its signature checked. */
  vapid: { key: string; aud: string; sub: string; exp: number };
}

function parseJwt(jwt: string, rawPublicKey: string) {
  const [h, p, sig] = jwt.split('.');
  const header = JSON.parse(Buffer.from(h!, 'base64url').toString());
  expect(header).toMatchObject({ typ: 'JWT', alg: 'ES256' });
  const point = Buffer.from(rawPublicKey, 'base64url');
  expect(point.length).toBe(65);
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, format: 'jwk' });
  const valid = verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig!, 'base64url'));
  expect(valid, 'VAPID JWT signature').toBe(true);
  return JSON.parse(Buffer.from(p!, 'base64url').toString()) as { aud: string; sub: string; exp: number };
}

/**
 * A Web Push service on loopback: takes the POST, checks the VAPID Authorization, decrypts the body with the device
 * keys registered for the path (RFC 8291 aes128gcm, or the legacy aesgcm draft with its Encryption and Crypto-Key
 * headers), and records what arrived. Paths can be told to answer with another status.
 */
class PushReceiver {
  readonly pushes: Push[] = [];
  readonly errors: unknown[] = [];
  readonly devices = new Map<string, DeviceKeys>();
  /** Statuses to answer with, per path, in turn; 201 once they run out. */
  readonly answers = new Map<string, number[]>();
  readonly hits = new Map<string, number>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '';
        this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
        const status = this.answers.get(path)?.shift() ?? 201;
        if (status === 201) {
          try {
            this.pushes.push(this.open(path, req.headers, Buffer.concat(chunks)));
          } catch (err) {
            this.errors.push(err);
          }
        }
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}`;
  }

  private open(path: string, headers: IncomingHttpHeaders, body: Buffer): Push {
    const device = this.devices.get(path);
    if (!device) throw new Error(`no device for ${path}`);
    let plain: Buffer;
    let vapid: Push['vapid'];
    if (headers['content-encoding'] === 'aes128gcm') {
      const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(headers.authorization ?? '');
      if (!m) throw new Error(`bad Authorization: ${headers.authorization}`);
      vapid = { key: m[2]!, ...parseJwt(m[1]!, m[2]!) };
      plain = decrypt(body, { version: 'aes128gcm', privateKey: device.ecdh, authSecret: device.auth });
    } else if (headers['content-encoding'] === 'aesgcm') {
      const m = /^WebPush (\S+)$/.exec(headers.authorization ?? '');
      const cryptoKey = Object.fromEntries(String(headers['crypto-key']).split(';').map((kv) => kv.trim().split('=') as [string, string]));
      const salt = /^salt=(\S+)$/.exec(String(headers.encryption))?.[1];
      if (!m || !cryptoKey.dh || !cryptoKey.p256ecdsa || !salt) throw new Error(`bad legacy headers: ${JSON.stringify(headers)}`);
      vapid = { key: cryptoKey.p256ecdsa, ...parseJwt(m[1]!, cryptoKey.p256ecdsa) };
      plain = decrypt(body, { version: 'aesgcm', privateKey: device.ecdh, authSecret: device.auth, dh: cryptoKey.dh, salt });
    } else {
      throw new Error(`unknown Content-Encoding ${headers['content-encoding']}`);
    }
    const reviver = (key: string, value: unknown, context?: { source?: string }) => (key === 'notification_id' ? context?.source : value);
    const json = (JSON.parse as (text: string, r: typeof reviver) => Record<string, unknown>)(plain.toString('utf8'), reviver);
    return { path, headers, json, vapid };
  }

  device(path: string): DeviceKeys {
    const d = deviceKeys();
    this.devices.set(path, d);
    return d;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
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
      data: { alerts: { mention: true, favourite: 'true', reblog: false, 'admin.sign_up': '1', quote: true, quoted_update: 'false', unknown: true } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const sub = res.json();
    expectEntity('WebPushSubscription', sub);
    expect(sub).toMatchObject({ endpoint, standard: false, policy: 'all' });
    expect(sub.alerts).toEqual({
      mention: true, status: false, reblog: false, follow: false, follow_request: false, favourite: true,
      poll: false, update: false, 'admin.sign_up': true, 'admin.report': false, quote: true, quoted_update: false,
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

    const quotes = await call('PUT', una.token, 'data[alerts][quote]=true&data[alerts][quoted_update]=1', form);
    expect(quotes.statusCode, quotes.body).toBe(200);
    expect(Object.entries(quotes.json().alerts).filter(([, on]) => on).map(([a]) => a).sort()).toEqual(['quote', 'quoted_update']);
    expect((await call('PUT', una.token, { data: { alerts: { quoted_update: 'perhaps' } } })).statusCode).toBe(422);
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

describe('VAPID subject setting', () => {
  it('defaults to the contact email, else the https URL, and must be mailto: or https:', () => {
    expect(loadConfig({ INSTANCE_CONTACT_EMAIL: 'admin@example.com' }).vapidSubject).toBe('mailto:admin@example.com');
    expect(loadConfig({ LOCAL_DOMAIN: 'social.example', LOCAL_HTTPS: 'true' }).vapidSubject).toBe('https://social.example');
    expect(loadConfig({}).vapidSubject).toBe('mailto:contact-not-set@example.invalid');
    expect(loadConfig({ VAPID_SUBJECT: 'https://social.example/about' }).vapidSubject).toBe('https://social.example/about');
    expect(() => loadConfig({ VAPID_SUBJECT: 'http://social.example' })).toThrow(ConfigError);
  });
});

describe('push delivery', () => {
  let s: TestServer;
  let receiver: PushReceiver;
  let client: RegisteredApp;
  let ann: TestUser;
  let bob: TestUser;
  let cat: TestUser;
  let raceKeys: string[];

  beforeAll(async () => {
    s = await startTestServer({ ALLOW_PRIVATE_ADDRESSES: 'true', INSTANCE_CONTACT_EMAIL: 'admin@push.test' });
    // Processes racing to make the VAPID keys (on first need) agree on the one stored first.
    raceKeys = (await Promise.all(Array.from({ length: 6 }, () => loadOrCreateVapidKeys(s.ctx.db)))).map((k) => k.public_key);
    receiver = new PushReceiver();
    await receiver.start();
    client = await createApp(s.app);
    [ann, bob, cat] = await Promise.all([registerUser(s.app, client, 'ann'), registerUser(s.app, client, 'bob'), registerUser(s.app, client, 'cat')]);
  });
  afterAll(async () => {
    await s?.close();
    await receiver?.close();
  });

  const post = (path: string, token: string, payload?: object) =>
    s.app.inject({ method: 'POST', url: path, headers: bearer(token), ...(payload ? { payload } : {}) });
  const subscribe = async (token: string, path: string, data: object, standard?: boolean) => {
    const device = receiver.device(path);
    const res = await s.app.inject({
      method: 'POST', url: '/api/v1/push/subscription', headers: bearer(token),
      payload: { subscription: { endpoint: `${receiver.url}${path}`, keys: { p256dh: device.p256dh, auth: device.auth }, ...(standard === undefined ? {} : { standard }) }, data },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const pushesTo = (path: string) => receiver.pushes.filter((p) => p.path === path);
  const waitFor = async (path: string, n: number, timeoutMs = 5000) => {
    const count = await eventually(async () => pushesTo(path).length, n, timeoutMs);
    expect(receiver.errors).toEqual([]);
    expect(count, `pushes to ${path}`).toBe(n);
    return pushesTo(path);
  };
  const latestNotification = async (user: TestUser) => (await s.app.inject({ method: 'GET', url: '/api/v1/notifications?limit=1', headers: bearer(user.token) })).json()[0];
  /** Waits until every push that was to be sent has been: no job left, no outbox row waiting for one
   * (test/helpers/work-settled.ts; a webPush job ends once the push service answered). */
  const settle = async () => {
    expect(await eventually(() => workSettled(s.ctx), true, 10_000), 'the job queue drained').toBe(true);
  };

  it('keeps one VAPID key, made once', async () => {
    expect(new Set(raceKeys).size).toBe(1);
    expect((await s.ctx.db.query('SELECT count(*)::int AS n FROM vapid_keys')).rows[0].n).toBe(1);
    const instance = (await s.app.inject({ method: 'GET', url: '/api/v2/instance' })).json();
    expect(instance.configuration.vapid.public_key).toBe(raceKeys[0]);
  });

  it('pushes a mention, encrypted (aes128gcm) and VAPID-signed, with Mastodon’s payload', async () => {
    const sub = await subscribe(ann.token, '/push/ann', { alerts: { mention: true, follow: true } }, true);
    const status = (await post('/api/v1/statuses', bob.token, { status: 'Hello @ann, how are <you> & yours?' })).json();
    const [push] = await waitFor('/push/ann', 1);
    const notification = await latestNotification(ann);
    expect(notification).toMatchObject({ type: 'mention', status: { id: status.id } });
    expect(push!.json).toEqual({
      access_token: ann.token,
      preferred_locale: 'en',
      notification_id: notification.id,
      notification_type: 'mention',
      icon: 'http://test.local/avatars/original/missing.png',
      title: 'You were mentioned by bob',
      body: 'Hello @ann, how are <you> & yours?',
    });
    expect(push!.headers).toMatchObject({ 'content-encoding': 'aes128gcm', 'content-type': 'application/octet-stream', ttl: '172800', urgency: 'normal' });
    expect(push!.vapid.key).toBe(sub.server_key);
    expect(push!.vapid.aud).toBe(receiver.url);
    expect(push!.vapid.sub).toBe('mailto:admin@push.test');
    expect(push!.vapid.exp * 1000).toBeGreaterThan(Date.now());
    expect(push!.vapid.exp * 1000).toBeLessThanOrEqual(Date.now() + 24 * 3600_000);
    // The job is done and its outbox row gone.
    expect(await eventually(async () => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'webPush'`)).rows[0].n, 0)).toBe(0);
  });

  it('sends nothing for a type not among the alerts', async () => {
    const status = (await post('/api/v1/statuses', ann.token, { status: 'a post to like' })).json();
    await post(`/api/v1/statuses/${status.id}/favourite`, bob.token);
    expect((await latestNotification(ann)).type).toBe('favourite');
    // A follow is among the alerts: it arrives, the favourite before it never does.
    await post(`/api/v1/accounts/${ann.id}/follow`, cat.token);
    const pushes = await waitFor('/push/ann', 2);
    expect(pushes[1]!.json).toMatchObject({ notification_type: 'follow', title: 'cat is now following you' });
    await settle();
    expect(pushesTo('/push/ann').map((p) => p.json.notification_type)).toEqual(['mention', 'follow']);
  });

  it('sends nothing from senders the policy excludes', async () => {
    const put = await s.app.inject({ method: 'PUT', url: '/api/v1/push/subscription', headers: bearer(ann.token), payload: { data: { alerts: { mention: true }, policy: 'followed' } } });
    expect(put.statusCode).toBe(200);
    await post(`/api/v1/accounts/${cat.id}/follow`, ann.token);
    // ann does not follow bob: his mention is not pushed; she follows cat: hers is.
    await post('/api/v1/statuses', bob.token, { status: '@ann psst' });
    expect((await latestNotification(ann)).account.id).toBe(bob.id);
    await post('/api/v1/statuses', cat.token, { status: '@ann hi from cat' });
    const pushes = await waitFor('/push/ann', 3);
    expect(pushes[2]!.json).toMatchObject({ notification_type: 'mention', title: 'You were mentioned by cat', body: '@ann hi from cat' });
    await settle();
    expect(pushesTo('/push/ann')).toHaveLength(3);

    // `follower`: the sender follows the account (cat does, bob does not); `none`: nobody.
    const ids = async () => ({
      bob: await pushableSubscriptionIds(s.ctx.db, ann.id, 'mention', bob.id),
      cat: await pushableSubscriptionIds(s.ctx.db, ann.id, 'mention', cat.id),
    });
    await s.app.inject({ method: 'PUT', url: '/api/v1/push/subscription', headers: bearer(ann.token), payload: { data: { alerts: { mention: true }, policy: 'follower' } } });
    let found = await ids();
    expect(found.bob).toEqual([]);
    expect(found.cat).toHaveLength(1);
    await s.app.inject({ method: 'PUT', url: '/api/v1/push/subscription', headers: bearer(ann.token), payload: { data: { alerts: { mention: true }, policy: 'none' } } });
    found = await ids();
    expect(found).toEqual({ bob: [], cat: [] });
  });

  it('pushes to a legacy (aesgcm) subscription as Mastodon does, one push per subscription', async () => {
    await s.app.inject({ method: 'PUT', url: '/api/v1/push/subscription', headers: bearer(ann.token), payload: { data: { alerts: { mention: true } } } });
    const phone = await authorizationCodeToken(s.app, client, ann.email, ann.password, 'read write push');
    const legacy = await subscribe(phone, '/push/ann-legacy', { alerts: { mention: true } });
    expect(legacy.standard).toBe(false);
    await post('/api/v1/statuses', bob.token, { status: '@ann both devices' });
    const [modern] = (await waitFor('/push/ann', 4)).slice(3);
    const [old] = await waitFor('/push/ann-legacy', 1);
    expect(old!.headers['content-encoding']).toBe('aesgcm');
    expect(old!.vapid.key).toBe(legacy.server_key);
    expect(old!.json).toMatchObject({ access_token: phone, notification_type: 'mention', body: '@ann both devices' });
    expect(modern!.json).toMatchObject({ access_token: ann.token, notification_id: old!.json.notification_id });
  });

  it('retries when the push service fails, and deletes the subscription it says is gone', async () => {
    receiver.answers.set('/push/cat', [503]);
    await subscribe(cat.token, '/push/cat', { alerts: { favourite: true } }, true);
    const status = (await post('/api/v1/statuses', cat.token, { status: 'like me' })).json();
    await post(`/api/v1/statuses/${status.id}/favourite`, bob.token);
    const [push] = await waitFor('/push/cat', 1, 10_000);
    expect(receiver.hits.get('/push/cat')).toBe(2);
    expect(push!.json).toMatchObject({ notification_type: 'favourite', title: 'bob favorited your post', body: 'like me' });

    receiver.answers.set('/push/cat', [410]);
    await post(`/api/v1/statuses/${status.id}/favourite`, ann.token);
    const count = () => s.ctx.db.query('SELECT count(*)::int AS n FROM web_push_subscriptions WHERE account_id = $1', [cat.id]).then((r) => r.rows[0].n as number);
    expect(await eventually(count, 0, 5000)).toBe(0);
    expect(receiver.hits.get('/push/cat')).toBe(3);
  });

  it('pushes quotes and edits of quoted posts (Mastodon 4.5) only to subscriptions that asked for them', async () => {
    const [dee, eve] = await Promise.all([registerUser(s.app, client, 'dee'), registerUser(s.app, client, 'eve')]);
    await subscribe(dee.token, '/push/dee', { alerts: { quote: true } }, true);
    await subscribe(eve.token, '/push/eve', { alerts: { quoted_update: true, quote: false } }, true);
    const original = (await post('/api/v1/statuses', dee.token, { status: 'quote me' })).json();
    const quoting = await post('/api/v1/statuses', eve.token, { status: 'quoting', quoted_status_id: original.id });
    expect(quoting.statusCode, quoting.body).toBe(200);
    const [quoted] = await waitFor('/push/dee', 1);
    expect(quoted!.json).toMatchObject({ notification_type: 'quote', title: 'eve quoted your post', body: 'quoting' });
    // The author edits the quoted post: the quoting account hears of it.
    const edit = await s.app.inject({ method: 'PUT', url: `/api/v1/statuses/${original.id}`, headers: bearer(dee.token), payload: { status: 'quote me, edited' } });
    expect(edit.statusCode, edit.body).toBe(200);
    const [update] = await waitFor('/push/eve', 1);
    expect(update!.json).toMatchObject({ notification_type: 'quoted_update', title: 'dee edited a post you have quoted', body: 'quote me, edited' });
    // Without the alert, nothing: eve quotes again, dee's subscription no longer takes quotes.
    await s.app.inject({ method: 'PUT', url: '/api/v1/push/subscription', headers: bearer(dee.token), payload: { data: { alerts: { mention: true } } } });
    expect((await post('/api/v1/statuses', eve.token, { status: 'again', quoted_status_id: original.id })).statusCode).toBe(200);
    expect(await eventually(async () => (await latestNotification(dee)).type, 'quote')).toBe('quote');
    expect((await latestNotification(dee)).status.content).toContain('again');
    await settle();
    expect(pushesTo('/push/dee')).toHaveLength(1);
    expect(pushesTo('/push/eve')).toHaveLength(1);
  });

  it('never connects to loopback or private addresses unless allowed', async () => {
    for (const url of ['https://127.0.0.1:1/push', 'https://[::1]:1/push', 'https://10.1.2.3/push', 'https://localhost:1/push']) {
      await expect(postPush(new URL(url), {}, Buffer.alloc(0), false), url).rejects.toBeInstanceOf(PrivateAddressError);
    }
    receiver.answers.set('/push/nobody', [202]);
    expect(await postPush(new URL(`${receiver.url}/push/nobody`), {}, Buffer.alloc(0), true)).toBe(202);
  });
});
