import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { blocksPage, domainBlocksPage, mutesPage } from '../../storage/blocks.ts';
import { normalizeDomain } from '../../services/blocks.ts';
import { withAccountEmojis } from '../../services/custom-emojis.ts';
import { ApiError } from '../../errors.ts';
import { renderAccount } from '../serializers/account.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import { pagingOf, sendClientPage } from './client-page.ts';
import { refused, signedInForForm } from './client-actions.ts';
import { accountView, dateView } from './page-view.ts';
import type { SignedIn } from './session.ts';

/** Accounts a page, as GET /api/v1/mutes and /blocks by default; domains a page, as GET /api/v1/domain_blocks. */
const ACCOUNTS_PER_PAGE = 40;
const DOMAINS_PER_PAGE = 100;

const DomainForm = Type.Object({ domain: Type.Optional(Type.String({ maxLength: 300 })) });

/** Links to the next older page of a list paged by its rows' ids, as the API's Link header. */
function pagerOf(path: string, lastId: string | null, full: boolean, newer: boolean) {
  return { older: full && lastId ? `${path}?max_id=${lastId}` : null, newer: newer ? path : null };
}

/**
 * The accounts a person muted and blocked, with Unmute and Unblock (the profile's forms, coming back here), and the
 * servers they blocked, with a form to block one and Unblock on each: as GET /api/v1/mutes, /blocks and
 * /api/v1/domain_blocks list them and POST and DELETE /api/v1/domain_blocks change them, through the person's account
 * actor and the services those routes use.
 */
export default async function clientBlockRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/mutes', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const p = { ...pagingOf(request), minId: undefined, limit: ACCOUNTS_PER_PAGE };
    const page = await mutesPage(ctx.db, me.account.id, p);
    await withAccountEmojis(ctx.db, page.entries.map((e) => e.account));
    const accounts = page.entries.map((e) => ({
      ...accountView(ctx.render, renderAccount(ctx.render, e.account)),
      until: e.expiresAt ? dateView(e.expiresAt) : null,
      hidesNotifications: e.hidesNotifications,
    }));
    return sendClientPage(ctx, request, reply, 'client/mutes', { key: 'mutes.title' }, {
      accounts, older: !!p.maxId, pager: pagerOf('/mutes', page.lastId, page.entries.length >= ACCOUNTS_PER_PAGE, !!p.maxId),
    });
  });

  app.get('/blocks', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const p = { ...pagingOf(request), minId: undefined, limit: ACCOUNTS_PER_PAGE };
    const page = await blocksPage(ctx.db, me.account.id, p);
    await withAccountEmojis(ctx.db, page.entries.map((e) => e.account));
    const accounts = page.entries.map((e) => accountView(ctx.render, renderAccount(ctx.render, e.account)));
    return sendClientPage(ctx, request, reply, 'client/blocks', { key: 'blocks.title' }, {
      accounts, older: !!p.maxId, pager: pagerOf('/blocks', page.lastId, page.entries.length >= ACCOUNTS_PER_PAGE, !!p.maxId),
    });
  });

  async function domainsPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, form = { domain: '', error: '' }, status = 200) {
    const p = { ...(request.method === 'GET' ? pagingOf(request) : { maxId: undefined }), minId: undefined, limit: DOMAINS_PER_PAGE };
    const page = await domainBlocksPage(ctx.db, me.account.id, p);
    return sendClientPage(ctx, request, reply, 'client/domain_blocks', { key: 'domain_blocks.title' }, {
      domains: page.entries, older: !!p.maxId, form, pagePath: '/domain_blocks',
      pager: pagerOf('/domain_blocks', page.lastId, page.entries.length >= DOMAINS_PER_PAGE, !!p.maxId),
    }, status);
  }

  app.get('/domain_blocks', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    return domainsPage(request, reply, me);
  });

  // As POST and DELETE /api/v1/domain_blocks: the domain as typed (a bare host or a pasted link), normalised by the
  // API's rule; an invalid one, or this server, brings the page back with why (422).
  for (const [path, how] of [['/domain_blocks', 'blockDomain'], ['/domain_blocks/remove', 'unblockDomain']] as const) {
    app.post(path, { schema: { body: DomainForm } }, async (request, reply) => {
      const me = await signedInForForm(request, reply, '/domain_blocks');
      if (!me) return reply;
      const typed = request.body.domain ?? '';
      try {
        await ctx.actors.ask(me.account.id, { type: how, domain: normalizeDomain(typed) });
      } catch (err) {
        if (err instanceof ApiError && err.statusCode === 422) {
          const error = formError(await translatorOf(ctx, request), err);
          return domainsPage(request, reply, me, { domain: how === 'blockDomain' ? typed : '', error }, 422);
        }
        return refused(ctx, request, reply, err, '/domain_blocks');
      }
      return reply.redirect('/domain_blocks', 303);
    });
  }
}
