import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createSecureContext, type SecureContext } from 'node:tls';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/**
 * Fetches of what other servers and people name (link cards, remote media, pages linked from profiles): unsigned,
 * public addresses only unless ALLOW_PRIVATE_ADDRESSES, size- and time-limited.
 */

/** The endpoint is, or resolves to, a loopback, private or otherwise non-public address. */
export class PrivateAddressError extends Error {}

type AddressChecks = Pick<typeof import('@fedify/vocab-runtime'), 'isValidPublicIPv4Address' | 'isValidPublicIPv6Address'>;
let addressChecks: AddressChecks | null = null;

/**
 * Fedify's checks of public addresses, loaded before the first fetch: their module brings Fedify's runtime and a
 * certificate library (about 3 MB resident, most of it their source text), which a server at rest does without.
 */
export async function loadAddressChecks(): Promise<void> {
  addressChecks ??= await import('@fedify/vocab-runtime');
}

/** Whether an IP address is public (`loadAddressChecks` first: every fetch of this module does it). */
export function isPublicAddress(address: string): boolean {
  if (!addressChecks) throw new Error('isPublicAddress before loadAddressChecks()');
  const family = isIP(address);
  return (family === 4 && addressChecks.isValidPublicIPv4Address(address)) || (family === 6 && addressChecks.isValidPublicIPv6Address(address));
}

/**
 * DNS resolution that refuses non-public addresses, used for the connection itself: the address checked is the
 * address connected to (no second lookup an attacker's DNS could answer differently).
 */
export const publicOnlyLookup = ((hostname: string, options: { all?: boolean; family?: number }, callback: (err: Error | null, address?: string | LookupAddress[], family?: number) => void) => {
  dnsLookup(hostname, { family: options.family ?? 0, all: true }, (err, addresses) => {
    if (err) return callback(err);
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad || addresses.length === 0) return callback(new PrivateAddressError(`${hostname} resolves to a non-public address${bad ? ` (${bad.address})` : ''}`));
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}) as unknown as LookupFunction;

/** Why a fetch gave nothing (callers log it; never thrown out of a job). */
export class LinkFetchError extends Error {}

export interface Fetched {
  url: URL;
  contentType: string;
  charset: string | null;
  body: Buffer;
}

/**
 * One TLS context for every fetch, made at the first https one. Without it each request makes its own (the system's
 * certificate authorities parsed again, about half a millisecond of CPU), even one whose host name then does not
 * resolve: that was a tenth of a post's CPU time when every post linked to a page that could not be had .
 */
let secureContext: SecureContext | null = null;

/**
 * GETs a URL as every fetch of this server does to what others name: never signed, no cookies, only http(s), only
 * public addresses (checked on the address connected to) unless ALLOW_PRIVATE_ADDRESSES, redirects followed a few
 * times (each hop checked again), at most `maxBytes` read, within the time limit. `accept` says which media types
 * are taken; any other is refused before its body is read.
 */
export interface GuardedGetOptions {
  accept: (type: string) => boolean;
  acceptHeader: string;
  maxBytes: number;
  allowPrivateAddresses: boolean;
  userAgent: string;
  /** The whole of the fetch: connection, redirects, answer. */
  timeoutMs?: number;
  redirects?: number;
}

export async function guardedGet(url: URL, o: GuardedGetOptions): Promise<Fetched> {
  const signal = AbortSignal.timeout(o.timeoutMs ?? 10_000);
  let current = url;
  for (let hop = 0; hop <= (o.redirects ?? 3); hop++) {
    const res = await guardedRequest(current, 'GET', { accept: o.acceptHeader, 'user-agent': o.userAgent, 'accept-encoding': 'identity' }, null, o.allowPrivateAddresses, signal);
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.destroy();
      current = new URL(res.headers.location, current);
      continue;
    }
    if (status < 200 || status >= 300) {
      res.destroy();
      throw new LinkFetchError(`answered ${status}`);
    }
    const [type = '', ...params] = (res.headers['content-type'] ?? '').split(';').map((p) => p.trim());
    if (!o.accept(type.toLowerCase())) {
      res.destroy();
      throw new LinkFetchError(`not taken: ${type || 'no content type'}`);
    }
    const length = Number(res.headers['content-length']);
    if (Number.isFinite(length) && length > o.maxBytes) {
      res.destroy();
      throw new LinkFetchError(`too large: ${length} bytes`);
    }
    const charset = params.map((p) => /^charset=["']?([^"';]+)/i.exec(p)?.[1]).find((c) => !!c) ?? null;
    const body = await readAtMost(res, o.maxBytes, signal);
    return { url: current, contentType: type.toLowerCase(), charset, body };
  }
  throw new LinkFetchError('too many redirects');
}

/**
 * One request to what others name, the checks every guarded fetch shares: only http(s), only public addresses
 * (checked on the address connected to, and on a literal address before any connection) unless allowPrivateAddresses.
 */
async function guardedRequest(url: URL, method: 'GET' | 'POST', headers: Record<string, string>, body: Buffer | null, allowPrivateAddresses: boolean, signal: AbortSignal): Promise<IncomingMessage> {
  if (!allowPrivateAddresses) await loadAddressChecks();
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new LinkFetchError(`not http(s): ${url.protocol}`));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!allowPrivateAddresses && isIP(host) !== 0 && !isPublicAddress(host)) return Promise.reject(new PrivateAddressError(`${host} is not a public address`));
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method,
      headers: body ? { ...headers, 'content-length': String(body.length) } : headers,
      signal,
      ...(url.protocol === 'https:' ? { secureContext: (secureContext ??= createSecureContext()) } : {}),
      ...(allowPrivateAddresses ? {} : { lookup: publicOnlyLookup }),
    }, resolve);
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

export interface GuardedPostOptions {
  headers: Record<string, string>;
  /** At most this much of the answer is read (the rest is not wanted). */
  maxBytes: number;
  allowPrivateAddresses: boolean;
  userAgent: string;
  timeoutMs?: number;
}

/**
 * POSTs a body to an address someone gave (an operator's webhook) under the same guard as guardedGet: public
 * addresses only unless ALLOW_PRIVATE_ADDRESSES, within the time limit, at most `maxBytes` of the answer read.
 * Redirects are not followed; any answer is returned with its status for the caller to judge.
 */
export async function guardedPost(url: URL, body: Buffer, o: GuardedPostOptions): Promise<{ status: number; body: Buffer }> {
  const signal = AbortSignal.timeout(o.timeoutMs ?? 10_000);
  const res = await guardedRequest(url, 'POST', { ...o.headers, 'user-agent': o.userAgent, 'accept-encoding': 'identity' }, body, o.allowPrivateAddresses, signal);
  const answer = await readAtMost(res, o.maxBytes, signal).catch((err: unknown) => {
    if (err instanceof LinkFetchError && err.message.startsWith('too large')) return Buffer.alloc(0);
    throw err;
  });
  return { status: res.statusCode ?? 0, body: answer };
}

function readAtMost(res: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: Error) => {
      signal.removeEventListener('abort', onAbort);
      res.destroy();
      reject(err);
    };
    const onAbort = () => fail(new LinkFetchError('too slow'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return fail(new LinkFetchError(`too large: more than ${maxBytes} bytes`));
      chunks.push(chunk);
    });
    res.on('end', () => {
      signal.removeEventListener('abort', onAbort);
      resolve(Buffer.concat(chunks));
    });
    res.on('error', (err) => fail(err));
    res.on('aborted', () => fail(new LinkFetchError('connection closed')));
  });
}
