import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isId } from '../params.ts';
import { findNotification } from '../../storage/notifications.ts';
import { safeReturnTo } from './auth.ts';
import { notificationViews } from './client-pages.ts';
import type { ClientForms } from './client-page.ts';
import { clientEntries } from './client-view.ts';
import { renderFragment } from './views.ts';
import { pageLocale } from './i18n.ts';

const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Query = Type.Object({
  context: Type.Optional(Type.String({ maxLength: 20 })),
  return_to: Type.Optional(Type.String({ maxLength: 4000 })),
});
/** Where a post is shown, for the viewer's filters: as on the page that asks. */
const CONTEXTS = { home: 'home', public: 'public', list: 'list', thread: 'thread', account: 'account' } as const;

function fragment(reply: FastifyReply, html: string): FastifyReply {
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').header('vary', 'Cookie').send(html);
}

/**
 * Parts of the signed-in pages by themselves, for the script that shows new posts and notifications as the
 * streaming API announces them (http/public/assets/client.js): the same templates and the same `loadForViewer` as the
 * pages, so what is escaped, filtered or left out is decided in one place. A post the person may not see, or that a
 * filter hides, is a 404, as is someone else's notification; a stranger gets 401.
 */
export default async function clientLiveRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const formsOf = (reply: FastifyReply, returnTo: string | undefined): ClientForms => ({
    csrf: reply.generateCsrf(),
    returnTo: returnTo ? safeReturnTo(returnTo, ctx.config.publicUrl).replace(/#.*$/, '') : '/home',
  });

  app.get('/statuses/:id/entry', { schema: { params: IdParams, querystring: Query } }, async (request, reply) => {
    const me = await request.signedIn();
    if (!me) return reply.code(401).type('text/plain').send('Sign in first.');
    const context = CONTEXTS[request.query.context as keyof typeof CONTEXTS] ?? null;
    const [entry] = isId(request.params.id) ? await clientEntries(ctx, me.account.id, [request.params.id], context) : [];
    if (!entry) return reply.code(404).type('text/plain').send('Not found.');
    return fragment(reply, renderFragment('client/entry', { entry, client: formsOf(reply, request.query.return_to) }, pageLocale(request, me.user, ctx.config.instanceLanguages)));
  });

  app.get('/notifications/:id/entry', { schema: { params: IdParams, querystring: Query } }, async (request, reply) => {
    const me = await request.signedIn();
    if (!me) return reply.code(401).type('text/plain').send('Sign in first.');
    const row = isId(request.params.id) ? await findNotification(ctx.db, me.account.id, request.params.id) : null;
    const [n] = row && !row.filtered ? await notificationViews(ctx, me.account.id, [row]) : [];
    if (!n) return reply.code(404).type('text/plain').send('Not found.');
    return fragment(reply, renderFragment('client/notification-entry', { n, client: formsOf(reply, request.query.return_to ?? '/notifications') }, pageLocale(request, me.user, ctx.config.instanceLanguages)));
  });
}
