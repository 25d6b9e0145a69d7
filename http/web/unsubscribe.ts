import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { readUnsubscribeToken, unsubscribe, type UnsubscribeKind } from '../../services/notification-emails.ts';
import { sendFormPage, sendMessagePage, translatorOf } from './page.ts';

// What each link stops, as message keys.
const WHAT: Record<UnsubscribeKind, string> = {
  mention: 'unsubscribe.mention', direct: 'unsubscribe.direct', follow: 'unsubscribe.follow',
  follow_request: 'unsubscribe.follow_request', favourite: 'unsubscribe.favourite', reblog: 'unsubscribe.reblog', digest: 'unsubscribe.digest',
};

const Token = Type.Object({ token: Type.Optional(Type.String({ maxLength: 200 })) });

/**
 * The link in every notification mail, working without signing in (Mastodon's UnsubscriptionsController): GET asks
 * before it acts (a link scanner that follows links must not unsubscribe anyone), POST unsubscribes, from the page's
 * button or from a mail client's one-click request (RFC 8058: `List-Unsubscribe=One-Click` posted to the header's URL).
 */
export default async function unsubscribePageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const refused = (request: FastifyRequest, reply: FastifyReply) => sendMessagePage(ctx, request, reply, { key: 'unsubscribe.title' }, { key: 'unsubscribe.invalid' }, {
    status: 404, kind: 'error', link: { href: '/settings/preferences/notifications', text: { key: 'unsubscribe.settings' } },
  });

  app.get('/unsubscribe', { schema: { querystring: Token } }, async (request, reply) => {
    const token = request.query.token ?? '';
    const found = readUnsubscribeToken(ctx.config, token);
    if (!found) return refused(request, reply);
    return sendFormPage(ctx, request, reply, 'unsubscribe', { key: 'unsubscribe.title' }, { token, what: WHAT[found.kind] });
  });

  app.post('/unsubscribe', {
    config: { signedLink: true },
    // The page's form sends the token in the body; a mail client posts to the header's URL, the token in its query.
    schema: {
      querystring: Token,
      body: Type.Optional(Type.Object({ token: Type.Optional(Type.String({ maxLength: 200 })), 'List-Unsubscribe': Type.Optional(Type.String({ maxLength: 20 })) })),
    },
  }, async (request, reply) => {
    const body = request.body as Record<string, string | undefined> | undefined;
    const done = await unsubscribe(ctx, body?.token ?? request.query.token ?? '');
    if (!done) return refused(request, reply);
    // A mail client's one-click request is answered at once; the page's form, as every form, with a redirect.
    if (body?.['List-Unsubscribe'] === 'One-Click') return reply.code(200).type('text/plain; charset=utf-8').send('Unsubscribed.');
    return reply.redirect(`/unsubscribe/done/${done.kind}`, 303);
  });

  app.get<{ Params: { kind: string } }>('/unsubscribe/done/:kind', async (request, reply) => {
    const kind = request.params.kind as UnsubscribeKind;
    if (!Object.hasOwn(WHAT, kind)) return refused(request, reply);
    const t = await translatorOf(ctx, request);
    return sendMessagePage(ctx, request, reply, { key: 'unsubscribe.done_title' }, t('unsubscribe.done', { what: t(WHAT[kind]) }), {
      link: { href: '/settings/preferences/notifications', text: { key: 'unsubscribe.choose' } },
    });
  });
}
