import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import webpush from 'web-push';
import type { AppContext } from '../context.ts';
import { findPushDelivery, deletePushSubscription } from '../storage/web-push.ts';
import { findAccountById } from '../storage/accounts.ts';
import { findStatus } from '../storage/statuses.ts';
import { renderPushPayload, vapidKeys } from '../services/web-push.ts';
import type { PushTarget } from '../storage/web-push.ts';
import { isPublicAddress, loadAddressChecks, PrivateAddressError, publicOnlyLookup } from '../services/guarded-fetch.ts';

export { isPublicAddress, PrivateAddressError, publicOnlyLookup };

/** How long push services keep an undelivered message, and the age past which a queued push is not sent (Mastodon: 48 h). */
export const PUSH_TTL_SECONDS = 48 * 3600;
const REQUEST_TIMEOUT_MS = 15_000;

export interface WebPushJob {
  subscriptionId: string;
  notificationId: string;
}

interface Log {
  warn(obj: object, msg: string): void;
}

/** A push service's answer that is worth trying again (5xx, 408, 429): BullMQ retries the job with backoff. */
export class RetryablePushError extends Error {}

/** POSTs one push message; resolves with the status code. Never follows redirects. */
export async function postPush(endpoint: URL, headers: OutgoingHttpHeaders, body: Buffer, allowPrivateAddresses: boolean): Promise<number> {
  if (!allowPrivateAddresses) await loadAddressChecks();
  const host = endpoint.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!allowPrivateAddresses && isIP(host) !== 0 && !isPublicAddress(host)) {
    return Promise.reject(new PrivateAddressError(`${host} is not a public address`));
  }
  const send = endpoint.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(endpoint, {
      method: 'POST',
      headers,
      timeout: REQUEST_TIMEOUT_MS,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      ...(allowPrivateAddresses ? {} : { lookup: publicOnlyLookup }),
    }, (res) => {
      res.resume();
      res.on('error', () => {});
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${endpoint.host} in ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The push request as RFC 8030/8291/8292 (and, for legacy subscriptions, the drafts Mastodon speaks to them) want it:
 * the payload encrypted to the subscription's keys and the VAPID signature, both by the web-push library; the
 * headers assembled as its sendNotification does (its own request builder uses Node's deprecated url.parse).
 */
export function encryptAndSign(
  endpoint: URL,
  subscription: Pick<PushTarget, 'key_p256dh' | 'key_auth' | 'standard'>,
  payload: string,
  vapid: { public_key: string; private_key: string; subject: string },
): { headers: OutgoingHttpHeaders; body: Buffer } {
  const encoding = subscription.standard ? 'aes128gcm' : 'aesgcm';
  const encrypted = webpush.encrypt(subscription.key_p256dh, subscription.key_auth, payload, encoding);
  const signature = webpush.getVapidHeaders(endpoint.origin, vapid.subject, vapid.public_key, vapid.private_key, encoding);
  const headers: OutgoingHttpHeaders = {
    ttl: String(PUSH_TTL_SECONDS),
    urgency: 'normal',
    'content-type': 'application/octet-stream',
    'content-encoding': encoding,
    authorization: signature.Authorization,
  };
  if (encoding === 'aesgcm') {
    headers.encryption = `salt=${encrypted.salt}`;
    // The library returns the sender's public key as a Buffer (its types say string).
    const dh = Buffer.from(encrypted.localPublicKey as unknown as Uint8Array).toString('base64url');
    headers['crypto-key'] = `dh=${dh};${(signature as { 'Crypto-Key': string })['Crypto-Key']}`;
  }
  return { headers, body: encrypted.cipherText };
}

export type PushOutcome = 'sent' | 'skipped' | 'gone' | 'refused' | 'private';

/**
 * The webPush job: renders the notification as Mastodon's push payload, encrypts it to the subscription's keys
 * (RFC 8291 aes128gcm for `standard` subscriptions, the legacy aesgcm draft otherwise, as Mastodon 4.4 does), signs
 * it with the server's VAPID key, and POSTs it with a TTL and an Urgency. 2xx: sent. 404/410: the subscription is
 * gone and is deleted. 408, 429, 5xx and network errors throw, for BullMQ to retry with backoff. Other answers are
 * logged and dropped. Nothing is sent when the subscription, the notification or its status is gone, when the
 * subscription no longer takes it, or when it is older than the TTL.
 */
export async function deliverWebPush(ctx: AppContext, job: WebPushJob, log?: Log): Promise<PushOutcome> {
  const target = await findPushDelivery(ctx.db, job.subscriptionId, job.notificationId);
  if (!target) return 'skipped';
  const { subscription, notification } = target;
  if (Date.now() - notification.created_at.getTime() > PUSH_TTL_SECONDS * 1000) return 'skipped';
  const [from, status] = await Promise.all([
    findAccountById(ctx.db, notification.from_account_id),
    notification.status_id ? findStatus(ctx.db, notification.status_id) : null,
  ]);
  if (!from || (notification.status_id && !status)) return 'skipped';

  const payload = renderPushPayload({ subscription, notification, from, status, server: { publicUrl: ctx.config.publicUrl, fileHost: ctx.fileHost } });
  const keys = await vapidKeys(ctx.db);
  const endpoint = new URL(subscription.endpoint);
  const { headers, body } = encryptAndSign(endpoint, subscription, payload, { ...keys, subject: ctx.config.vapidSubject });
  headers['user-agent'] = `fedi-server/${ctx.config.softwareVersion} (+${ctx.config.publicUrl}/)`;

  let code: number;
  try {
    code = await postPush(endpoint, headers, body, ctx.config.allowPrivateAddresses);
  } catch (err) {
    if (err instanceof PrivateAddressError) {
      log?.warn({ subscriptionId: subscription.id, endpoint: endpoint.origin, err: err.message }, 'web push endpoint is not a public address; not sent');
      return 'private';
    }
    throw err;
  }
  if (code >= 200 && code < 300) return 'sent';
  if (code === 404 || code === 410) {
    await deletePushSubscription(ctx.db, subscription.id);
    return 'gone';
  }
  if (code >= 500 || code === 408 || code === 429) throw new RetryablePushError(`web push endpoint ${endpoint.origin} answered ${code}`);
  log?.warn({ subscriptionId: subscription.id, endpoint: endpoint.origin, status: code }, 'web push refused; not retried');
  return 'refused';
}
