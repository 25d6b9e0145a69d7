import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { findAccountById, findAccountsByIds, type AccountRow } from '../../storage/accounts.ts';
import { accountIps, adminAccountIds, usersOfAccounts, type AdminAccountFilters, type ModeratedUser } from '../../storage/moderation.ts';
import { strikesOf } from '../../storage/strikes.ts';
import { identitiesOfUser } from '../../storage/identities.ts';
import { reportsPage } from '../../storage/reports.ts';
import { isId } from '../../storage/ids.ts';
import * as moderation from '../../services/moderation.ts';
import { parseIpRange } from '../../services/admin-blocks.ts';
import { accountTarget } from '../../services/action-log.ts';
import { addNote, NOTE_MAX, removeNote } from '../../services/moderation-notes.ts';
import { ApiError } from '../../errors.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';
import { notesForPage } from './admin-reports.ts';

const PAGE = 40;
const STATUSES = ['active', 'pending', 'disabled', 'silenced', 'suspended'] as const;
const NOTICES: Record<string, string> = {
  acted: 'Done: the action is taken and kept as a strike.',
  unsuspend: 'The account is no longer suspended.',
  unsilence: 'The account is no longer limited.',
  unsensitive: 'Its media is no longer forced sensitive.',
  enable: 'The account can sign in again.',
  note_added: 'The note is added.',
  note_removed: 'The note is removed.',
};

const Search = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 100 })),
  display_name: Type.Optional(Type.String({ maxLength: 100 })),
  by_domain: Type.Optional(Type.String({ maxLength: 253 })),
  email: Type.Optional(Type.String({ maxLength: 320 })),
  ip: Type.Optional(Type.String({ maxLength: 64 })),
  status: Type.Optional(Type.String({ maxLength: 20 })),
  origin: Type.Optional(Type.String({ maxLength: 10 })),
  max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })),
});
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const NoteParams = Type.Object({ id: Type.String({ maxLength: 40 }), note_id: Type.String({ maxLength: 40 }) });
const ActionForm = Type.Object({
  type: Type.String({ maxLength: 20 }),
  text: Type.Optional(Type.String({ maxLength: 5000 })),
  send_email_notification: Type.Optional(Type.String({ maxLength: 5 })),
});

const acctOf = (a: Pick<AccountRow, 'username' | 'domain'>) => (a.domain ? `${a.username}@${a.domain}` : a.username);

/** What an account's state is, in the words of the status filter. */
function stateOf(a: AccountRow, u: ModeratedUser | undefined): string[] {
  return [
    a.suspended_at && 'suspended', a.silenced_at && 'limited', a.sensitized_at && 'sensitive',
    u && !u.approved && 'pending', u?.disabled && 'disabled',
  ].filter((s): s is string => !!s);
}

/**
 * The operators' accounts pages (Mastodon's Admin::AccountsController): a search by username, display name, domain,
 * e-mail and address with a status filter, and an account's page with its strikes, notes, sign-in addresses and the
 * account actions, over the same services as /api/v1/admin/accounts.
 */
