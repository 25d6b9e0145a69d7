import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.ts';
import { MAX_NESTING, jsonNesting, malformedActivityError, parsedActivity } from './inbound-limits.ts';
import { refusedInboxPost, signerHost } from './domain-policy.ts';
import { dropRefusedPost } from './drops.ts';
import { signerMaySpeakFor } from './signer-origin.ts';
// federation/collections.ts imports Fedify: loaded where it is used (an ActivityPub request loads Fedify anyway).

/** What Fedify answers: WebFinger, NodeInfo, actors and their collections, statuses as Notes, inboxes. */
const FEDERATION_PATH = /^\/(?:\.well-known\/(?:webfinger|nodeinfo|host-meta)|nodeinfo\/|users\/|emojis\/|inbox$)/;
/** ActivityPub bodies are small; a larger one is refused before it is read whole. */
const MAX_BODY_BYTES = 1024 * 1024;
const FALL_THROUGH = 'x-fedi-fall-through';

class BodyTooLarge extends Error {}

const PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
const ADDRESSING = new Set(['to', 'cc', 'bto', 'bcc', 'audience']);

/**
 * Fedify compacts the public collection to `as:Public` in documents it serves (deliveries it already normalises);
 * software that does not read JSON-LD only knows the full IRI, so that is what we publish. Signed documents are
 * left as they are.
 */
function withFullPublicIri(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => withFullPublicIri(v, key));
  if (typeof value === 'string') return ADDRESSING.has(key) && (value === 'as:Public' || value === 'Public') ? PUBLIC : value;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withFullPublicIri(v, k)]));
}

async function publishedBody(ctx: AppContext, response: Response): Promise<Buffer> {
  const raw = Buffer.from(await response.arrayBuffer());
  const actor = raw.includes('"preferredUsername"');
  if (!/json/.test(response.headers.get('content-type') ?? '') || (!raw.includes('Public') && !actor)) return raw;
  try {
    const doc = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    if ('proof' in doc || 'signature' in doc) return raw;
    // Our actors name their collections (federation/collections.ts), which Fedify's Person cannot carry.
    const featured = actor ? (await import('./collections.ts')).withFeaturedCollections(ctx, doc) : doc;
    return Buffer.from(JSON.stringify(withFullPublicIri(featured)));
  } catch {
    return raw;
  }
}

function readBody(raw: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = Number(raw.headers['content-length'] ?? 0);
    if (size > MAX_BODY_BYTES) return reject(new BodyTooLarge());
    size = 0;
    raw.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        raw.removeAllListeners('data');
        raw.resume();
        reject(new BodyTooLarge());
      } else chunks.push(chunk);
    });
    raw.on('end', () => resolve(Buffer.concat(chunks)));
    raw.on('error', reject);
  });
}

function toWebRequest(ctx: AppContext, request: FastifyRequest, body: Buffer | undefined): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  // The public origin, not the socket's: behind a proxy that is what other servers signed and addressed.
  return new Request(new URL(request.url, ctx.config.publicUrl), { method: request.method, headers, body: body && body.length > 0 ? new Uint8Array(body) : undefined });
}

/**
 * Mounts Fedify in front of Fastify's routes: requests on federation paths go to Fedify first, and what Fedify does
 * not handle (an unknown path, a browser asking for HTML) falls through to Fastify's own routes.
 */
async function federationHook(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    if (!FEDERATION_PATH.test(path) || (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'POST')) return;
    let body: Buffer | undefined;
    if (request.method === 'POST') {
      // A suspended server's deliveries are refused before anything is read or fetched (federation/domain-policy.ts).
      if (await refusedInboxPost(ctx, request.headers)) {
        dropRefusedPost(ctx, signerHost(request.headers) ?? 'unknown');
        return reply.code(403).send({ error: 'Domain not allowed' });
      }
      try {
        body = await readBody(request.raw);
      } catch (err) {
        if (err instanceof BodyTooLarge) return reply.code(413).send({ error: 'Request entity too large' });
        throw err;
      }
    }
    // Nested past any real activity: refused before Fedify's JSON-LD processing recurses through it.
    if (body && jsonNesting(body) > MAX_NESTING) return reply.code(400).send({ error: 'Invalid activity' });
    // Parsed once for the checks below; Fedify reads the body itself.
    const activity = body && body.length > 0 ? parsedActivity(body) : null;
    // A key served by one server claiming an actor of another (federation/signer-origin.ts).
    if (!signerMaySpeakFor(request.headers, activity)) return reply.code(401).send({ error: 'Signature verification failed' });
    // What an accepted relay brings in is capped per relay, and forwarded activities are known as relayed (federation/relays.ts).
    const intake = body ? await (await import('./relays.ts')).relayIntake(ctx, request.headers, activity, () => toWebRequest(ctx, request, body)) : 'taken';
    if (intake === 'forged') return reply.code(401).send({ error: 'Signature verification failed' });
    if (intake === 'over') return reply.code(429).header('retry-after', '60').send({ error: 'Too many requests' });
    // Activities about collections carry types Fedify cannot parse: checked and taken here (federation/collections.ts).
    const collectionAnswer = activity && /^\/(?:users\/[^/]+\/)?inbox$/.test(path) ? await (await import('./collections.ts')).receiveCollectionActivity(ctx, toWebRequest(ctx, request, body), activity) : null;
    if (collectionAnswer) {
      reply.code(collectionAnswer.status).header('content-type', collectionAnswer.headers.get('content-type') ?? 'text/plain');
      return reply.send(collectionAnswer.body ? Buffer.from(await collectionAnswer.arrayBuffer()) : '');
    }
    let response: Response;
    try {
      response = await ctx.federation.fetch(toWebRequest(ctx, request, body), {
        contextData: ctx,
        onNotFound: () => new Response(null, { status: 404, headers: { [FALL_THROUGH]: '1' } }),
        onNotAcceptable: () => new Response(null, { status: 406, headers: { [FALL_THROUGH]: '1' } }),
      });
    } catch (err) {
      // An activity Fedify's parser chokes on (a date that is an object…) is the sender's error, not ours.
      if (request.method !== 'POST' || !malformedActivityError(err)) throw err;
      request.log.warn({ err }, 'refused a malformed activity');
      return reply.code(400).send({ error: 'Invalid activity' });
    }
    if (response.headers.has(FALL_THROUGH)) {
      // A POST body has been read: nothing after this could read it again, so it ends here.
      if (body !== undefined) return reply.code(404).send({ error: 'Record not found' });
      return;
    }
    reply.code(response.status);
    response.headers.forEach((value, name) => void (name !== 'content-length' && reply.header(name, value)));
    // What depends on who signed (authorized fetch, followers-only posts) must not be kept by a shared cache and
    // handed to the next asker.
    if (request.method !== 'POST' && (ctx.config.authorizedFetch || request.headers.signature !== undefined)) {
      reply.header('cache-control', 'private, no-store');
      reply.header('vary', 'Accept, Signature');
    }
    return reply.send(await publishedBody(ctx, response));
  });
}

export default fp(federationHook, { name: 'federation' });
