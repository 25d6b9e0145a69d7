import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { findPolicy, findRequest, requestsPage, POLICY_ACTIONS, POLICY_FIELDS, type NotificationPolicy, type PolicyAction } from '../../storage/notification-policy.ts';
import { changePolicy, policyWithSummary, settleRequests } from '../../services/notification-policy.ts';
import { renderNotificationRequests } from '../serializers/notification-groups.ts';
import { safeReturnTo } from './auth.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { pageOf, pagingOf, sendClientPage } from './client-page.ts';
import { refused, signedInForForm } from './client-actions.ts';
import { clientEntry } from './client-view.ts';
import { accountView } from './page-view.ts';
import { notificationViews } from './client-pages.ts';
import { notFoundPage } from './error-pages.ts';
import { notificationsPage } from '../../storage/notifications.ts';
import { isId } from '../params.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SignedIn } from './session.ts';

const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Back = Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })) });
// The list's check boxes: one id, or several (a form repeats the name); at most a page of them, as the API's bulk routes.
const Chosen = Type.Object({ id: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Array(Type.String({ maxLength: 40 }), { maxItems: 100 })])) });
const PolicyForm = Type.Object(Object.fromEntries(POLICY_FIELDS.map((f) => [f, Type.Optional(Type.String({ maxLength: 20 }))])));
const PER_PAGE = 40;

/** The policy's rules, in the order the page asks them, each with what it is about. */
// Message keys of their words (the template says them in the page's language).
const RULES: [keyof NotificationPolicy, string, string][] = [
  ['for_not_following', 'policy.not_following', 'policy.not_following_hint'],
  ['for_not_followers', 'policy.not_followers', 'policy.not_followers_hint'],
  ['for_new_accounts', 'policy.new_accounts', 'policy.new_accounts_hint'],
  ['for_private_mentions', 'policy.private_mentions', 'policy.private_mentions_hint'],
  ['for_limited_accounts', 'policy.limited_accounts', 'policy.limited_accounts_hint'],
];
const ACTIONS: Record<PolicyAction, string> = { accept: 'policy.accept', filter: 'policy.filter', drop: 'policy.drop' };

/**
 * Filtered notifications: the requests the notification policy kept aside (one per sender, as
 * GET /api/v1/notifications/requests lists them) with Accept and Dismiss, and the policy itself (as
 * /api/v2/notifications/policy reads and changes it), through the services those routes call.
 */
