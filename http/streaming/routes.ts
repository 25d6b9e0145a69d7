import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { RouteOptions } from '../route-options.ts';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import { hashSecret, findActiveAccessTokenByHash } from '../../storage/oauth.ts';
import { findList } from '../../storage/lists.ts';
import { isId } from '../../storage/ids.ts';
import { invalidationChannel } from '../../services/token-cache.ts';
import { parseScopes } from '../oauth/scopes.ts';
import { StreamPayloads } from '../serializers/stream-payloads.ts';
import { StreamBus } from './bus.ts';
import { StreamError, StreamSession, type StreamOwner, type StreamParams } from './session.ts';
import { UNAVAILABLE_MESSAGE, unavailableDependency } from '../../storage/dependencies.ts';
import { EventFrames, textFrame, writerOf, type Frame } from './frames.ts';

/** A client that reads slower than events come is cut off past this much unsent data, rather than held in memory. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const PING_EVERY_MS = 30_000;
const SSE_HEARTBEAT_MS = 15_000;

declare module 'fastify' {
  interface FastifyRequest {
    streamOwner?: StreamOwner;
  }
}

/** What a signed-in web page's stream may read: what a token with `read` may. */
const SESSION_SCOPES = ['read'];

/**
 * The token, from where Mastodon's streaming server takes it: the Authorization header, `access_token`, or the
 * WebSocket protocol. Without one, a WebSocket handshake from a page of this server (its `Origin` is ours) may
 * present the signed-in person's session cookie instead: the pages hold no token. A handshake from any other origin
 * never counts the cookie (a foreign page could otherwise open a socket with the visitor's cookie).
 */
async function authenticate(ctx: AppContext, request: FastifyRequest, ownOrigin: string): Promise<void> {
  const header = request.headers.authorization;
  const query = request.query as Record<string, unknown>;
  const protocol = request.headers['sec-websocket-protocol']?.split(',')[0]?.trim();
  const raw = (header ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined) ?? (typeof query.access_token === 'string' ? query.access_token : undefined) ?? protocol;
  if (!raw) return authenticateSession(ctx, request, ownOrigin);
  const token = await ctx.tokens.lookup(ctx.db, raw);
  if (!token || !token.user_id || !token.account_id) throw new ApiError(401, 'Invalid access token');
  if (token.suspended) throw new ApiError(403, 'Your login is currently disabled');
  if (!token.approved) throw new ApiError(403, 'Your login is currently pending approval');
  request.streamOwner = { accountId: token.account_id, userId: token.user_id, credential: `token:${hashSecret(raw)}`, scopes: parseScopes(token.scopes) };
}

/** The pages' session module, loaded at the first cookie (it brings the pages' cookie and CSRF plugins). */
const webSessions = () => import('../web/session.ts');

async function authenticateSession(ctx: AppContext, request: FastifyRequest, ownOrigin: string): Promise<void> {
  const { activeSessionOf, sessionCookieOf } = await webSessions();
  const cookie = request.headers.upgrade?.toLowerCase() === 'websocket' ? sessionCookieOf(request.headers.cookie) : null;
  if (!cookie) throw new ApiError(401, 'Missing access token');
  if (request.headers.origin !== ownOrigin) throw new ApiError(403, 'This origin may not stream with a session cookie');
  const hash = hashSecret(cookie);
  const me = await activeSessionOf(ctx, hash);
  if (!me) throw new ApiError(401, 'Invalid access token');
  request.streamOwner = { accountId: me.account.id, userId: me.user.id, credential: `session:${hash}`, scopes: SESSION_SCOPES };
}

/** Open sessions by credential (token or web session) and by user, so a revocation in any process closes them at once. */
class OpenSessions {
  private readonly closers = new Map<StreamSession, () => void>();
  private readonly byCredential = new Map<string, Set<StreamSession>>();
  private readonly byUser = new Map<string, Set<StreamSession>>();

  add(session: StreamSession, close: () => void): void {
    this.closers.set(session, close);
    for (const [index, key] of [[this.byCredential, session.owner.credential], [this.byUser, session.owner.userId]] as const) {
      let set = index.get(key);
      if (!set) index.set(key, (set = new Set()));
      set.add(session);
    }
  }

  delete(session: StreamSession): void {
    this.closers.delete(session);
    for (const [index, key] of [[this.byCredential, session.owner.credential], [this.byUser, session.owner.userId]] as const) {
      const set = index.get(key);
      set?.delete(session);
      if (set?.size === 0) index.delete(key);
    }
  }

