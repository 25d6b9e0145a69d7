// The baseline: a bare Fastify route answering with fixed bytes (the same page the real route served).
import Fastify from 'fastify';
import { readFileSync } from 'node:fs';

const body = readFileSync(process.env.BODY_FILE!);
const app = Fastify();
app.get('/api/v1/timelines/home', async (_req, reply) => reply.type('application/json; charset=utf-8').send(body));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.send?.('ready');