export default async function adminAccountPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps = moderation.moderationDeps(ctx);
  const target = async (id: string) => (isId(id) ? findAccountById(ctx.db, id) : null);

  app.get('/admin/accounts', { schema: { querystring: Search } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const q = request.query;
    const status = STATUSES.find((s) => s === q.status);
    const ip = q.ip?.trim() ? parseIpRange(q.ip) : undefined;
    const filters: AdminAccountFilters = {
      local: q.origin === 'local', remote: q.origin === 'remote',
      active: status === 'active', pending: status === 'pending', disabled: status === 'disabled', silenced: status === 'silenced', suspended: status === 'suspended',
      username: q.username?.trim() || undefined, displayName: q.display_name?.trim() || undefined, byDomain: q.by_domain?.trim() || undefined,
      email: q.email?.trim() || undefined, ip: ip ?? undefined,
    };
    // An address that is no address finds nobody (and says why).
    const ids = ip === null ? [] : await adminAccountIds(ctx.db, filters, { limit: PAGE + 1, maxId: q.max_id });
    const page = ids.slice(0, PAGE);
    const [accounts, users] = await Promise.all([findAccountsByIds(ctx.db, page), usersOfAccounts(ctx.db, page)]);
    const byId = new Map(accounts.map((a) => [a.id, a]));
    const rows = page.flatMap((id) => {
      const a = byId.get(id);
      const u = users.get(id);
      return a ? [{ id, acct: acctOf(a), displayName: a.display_name, email: u?.email ?? '', state: stateOf(a, u), createdAt: a.created_at }] : [];
    });
    const query = new URLSearchParams(Object.entries({ ...q, max_id: undefined }).filter((e): e is [string, string] => !!e[1]));
    if (ids.length > PAGE) query.set('max_id', page.at(-1)!);
    return sendFormPage(ctx, request, reply, 'admin/accounts', 'Accounts', {
      q, statuses: STATUSES, rows, nextPage: ids.length > PAGE ? `/admin/accounts?${query}` : '',
      notice: '', error: ip === null ? 'That is not an IP address or range.' : '',
    }, ip === null ? 422 : 200);
  });

  app.get('/admin/accounts/:id', { schema: { params: IdParams, querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const account = await target(request.params.id);
    if (!account) return refusedPage(ctx, request, reply, gone(), '/admin/accounts');
    const user = (await usersOfAccounts(ctx.db, [account.id])).get(account.id);
    const [strikes, notes, ips, reports, identities] = await Promise.all([
      strikesOf(ctx.db, account.id, { limit: 50 }), notesForPage(ctx.db, 'account', account.id),
      user ? accountIps(ctx.db, account.id) : [], reportsPage(ctx.db, { targetAccountId: account.id }, { limit: 20 }),
      user ? identitiesOfUser(ctx.db, user.id) : [],
    ]);
    const moderators = new Map((await findAccountsByIds(ctx.db, [...new Set(strikes.flatMap((s) => (s.account_id ? [s.account_id] : [])))])).map((a) => [a.id, a.username]));
    return sendFormPage(ctx, request, reply, 'admin/account', `@${acctOf(account)}`, {
      account: {
        id: account.id, acct: acctOf(account), displayName: account.display_name, url: account.url ?? `/@${account.username}`, local: account.domain === null,
        createdAt: account.created_at, statusesCount: account.statuses_count, followersCount: account.followers_count,
        suspended: !!account.suspended_at, silenced: !!account.silenced_at, sensitized: !!account.sensitized_at, deleted: !!account.deleted_at,
        email: user?.email ?? null, role: user?.role?.name ?? null, disabled: !!user?.disabled, pending: !!user && !user.approved, state: stateOf(account, user),
      },
      strikes: strikes.map((s) => ({ action: s.action, text: s.text, createdAt: s.created_at, overruled: !!s.overruled_at, by: (s.account_id && moderators.get(s.account_id)) || '' })),
      notes, ips, identities: identities.map((i) => ({ provider: i.provider, uid: i.uid, createdAt: i.created_at })), reports: reports.map((r) => ({ id: r.id, category: r.category, createdAt: r.created_at })),
      notice: (request.query.notice && NOTICES[request.query.notice]) || '', error: '',
    });
  });

  app.post('/admin/accounts/:id/action', { schema: { params: IdParams, body: ActionForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const back = `/admin/accounts/${request.params.id}`;
    try {
      const account = await target(request.params.id);
      if (!account) throw gone();
      // Mastodon's "warn" is the action `none` with a text.
      const type = (['none', 'sensitive', 'disable', 'silence', 'suspend'] as const).find((t) => t === request.body.type);
      if (!type) throw new ApiError(422, 'Choose an action.');
      if (type === 'none' && !request.body.text?.trim()) throw new ApiError(422, 'A warning needs a text.');
      await moderation.takeAccountAction(deps, me.account.id, account, type, { text: request.body.text, sendEmail: request.body.send_email_notification === '1' });
    } catch (err) {
      return refusedPage(ctx, request, reply, err, back);
    }
    return reply.redirect(`${back}?notice=acted`, 303);
  });

  const undo = {
    unsuspend: (a: AccountRow, by: string) => moderation.unsuspendAccount(deps, a, by),
    unsilence: (a: AccountRow, by: string) => moderation.setSilenced(deps, a, false, by),
    unsensitive: (a: AccountRow, by: string) => moderation.setSensitized(deps, a, false, by),
    enable: (a: AccountRow, by: string) => moderation.setDisabled(deps, a, false, by),
  };
  for (const [name, act] of Object.entries(undo)) {
    app.post(`/admin/accounts/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      const back = `/admin/accounts/${request.params.id}`;
      try {
        const account = await target(request.params.id);
        if (!account) throw gone();
        await act(account, me.account.id);
      } catch (err) {
        return refusedPage(ctx, request, reply, err, back);
      }
      return reply.redirect(`${back}?notice=${name}`, 303);
    });
  }

  app.post('/admin/accounts/:id/notes', { schema: { params: IdParams, body: Type.Object({ content: Type.String({ maxLength: NOTE_MAX + 100 }) }) } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const back = `/admin/accounts/${request.params.id}`;
    try {
      const account = await target(request.params.id);
      if (!account) throw gone();
      await addNote(ctx.db, me.account.id, 'account', account.id, request.body.content, accountTarget(account).name);
    } catch (err) {
      return refusedPage(ctx, request, reply, err, back);
    }
    return reply.redirect(`${back}?notice=note_added#notes`, 303);
  });

  app.post('/admin/accounts/:id/notes/:note_id/delete', { schema: { params: NoteParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const back = `/admin/accounts/${request.params.id}`;
    try {
      const account = await target(request.params.id);
      if (!account || !isId(request.params.note_id)) throw gone();
      await removeNote(ctx.db, me.account.id, 'account', account.id, request.params.note_id, accountTarget(account).name);
    } catch (err) {
      return refusedPage(ctx, request, reply, err, back);
    }
    return reply.redirect(`${back}?notice=note_removed#notes`, 303);
  });
}
