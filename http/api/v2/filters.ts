import { Type, type Static } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import { transaction } from '../../../storage/db.ts';
import * as filters from '../../../storage/filters.ts';
import { findStatus } from '../../../storage/statuses.ts';
import { canSee } from '../../../services/visibility.ts';
import { createFilter, deleteFilter, filtersChanged, updateFilter, type KeywordChange } from '../../../services/filters.ts';
import { renderFilter, renderFilterKeyword, renderFilterStatus } from '../../serializers/filter.ts';

export const FilterContextSchema = Type.Union(['home', 'notifications', 'public', 'thread', 'account'].map((c) => Type.Literal(c)));
const Action = Type.Union([Type.Literal('warn'), Type.Literal('hide'), Type.Literal('blur')]);
/** Seconds from now; empty or null for a filter that never expires. */
export const ExpiresIn = Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 10 * 365 * 86400 }), Type.Null(), Type.Literal('')]));
const Keyword = Type.String({ minLength: 1, maxLength: 512 });
const KeywordRow = Type.Object({
  id: Type.Optional(Type.String({ maxLength: 40 })),
  keyword: Type.Optional(Type.Union([Keyword, Type.Array(Keyword, { maxItems: 100 })])),
  whole_word: Type.Optional(Type.Union([Bool(), Type.Array(Bool(), { maxItems: 100 })])),
  _destroy: Type.Optional(Bool()),
});
// JSON sends a list; forms send `keywords_attributes[0][keyword]` (an object keyed by index) or
// `keywords_attributes[][keyword]` (which the parser folds into one row of lists).
const KeywordRows = Type.Union([
  Type.Array(KeywordRow, { maxItems: filters.FILTER_LIMITS.keywordsPerFilter }),
  Type.Record(Type.String({ pattern: '^[0-9]+$' }), KeywordRow, { maxProperties: filters.FILTER_LIMITS.keywordsPerFilter }),
]);
const FilterBody = {
  title: Type.String({ minLength: 1, maxLength: 256 }),
  context: Type.Array(FilterContextSchema, { minItems: 1, maxItems: 5 }),
  filter_action: Type.Optional(Action),
  expires_in: ExpiresIn,
  keywords_attributes: Type.Optional(KeywordRows),
};
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const FilterIdParams = Type.Object({ filter_id: Type.String({ maxLength: 40 }) });

/** The rows of keywords_attributes, however the client sent them. */
function keywordChanges(value: Static<typeof KeywordRows> | undefined): KeywordChange[] {
  if (!value) return [];
  const rows = Array.isArray(value) ? value : Object.keys(value).sort((a, b) => Number(a) - Number(b)).map((k) => value[k]!);
  return rows.flatMap((r) => {
    const keywords = r.keyword === undefined ? [undefined] : [r.keyword].flat();
    const whole = [r.whole_word].flat();
    return keywords.map((keyword, i) => ({ id: r.id, keyword, wholeWord: whole[i] ?? (i === 0 ? whole[0] : undefined), destroy: r._destroy ?? false }));
  });
}

export const expiresAt = (expiresIn: number | null | '' | undefined): Date | null | undefined =>
  expiresIn === undefined ? undefined : typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null;

/**
 * Filters (v2), as Mastodon has them: a title, the contexts it applies in, what it does (warn, hide, blur), when it
 * expires, and the keywords and statuses it matches. Each account keeps at most FILTER_LIMITS of each.
 */
