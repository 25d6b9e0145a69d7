import { Type } from '../../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { Bool, IdList, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { ApiError, notFound, unprocessable } from '../../../errors.ts';
import { visibleAccount } from '../../../services/accounts.ts';
import {
  addToCollection, changeCollection, createCollection, mayListCollections, removeCollection, removeFromCollection, revokeItem, viewableCollection,
} from '../../../services/collections.ts';
import { COLLECTION_MAX_ITEMS, collectionsFeaturing, collectionsOf, findCollection, itemsOf } from '../../../storage/collections.ts';
import { findAccountsByIds } from '../../../storage/accounts.ts';
import { renderAccount } from '../../serializers/account.ts';
import { renderCollection, renderCollectionItem, renderCollections } from '../../serializers/collection.ts';

// Mastodon 4.6's collections API (Api::V1::CollectionsController, CollectionItemsController, InCollectionsController).

const Id = Type.Object({ id: Type.String({ maxLength: 40 }) });
const ItemParams = Type.Object({ collection_id: Type.String({ maxLength: 40 }), id: Type.String({ maxLength: 40 }) });
const Fields = {
  name: Type.Optional(Type.String({ maxLength: 1000 })),
  description: Type.Optional(Type.String({ maxLength: 5000 })),
  language: Type.Optional(Type.String({ maxLength: 20 })),
  sensitive: Type.Optional(Bool()),
  discoverable: Type.Optional(Bool()),
  tag_name: Type.Optional(Type.String({ maxLength: 200 })),
};
const Paging = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximumClamp: 80 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
});
const READ = { kind: 'public', scopes: ['read:collections'] } as const;
const READ_USER = { kind: 'user', scopes: ['read:collections'] } as const;
const WRITE = { kind: 'user', scopes: ['write:collections'] } as const;
const DEFAULT_LIMIT = 40;

/** Mastodon's offset paging for collections: `next` while a further page may hold more, `prev` after the first. */
function setOffsetLinks(request: FastifyRequest, reply: FastifyReply, publicUrl: string, offset: number, limit: number, more: boolean): void {
  const path = request.url.split('?', 1)[0]!;
  const url = (o: number) => `${publicUrl}${path}?limit=${limit}&offset=${o}`;
  const links = [];
  if (more) links.push(`<${url(offset + limit)}>; rel="next"`);
  if (offset > 0) links.push(`<${url(Math.max(offset - limit, 0))}>; rel="prev"`);
  if (links.length > 0) reply.header('link', links.join(', '));
}

/**
 * Mastodon answers these with Rails' `head 200`: no body, typed as the request's format, which for an app that sends
 * no Accept (masto, most apps) is `text/html`, as apps expect it (masto reads that as "nothing"; an empty body typed
 * JSON is malformed JSON to it, one typed text/plain an unknown encoding).
 */
function headOk(reply: FastifyReply) {
  return reply.code(200).type('text/html').send('');
}

