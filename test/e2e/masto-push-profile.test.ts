// Web Push subscriptions and removing profile images, as a phone app does them with masto.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createECDH, randomBytes } from 'node:crypto';
import type { mastodon } from 'masto';
import { mastoAccounts } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, registerUsers } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer & { url: string };
let vi: mastodon.rest.Client;

beforeAll(async () => {
  s = await startListeningServer();
  ({ vi } = (await mastoAccounts(s.url, 'masto phone', 'vi')) as { vi: mastodon.rest.Client });
});
afterAll(async () => s?.close());

describe('masto: push subscription and profile images', () => {
  it('subscribes, reads, changes and removes a Web Push subscription', async () => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const keys = { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
    const created = await vi.v1.push.subscription.create({ subscription: { endpoint: 'https://push.example/send/abc', keys }, data: { alerts: { mention: true, follow: true } }, policy: 'all' });
    expect(created).toMatchObject({ endpoint: 'https://push.example/send/abc', alerts: { mention: true, follow: true, favourite: false } });
    expect(created.serverKey).toBeTruthy();
    expect((await vi.v1.push.subscription.fetch()).id).toBe(created.id);
    const updated = await vi.v1.push.subscription.update({ data: { alerts: { favourite: true } } });
    expect(updated.alerts).toMatchObject({ favourite: true, mention: false });
    const [wen] = await registerUsers(s.app, 'wen_push');
    const raw = await s.app.inject({ method: 'POST', url: '/api/v1/push/subscription', headers: bearer(wen.token), payload: { subscription: { endpoint: 'https://push.example/send/def', keys } } });
    expectEntity('WebPushSubscription', raw.json());
    await vi.v1.push.subscription.remove();
    await expect(vi.v1.push.subscription.fetch()).rejects.toThrow();
  });

  it('removes the avatar and the header, answering with the credential account', async () => {
    const avatar = await vi.v1.profile.avatar.remove();
    expect(avatar.avatar).toMatch(/missing\.png$/);
    const header = await vi.v1.profile.header.remove();
    expect(header.header).toMatch(/missing\.png$/);
    // The raw answers, as apps other than masto read them, are Mastodon's entities.
    const [wen] = await registerUsers(s.app, 'wen');
    for (const path of ['/api/v1/profile/avatar', '/api/v1/profile/header']) {
      const res = await s.app.inject({ method: 'DELETE', url: path, headers: bearer(wen.token) });
      expect(res.statusCode).toBe(200);
      expectEntity('CredentialAccount', res.json());
    }
  });
});
