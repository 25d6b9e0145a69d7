import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import { transaction } from '../../../storage/db.ts';
import * as filters from '../../../storage/filters.ts';
import { filtersChanged } from '../../../services/filters.ts';
import { renderV1Filter } from '../../serializers/filter.ts';
import { ExpiresIn, FilterContextSchema, expiresAt } from '../v2/filters.ts';

const V1Body = {
  phrase: Type.String({ minLength: 1, maxLength: 512 }),
  context: Type.Array(FilterContextSchema, { minItems: 1, maxItems: 5 }),
  irreversible: Type.Optional(Bool()),
  whole_word: Type.Optional(Bool()),
  expires_in: ExpiresIn,
};
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

/**
 * The v1 filters older apps use, on the same filters as v2, as Mastodon maps them: each keyword is one v1 filter
 * (its id is the keyword's), `irreversible` is the `hide` action, and a new v1 filter is a filter of one keyword.
 */
export default async function filtersV1Routes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const read = { auth: { kind: 'user' as const, scopes: ['read:filters'] } };
  const write = { auth: { kind: 'user' as const, scopes: ['write:filters'] } };

  /** The keyword and its filter, when both are the viewer's. */
  const ownKeyword = async (viewerId: string, id: string) => {
    const keyword = isId(id) ? await filters.findKeyword(ctx.db, viewerId, id) : null;
    const filter = keyword ? await filters.findFilter(ctx.db, viewerId, keyword.custom_filter_id) : null;
    if (!keyword || !filter) throw notFound();
    return { keyword, filter };
  };

  app.get('/api/v1/filters', { config: read }, async (request) => {
    const all = await filters.filtersOf(ctx.db, requireViewer(request));
    return all.flatMap((f) => f.keywords.map((k) => renderV1Filter(f, k)));
  });

  app.get('/api/v1/filters/:id', { schema: { params: IdParams }, config: read }, async (request) => {
    const { keyword, filter } = await ownKeyword(requireViewer(request), request.params.id);
    return renderV1Filter(filter, keyword);
  });

  app.post('/api/v1/filters', { schema: { body: Type.Object(V1Body) }, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    const b = request.body;
    const { filterId, keyword } = await transaction(ctx.db, async (tx) => {
      if ((await filters.countFilters(tx, viewerId)) >= filters.FILTER_LIMITS.filters) throw unprocessable(`Validation failed: you may keep at most ${filters.FILTER_LIMITS.filters} filters`);
      const filterId = await filters.insertFilter(tx, viewerId, { title: b.phrase, context: b.context as filters.FilterContext[], action: b.irreversible ? 'hide' : 'warn', expiresAt: expiresAt(b.expires_in) ?? null });
      return { filterId, keyword: await filters.insertKeyword(tx, filterId, b.phrase, b.whole_word ?? true) };
    });
    await filtersChanged(ctx, viewerId);
    return renderV1Filter((await filters.findFilter(ctx.db, viewerId, filterId))!, keyword);
  });

  app.put('/api/v1/filters/:id', { schema: { params: IdParams, body: Type.Partial(Type.Object(V1Body)) }, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    const { keyword, filter } = await ownKeyword(viewerId, request.params.id);
    const b = request.body;
    const action = b.irreversible === undefined ? undefined : b.irreversible ? 'hide' as const : 'warn' as const;
    const filterChanges = { context: b.context as filters.FilterContext[] | undefined, action, expiresAt: expiresAt(b.expires_in) };
    const changesFilter = filterChanges.context !== undefined || action !== undefined || filterChanges.expiresAt !== undefined;
    // The old API cannot say which keyword a filter-wide change is for, so Mastodon refuses it on shared filters.
    if (changesFilter && filter.keywords.length > 1) {
      throw unprocessable('This filter has several keywords and cannot be changed through the v1 API; use /api/v2/filters');
    }
    await transaction(ctx.db, async (tx) => {
      await filters.updateKeyword(tx, keyword.id, b.phrase, b.whole_word);
      if (changesFilter) await filters.updateFilter(tx, viewerId, filter.id, filterChanges);
    });
    await filtersChanged(ctx, viewerId);
    const updated = await ownKeyword(viewerId, keyword.id);
    return renderV1Filter(updated.filter, updated.keyword);
  });

  app.delete('/api/v1/filters/:id', { schema: { params: IdParams }, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    const { keyword, filter } = await ownKeyword(viewerId, request.params.id);
    await transaction(ctx.db, async (tx) => {
      await filters.deleteKeyword(tx, keyword.id);
      // A filter left with nothing to match would match nothing: it goes with its last keyword.
      if (filter.keywords.length === 1 && filter.statuses.length === 0) await filters.deleteFilter(tx, viewerId, filter.id);
    });
    await filtersChanged(ctx, viewerId);
    return {};
  });
}
