import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { listRelays } from '../../storage/relays.ts';
import { addRelay, RelayInputError, removeRelay } from '../../services/relays.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const NOTICES: Record<string, string> = {
  added: 'The relay is added: the Follow is sent within a minute, and the relay\'s answer shows here.',
  removed: 'The relay is removed; the Undo of our Follow is sent if one was followed.',
};
const UrlForm = Type.Object({ url: Type.String({ maxLength: 2048 }) });

/** Relays (Mastodon's Administration > Relays), over the services `npm run cli -- relay …` uses; manage_federation. */
export default async function adminRelaysRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps = { db: ctx.db, redis: ctx.redis, config: ctx.config };

  const page = async (request: FastifyRequest, reply: FastifyReply, notice: string, error: string, status = 200, typed = '') =>
    sendFormPage(ctx, request, reply, 'admin/relays', 'Relays', { relays: await listRelays(ctx.db), typed, notice, error }, status);

  app.get('/admin/relays', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return page(request, reply, (request.query.notice && NOTICES[request.query.notice]) || '', '');
  });

  app.post('/admin/relays', { schema: { body: UrlForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      await addRelay(deps, request.body.url.trim(), me.account.id);
    } catch (err) {
      if (err instanceof RelayInputError) return page(request, reply, '', `Not added: ${err.message}.`, 422, request.body.url);
      throw err;
    }
    return reply.redirect('/admin/relays?notice=added', 303);
  });

  app.post('/admin/relays/remove', { schema: { body: UrlForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      await removeRelay(deps, request.body.url, me.account.id);
    } catch (err) {
      if (err instanceof RelayInputError) return page(request, reply, '', `Not removed: ${err.message}.`, 404);
      throw err;
    }
    return reply.redirect('/admin/relays?notice=removed', 303);
  });
}