export default async function filtersRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const read = { auth: { kind: 'user' as const, scopes: ['read:filters'] } };
  const write = { auth: { kind: 'user' as const, scopes: ['write:filters'] } };
  const ownFilter = async (viewerId: string, id: string) => {
    const f = isId(id) ? await filters.findFilter(ctx.db, viewerId, id) : null;
    if (!f) throw notFound();
    return f;
  };

  app.get('/api/v2/filters', { config: read }, async (request) => {
    return (await filters.filtersOf(ctx.db, requireViewer(request))).map((f) => renderFilter(f));
  });

  app.get('/api/v2/filters/:id', { schema: { params: IdParams }, config: read }, async (request) => {
    return renderFilter(await ownFilter(requireViewer(request), request.params.id));
  });

  app.post('/api/v2/filters', { schema: { body: Type.Object(FilterBody) }, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    const b = request.body;
    const id = await createFilter(ctx, viewerId, {
      title: b.title, context: b.context as filters.FilterContext[], action: b.filter_action ?? 'warn', expiresAt: expiresAt(b.expires_in) ?? null,
    }, keywordChanges(b.keywords_attributes));
    return renderFilter((await filters.findFilter(ctx.db, viewerId, id))!);
  });

  app.put('/api/v2/filters/:id', { schema: { params: IdParams, body: Type.Partial(Type.Object(FilterBody)) }, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    const filter = await ownFilter(viewerId, request.params.id);
    const b = request.body;
    await updateFilter(ctx, viewerId, filter.id, {
      title: b.title, context: b.context as filters.FilterContext[] | undefined, action: b.filter_action, expiresAt: expiresAt(b.expires_in),
    }, keywordChanges(b.keywords_attributes));
    return renderFilter((await filters.findFilter(ctx.db, viewerId, filter.id))!);
  });

  app.delete('/api/v2/filters/:id', { schema: { params: IdParams }, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    await deleteFilter(ctx, viewerId, request.params.id);
    return {};
  });

  // Keywords of a filter.
  app.get('/api/v2/filters/:filter_id/keywords', { schema: { params: FilterIdParams }, config: read }, async (request) => {
    return (await ownFilter(requireViewer(request), request.params.filter_id)).keywords.map(renderFilterKeyword);
  });

  app.post('/api/v2/filters/:filter_id/keywords', {
    schema: { params: FilterIdParams, body: Type.Object({ keyword: Keyword, whole_word: Type.Optional(Bool()) }) },
    config: write,
  }, async (request) => {
    const viewerId = requireViewer(request);
    const filter = await ownFilter(viewerId, request.params.filter_id);
    if (filter.keywords.length >= filters.FILTER_LIMITS.keywordsPerFilter) throw unprocessable(`Validation failed: a filter may have at most ${filters.FILTER_LIMITS.keywordsPerFilter} keywords`);
    const keyword = await filters.insertKeyword(ctx.db, filter.id, request.body.keyword, request.body.whole_word ?? true);
    await filtersChanged(ctx, viewerId);
    return renderFilterKeyword(keyword);
  });

  const ownKeyword = async (viewerId: string, id: string) => {
    const k = isId(id) ? await filters.findKeyword(ctx.db, viewerId, id) : null;
    if (!k) throw notFound();
    return k;
  };

  app.get('/api/v2/filters/keywords/:id', { schema: { params: IdParams }, config: read }, async (request) => {
    return renderFilterKeyword(await ownKeyword(requireViewer(request), request.params.id));
  });
  app.get('/api/v2/filter_keywords/:id', { schema: { params: IdParams }, config: read }, async (request) => {
    return renderFilterKeyword(await ownKeyword(requireViewer(request), request.params.id));
  });

  const updateKeyword = async (viewerId: string, id: string, body: { keyword?: string; whole_word?: boolean }) => {
    const k = await ownKeyword(viewerId, id);
    const updated = await filters.updateKeyword(ctx.db, k.id, body.keyword, body.whole_word);
    await filtersChanged(ctx, viewerId);
    return renderFilterKeyword(updated!);
  };
  const KeywordBody = Type.Object({ keyword: Type.Optional(Keyword), whole_word: Type.Optional(Bool()) });
  app.put('/api/v2/filters/keywords/:id', { schema: { params: IdParams, body: KeywordBody }, config: write }, async (request) => updateKeyword(requireViewer(request), request.params.id, request.body));
  app.put('/api/v2/filter_keywords/:id', { schema: { params: IdParams, body: KeywordBody }, config: write }, async (request) => updateKeyword(requireViewer(request), request.params.id, request.body));

  const deleteKeyword = async (viewerId: string, id: string) => {
    const k = await ownKeyword(viewerId, id);
    await filters.deleteKeyword(ctx.db, k.id);
    await filtersChanged(ctx, viewerId);
    return {};
  };
  app.delete('/api/v2/filters/keywords/:id', { schema: { params: IdParams }, config: write }, async (request) => deleteKeyword(requireViewer(request), request.params.id));
  app.delete('/api/v2/filter_keywords/:id', { schema: { params: IdParams }, config: write }, async (request) => deleteKeyword(requireViewer(request), request.params.id));

  // Statuses a filter matches by id.
  app.get('/api/v2/filters/:filter_id/statuses', { schema: { params: FilterIdParams }, config: read }, async (request) => {
    return (await ownFilter(requireViewer(request), request.params.filter_id)).statuses.map(renderFilterStatus);
  });

  app.post('/api/v2/filters/:filter_id/statuses', {
    schema: { params: FilterIdParams, body: Type.Object({ status_id: Type.String({ maxLength: 40 }) }) },
    config: write,
  }, async (request) => {
    const viewerId = requireViewer(request);
    const filter = await ownFilter(viewerId, request.params.filter_id);
    const status = isId(request.body.status_id) ? await findStatus(ctx.db, request.body.status_id) : null;
    if (!status || !(await canSee(ctx.db, viewerId, status))) throw notFound();
    if (filter.statuses.length >= filters.FILTER_LIMITS.statusesPerFilter) throw unprocessable(`Validation failed: a filter may match at most ${filters.FILTER_LIMITS.statusesPerFilter} statuses`);
    const row = await filters.insertFilterStatus(ctx.db, filter.id, status.id);
    await filtersChanged(ctx, viewerId);
    return renderFilterStatus(row);
  });

  const ownFilterStatus = async (viewerId: string, id: string) => {
    const s = isId(id) ? await filters.findFilterStatus(ctx.db, viewerId, id) : null;
    if (!s) throw notFound();
    return s;
  };
  for (const path of ['/api/v2/filters/statuses/:id', '/api/v2/filter_statuses/:id']) {
    app.get(path, { schema: { params: IdParams }, config: read }, async (request) => renderFilterStatus(await ownFilterStatus(requireViewer(request), request.params.id)));
    app.delete(path, { schema: { params: IdParams }, config: write }, async (request) => {
      const viewerId = requireViewer(request);
      const s = await ownFilterStatus(viewerId, request.params.id);
      await filters.deleteFilterStatus(ctx.db, s.id);
      await filtersChanged(ctx, viewerId);
      return {};
    });
  }
}