export default async function collectionsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const idOr404 = (id: string) => {
    if (!isId(id)) throw notFound();
    return id;
  };
  const renderOne = async (viewerId: string, id: string) => {
    const c = (await findCollection(ctx.db, id))!;
    return { collection: (await renderCollections(ctx, viewerId, [c]))[0] };
  };

  // Our collections as ActivityPub documents (federation/collections.ts): Fedify has no such types, so these paths
  // fall through its router to here. The list an actor names, each collection, its items, and our accounts' approvals.
  const documentPaths = [
    '/users/:username/featured_collections', '/users/:username/featured_collections/:id', '/users/:username/featured_collections/:id/items/:item_id',
    '/users/:username/feature_authorizations/:id',
  ];
  for (const path of documentPaths) {
    app.get(path, async (request, reply) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        if (value !== undefined) for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
      }
      // federation/collections.ts imports Fedify: loaded at first use.
      const { serveCollectionDocument } = await import('../../../federation/collections.ts');
      const { status, body } = await serveCollectionDocument(ctx, new Request(new URL(request.url, ctx.config.publicUrl), { headers }));
      if (ctx.config.authorizedFetch || request.headers.signature !== undefined) reply.header('cache-control', 'private, no-store').header('vary', 'Accept, Signature');
      return reply.code(status).type(status === 200 ? 'application/activity+json; charset=utf-8' : 'application/json; charset=utf-8').send(JSON.stringify(body));
    });
  }

  app.get('/api/v1/accounts/:id/collections', { schema: { params: Id, querystring: Paging }, config: { auth: READ } }, async (request, reply) => {
    const account = await visibleAccount(ctx.db, request.params.id);
    const viewerId = request.viewerId;
    if (account.suspended_at || !(await mayListCollections(ctx, viewerId, account.id))) return { collections: [] };
    const limit = request.query.limit ?? DEFAULT_LIMIT;
    const offset = request.query.offset ?? 0;
    const rows = await collectionsOf(ctx.db, account.id, viewerId === account.id, offset, limit + 1);
    setOffsetLinks(request, reply, ctx.config.publicUrl, offset, limit, rows.length > limit);
    return { collections: await renderCollections(ctx, viewerId, rows.slice(0, limit)) };
  });

  app.get('/api/v1/accounts/:id/in_collections', { schema: { params: Id, querystring: Paging }, config: { auth: READ_USER } }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const account = await visibleAccount(ctx.db, request.params.id);
    // Only one's own (Mastodon's AccountPolicy#index_featured_in_collections?).
    if (account.id !== viewerId) throw new ApiError(403, 'This action is not allowed');
    const limit = request.query.limit ?? DEFAULT_LIMIT;
    const offset = request.query.offset ?? 0;
    const rows = await collectionsFeaturing(ctx.db, account.id, offset, limit + 1);
    setOffsetLinks(request, reply, ctx.config.publicUrl, offset, limit, rows.length > limit);
    return { collections: await renderCollections(ctx, viewerId, rows.slice(0, limit)) };
  });

  app.get('/api/v1/collections/:id', { schema: { params: Id }, config: { auth: READ } }, async (request) => {
    const viewerId = request.viewerId;
    const c = await viewableCollection(ctx, viewerId, idOr404(request.params.id));
    const items = (await itemsOf(ctx.db, [c], viewerId)).get(c.id) ?? [];
    const accounts = new Map((await findAccountsByIds(ctx.db, [c.account_id, ...items.map((i) => i.account_id)])).map((a) => [a.id, a]));
    return {
      collection: renderCollection(ctx.config.publicUrl, c, items),
      accounts: [c.account_id, ...items.map((i) => i.account_id)].filter((id) => accounts.has(id)).map((id) => renderAccount(ctx.render, accounts.get(id)!)),
    };
  });

  app.post('/api/v1/collections', {
    schema: { body: Type.Object({ ...Fields, account_ids: Type.Optional(IdList(COLLECTION_MAX_ITEMS * 2)) }) },
    config: { auth: WRITE },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const ids = request.body.account_ids ?? [];
    if (!ids.every(isId)) throw notFound();
    const id = await createCollection(ctx, viewerId, request.body, ids);
    return renderOne(viewerId, id);
  });

  const update = async (request: FastifyRequest<{ Params: { id: string }; Body: Record<string, unknown> }>) => {
    const viewerId = requireViewer(request);
    const id = idOr404(request.params.id);
    await changeCollection(ctx, viewerId, id, request.body);
    return renderOne(viewerId, id);
  };
  const updateSchema = { schema: { params: Id, body: Type.Object(Fields) }, config: { auth: WRITE } };
  app.patch('/api/v1/collections/:id', updateSchema, update);
  app.put('/api/v1/collections/:id', updateSchema, update);

  app.delete('/api/v1/collections/:id', { schema: { params: Id }, config: { auth: WRITE } }, async (request, reply) => {
    await removeCollection(ctx, requireViewer(request), idOr404(request.params.id));
    return headOk(reply);
  });

  app.post('/api/v1/collections/:collection_id/items', {
    schema: { params: Type.Object({ collection_id: Type.String({ maxLength: 40 }) }), body: Type.Optional(Type.Object({ account_id: Type.Optional(Type.String({ maxLength: 40 })) })) },
    config: { auth: WRITE },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const collectionId = idOr404(request.params.collection_id);
    const accountId = request.body?.account_id;
    if (!accountId) throw unprocessable('`account_id` parameter is missing');
    const item = await addToCollection(ctx, viewerId, collectionId, idOr404(accountId));
    return { collection_item: renderCollectionItem(item) };
  });

  app.delete('/api/v1/collections/:collection_id/items/:id', { schema: { params: ItemParams }, config: { auth: WRITE } }, async (request, reply) => {
    await removeFromCollection(ctx, requireViewer(request), idOr404(request.params.collection_id), idOr404(request.params.id));
    return headOk(reply);
  });

  app.post('/api/v1/collections/:collection_id/items/:id/revoke', { schema: { params: ItemParams }, config: { auth: WRITE } }, async (request, reply) => {
    await revokeItem(ctx, requireViewer(request), idOr404(request.params.collection_id), idOr404(request.params.id));
    return headOk(reply);
  });
}
