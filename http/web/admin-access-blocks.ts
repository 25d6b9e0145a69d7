import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { isId } from '../../storage/ids.ts';
import { emailDomainBlocksPage, ipBlocksPage } from '../../storage/admin-blocks.ts';
import { createEmailDomainBlock, createIpBlock, IP_SEVERITIES, removeEmailDomainBlock, removeIpBlock } from '../../services/admin-blocks.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';

const PAGE = 100;
const NOTICES: Record<string, string> = {
  ip_added: 'The rule is added.',
  ip_removed: 'The rule is removed.',
  email_added: 'Sign-ups with addresses at that domain are refused.',
  email_removed: 'The e-mail domain is no longer blocked.',
};
/** Mastodon's choices of a rule's lifetime, in seconds (empty: for ever). */
const LIFETIMES: readonly [string, string][] = [
  ['', 'Never'], ['86400', '1 day'], ['1209600', '2 weeks'], ['2592000', '1 month'], ['15552000', '6 months'], ['31536000', '1 year'],
];
const ListQuery = Type.Object({ max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })), notice: Type.Optional(Type.String({ maxLength: 40 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const noticeOf = (key: string | undefined) => (key && NOTICES[key]) || '';
const refusal = (err: unknown) => {
  if (err instanceof ApiError && err.statusCode === 422) return err.message.replace(/^Validation failed: /, '');
  throw err;
};

/**
 * The operators' pages of IP rules and e-mail domain blocks (Mastodon's Admin::IpBlocksController and
 * EmailDomainBlocksController), over the same services as /api/v1/admin/ip_blocks and email_domain_blocks.
 */
export default async function adminAccessBlockPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  const ipPage = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: string; error?: string; maxId?: string | undefined }, status = 200) => {
    const rows = await ipBlocksPage(ctx.db, { limit: PAGE + 1, maxId: extra.maxId });
    const page = rows.slice(0, PAGE);
    return sendFormPage(ctx, request, reply, 'admin/ip-blocks', 'IP rules', {
      blocks: page, severities: IP_SEVERITIES, lifetimes: LIFETIMES,
      nextPage: rows.length > PAGE ? `/admin/ip_blocks?max_id=${page.at(-1)!.id}` : '', notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  };

  const emailPage = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: string; error?: string; maxId?: string | undefined }, status = 200) => {
    const rows = await emailDomainBlocksPage(ctx.db, { limit: PAGE + 1, maxId: extra.maxId });
    const page = rows.slice(0, PAGE);
    return sendFormPage(ctx, request, reply, 'admin/email-domain-blocks', 'E-mail domain blocks', {
      blocks: page, nextPage: rows.length > PAGE ? `/admin/email_domain_blocks?max_id=${page.at(-1)!.id}` : '', notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  };

  app.get('/admin/ip_blocks', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return ipPage(request, reply, { notice: noticeOf(request.query.notice), maxId: request.query.max_id });
  });

  app.post('/admin/ip_blocks', {
    schema: { body: Type.Object({ ip: Type.String({ maxLength: 64 }), severity: Type.String({ maxLength: 40 }), comment: Type.Optional(Type.String({ maxLength: 1000 })), expires_in: Type.Optional(Type.String({ maxLength: 12 })) }) },
  }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const b = request.body;
    try {
      await createIpBlock(ctx.db, { ip: b.ip, severity: b.severity, comment: b.comment ?? '', expires_in: b.expires_in || null }, me.account.id);
    } catch (err) {
      return ipPage(request, reply, { error: refusal(err) }, 422);
    }
    return reply.redirect('/admin/ip_blocks?notice=ip_added', 303);
  });

  app.post('/admin/ip_blocks/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const row = isId(request.params.id) ? await removeIpBlock(ctx.db, request.params.id, me.account.id) : null;
    if (!row) return refusedPage(ctx, request, reply, gone(), '/admin/ip_blocks');
    return reply.redirect('/admin/ip_blocks?notice=ip_removed', 303);
  });

  app.get('/admin/email_domain_blocks', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return emailPage(request, reply, { notice: noticeOf(request.query.notice), maxId: request.query.max_id });
  });

  app.post('/admin/email_domain_blocks', { schema: { body: Type.Object({ domain: Type.String({ maxLength: 300 }) }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      await createEmailDomainBlock(ctx.db, request.body.domain, me.account.id);
    } catch (err) {
      return emailPage(request, reply, { error: refusal(err) }, 422);
    }
    return reply.redirect('/admin/email_domain_blocks?notice=email_added', 303);
  });

  app.post('/admin/email_domain_blocks/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const row = isId(request.params.id) ? await removeEmailDomainBlock(ctx.db, request.params.id, me.account.id) : null;
    if (!row) return refusedPage(ctx, request, reply, gone(), '/admin/email_domain_blocks');
    return reply.redirect('/admin/email_domain_blocks?notice=email_removed', 303);
  });
}