  /** The server is stopping: every stream ends (clients reconnect to another process). */
  closeAll(): void {
    for (const close of [...this.closers.values()]) close();
  }

  /**
   * A token was revoked (`token:<hash>`), a web session ended (`session:<hash>`) or something about a user changed
   * (`user:<id>`): close what no longer holds.
   */
  async revalidate(ctx: AppContext, message: string): Promise<void> {
    const kind = message.slice(0, message.indexOf(':'));
    const id = message.slice(message.indexOf(':') + 1);
    const close = (sessions: Iterable<StreamSession>) => { for (const s of [...sessions]) this.closers.get(s)?.(); };
    if (kind === 'token' || kind === 'session') return close(this.byCredential.get(message) ?? []);
    if (kind !== 'user') return;
    // Each of the user's credentials is asked about once, however many sockets it holds.
    for (const credential of new Set([...(this.byUser.get(id) ?? [])].map((s) => s.owner.credential))) {
      const hash = credential.slice(credential.indexOf(':') + 1);
      let ended: boolean;
      if (credential.startsWith('session:')) {
        const { activeSessionOf } = await webSessions();
        ended = (await activeSessionOf(ctx, hash, { fresh: true }).catch(() => undefined)) === null;
      } else {
        const token = await findActiveAccessTokenByHash(ctx.db, hash).catch(() => undefined);
        ended = token === null || (!!token && (token.suspended || !token.approved));
      }
      if (ended) close(this.byCredential.get(credential) ?? []);
    }
  }
}

/**
 * The streaming API, as Mastodon has it: `GET /api/v1/streaming` upgraded to a WebSocket (streams chosen by
 * `?stream=` and by subscribe/unsubscribe messages), the same streams as server-sent events under
 * `/api/v1/streaming/…`, and `/api/v1/streaming/health`.
 */
