import { Type, type Static } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isId } from '../params.ts';
import { ApiError } from '../../errors.ts';
import * as filters from '../../storage/filters.ts';
import { createFilter, deleteFilter, updateFilter, type KeywordChange } from '../../services/filters.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import type { Translate } from './i18n.ts';
import { sendClientPage } from './client-page.ts';
import { notFoundPage } from './error-pages.ts';
import { dateView } from './page-view.ts';
import type { SignedIn } from './session.ts';

// Each choice with the message key of its words (the templates say them in the page's language).
const CONTEXTS: [filters.FilterContext, string][] = [
  ['home', 'filters.context.home'], ['notifications', 'filters.context.notifications'], ['public', 'filters.context.public'], ['thread', 'filters.context.thread'], ['account', 'filters.context.account'],
];
const ACTIONS: [filters.FilterAction, string][] = [
  ['warn', 'filters.action.warn'], ['hide', 'filters.action.hide'],
];
const EXPIRIES: [string, string][] = [
  ['', 'common.never'], ['1800', 'duration.30m'], ['3600', 'duration.1h'], ['21600', 'duration.6h'], ['43200', 'duration.12h'], ['86400', 'duration.1d'], ['604800', 'duration.1w'],
];
const many = (max: number) => Type.Optional(Type.Union([Type.String({ maxLength: max }), Type.Array(Type.String({ maxLength: max }), { maxItems: filters.FILTER_LIMITS.keywordsPerFilter })]));
const FilterForm = Type.Object({
  title: Type.Optional(Type.String({ maxLength: 256 })),
  context: many(20),
  filter_action: Type.Optional(Type.String({ maxLength: 10 })),
  expires_in: Type.Optional(Type.String({ maxLength: 10 })),
  whole_word: Type.Optional(Type.String({ maxLength: 10 })),
  /** New keywords, one a line. */
  keywords: Type.Optional(Type.String({ maxLength: 50_000 })),
  /** The ids of the filter's keywords to remove (edit form). */
  remove: many(40),
});
type FilterFormBody = Static<typeof FilterForm>;
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const list = (v: string | string[] | undefined) => (v === undefined ? [] : [v].flat());

/** What the form shows: a filter being written, from a row or from a refused form. */
interface FilterFormView {
  id: string | null;
  title: string;
  context: string[];
  action: string;
  expiresIn: string;
  expiresAt: { iso: string; text: string } | null;
  keywords: { id: string; keyword: string; whole_word: boolean }[];
  newKeywords: string;
  wholeWord: boolean;
}

function formOf(f: filters.FilterRow | null): FilterFormView {
  return {
    id: f?.id ?? null, title: f?.title ?? '', context: f?.context ?? ['home', 'notifications', 'public', 'thread', 'account'], action: f?.action ?? 'warn',
    expiresIn: f ? 'keep' : '', expiresAt: f?.expires_at ? dateView(f.expires_at.toISOString()) : null,
    keywords: f?.keywords ?? [], newKeywords: '', wholeWord: true,
  };
}

/** The fields of a sent form, checked as the API's schema checks them (Mastodon's words for the refusals). */
function fieldsOf(t: Translate, b: FilterFormBody, editing: boolean) {
  const title = (b.title ?? '').trim();
  const context = list(b.context).filter((c): c is filters.FilterContext => CONTEXTS.some(([k]) => k === c));
  const action = ACTIONS.find(([a]) => a === b.filter_action)?.[0] ?? 'warn';
  const expires = b.expires_in ?? '';
  const errors: string[] = [];
  if (!title) errors.push(t('filters.error.title'));
  if (context.length === 0) errors.push(t('filters.error.context'));
  let expiresAt: Date | null | undefined;
  if (expires === 'keep' && editing) expiresAt = undefined;
  else if (expires === '') expiresAt = null;
  else if (EXPIRIES.some(([v]) => v === expires)) expiresAt = new Date(Date.now() + Number(expires) * 1000);
  else errors.push(t('filters.error.expires'));
  const wholeWord = b.whole_word === '1';
  const added: KeywordChange[] = (b.keywords ?? '').split('\n').map((k) => k.trim()).filter(Boolean).map((keyword) => ({ keyword: keyword.slice(0, 512), wholeWord, destroy: false }));
  return { fields: { title, context, action, expiresAt }, added, errors, wholeWord };
}

