import { describe, expect, it } from 'vitest';
import { ReplyError } from 'ioredis';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Dependencies, unavailableDependency } from '../../storage/dependencies.ts';
import { createRedis } from '../../storage/redis.ts';
import { PG_BASE } from '../helpers/server.ts';

// Errors that mean a dependency is away (answered 503 with Retry-After) rather than a bad request (4xx) or a bug.
describe('unavailableDependency', () => {
  it('reads Redis being away, restarting or failing over as unavailability', () => {
    for (const message of [
      'Connection is closed.',
      "Stream isn't writeable and enableOfflineQueue options is false",
      'LOADING Redis is loading the dataset in memory',
      'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.',
      "READONLY You can't write against a read only replica.",
      'CLUSTERDOWN The cluster is down',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
      'MOVED 5540 127.0.0.1:43893',
      'ASK 5540 127.0.0.1:43893',
      'Command aborted due to connection close',
      "Cluster isn't ready and enableOfflineQueue options is false",
      'Failed to refresh slots cache.',
    ]) expect(unavailableDependency(new ReplyError(message)), message).toBe('redis');
  });

  it('leaves a request\'s own errors alone', () => {
    expect(unavailableDependency(new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBeNull();
    expect(unavailableDependency(new ReplyError('ERR unknown command'))).toBeNull();
    expect(unavailableDependency(new Error('LOADINGS of fun'))).toBeNull();
    // A cross-slot command is a bug of ours, shown as one (500), not an outage.
    expect(unavailableDependency(new Error('All the keys in a pipeline command should belong to the same slot'))).toBeNull();
    expect(unavailableDependency(new ReplyError("CROSSSLOT Keys in request don't hash to the same slot"))).toBeNull();
  });
});

// The probes' deadline: an answer that came in time but waited unread while this process was busy is not a hang.
describe('Dependencies probes', () => {
  const log = { info() {}, warn() {}, error() {} };
  const busyFor = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) { /* the event loop is blocked, as by a long synchronous task */ }
  };

  it('does not take a Redis and a PostgreSQL that answered while the event loop was blocked for hung', async () => {
    const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'probe-test');
    await redis.connect();
    const hangs: string[] = [];
    const deps = new Dependencies({ databaseUrl: `${PG_BASE}/postgres`, redis, log, timeoutMs: 100, onHang: (name) => hangs.push(name) });
    try {
      expect(await deps.probe('postgres')).toBe(true); // its connection made; the next probes are one SELECT 1 each
      for (let i = 0; i < 2; i++) {
        const probes = Promise.all([deps.probe('redis'), deps.probe('postgres')]);
        busyFor(400);
        expect(await probes).toEqual([true, true]);
      }
      expect(hangs).toEqual([]);
      expect(deps.allUp).toBe(true);
    } finally {
      deps.stop();
      redis.disconnect();
    }
  });

  it('still takes a PostgreSQL that accepts connections and never answers for hung', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'probe-test');
    await redis.connect();
    const hangs: string[] = [];
    const { port } = silent.address() as AddressInfo;
    const deps = new Dependencies({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/postgres`, redis, log, timeoutMs: 100, onHang: (name) => hangs.push(name) });
    try {
      expect(await deps.probe('postgres')).toBe(false);
      expect(await deps.probe('postgres')).toBe(false);
      expect(hangs).toEqual(['postgres']); // two unanswered in a row
      expect(deps.isUp('postgres')).toBe(false);
    } finally {
      deps.stop();
      redis.disconnect();
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});
