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
  applyDomainBlockImport, CSV_ROWS_MAX, domainAllowsCsv, domainBlocksCsv, importDomainAllows, previewDomainBlockImport, proposedBlock, type ImportOutcome, type ProposedBlock,
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

/** One field of every row of the import's confirmation form: a string for one row, an array for more. */
const Column = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Array(Type.String({ maxLength }), { maxItems: CSV_ROWS_MAX })]));
const ConfirmForm = Type.Object({
  domain: Column(300), severity: Column(20), reject_media: Column(5), reject_reports: Column(5), obfuscate: Column(5),
  public_comment: Column(COMMENT_LIMIT + 100), apply: Column(6),
});
const column = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

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

  // A multipart form with the file (request.uploads), as an export of this server's or Mastodon's. Nothing is
  // blocked yet: the page lists what the file would block, with the blocks here it meets, to tick and confirm.
  app.post('/admin/domain_blocks/import', async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const upload = request.uploads?.file;
    if (!upload || upload.data.length === 0) return blocksPage(request, reply, { error: 'Choose a CSV file to import.' }, 422);
    try {
      const preview = await previewDomainBlockImport(deps, upload.data.toString('utf8'));
      return sendFormPage(ctx, request, reply, 'admin/domain-blocks-import', 'Confirm the import of domain blocks', preview);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return blocksPage(request, reply, { error: err.message }, 422);
      throw err;
    }
  });

  // The confirmation: the rows ticked, each read again as a row of the file (what the form carries is checked anew).
  app.post('/admin/domain_blocks/import/confirm', { schema: { body: ConfirmForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const b = request.body;
    const [domains, severities, media, reports, obfuscate, comments] = [b.domain, b.severity, b.reject_media, b.reject_reports, b.obfuscate, b.public_comment].map(column) as [string[], string[], string[], string[], string[], string[]];
    const ticked = [...new Set(column(b.apply))];
    const blocks: ProposedBlock[] = [];
    const invalid: { line: number; why: string }[] = [];
    for (const t of ticked) {
      const i = /^\d{1,5}$/.test(t) ? Number(t) : -1;
      if (!(i >= 0 && i < domains.length)) return blocksPage(request, reply, { error: 'The confirmation names a row it does not carry: import the file again.' }, 422);
      try {
        blocks.push(proposedBlock({
          '#domain': domains[i], '#severity': severities[i], '#reject_media': media[i], '#reject_reports': reports[i], '#obfuscate': obfuscate[i], '#public_comment': comments[i],
        }));
      } catch (err) {
        if (err instanceof ApiError && err.statusCode === 422) invalid.push({ line: i + 1, why: `${domains[i] ?? ''}: ${err.message.replace(/^Validation failed: /, '')}` });
        else throw err;
      }
    }
    if (blocks.length === 0 && invalid.length === 0) return blocksPage(request, reply, { error: 'No block was ticked: nothing was imported.' }, 422);
    const outcome = { ...(await applyDomainBlockImport(deps, blocks, me.account.id)), invalid };
    return blocksPage(request, reply, {
      notice: `Imported: ${outcome.added.length} added, ${outcome.changed.length} changed, ${outcome.existing.length} already blocked, ${outcome.invalid.length} skipped.`, outcome,
    });
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
