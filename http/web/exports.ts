import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import {
  ARCHIVE_MIN_INTERVAL_MS, CSV_EXPORTS, archiveFilename, archiveStream, archivesOf, csvExportStream, exportFigures, requestAccountArchive,
} from '../../services/exports.ts';
import { findAccountArchive } from '../../storage/account-archives.ts';
import type { SignedIn } from './session.ts';
import { sendFormPage, sendMessagePage, signedInOrRedirect, translatorOf } from './page.ts';
import type { Translate } from './i18n.ts';

// Notices after a redirect, by key: their message keys (the page's template says them).
const NOTICES: Record<string, string> = {
  archive_requested: 'export.notice_requested',
};
const Notice = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });

/** Bytes as people read them (Mastodon's number_to_human_size, in its units), with the page's numbers. */
function humanSize(bytes: number, t: Translate): string {
  const units = ['Bytes', 'KB', 'MB', 'GB', 'TB'];
  let n = bytes;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  if (i === 0) return t('export.bytes', { count: n });
  return `${t.number(Number(n.toFixed(n < 10 ? 1 : 0)))} ${units[i]}`;
}

/**
 * /settings/export, as Mastodon's: what the account holds, each list as a CSV download in Mastodon's format
 * (services/exports.ts), and the archive of one's posts and media, asked for here and built by a job.
 */
export default async function exportPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function exportPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, extra: { notice?: string; error?: string } = {}, status = 200) {
    const [counts, { archives, nextAllowedAt }] = await Promise.all([exportFigures(ctx.db, me.account.id), archivesOf(ctx.db, me.account.id)]);
    const t = await translatorOf(ctx, request);
    return sendFormPage(ctx, request, reply, 'settings/export', { key: 'settings.export' }, {
      counts,
      archives: archives.map((a) => ({ ...a, size: humanSize(a.sizeBytes, t) })),
      nextAllowedAt,
      notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  }

  app.get('/settings/export', { schema: { querystring: Notice } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && exportPage(request, reply, me, { notice: (request.query.notice && Object.hasOwn(NOTICES, request.query.notice) ? NOTICES[request.query.notice] : '') || '' });
  });

  // Mastodon's form posts to the page itself.
  app.post('/settings/export', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    if ((await requestAccountArchive(ctx, me.account.id)) === 'too_soon') {
      const days = ARCHIVE_MIN_INTERVAL_MS / 86_400_000;
      return exportPage(request, reply, me, { error: (await translatorOf(ctx, request))('export.too_soon', { count: days }) }, 422);
    }
    return reply.redirect('/settings/export?notice=archive_requested', 303);
  });

  for (const name of Object.keys(CSV_EXPORTS)) {
    app.get(`/settings/exports/${name}.csv`, async (request, reply) => {
      const me = await signedInOrRedirect(request, reply);
      if (!me) return;
      const csv = csvExportStream(ctx, me.account.id, name)!;
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${csv.filename}"`)
        .header('cache-control', 'no-store')
        .send(csv.stream);
    });
  }

  app.get<{ Params: { id: string } }>('/settings/exports/archives/:id', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 30 }) }) },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const archive = /^[0-9]{1,20}$/.test(request.params.id) ? await findAccountArchive(ctx.db, request.params.id) : null;
    // Someone else's archive, one not made yet, or one past its week: as if there were none.
    if (!archive || archive.account_id !== me.account.id || !archive.ready_at || !archive.expires_at || archive.expires_at.getTime() <= Date.now()) {
      return sendMessagePage(ctx, request, reply, { key: 'export.not_found_title' }, { key: 'export.not_found' }, {
        status: 404, kind: 'error', link: { href: '/settings/export', text: { key: 'settings.export' } },
      });
    }
    return reply
      .type('application/zip')
      .header('content-length', String(archive.size_bytes))
      .header('content-disposition', `attachment; filename="${archiveFilename(archive)}"`)
      .header('cache-control', 'no-store')
      .send(archiveStream(ctx, archive));
  });
}
