import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { isId } from '../../storage/ids.ts';
import { domainAllowsPage, domainBlocksPage, findDomainBlock, type DomainSeverity } from '../../storage/instance-domain-blocks.ts';
import {
  COMMENT_LIMIT, createDomainAllow, createDomainBlock, deleteDomainAllow, deleteDomainBlock, SEVERITIES, updateDomainBlock, type DomainBlockInput,
} from '../../services/domain-blocks.ts';
import {
  confirmDomainBlockImport, CONFIRM_PAGE_ROWS, domainAllowsCsv, domainBlocksCsv, importDomainAllows, startDomainBlockImport, type ImportOutcome, type ImportPage,
} from '../../services/domain-block-csv.ts';
import { adminDomainDeps } from '../api/v1/admin/domain_allows.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';

const PAGE = 100;
const NOTICES: Record<string, string> = {
  blocked: 'The domain is blocked; its accounts here are being changed to match.',
  changed: 'The block is changed.',
  unblocked: 'The block is lifted.',
  allowed: 'The domain is allowed.',
  disallowed: 'The domain is no longer allowed.',
};
const ListQuery = Type.Object({ max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })), notice: Type.Optional(Type.String({ maxLength: 40 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Box = Type.Optional(Type.String({ maxLength: 5 }));
const BlockForm = Type.Object({
  domain: Type.Optional(Type.String({ maxLength: 300 })),
  severity: Type.String({ maxLength: 20 }),
  reject_media: Box, reject_reports: Box, obfuscate: Box,
  public_comment: Type.Optional(Type.String({ maxLength: COMMENT_LIMIT + 100 })),
  private_comment: Type.Optional(Type.String({ maxLength: COMMENT_LIMIT + 100 })),
});

/** The import's confirmation: its token and the rows ticked (a list, or an object of them past qs's array limit). */
const ConfirmForm = Type.Object({
  token: Type.String({ maxLength: 64 }),
  apply: Type.Optional(Type.Union([
    Type.String({ maxLength: 8 }), Type.Array(Type.String({ maxLength: 8 }), { maxItems: CONFIRM_PAGE_ROWS }),
    Type.Record(Type.String({ maxLength: 8 }), Type.String({ maxLength: 8 }), { maxProperties: CONFIRM_PAGE_ROWS }),
  ])),
});

type BlockFields = { severity: string; reject_media?: string | undefined; reject_reports?: string | undefined; obfuscate?: string | undefined; public_comment?: string | undefined; private_comment?: string | undefined };
const inputOf = (b: BlockFields): DomainBlockInput => ({
  severity: b.severity as DomainSeverity, reject_media: b.reject_media === '1', reject_reports: b.reject_reports === '1', obfuscate: b.obfuscate === '1',
  public_comment: b.public_comment ?? null, private_comment: b.private_comment ?? null,
});

/**
 * The operators' pages of domain blocks and allows (Mastodon's Admin::DomainBlocksController, DomainAllowsController
 * and their CSV export and import), over the same services as /api/v1/admin/domain_blocks and domain_allows.
 */
export default async function adminDomainPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps = adminDomainDeps(ctx);

  const blocksPage = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: string; error?: string; outcome?: ImportOutcome | null; maxId?: string | undefined }, status = 200) => {
    const rows = await domainBlocksPage(ctx.db, { limit: PAGE + 1, maxId: extra.maxId });
    const page = rows.slice(0, PAGE);
    return sendFormPage(ctx, request, reply, 'admin/domain-blocks', 'Domain blocks', {
      blocks: page, severities: SEVERITIES, outcome: extra.outcome ?? null,
      nextPage: rows.length > PAGE ? `/admin/domain_blocks?max_id=${page.at(-1)!.id}` : '',
      notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  };

  const allowsPage = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: string; error?: string; outcome?: ImportOutcome | null; maxId?: string | undefined }, status = 200) => {
    const rows = await domainAllowsPage(ctx.db, { limit: PAGE + 1, maxId: extra.maxId });
    const page = rows.slice(0, PAGE);
    return sendFormPage(ctx, request, reply, 'admin/domain-allows', 'Allowed domains', {
      allows: page, limited: ctx.config.limitedFederationMode, outcome: extra.outcome ?? null,
      nextPage: rows.length > PAGE ? `/admin/domain_allows?max_id=${page.at(-1)!.id}` : '',
      notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  };

  app.get('/admin/domain_blocks', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return blocksPage(request, reply, { notice: (request.query.notice && NOTICES[request.query.notice]) || '', maxId: request.query.max_id });
  });

  app.post('/admin/domain_blocks', { schema: { body: BlockForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      const result = await createDomainBlock(deps, request.body.domain, inputOf(request.body), me.account.id);
      if ('existing' in result) throw new ApiError(422, `${result.existing.domain} is blocked already (${result.existing.severity}); change that block instead.`);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return blocksPage(request, reply, { error: err.message.replace(/^Validation failed: /, '') }, 422);
      throw err;
    }
    return reply.redirect('/admin/domain_blocks?notice=blocked', 303);
  });

  // The CSV export: every block, in Mastodon's columns.
  app.get('/admin/domain_blocks/export', async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="domain_blocks.csv"')
      .header('cache-control', 'private, no-store').send(await domainBlocksCsv(ctx.db));
  });

  const importPage = (request: FastifyRequest, reply: FastifyReply, page: ImportPage) =>
    sendFormPage(ctx, request, reply, 'admin/domain-blocks-import', 'Confirm the import of domain blocks', { ...page, pageRows: CONFIRM_PAGE_ROWS });

  // A multipart form with the file (request.uploads), as an export of this server's or Mastodon's. Nothing is
  // blocked yet: the page lists what the file would block, with the blocks here it meets, to tick and confirm.
  app.post('/admin/domain_blocks/import', async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const upload = request.uploads?.file;
    if (!upload || upload.data.length === 0) return blocksPage(request, reply, { error: 'Choose a CSV file to import.' }, 422);
    try {
      return importPage(request, reply, await startDomainBlockImport(deps, upload.data.toString('utf8'), me.account.id));
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return blocksPage(request, reply, { error: err.message }, 422);
      throw err;
    }
  });

  // The confirmation of one page of the import: the rows ticked are applied; the next page, or the outcome.
  app.post('/admin/domain_blocks/import/confirm', { schema: { body: ConfirmForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const apply = request.body.apply;
    const ticked = apply === undefined ? [] : typeof apply === 'string' ? [apply] : Object.values(apply);
    try {
      const result = await confirmDomainBlockImport(deps, request.body.token, ticked, me.account.id);
      if ('next' in result) return importPage(request, reply, result.next);
      const o = result.outcome;
      return blocksPage(request, reply, { notice: `Imported: ${o.added.length} added, ${o.changed.length} changed, ${o.existing.length} already blocked or left as they were, ${o.invalid.length} skipped.`, outcome: o });
    } catch (err) {
      if (err instanceof ApiError && (err.statusCode === 422 || err.statusCode === 404)) return blocksPage(request, reply, { error: err.message }, err.statusCode);
      throw err;
    }
  });

  app.get('/admin/domain_blocks/:id', { schema: { params: IdParams } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const block = isId(request.params.id) ? await findDomainBlock(ctx.db, request.params.id) : null;
    if (!block) return refusedPage(ctx, request, reply, gone(), '/admin/domain_blocks');
    return sendFormPage(ctx, request, reply, 'admin/domain-block', `Block of ${block.domain}`, { block, severities: SEVERITIES, notice: '', error: '' });
  });

  app.post('/admin/domain_blocks/:id', { schema: { params: IdParams, body: BlockForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      const { domain: _ignored, ...fields } = request.body;
      const block = isId(request.params.id) ? await updateDomainBlock(deps, request.params.id, inputOf(fields), me.account.id) : null;
      if (!block) throw gone();
    } catch (err) {
      return refusedPage(ctx, request, reply, err, `/admin/domain_blocks/${request.params.id}`);
    }
    return reply.redirect('/admin/domain_blocks?notice=changed', 303);
  });

  app.post('/admin/domain_blocks/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const block = isId(request.params.id) ? await deleteDomainBlock(deps, request.params.id, me.account.id) : null;
    if (!block) return refusedPage(ctx, request, reply, gone(), '/admin/domain_blocks');
    return reply.redirect('/admin/domain_blocks?notice=unblocked', 303);
  });

  app.get('/admin/domain_allows', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return allowsPage(request, reply, { notice: (request.query.notice && NOTICES[request.query.notice]) || '', maxId: request.query.max_id });
  });

  app.post('/admin/domain_allows', { schema: { body: Type.Object({ domain: Type.String({ maxLength: 300 }) }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      await createDomainAllow(deps, request.body.domain, me.account.id);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return allowsPage(request, reply, { error: err.message.replace(/^Validation failed: /, '') }, 422);
      throw err;
    }
    return reply.redirect('/admin/domain_allows?notice=allowed', 303);
  });

  app.get('/admin/domain_allows/export', async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="domain_allows.csv"')
      .header('cache-control', 'private, no-store').send(await domainAllowsCsv(ctx.db));
  });

  app.post('/admin/domain_allows/import', async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const upload = request.uploads?.file;
    if (!upload || upload.data.length === 0) return allowsPage(request, reply, { error: 'Choose a CSV file to import.' }, 422);
    try {
      const outcome = await importDomainAllows(deps, upload.data.toString('utf8'), me.account.id);
      return allowsPage(request, reply, { notice: `Imported: ${outcome.added.length} added, ${outcome.existing.length} already allowed, ${outcome.invalid.length} skipped.`, outcome });
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return allowsPage(request, reply, { error: err.message }, 422);
      throw err;
    }
  });

  app.post('/admin/domain_allows/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const allow = isId(request.params.id) ? await deleteDomainAllow(deps, request.params.id, me.account.id) : null;
    if (!allow) return refusedPage(ctx, request, reply, gone(), '/admin/domain_allows');
    return reply.redirect('/admin/domain_allows?notice=disallowed', 303);
  });
}
