// `npm run bench:posting-floor`: figures printed, not asserted. What this machine allows a post to cost with the
// stack DESIGN.md names, without any of this server's own work: a bare Fastify route in a process of its own, asked
// by 32 connections for 10 s (autocannon, as `npm run bench:posting`), doing in turn
//  1. nothing (answers `{}`);
//  2. one committed single-row INSERT through `pg` (a pool of 20), the least a post must write;
//  3. that INSERT and one BullMQ job added and run by a worker in the same process (concurrency 16), as each post's
//     fan-out is.
// Against `bench:posting`'s figures, this says how much of a post's cost is the stack's floor and how much is ours.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';

const PORT = 3970;
const CONNECTIONS = 32;
const SECONDS = Number(process.env.BENCH_FLOOR_SECONDS ?? 10);
const MODES = ['bare', 'insert', 'insert+job'] as const;
type Mode = (typeof MODES)[number];

async function child(mode: Mode, databaseUrl: string, redisUrl: string, prefix: string): Promise<void> {
  const { default: Fastify } = await import('fastify');
  const pg = await import('pg');
  const { Queue, Worker } = await import('bullmq');
  const { Redis } = await import('ioredis');
  const pool = new pg.default.Pool({ connectionString: databaseUrl, max: 20 });
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('floor', { connection, prefix, defaultJobOptions: { removeOnComplete: true } });
  const worker = mode === 'insert+job' ? new Worker('floor', async () => undefined, { connection: new Redis(redisUrl, { maxRetriesPerRequest: null }), prefix, concurrency: 16 }) : null;
  const app = Fastify();
  app.post('/post', async (request) => {
    if (mode === 'bare') return {};
    const { rows } = await pool.query<{ id: string }>('INSERT INTO floor_posts (account_id, text) VALUES ($1, $2) RETURNING id', [1, JSON.stringify(request.body)]);
    if (mode === 'insert+job') await queue.add('post', { id: rows[0]!.id });
    return { id: rows[0]!.id };
  });
  await app.listen({ port: PORT, host: '127.0.0.1' });
  process.send!('ready');
  process.on('message', async () => {
    await app.close();
    await worker?.close();
    await queue.close();
    await pool.end();
    connection.disconnect();
    process.exit(0);
  });
}

async function main(): Promise<void> {
  const { ensureDatabase, dropDatabase } = await import('../storage/db.ts');
  const { deleteKeysWithPrefix } = await import('../storage/redis.ts');
  const pg = await import('pg');
  const { Redis } = await import('ioredis');
  const tag = randomBytes(3).toString('hex');
  const databaseUrl = `postgres://postgres@127.0.0.1:5432/fedi_floor_${tag}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `fedi_floor_${tag}`;
  await ensureDatabase(databaseUrl);
  const db = new pg.default.Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query('CREATE TABLE floor_posts (id bigserial PRIMARY KEY, account_id bigint NOT NULL, text text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  await db.end();
  console.log(`the stack's floor for a post: ${CONNECTIONS} connections, ${SECONDS} s each, the route in a process of its own`);
  try {
    for (const mode of MODES) {
      const server = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, BENCH_FLOOR_CHILD: mode, BENCH_FLOOR_DB: databaseUrl, BENCH_FLOOR_PREFIX: prefix } });
      await new Promise((r) => server.once('message', r));
      const result = await autocannon({
        url: `http://127.0.0.1:${PORT}/post`, method: 'POST', connections: CONNECTIONS, duration: SECONDS,
        headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'A post about the #fediverse, long enough to look like one.' }),
      });
      server.send('stop');
      await new Promise((r) => server.once('exit', r));
      console.log(`  ${mode.padEnd(10)} ${Math.round(result['2xx'] / SECONDS)} requests/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms${result.non2xx + result.errors ? `, ${result.non2xx + result.errors} failed` : ''}`);
    }
  } finally {
    await dropDatabase(databaseUrl).catch(() => {});
    const redis = new Redis(redisUrl);
    await deleteKeysWithPrefix(redis, prefix).catch(() => {});
    redis.disconnect();
  }
}

if (process.env.BENCH_FLOOR_CHILD) {
  await child(process.env.BENCH_FLOOR_CHILD as Mode, process.env.BENCH_FLOOR_DB!, process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', process.env.BENCH_FLOOR_PREFIX!);
} else {
  await main();
}