/**
 * Filters: keywords that fold away (warn) or hide posts in the places chosen, until they expire. Made, changed and
 * removed through services/filters.ts, as /api/v2/filters does; someone else's filter is not there (404).
 */
export default async function clientFilterRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function page(request: FastifyRequest, reply: FastifyReply, me: SignedIn, form: FilterFormView, errors: string[] = [], status = 200) {
    const all = form.id ? [] : await filters.filtersOf(ctx.db, me.account.id);
    const now = Date.now();
    return sendClientPage(ctx, request, reply, form.id ? 'client/filter' : 'client/filters', form.id ? { key: 'filters.filter_title', params: { title: form.title } } : { key: 'filters.title' }, {
      form, errors, contexts: CONTEXTS, actions: ACTIONS, expiries: EXPIRIES, pagePath: form.id ? `/filters/${form.id}` : '/filters',
      filters: all.map((f) => ({
        id: f.id, title: f.title, keywords: f.keywords.map((k) => k.keyword), action: f.action,
        contexts: CONTEXTS.filter(([c]) => f.context.includes(c)).map(([, label]) => label),
        expired: f.expires_at !== null && f.expires_at.getTime() <= now, expiresAt: f.expires_at ? dateView(f.expires_at.toISOString()) : null,
      })),
    }, status);
  }
  const own = (me: SignedIn, id: string) => (isId(id) ? filters.findFilter(ctx.db, me.account.id, id) : Promise.resolve(null));
  const refusal = (t: Translate, err: unknown) => {
    if (!(err instanceof ApiError) || err.statusCode >= 500 || err.statusCode === 404) throw err;
    return formError(t, err);
  };

  app.get('/filters', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me ? page(request, reply, me, formOf(null)) : reply;
  });

  app.post('/filters', { schema: { body: FilterForm } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const t = await translatorOf(ctx, request);
    const { fields, added, errors, wholeWord } = fieldsOf(t, request.body, false);
    const again = { ...formOf(null), title: fields.title, context: fields.context, action: fields.action, expiresIn: request.body.expires_in ?? '', newKeywords: request.body.keywords ?? '', wholeWord };
    if (added.length === 0) errors.push(t('filters.error.keyword'));
    if (errors.length > 0) return page(request, reply, me, again, errors, 422);
    try {
      await createFilter(ctx, me.account.id, { ...fields, expiresAt: fields.expiresAt ?? null }, added);
    } catch (err) {
      return page(request, reply, me, again, [refusal(t, err)], 422);
    }
    return reply.redirect('/filters', 303);
  });

  app.get('/filters/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const filter = await own(me, request.params.id);
    return filter ? page(request, reply, me, formOf(filter)) : notFoundPage(request, reply);
  });

  app.post('/filters/:id', { schema: { params: IdParams, body: FilterForm } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const filter = await own(me, request.params.id);
    if (!filter) return notFoundPage(request, reply);
    const t = await translatorOf(ctx, request);
    const { fields, added, errors, wholeWord } = fieldsOf(t, request.body, true);
    const removed: KeywordChange[] = list(request.body.remove).map((id) => ({ id, destroy: true }));
    const again = { ...formOf(filter), title: fields.title, context: fields.context, action: fields.action, expiresIn: request.body.expires_in ?? 'keep', newKeywords: request.body.keywords ?? '', wholeWord };
    const left = filter.keywords.length - filter.keywords.filter((k) => removed.some((r) => r.id === k.id)).length + added.length;
    if (left === 0 && filter.statuses.length === 0) errors.push(t('filters.error.last_keyword'));
    if (errors.length > 0) return page(request, reply, me, again, errors, 422);
    try {
      await updateFilter(ctx, me.account.id, filter.id, fields, [...removed, ...added]);
    } catch (err) {
      return page(request, reply, me, again, [refusal(t, err)], 422);
    }
    return reply.redirect('/filters', 303);
  });

  app.post('/filters/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    try {
      await deleteFilter(ctx, me.account.id, request.params.id);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 404) return notFoundPage(request, reply);
      throw err;
    }
    return reply.redirect('/filters', 303);
  });
}
