// The baseline: a bare Fastify route answering with fixed bytes (the same page the real route served).
// BARRIER=1: each answer first waits, as a page served from memory does, for the client tracking's sync (a PING
// to Redis per batch of requests: storage/key-tracking.ts). CONTENT_TYPE: the answer's (JSON unless told).
import Fastify from 'fastify';
import { readFileSync } from 'node:fs';
import { createKeyTracking } from '../storage/redis.ts';

const body = readFileSync(process.env.BODY_FILE!);
const app = Fastify();
const tracking = process.env.BARRIER ? createKeyTracking(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bench-bare') : null;
if (tracking && !(await tracking.start())) throw new Error('no client tracking');
app.get('/api/v1/timelines/home', async (_req, reply) => {
  if (tracking && !(await tracking.sync())) throw new Error('not synced');
  return reply.type(process.env.CONTENT_TYPE ?? 'application/json; charset=utf-8').send(body);
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.send?.('ready');