export default async function streamingRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  await app.register(websocket, {
    options: {
      maxPayload: 64 * 1024,
      // masto and others send the token as the protocol; the handshake must name it back or browsers close.
      handleProtocols: (protocols: Set<string>) => protocols.values().next().value ?? false,
    },
  });
  const bus = new StreamBus(ctx.config, ctx.events);
  await bus.start();
  const frames = new EventFrames();
  const payloads = new StreamPayloads(ctx);
  const open = new OpenSessions();
  const onInvalidation = (channel: string, message: string) => {
    if (channel === invalidationChannel(ctx.config.redisPrefix)) void open.revalidate(ctx, message);
  };
  ctx.subscriber.on('message', onInvalidation);
  // Open streams would hold the server's close forever: they are ended, and whatever connection is still open a
  // second later (a client that keeps its socket after its stream ended) is closed.
  app.addHook('preClose', async () => {
    open.closeAll();
    setTimeout(() => app.server.closeAllConnections?.(), 1000).unref();
  });
  app.addHook('onClose', async () => {
    ctx.subscriber.off('message', onInvalidation);
    bus.close();
  });

  /**
   * Fan-out skips home feeds that are not built (their owners have not read home lately); someone listening to
   * their home stream is reading it, so the feed is built (by its owner's actor) if it is not.
   */
  const subscribe = async (session: StreamSession, name: string, params: StreamParams) => {
    // A list is streamed to its owner only (Mastodon: "Not authorized to stream this list").
    if (name === 'list' && params.list && (!isId(params.list) || !(await findList(ctx.db, session.owner.accountId, params.list)))) {
      throw new StreamError(401, 'Not authorized to stream this list');
    }
    await session.subscribe(name, params);
    if (name === 'user') void ctx.actors.ask(session.owner.accountId, { type: 'rebuildHomeFeed' }).catch(() => {});
  };

  const auth = { auth: { kind: 'anonymous' as const } };
  const ownOrigin = new URL(ctx.config.publicUrl).origin;
  const preValidation = async (request: FastifyRequest) => authenticate(ctx, request, ownOrigin);

  // Mastodon's "OK"; while PostgreSQL or Redis (the events' bus) is away, 503 naming it, so a load balancer looks
  // elsewhere. Open sockets stay open meanwhile and hear events again once the bus has subscribed again.
  app.get('/api/v1/streaming/health', { config: auth }, async (_request, reply) => {
    const up = await ctx.dependencies.check();
    if (up.postgres && up.redis && bus.connected) return reply.type('text/plain').send('OK');
    const down = [!up.postgres && 'postgres', (!up.redis || !bus.connected) && 'redis'].filter(Boolean).join(', ');
    return reply.code(503).header('retry-after', '5').type('text/plain').send(`UNAVAILABLE: ${down}`);
  });

  app.get('/api/v1/streaming', { config: auth, preValidation, websocket: true }, (socket: WebSocket, request: FastifyRequest) => {
    const owner = request.streamOwner!;
    const write = writerOf(socket);
    const send = (frame: Frame) => {
      if (socket.readyState !== socket.OPEN) return;
      if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
        socket.close(1008, 'Too many unread events');
        return;
      }
      write(frame);
    };
    const session = new StreamSession(owner, bus, payloads, (stream, event, payload) => send(frames.of(stream, event, payload)));
    open.add(session, () => socket.close(1008, owner.credential.startsWith('session:') ? 'Session ended' : 'Access token revoked'));
    const fail = (err: unknown) => {
      const e = err instanceof StreamError ? err : unavailableDependency(err) ? new StreamError(503, UNAVAILABLE_MESSAGE) : new StreamError(500, 'Internal server error');
      send(textFrame(JSON.stringify({ error: e.message, status: e.status })));
    };

    // Dead peers are found by ping and pong, and let go.
    let alive = true;
    socket.on('pong', () => { alive = true; });
    const pinger = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, PING_EVERY_MS);
    pinger.unref();
    socket.on('close', () => {
      clearInterval(pinger);
      session.close();
      open.delete(session);
    });

    socket.on('message', (data) => {
      let message: { type?: unknown; stream?: unknown } & StreamParams;
      try {
        message = JSON.parse(String(data)) as typeof message;
      } catch {
        return fail(new StreamError(400, 'Invalid JSON'));
      }
      if (typeof message.stream !== 'string') return fail(new StreamError(400, 'Unknown stream type'));
      const params = { tag: str(message.tag), list: str(message.list), only_media: str(message.only_media) };
      if (message.type === 'subscribe') subscribe(session, message.stream, params).catch(fail);
      else if (message.type === 'unsubscribe') {
        try {
          session.unsubscribe(message.stream, params);
        } catch (err) {
          fail(err);
        }
      }
    });

    const query = request.query as Record<string, unknown>;
    if (typeof query.stream === 'string') {
      subscribe(session, query.stream, { tag: str(query.tag), list: str(query.list), only_media: str(query.only_media) }).catch(fail);
    }
  });

  // Server-sent events: one stream per connection, chosen by the path.
  const sse = (path: string, name: string) => {
    app.get(path, { config: auth, preValidation }, async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as Record<string, unknown>;
      const media = query.only_media === 'true' || query.only_media === '1';
      const streamName = media && name.startsWith('public') ? `${name}:media` : name;
      const owner = request.streamOwner!;
      const res = reply.raw;
      let session: StreamSession | null = null;
      const end = () => res.end();
      session = new StreamSession(owner, bus, payloads, (_stream, event, payload) => {
        if (res.writableLength > MAX_BUFFERED_BYTES) return end();
        res.write(`event: ${event}\ndata: ${payload ?? ''}\n\n`);
      });
      try {
        await subscribe(session, streamName, { tag: str(query.tag), list: str(query.list) });
      } catch (err) {
        session.close();
        if (err instanceof StreamError) throw new ApiError(err.status, err.message);
        throw err;
      }
      reply.hijack();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-request-id': request.id });
      res.write(':)\n');
      const heartbeat = setInterval(() => res.write(':thump\n'), SSE_HEARTBEAT_MS);
      heartbeat.unref();
      open.add(session, end);
      res.on('close', () => {
        clearInterval(heartbeat);
        session.close();
        open.delete(session);
      });
    });
  };
  sse('/api/v1/streaming/user', 'user');
  sse('/api/v1/streaming/user/notification', 'user:notification');
  sse('/api/v1/streaming/public', 'public');
  sse('/api/v1/streaming/public/local', 'public:local');
  sse('/api/v1/streaming/public/remote', 'public:remote');
  sse('/api/v1/streaming/hashtag', 'hashtag');
  sse('/api/v1/streaming/hashtag/local', 'hashtag:local');
  sse('/api/v1/streaming/direct', 'direct');
  sse('/api/v1/streaming/list', 'list');
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
