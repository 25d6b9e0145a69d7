import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { can, permissionForRoute } from '../../services/roles.ts';
import * as moderation from '../../services/moderation.ts';
import * as strikes from '../../services/strikes.ts';
import { findStrike, pendingAppeals } from '../../storage/strikes.ts';
import * as announcements from '../../services/announcements.ts';
import { ANNOUNCEMENT_TEXT_MAX } from '../../services/announcements.ts';
import { listAnnouncements } from '../../storage/announcements.ts';
import * as webhooks from '../../services/webhooks.ts';
import { lastWebhookDeliveries, listWebhooks } from '../../storage/webhooks.ts';
import { announcementHtml } from '../serializers/announcement.ts';
import { adminAccountIds, usersOfAccounts } from '../../storage/moderation.ts';
import { findAccountById, findAccountsByIds } from '../../storage/accounts.ts';
import { findReport, reportsPage } from '../../storage/reports.ts';
import { isId } from '../../storage/ids.ts';
import { renderAdminReports } from '../serializers/report.ts';
import { notesForPage, REPORT_NOTICES } from './admin-reports.ts';
import { sendFormPage, sendMessagePage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const PAGE = 20;
const NOTICES: Record<string, string> = {
  approved: 'The account is approved; its owner gets an e-mail.',
  rejected: 'The sign-up is rejected and removed; its owner gets an e-mail.',
  resolved: 'The report is resolved.',
  announced: 'The announcement is saved.',
  published: 'The announcement is published.',
  unpublished: 'The announcement is taken down.',
  removed: 'The announcement is removed.',
  appeal_approved: 'The appeal is approved: the decision is undone and overruled; its author gets an e-mail.',
  appeal_rejected: 'The appeal is rejected; its author gets an e-mail.',
  webhook_added: 'The webhook is added.',
  webhook_events: 'The webhook\'s events are saved.',
  webhook_enabled: 'The webhook is enabled.',
  webhook_disabled: 'The webhook is disabled.',
  webhook_rotated: 'The webhook has a new secret.',
  webhook_removed: 'The webhook is removed.',
};
/** A form's checkboxes: one value is a string, several an array. */
const Checked = Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Array(Type.String({ maxLength: 40 }), { maxItems: 20 })]));
const listOf = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const ListQuery = Type.Object({ max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })), notice: Type.Optional(Type.String({ maxLength: 40 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const AppealsQuery = Type.Object({ after_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,19}$' })), notice: Type.Optional(Type.String({ maxLength: 40 })) });
const ACTIONS = ['none', 'sensitive', 'disable', 'silence', 'suspend'] as const;
// A datetime-local field's value (no zone: read as UTC, as the form says), or empty.
const LocalTime = Type.String({ maxLength: 30, pattern: '^$|^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$' });
const AnnouncementForm = Type.Object({
  text: Type.String({ maxLength: ANNOUNCEMENT_TEXT_MAX + 100 }),
  starts_at: Type.Optional(LocalTime),
  ends_at: Type.Optional(LocalTime),
  scheduled_at: Type.Optional(LocalTime),
  all_day: Type.Optional(Type.String({ maxLength: 5 })),
});
const utc = (v: string | undefined) => (v ? new Date(`${v}Z`) : null);

/** The operators' pages: sign-ups waiting for approval and open reports, over the same services as the admin API. */
export default async function adminPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps = moderation.moderationDeps(ctx);

  const operator = operatorGuard(ctx);

  /** Moderation services refuse with ApiErrors (403 for an account that is not pending, 404 for one that is gone). */
  const refused = (request: FastifyRequest, reply: FastifyReply, err: unknown) => {
    if (err instanceof ApiError && err.statusCode < 500) {
      return sendMessagePage(ctx, request, reply, 'Not done', err.statusCode === 404 ? 'That no longer exists.' : 'That cannot be done to this account (any more).', { status: err.statusCode, kind: 'error', link: { href: '/admin/approvals', text: 'Back' } });
    }
    throw err;
  };

  // The first page the operator's role opens.
  app.get('/admin', async (request, reply) => {
    const me = await request.signedIn();
    const bits = me?.user.role?.permissions;
    const first = (['/admin/approvals', '/admin/reports', '/admin/disputes/appeals', '/admin/announcements', '/admin/webhooks', '/admin/settings', '/admin/rules', '/admin/relays'] as const).find((page) => can(bits, permissionForRoute('GET', page)!));
    return reply.redirect(first ?? '/admin/approvals');
  });

  app.get('/admin/approvals', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const ids = await adminAccountIds(ctx.db, { local: true, pending: true }, { limit: PAGE + 1, maxId: request.query.max_id });
    const page = ids.slice(0, PAGE);
    const [accounts, users] = await Promise.all([findAccountsByIds(ctx.db, page), usersOfAccounts(ctx.db, page)]);
    const byId = new Map(accounts.map((a) => [a.id, a]));
    const pending = page.flatMap((id) => {
      const account = byId.get(id);
      const user = users.get(id);
      return account && user ? [{ accountId: id, username: account.username, email: user.email, reason: user.reason, createdAt: user.created_at }] : [];
    });
    return sendFormPage(ctx, request, reply, 'admin/approvals', 'Waiting for approval', {
      pending, nextPage: ids.length > PAGE ? `/admin/approvals?max_id=${page.at(-1)}` : '',
      notice: (request.query.notice && NOTICES[request.query.notice]) || '', error: '',
    });
  });

  for (const [name, act] of [['approve', moderation.approveAccount], ['reject', moderation.rejectAccount]] as const) {
    app.post(`/admin/accounts/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      const target = isId(request.params.id) ? await findAccountById(ctx.db, request.params.id) : null;
      if (!target) return refused(request, reply, new ApiError(404, 'Record not found'));
      try {
        await act(deps, target, me.account.id);
      } catch (err) {
        return refused(request, reply, err);
      }
      return reply.redirect(`/admin/approvals?notice=${name === 'approve' ? 'approved' : 'rejected'}`, 303);
    });
  }

  app.get('/admin/reports', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const rows = await reportsPage(ctx.db, {}, { limit: PAGE + 1, maxId: request.query.max_id });
    const page = rows.slice(0, PAGE);
    const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set(page.flatMap((r) => [r.account_id, r.target_account_id]))])).map((a) => [a.id, a]));
    const acct = (id: string) => {
      const a = accounts.get(id);
      return a ? (a.domain ? `${a.username}@${a.domain}` : a.username) : '?';
    };
    return sendFormPage(ctx, request, reply, 'admin/reports', 'Open reports', {
      reports: page.map((r) => ({ id: r.id, target: acct(r.target_account_id), reporter: acct(r.account_id), category: r.category, createdAt: r.created_at })),
      nextPage: rows.length > PAGE ? `/admin/reports?max_id=${page.at(-1)!.id}` : '',
      notice: (request.query.notice && NOTICES[request.query.notice]) || '', error: '',
    });
  });

  app.get('/admin/reports/:id', { schema: { params: IdParams, querystring: ListQuery } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const row = isId(request.params.id) ? await findReport(ctx.db, request.params.id) : null;
    const [report] = row ? await renderAdminReports(ctx.db, ctx.render, [row]) : [];
    if (!report) return refused(request, reply, new ApiError(404, 'Record not found'));
    return sendFormPage(ctx, request, reply, 'admin/report', `Report #${row!.id}`, {
      report, notes: await notesForPage(ctx.db, 'report', row!.id), me: me.account.id,
      notice: (request.query.notice && (NOTICES[request.query.notice] ?? REPORT_NOTICES[request.query.notice])) || '', error: '',
    });
  });

  app.post('/admin/reports/:id/action', {
    schema: {
      params: IdParams,
      body: Type.Object({
        type: Type.Optional(Type.String({ maxLength: 20 })),
        text: Type.Optional(Type.String({ maxLength: 5000 })),
        send_email_notification: Type.Optional(Type.String({ maxLength: 5 })),
      }),
    },
  }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const report = isId(request.params.id) ? await findReport(ctx.db, request.params.id) : null;
    const target = report ? await findAccountById(ctx.db, report.target_account_id) : null;
    const type = ACTIONS.find((a) => a === request.body.type) ?? 'none';
    if (!report || !target) return refused(request, reply, new ApiError(404, 'Record not found'));
    try {
      // The same action as POST /api/v1/admin/accounts/:id/action with report_id: it resolves the report.
      await moderation.takeAccountAction(deps, me.account.id, target, type, {
        reportId: report.id, text: request.body.text, sendEmail: request.body.send_email_notification === '1',
      });
    } catch (err) {
      return refused(request, reply, err);
    }
    return reply.redirect('/admin/reports?notice=resolved', 303);
  });

  app.get('/admin/disputes/appeals', { schema: { querystring: AppealsQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const rows = await pendingAppeals(ctx.db, { afterId: request.query.after_id, limit: PAGE + 1 });
    const page = rows.slice(0, PAGE);
    const strikes = new Map((await Promise.all(page.map((a) => findStrike(ctx.db, a.account_warning_id)))).filter((s) => !!s).map((s) => [s.id, s]));
    const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set(page.map((a) => a.account_id))])).map((a) => [a.id, a]));
    return sendFormPage(ctx, request, reply, 'admin/appeals', 'Appeals', {
      appeals: page.flatMap((a) => {
        const strike = strikes.get(a.account_warning_id);
        const account = accounts.get(a.account_id);
        return strike && account ? [{
          id: a.id, acct: account.username, text: a.text, createdAt: a.created_at,
          action: strike.action, strikeText: strike.text, struckAt: strike.created_at, statusCount: strike.status_ids.length,
        }] : [];
      }),
      nextPage: rows.length > PAGE ? `/admin/disputes/appeals?after_id=${page.at(-1)!.id}` : '',
      notice: (request.query.notice && NOTICES[request.query.notice]) || '', error: '',
    });
  });

  for (const [name, decide] of [['approve', strikes.approveAppeal], ['reject', strikes.rejectAppeal]] as const) {
    app.post(`/admin/disputes/appeals/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      try {
        if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
        await decide(deps, me.account.id, request.params.id);
      } catch (err) {
        if (err instanceof ApiError && err.statusCode < 500) {
          return sendMessagePage(ctx, request, reply, 'Not done', err.statusCode === 404 ? 'That appeal no longer exists.' : err.message, { status: err.statusCode, kind: 'error', link: { href: '/admin/disputes/appeals', text: 'Back' } });
        }
        throw err;
      }
      return reply.redirect(`/admin/disputes/appeals?notice=appeal_${name === 'approve' ? 'approved' : 'rejected'}`, 303);
    });
  }

  const announcementDeps: announcements.AnnouncementDeps = { db: ctx.db, events: ctx.events, jobs: ctx.jobs };

  const announcementsPage = async (request: FastifyRequest, reply: FastifyReply, notice: string, error: string, status = 200) => {
    const rows = await listAnnouncements(ctx.db);
    return sendFormPage(ctx, request, reply, 'admin/announcements', 'Announcements', {
      announcements: rows.map((a) => ({
        id: a.id, html: announcementHtml(a.text), published: a.published, scheduledAt: a.scheduled_at,
        startsAt: a.starts_at, endsAt: a.ends_at, allDay: a.all_day,
      })),
      notice, error,
    }, status);
  };

  app.get('/admin/announcements', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return announcementsPage(request, reply, (request.query.notice && NOTICES[request.query.notice]) || '', '');
  });

  app.post('/admin/announcements', { schema: { body: AnnouncementForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const b = request.body;
    try {
      await announcements.createAnnouncement(announcementDeps, {
        text: b.text, startsAt: utc(b.starts_at), endsAt: utc(b.ends_at), scheduledAt: utc(b.scheduled_at), allDay: b.all_day === '1',
      }, me.account.id);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) return announcementsPage(request, reply, '', err.message, 422);
      throw err;
    }
    return reply.redirect('/admin/announcements?notice=announced', 303);
  });

  for (const [name, act, notice] of [
    ['publish', (id: string, by: string) => announcements.publishAnnouncement(announcementDeps, id, undefined, by), 'published'],
    ['unpublish', (id: string, by: string) => announcements.unpublishAnnouncement(announcementDeps, id, by), 'unpublished'],
    ['remove', (id: string, by: string) => announcements.removeAnnouncement(announcementDeps, id, by), 'removed'],
  ] as const) {
    app.post(`/admin/announcements/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      if (!isId(request.params.id)) return refused(request, reply, new ApiError(404, 'Record not found'));
      await act(request.params.id, me.account.id);
      return reply.redirect(`/admin/announcements?notice=${notice}`, 303);
    });
  }

  const webhooksPage = async (request: FastifyRequest, reply: FastifyReply, notice: string, error: string, status = 200) => {
    const rows = await listWebhooks(ctx.db);
    const deliveries = await lastWebhookDeliveries(ctx.db, rows.map((w) => w.id), 10);
    return sendFormPage(ctx, request, reply, 'admin/webhooks', 'Webhooks', {
      events: webhooks.WEBHOOK_EVENTS,
      webhooks: rows.map((w) => ({
        id: w.id, url: w.url, events: w.events, secret: w.secret, enabled: w.enabled,
        deliveries: deliveries.filter((d) => d.webhook_id === w.id).map((d) => ({ event: d.event, attempt: d.attempt, statusCode: d.status_code, error: d.error, createdAt: d.created_at })),
      })),
      notice, error,
    }, status);
  };

  /** The service's refusals (422: a bad URL or events; 404: gone) shown on the page. */
  const webhookRefused = async (request: FastifyRequest, reply: FastifyReply, err: unknown) => {
    if (err instanceof ApiError && err.statusCode < 500) return webhooksPage(request, reply, '', err.statusCode === 404 ? 'That webhook no longer exists.' : err.message, err.statusCode);
    throw err;
  };

  app.get('/admin/webhooks', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return webhooksPage(request, reply, (request.query.notice && NOTICES[request.query.notice]) || '', '');
  });

  app.post('/admin/webhooks', { schema: { body: Type.Object({ url: Type.String({ maxLength: 4096 }), events: Checked }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      await webhooks.createWebhook(ctx.db, { url: request.body.url, events: listOf(request.body.events) }, me.account.id);
    } catch (err) {
      return webhookRefused(request, reply, err);
    }
    return reply.redirect('/admin/webhooks?notice=webhook_added', 303);
  });

  app.post('/admin/webhooks/:id/events', { schema: { params: IdParams, body: Type.Object({ events: Checked }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
      await webhooks.changeWebhook(ctx.db, request.params.id, { events: listOf(request.body.events) }, me.account.id);
    } catch (err) {
      return webhookRefused(request, reply, err);
    }
    return reply.redirect('/admin/webhooks?notice=webhook_events', 303);
  });

  for (const [name, notice, act] of [
    ['enable', 'webhook_enabled', (id: string, by: string) => webhooks.changeWebhook(ctx.db, id, { enabled: true }, by)],
    ['disable', 'webhook_disabled', (id: string, by: string) => webhooks.changeWebhook(ctx.db, id, { enabled: false }, by)],
    ['rotate', 'webhook_rotated', (id: string, by: string) => webhooks.changeWebhook(ctx.db, id, { rotateSecret: true }, by)],
    ['remove', 'webhook_removed', (id: string, by: string) => webhooks.removeWebhook(ctx.db, id, by)],
  ] as const) {
    app.post(`/admin/webhooks/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      try {
        if (!isId(request.params.id)) throw new ApiError(404, 'Record not found');
        await act(request.params.id, me.account.id);
      } catch (err) {
        return webhookRefused(request, reply, err);
      }
      return reply.redirect(`/admin/webhooks?notice=${notice}`, 303);
    });
  }
}
