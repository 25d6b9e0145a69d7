import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { createImport, ImportFormError, IMPORT_TYPES, ROWS_PROCESSING_LIMIT, FILE_SIZE_LIMIT } from '../../services/imports.ts';
import { countFailedRows, failedRows, findAccountImport, recentImports, type ImportRow } from '../../storage/imports.ts';
import { findAccountById } from '../../storage/accounts.ts';
import type { SignedIn } from './session.ts';
import { sendFormPage, signedInOrRedirect, translatorOf } from './page.ts';
import { serviceMessage } from './service-errors.ts';

/** Failed rows listed on an import's page (the count says how many there are in all). */
const FAILURES_SHOWN = 500;
const RECENT_SHOWN = 10;

/** The message key of a kind of import (`import.kind.following`…). */
const typeKey = (type: string) => `import.kind.${type}`;

/** An import as the page shows it. */
async function viewOf(ctx: RouteOptions['ctx'], i: ImportRow) {
  return {
    // Message keys of the words the page shows for the kind, mode and state.
    id: i.id, type: typeKey(i.type), mode: i.overwrite ? 'import.overwrite' : 'import.merge', filename: i.original_filename,
    state: i.state === 'finished' ? 'import.finished' : i.state === 'scheduled' ? 'import.waiting' : 'import.in_progress', finished: i.state === 'finished',
    total: i.total_items, processed: i.processed_items, imported: i.imported_items, failed: await countFailedRows(ctx.db, i.id),
    createdAt: i.created_at,
  };
}

/** /settings/import: uploading Mastodon's (or GoToSocial's) CSV exports, and the progress of one's imports. */
export default async function importPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function importPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { error?: string; notice?: string; form?: { type: string; mode: string } } = {}, status = 200) {
    const recent = await Promise.all((await recentImports(ctx.db, me.account.id, RECENT_SHOWN)).map((i) => viewOf(ctx, i)));
    return sendFormPage(ctx, request, reply, 'settings/import', { key: 'settings.import' }, {
      types: IMPORT_TYPES.map((t) => ({ value: t, label: typeKey(t) })), recent, detail: null, failures: [],
      form: extra.form ?? { type: 'following', mode: 'merge' }, rowLimit: ROWS_PROCESSING_LIMIT, sizeLimitMb: FILE_SIZE_LIMIT / 1024 / 1024,
      notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  }

  app.get('/settings/import', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && importPage(request, reply, me);
  });

  // A multipart form: the file comes in request.uploads (http/plugins/body.ts), the choices in the body.
  app.post('/settings/import', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const form = { type: typeof body.type === 'string' ? body.type.slice(0, 40) : '', mode: typeof body.mode === 'string' ? body.mode.slice(0, 20) : 'merge' };
    const upload = request.uploads?.data;
    try {
      // Fresh counts: the follow limit is checked against what the account follows now.
      const account = (await findAccountById(ctx.db, me.account.id)) ?? me.account;
      const created = await createImport(ctx, account, { ...form, file: upload?.data ?? null, filename: upload?.filename ?? '' });
      return reply.redirect(`/settings/import/${created.id}`, 303);
    } catch (err) {
      if (err instanceof ImportFormError) return importPage(request, reply, me, { error: err.message, form }, 422);
      throw err;
    }
  });

  app.get<{ Params: { id: string } }>('/settings/import/:id', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 40 }) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const found = await findAccountImport(ctx.db, me.account.id, request.params.id);
    if (!found) return importPage(request, reply, me, { error: (await translatorOf(ctx, request))('import.no_such') }, 404);
    const detail = await viewOf(ctx, found);
    const t = await translatorOf(ctx, request);
    const failures = (await failedRows(ctx.db, found.id, FAILURES_SHOWN)).map((r) => ({
      what: r.data.acct ?? r.data.domain ?? r.data.uri ?? '', list: r.data.list_name ?? '', why: serviceMessage(t, r.failure ?? ''),
    }));
    return sendFormPage(ctx, request, reply, 'settings/import', { key: 'settings.import' }, {
      types: [], recent: [], detail, failures, failuresShown: FAILURES_SHOWN, form: { type: '', mode: '' }, rowLimit: ROWS_PROCESSING_LIMIT,
      sizeLimitMb: FILE_SIZE_LIMIT / 1024 / 1024, notice: '', error: '',
    });
  });
}