export default async function clientNotificationRequestRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function requestsListPage(request: FastifyRequest, reply: FastifyReply, me: SignedIn, error = '', status = 200) {
    const viewerId = me.account.id;
    const p = { ...(request.method === 'GET' ? pagingOf(request) : { maxId: undefined }), minId: undefined, limit: PER_PAGE + 1 };
    const rows = await requestsPage(ctx.db, viewerId, p);
    const shown = rows.slice(0, PER_PAGE);
    const requests = (await renderNotificationRequests(ctx, viewerId, shown)).map((r) => ({
      id: r.id,
      count: Number(r.notifications_count),
      account: accountView(ctx.render, r.account),
      entry: r.last_status ? clientEntry(ctx, viewerId, r.last_status) : null,
    }));
    const last = shown.at(-1);
    return sendClientPage(ctx, request, reply, 'client/notification_requests', { key: 'requests.title' }, {
      requests, older: !!p.maxId, error, pagePath: '/notifications/requests',
      pager: { older: rows.length > PER_PAGE && last ? `/notifications/requests?max_id=${last.id}` : null, newer: p.maxId ? '/notifications/requests' : null },
    }, status);
  }

  app.get('/notifications/requests', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    return requestsListPage(request, reply, me);
  });

  // One request: the notifications from its sender that were kept aside, newest first, with Accept and Dismiss (as
  // GET /api/v1/notifications/requests/:id and, for the list, GET /api/v1/notifications?account_id=…, but only the
  // filtered ones). Another person's request, or one settled since, is not found.
  app.get('/notifications/requests/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const viewerId = me.account.id;
    const row = isId(request.params.id) ? await findRequest(ctx.db, viewerId, request.params.id) : null;
    const [rendered] = row ? await renderNotificationRequests(ctx, viewerId, [row]) : [];
    if (!row || !rendered) return notFoundPage(request, reply);
    const path = `/notifications/requests/${row.id}`;
    const p = pagingOf(request);
    const rows = await notificationsPage(ctx.db, viewerId, { accountId: row.from_account_id, onlyFiltered: true }, p);
    const page = pageOf(rows.map((n) => n.id), p, path);
    const shown = new Set(page.ids);
    const account = accountView(ctx.render, rendered.account);
    return sendClientPage(ctx, request, reply, 'client/notification_request', { key: 'requests.from_title', params: { name: `@${account.handle}` } }, {
      id: row.id, account, count: Number(rendered.notifications_count), older: !!p.maxId, pager: page.pager,
      items: await notificationViews(ctx, viewerId, rows.filter((n) => shown.has(n.id))),
    });
  });

  // Several at once, chosen on the list: as POST /api/v1/notifications/requests/accept and /dismiss (ids that are not
  // the person's are passed over); choosing none brings the list back with why.
  for (const how of ['accept', 'dismiss'] as const) {
    app.post(`/notifications/requests/${how}`, { schema: { body: Chosen } }, async (request, reply) => {
      const me = await signedInForForm(request, reply, '/notifications/requests');
      if (!me) return reply;
      const raw = request.body.id;
      const ids = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
      if (ids.length === 0) return requestsListPage(request, reply, me, (await translatorOf(ctx, request))(how === 'accept' ? 'requests.choose_accept' : 'requests.choose_dismiss'), 422);
      await settleRequests(ctx.db, me.account.id, ids, how);
      return reply.redirect('/notifications/requests', 303);
    });
  }

  for (const how of ['accept', 'dismiss'] as const) {
    app.post(`/notifications/requests/:id/${how}`, { schema: { params: IdParams, body: Back } }, async (request, reply) => {
      const returnTo = request.body.return_to ? safeReturnTo(request.body.return_to, ctx.config.publicUrl) : '/notifications/requests';
      const me = await signedInForForm(request, reply, returnTo);
      if (!me) return reply;
      try {
        // As POST /api/v1/notifications/requests/:id/accept: the request must be this person's (else 404).
        await settleRequests(ctx.db, me.account.id, [request.params.id], how, true);
      } catch (err) {
        return refused(ctx, request, reply, err, returnTo);
      }
      return reply.redirect(returnTo, 303);
    });
  }

  const policyPage = async (viewerId: string) => {
    const policy = await policyWithSummary(ctx.db, viewerId, await findPolicy(ctx.db, viewerId));
    return {
      rules: RULES.map(([field, label, hint]) => ({ field, label, hint, value: policy[field] })),
      actions: POLICY_ACTIONS.map((a) => [a, ACTIONS[a]]),
      summary: policy.summary,
    };
  };

  app.get('/notifications/policy', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const notice = (request.query as { notice?: unknown }).notice === 'saved' ? (await translatorOf(ctx, request))('common.saved') : '';
    return sendClientPage(ctx, request, reply, 'client/notification_policy', { key: 'policy.title' }, { ...(await policyPage(me.account.id)), notice, error: '' });
  });

  app.post('/notifications/policy', { schema: { body: PolicyForm } }, async (request, reply) => {
    const me = await signedInForForm(request, reply, '/notifications/policy');
    if (!me) return reply;
    const body = request.body as Record<string, string | undefined>;
    const changes: Partial<NotificationPolicy> = {};
    const wrong: string[] = [];
    for (const field of POLICY_FIELDS) {
      const value = body[field];
      if (value === undefined) continue;
      if ((POLICY_ACTIONS as string[]).includes(value)) changes[field] = value as PolicyAction;
      else wrong.push(RULES.find(([f]) => f === field)![1]);
    }
    if (wrong.length > 0) {
      const t = await translatorOf(ctx, request);
      return sendClientPage(ctx, request, reply, 'client/notification_policy', { key: 'policy.title' }, {
        ...(await policyPage(me.account.id)), notice: '', error: t('policy.error', { rules: wrong.map((k) => t(k)).join(', ') }), pagePath: '/notifications/policy',
      }, 422);
    }
    await changePolicy(ctx.db, me.account.id, changes);
    return reply.redirect('/notifications/policy?notice=saved', 303);
  });
}
