import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import type { Db } from '../../storage/db.ts';
import { findReport } from '../../storage/reports.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { notesAbout, type NoteSubject } from '../../storage/moderation-notes.ts';
import { isId } from '../../storage/ids.ts';
import { moderationDeps, reportActions } from '../../services/moderation.ts';
import { addNote, NOTE_MAX, removeNote } from '../../services/moderation-notes.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';

/** The report page's notices (beside http/web/admin.ts's). */
export const REPORT_NOTICES: Record<string, string> = {
  note_added: 'The note is added.',
  note_removed: 'The note is removed.',
  assigned_to_self: 'The report is assigned to you.',
  unassigned: 'The report is assigned to nobody.',
  report_resolved: 'The report is resolved.',
  reopened: 'The report is open again.',
};

/** Notes about an account or a report as the pages show them: with their authors' names. */
export async function notesForPage(db: Db, kind: NoteSubject, subjectId: string) {
  const notes = await notesAbout(db, kind, subjectId);
  const authors = new Map((await findAccountsByIds(db, [...new Set(notes.flatMap((n) => (n.account_id ? [n.account_id] : [])))])).map((a) => [a.id, a.username]));
  return notes.map((n) => ({ id: n.id, authorId: n.account_id, author: (n.account_id && authors.get(n.account_id)) || 'someone gone', content: n.content, createdAt: n.created_at }));
}

const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const NoteParams = Type.Object({ id: Type.String({ maxLength: 40 }), note_id: Type.String({ maxLength: 40 }) });

/**
 * The report page's forms: notes (Mastodon's report notes), and assigning, unassigning, resolving and reopening, the
 * same services as POST /api/v1/admin/reports/:id/assign_to_self, unassign, resolve and reopen.
 */
export default async function adminReportPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps = moderationDeps(ctx);
  const report = async (id: string) => (isId(id) ? findReport(ctx.db, id) : null);

  app.post('/admin/reports/:id/notes', { schema: { params: IdParams, body: Type.Object({ content: Type.String({ maxLength: NOTE_MAX + 100 }) }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const back = `/admin/reports/${request.params.id}`;
    try {
      const row = await report(request.params.id);
      if (!row) throw gone();
      await addNote(ctx.db, me.account.id, 'report', row.id, request.body.content, `#${row.id}`);
    } catch (err) {
      return refusedPage(ctx, request, reply, err, back);
    }
    return reply.redirect(`${back}?notice=note_added#notes`, 303);
  });

  app.post('/admin/reports/:id/notes/:note_id/delete', { schema: { params: NoteParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const back = `/admin/reports/${request.params.id}`;
    try {
      const row = await report(request.params.id);
      if (!row || !isId(request.params.note_id)) throw gone();
      await removeNote(ctx.db, me.account.id, 'report', row.id, request.params.note_id, `#${row.id}`);
    } catch (err) {
      return refusedPage(ctx, request, reply, err, back);
    }
    return reply.redirect(`${back}?notice=note_removed#notes`, 303);
  });

  for (const [name, act, notice] of [
    ['assign_to_self', reportActions.assignToSelf, 'assigned_to_self'],
    ['unassign', reportActions.unassign, 'unassigned'],
    ['resolve', reportActions.resolve, 'report_resolved'],
    ['reopen', reportActions.reopen, 'reopened'],
  ] as const) {
    app.post(`/admin/reports/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      const back = `/admin/reports/${request.params.id}`;
      try {
        if (!isId(request.params.id) || !(await act(deps, request.params.id, me.account.id))) throw gone();
      } catch (err) {
        return refusedPage(ctx, request, reply, err, back);
      }
      return reply.redirect(`${back}?notice=${notice}`, 303);
    });
  }
}
