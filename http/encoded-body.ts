import { brotliCompress, constants, gzip } from 'node:zlib';
import { promisify } from 'node:util';
import { negotiate } from '@fastify/accept-negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Bodies kept and sent many times (home-timeline pages from the page cache, public pages kept for strangers), sent
 * compressed to the apps that ask for it, as a Mastodon server's answers come through its nginx (`gzip on` for JSON).
 * Each encoding of a kept body is made once, on the first request that takes it, and kept beside the body for as long
 * as the body itself is kept (a fraction of its size, outside the caches' byte bounds); every later request sends
 * the same bytes. Answers made anew for each request are not compressed here: that is the reverse proxy's work, if
 * any (docs/install.md).
 */
const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/** Best first: brotli is some 15% smaller on JSON at the same speed, gzip what every app's HTTP library takes. */
type Encoding = 'br' | 'gzip';
const ENCODINGS: Encoding[] = ['br', 'gzip'];
/** Below this, compressing saves less than the headers it adds. */
const MIN_BYTES = 1024;

const encode: Record<Encoding, (body: Buffer) => Promise<Buffer>> = {
  // Quality 5 and level 6: each a few milliseconds for a 100 KB page, paid once for all of its readers.
  br: (body) => brotli(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
  gzip: (body) => gzipped(body, { level: 6 }),
};

/** The encodings made of each kept body, for as long as the body is kept. */
const encoded = new WeakMap<Buffer, Partial<Record<Encoding, Promise<Buffer | null>>>>();

/** The encoding of `body` this request takes, made at most once per body and encoding; null to send it as it is. */
function encodingFor(request: FastifyRequest, body: Buffer): { name: Encoding; data: Promise<Buffer | null> } | null {
  if (body.length < MIN_BYTES) return null;
  const header = request.headers['accept-encoding'];
  const name = typeof header === 'string' ? (negotiate(header, ENCODINGS) as Encoding | null) : null;
  if (!name) return null;
  let made = encoded.get(body);
  if (!made) encoded.set(body, (made = {}));
  // A failure to compress (none is known) is not kept: the body goes as it is, and the next request tries again.
  const data = (made[name] ??= encode[name](body).catch(() => {
    delete made[name];
    return null;
  }));
  return { name, data };
}

/** Adds Accept-Encoding to the Vary the answer already has (CORS, pages' Accept and Cookie). */
function varyOnEncoding(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  reply.header('vary', typeof vary === 'string' && vary !== '' ? `${vary}, Accept-Encoding` : 'Accept-Encoding');
}

/**
 * Sends a kept body, compressed when the request asks for an encoding we make (`Accept-Encoding`), with `Vary` so
 * that a cache between never gives one app's encoding to another.
 */
export async function sendKeptBody(request: FastifyRequest, reply: FastifyReply, body: Buffer): Promise<FastifyReply> {
  varyOnEncoding(reply);
  const encoding = encodingFor(request, body);
  const data = encoding && (await encoding.data);
  if (!encoding || !data) return reply.send(body);
  return reply.header('content-encoding', encoding.name).send(data);
}
