import { createPublicKey } from 'node:crypto';
import { Type } from '../../schema.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import {
  deletePushSubscriptionByToken, findPushSubscriptionByToken, replacePushSubscription, updatePushSubscriptionData, type PushPolicy,
} from '../../../storage/web-push.ts';
import { PUSH_ALERTS, vapidPublicKey } from '../../../services/web-push.ts';
import { renderWebPushSubscription } from '../../serializers/web-push.ts';

const Alerts = Type.Object(Object.fromEntries(PUSH_ALERTS.map((a) => [a, Type.Optional(Bool())])));
const Policy = Type.Union([Type.Literal('all'), Type.Literal('followed'), Type.Literal('follower'), Type.Literal('none')]);
const Data = Type.Object({ alerts: Type.Optional(Alerts), policy: Type.Optional(Policy) });

const CreateBody = Type.Object({
  subscription: Type.Object({
    endpoint: Type.Optional(Type.String({ maxLength: 2000 })),
    keys: Type.Optional(Type.Object({
      p256dh: Type.Optional(Type.String({ maxLength: 200 })),
      auth: Type.Optional(Type.String({ maxLength: 100 })),
    })),
    standard: Type.Optional(Bool()),
  }),
  data: Type.Optional(Data),
});
const UpdateBody = Type.Object({ data: Type.Optional(Data) });

type DataParams = { alerts?: Record<string, boolean | undefined> | undefined; policy?: PushPolicy | undefined } | undefined;

/** Mastodon's data params: the alerts given as true, and the policy (`all` when not given). */
function dataOf(data: DataParams): { alerts: string[]; policy: PushPolicy } {
  return { alerts: PUSH_ALERTS.filter((a) => data?.alerts?.[a] === true), policy: data?.policy ?? 'all' };
}

/** base64url (or base64, padded or not) of exactly `bytes` bytes, returned as unpadded base64url; null otherwise. */
function decodeKey(value: string, bytes: number): Buffer | null {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return null;
  const buf = Buffer.from(value, 'base64url');
  return buf.length === bytes ? buf : null;
}

/** p256dh: an uncompressed point on P-256 (65 bytes, 0x04 first). */
function validP256dh(buf: Buffer): boolean {
  if (buf[0] !== 4) return false;
  try {
    createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: buf.subarray(1, 33).toString('base64url'), y: buf.subarray(33).toString('base64url') }, format: 'jwk' });
    return true;
  } catch {
    return false;
  }
}

/** The bearer token as sent (Mastodon's push payload carries it; the auth plugin has already checked it). */
function rawToken(request: FastifyRequest): string {
  return /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')![1]!;
}

export default async function pushRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const auth = { auth: { kind: 'user' as const, scopes: ['push'] } };

  const endpointOk = (endpoint: string): boolean => {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      return false;
    }
    // Plain http only for tests and local trials, as for our other outgoing requests.
    return url.hostname !== '' && (url.protocol === 'https:' || (url.protocol === 'http:' && ctx.config.allowPrivateAddresses));
  };

  // One subscription per access token: a POST replaces the token's subscription (a new id).
  app.post('/api/v1/push/subscription', { schema: { body: CreateBody }, config: auth }, async (request) => {
    const accountId = requireViewer(request);
    const { subscription, data } = request.body;
    const endpoint = subscription.endpoint?.trim() ?? '';
    if (endpoint === '') throw unprocessable("Validation failed: Endpoint can't be blank");
    if (!endpointOk(endpoint)) throw unprocessable('Validation failed: Endpoint is invalid');
    const p256dh = subscription.keys?.p256dh ?? '';
    const authSecret = subscription.keys?.auth ?? '';
    if (p256dh === '') throw unprocessable("Validation failed: Key p256dh can't be blank");
    if (authSecret === '') throw unprocessable("Validation failed: Key auth can't be blank");
    const publicKey = decodeKey(p256dh, 65);
    if (!publicKey || !validP256dh(publicKey)) throw unprocessable('Validation failed: Key p256dh is not an uncompressed P-256 public key in base64url');
    const secret = decodeKey(authSecret, 16);
    if (!secret) throw unprocessable('Validation failed: Key auth is not 16 bytes in base64url');
    const row = await replacePushSubscription(ctx.db, {
      accessTokenId: request.token!.id,
      accountId,
      accessToken: rawToken(request),
      endpoint,
      p256dh: publicKey.toString('base64url'),
      auth: secret.toString('base64url'),
      standard: subscription.standard ?? false,
      ...dataOf(data),
    });
    return renderWebPushSubscription(row, await vapidPublicKey(ctx.db));
  });

  app.get('/api/v1/push/subscription', { config: auth }, async (request) => {
    requireViewer(request);
    const row = await findPushSubscriptionByToken(ctx.db, request.token!.id);
    if (!row) throw notFound();
    return renderWebPushSubscription(row, await vapidPublicKey(ctx.db));
  });

  // As Mastodon's update!(data: …): the alerts and policy sent replace the old ones (alerts not sent are off).
  app.put('/api/v1/push/subscription', { schema: { body: UpdateBody }, config: auth }, async (request) => {
    requireViewer(request);
    const { alerts, policy } = dataOf(request.body.data);
    const row = await updatePushSubscriptionData(ctx.db, request.token!.id, alerts, policy);
    if (!row) throw notFound();
    return renderWebPushSubscription(row, await vapidPublicKey(ctx.db));
  });

  app.delete('/api/v1/push/subscription', { config: auth }, async (request) => {
    requireViewer(request);
    await deletePushSubscriptionByToken(ctx.db, request.token!.id);
    return {};
  });
}
