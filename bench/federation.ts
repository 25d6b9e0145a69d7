// `npm run bench:federation`: figures printed, not asserted. A status by an account whose 1,200 followers live on
// 120 "remote servers" (ports of one local receiving process that verifies every HTTP signature): 100 servers
// without shared inboxes (10 followers each: 1,000 personal-inbox deliveries) and 20 with a shared inbox (10
// followers each, reached by one delivery per server). Prints the time until all are delivered and deliveries/s.
import type { ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Redis } from 'ioredis';
import { verifyRequest, type KeyCache } from '@fedify/fedify';
import { createPool, dropDatabase, ensureDatabase, migrate } from '../storage/db.ts';
import { deleteKeysWithPrefix } from '../storage/redis.ts';
import { seedRemoteFollowers, type RemoteFollower } from './seed.ts';
import { accountMaker, api, benchSettings, peakRssMb, startServer, waitHealthy } from './common.ts';

const { env, config, base } = benchSettings(3910, { ALLOW_PRIVATE_ADDRESSES: 'true' });


const PERSONAL_HOSTS = 100;
const SHARED_HOSTS = 20;
const PER_HOST = 10;



function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The receiving side: every POST is verified as a real server would (the sender's key fetched once, then cached). */
async function startReceivers(count: number) {
  const keys = new Map<string, unknown>();
  const keyCache: KeyCache = {
    get: async (keyId) => keys.get(keyId.href) as never,
    set: async (keyId, key) => void keys.set(keyId.href, key),
  };
  const documentLoader = async (url: string) => {
    const res = await fetch(url, { headers: { accept: 'application/activity+json' } });
    return { contextUrl: null, documentUrl: url, document: await res.json() };
  };
  const stats = { verified: 0, shared: 0, rejected: 0, last: 0 };
  const servers: Server[] = Array.from({ length: count }, () => createServer(async (req, res) => {
    const body = await readBody(req);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method, headers: Object.entries(req.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])) as [string, string][], body: new Uint8Array(body),
    });
    const key = await verifyRequest(request, { documentLoader, keyCache }).catch(() => null);
    if (!key) {
      stats.rejected += 1;
      res.writeHead(401).end();
      return;
    }
    stats.verified += 1;
    if (req.url === '/inbox') stats.shared += 1;
    stats.last = performance.now();
    res.writeHead(202).end();
  }));
  // Ports the system picks, so nothing else on the machine is in the way.
  const ports = await Promise.all(servers.map((srv) => new Promise<number>((resolve) => srv.listen(0, '127.0.0.1', () => resolve((srv.address() as { port: number }).port)))));
  // Idle connections are kept longer than the sender keeps them, so a reused connection is never closed under it.
  for (const s of servers) {
    s.keepAliveTimeout = 65_000;
    s.headersTimeout = 66_000;
  }
  return { stats, ports, close: () => Promise.all(servers.map((srv) => new Promise((r) => srv.close(r)))) };
}

async function main() {
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const server: ChildProcess = startServer(env);
  const db = createPool(config.databaseUrl, 4);
  const redis = new Redis(config.redisUrl);
  const receivers = await startReceivers(PERSONAL_HOSTS + SHARED_HOSTS);
  const ports = receivers.ports;
  try {
    await waitHealthy(base);
    const author = await (await accountMaker(base))('speaker');
    const authorId = (await api(base, '/api/v1/accounts/verify_credentials', { token: author })).id as string;

    const followers: RemoteFollower[] = ports.flatMap((port, h) => Array.from({ length: PER_HOST }, (_, j) => {
      const domain = `127.0.0.1:${port}`;
      return { username: `f${h}_${j}`, domain, inbox: `http://${domain}/users/f${h}_${j}/inbox`, sharedInbox: h >= PERSONAL_HOSTS ? `http://${domain}/inbox` : null };
    }));
    await seedRemoteFollowers(db, authorId, followers);
    const expected = PERSONAL_HOSTS * PER_HOST + SHARED_HOSTS;

    const started = performance.now();
    await api(base, '/api/v1/statuses', { method: 'POST', token: author, body: { status: 'Hello, fediverse: one post, twelve hundred followers.' } });
    const deadline = started + 60_000;
    while (receivers.stats.verified < expected && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const elapsed = receivers.stats.last - started;
    const { verified, shared, rejected } = receivers.stats;

    console.log(`\ndelivery of one status to ${followers.length} remote followers on ${ports.length} servers (${SHARED_HOSTS} with shared inboxes), signatures verified by the receivers`);
    console.log(`  deliveries verified: ${verified} of ${expected} expected${rejected ? `, ${rejected} rejected` : ''}`);
    console.log(`  time from POST to the last delivery: ${Math.round(elapsed)} ms (target: 1,000 signed deliveries in < 10,000 ms)`);
    console.log(`  deliveries/s: ${Math.round(verified / (elapsed / 1000))}`);
    console.log(`  through shared inboxes: ${shared} deliveries reaching ${shared * PER_HOST} followers (${Math.round((100 * shared * PER_HOST) / followers.length)}% of followers, ${Math.round((100 * shared) / Math.max(verified, 1))}% of deliveries)`);
    console.log(`  server peak memory (VmHWM): ${peakRssMb(server.pid!)} MB\n`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await receivers.close();
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    redis.disconnect();
    await db.end();
    await dropDatabase(config.databaseUrl);
  }
}

await main();
