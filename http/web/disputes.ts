import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { moderationDeps } from '../../services/moderation.ts';
import { APPEAL_TEXT_MAX, APPEAL_WINDOW_DAYS, appealRefusal, appealStrike, ownStrike } from '../../services/strikes.ts';
import { appealsOfStrikes, strikesOf, type AppealRow, type StrikeRow } from '../../storage/strikes.ts';
import { reportedStatuses } from '../../storage/reports.ts';
import { isId } from '../../storage/ids.ts';
import { sendFormPage, sendMessagePage, translatorOf } from './page.ts';
import { serviceMessage } from './service-errors.ts';

const PAGE = 20;
const ListQuery = Type.Object({ max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })), notice: Type.Optional(Type.String({ maxLength: 40 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const AppealForm = Type.Object({ text: Type.Optional(Type.String({ maxLength: APPEAL_TEXT_MAX * 4 })) });

/** What a strike did, as its owner reads it. */
const ACTION_LABEL: Record<StrikeRow['action'], string> = {
  none: 'strikes.action.none',
  disable: 'strikes.action.disable',
  mark_statuses_as_sensitive: 'strikes.action.mark_statuses_as_sensitive',
  delete_statuses: 'strikes.action.delete_statuses',
  sensitive: 'strikes.action.sensitive',
  silence: 'strikes.action.silence',
  suspend: 'strikes.action.suspend',
};

function appealState(appeal: AppealRow | undefined): string {
  if (!appeal) return '';
  if (appeal.approved_at) return 'strikes.appeal_approved';
  if (appeal.rejected_at) return 'strikes.appeal_rejected';
  return 'strikes.appeal_pending';
}

/**
 * A person's strikes and their appeals (Mastodon's /disputes/strikes): reachable by a suspended or disabled person
 * too, who may use nothing else (http/web/session.ts signedInForDisputes).
 */
export default async function disputePageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const deps = moderationDeps(ctx);

  async function person(request: FastifyRequest, reply: FastifyReply) {
    const me = await request.signedInForDisputes();
    if (!me) {
      await reply.redirect(`/auth/sign_in?return_to=${encodeURIComponent(request.method === 'GET' ? request.url : '/disputes/strikes')}`, 303);
      return null;
    }
    return me;
  }

  app.get('/disputes', async (_request, reply) => reply.redirect('/disputes/strikes'));

  app.get('/disputes/strikes', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const me = await person(request, reply);
    if (!me) return;
    const rows = await strikesOf(ctx.db, me.account.id, { limit: PAGE + 1, maxId: request.query.max_id });
    const page = rows.slice(0, PAGE);
    const appeals = await appealsOfStrikes(ctx.db, page.map((s) => s.id));
    return sendFormPage(ctx, request, reply, 'disputes/strikes', { key: 'settings.strikes' }, {
      restricted: me.restricted,
      suspended: me.account.suspended_at !== null,
      strikes: page.map((s) => ({
        id: s.id, label: ACTION_LABEL[s.action], text: s.text, createdAt: s.created_at, statusCount: s.status_ids.length,
        overruled: s.overruled_at !== null, appeal: appealState(appeals.get(s.id)),
      })),
      nextPage: rows.length > PAGE ? `/disputes/strikes?max_id=${page.at(-1)!.id}` : '',
    });
  });

  async function strikePage(request: FastifyRequest, reply: FastifyReply, me: { account: { id: string }; restricted: boolean }, id: string, form: { text: string; error: string; notice: string }, status = 200) {
    let strike: StrikeRow;
    try {
      strike = await ownStrike(deps, me.account.id, isId(id) ? id : '0');
    } catch {
      return sendMessagePage(ctx, request, reply, { key: 'export.not_found_title' }, { key: 'strikes.no_such' }, { status: 404, kind: 'error', link: { href: '/disputes/strikes', text: { key: 'strikes.all' } } });
    }
    const [appeal, statuses] = await Promise.all([
      appealsOfStrikes(ctx.db, [strike.id]).then((m) => m.get(strike.id)),
      reportedStatuses(ctx.db, strike.status_ids),
    ]);
    const t = await translatorOf(ctx, request);
    return sendFormPage(ctx, request, reply, 'disputes/strike', { key: ACTION_LABEL[strike.action] }, {
      restricted: me.restricted,
      strike: { id: strike.id, label: ACTION_LABEL[strike.action], text: strike.text, createdAt: strike.created_at, overruled: strike.overruled_at !== null },
      statuses: statuses.map((s) => ({ content: s.content, spoilerText: s.spoiler_text, createdAt: s.created_at, deleted: s.deleted_at !== null })),
      appeal: appeal ? { text: appeal.text, state: appealState(appeal), createdAt: appeal.created_at } : null,
      refusal: appeal ? '' : serviceMessage(t, appealRefusal(strike, appeal) ?? ''),
      appealMax: APPEAL_TEXT_MAX, appealDays: APPEAL_WINDOW_DAYS,
      ...form,
    }, status);
  }

  app.get('/disputes/strikes/:id', { schema: { params: IdParams, querystring: ListQuery } }, async (request, reply) => {
    const me = await person(request, reply);
    if (!me) return;
    const notice = request.query.notice === 'appealed' ? (await translatorOf(ctx, request))('strikes.notice_appealed') : '';
    return strikePage(request, reply, me, request.params.id, { text: '', error: '', notice });
  });

  app.post('/disputes/strikes/:id/appeal', { schema: { params: IdParams, body: AppealForm } }, async (request, reply) => {
    const me = await person(request, reply);
    if (!me) return;
    const text = request.body.text ?? '';
    try {
      await appealStrike(deps, me.account.id, isId(request.params.id) ? request.params.id : '0', text);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode < 500) return strikePage(request, reply, me, request.params.id, { text, error: err.message, notice: '' }, err.statusCode);
      throw err;
    }
    return reply.redirect(`/disputes/strikes/${request.params.id}?notice=appealed`, 303);
  });
}
