import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { IdList, PagingQuery, isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { pageParams, setLinkHeader } from '../../paging.ts';
import { unprocessable } from '../../../errors.ts';
import { writeAccountNote } from '../../../services/account-notes.ts';
import { visibleAccount } from '../../../services/accounts.ts';
import * as follows from '../../../storage/follows.ts';
import { findAccountsByIds } from '../../../storage/accounts.ts';
import { endorse, endorsementsPage, familiarFollowers, unendorse } from '../../../storage/account-notes.ts';
import { renderAccount } from '../../serializers/account.ts';
import { renderRelationship } from '../../serializers/relationship.ts';

// Around accounts: private notes, removing a follower, familiar followers, and featured accounts (endorsements).

const AccountIdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const WRITE_ACCOUNTS = { kind: 'user', scopes: ['write:accounts'] } as const;

export default async function accountNotesRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const relationshipOf = async (viewerId: string, targetId: string) =>
    renderRelationship(targetId, (await follows.relationships(ctx.db, viewerId, [targetId])).get(targetId));

  app.post('/api/v1/accounts/:id/note', {
    schema: { params: AccountIdParams, body: Type.Optional(Type.Object({ comment: Type.Optional(Type.Union([Type.String(), Type.Null()])) })) },
    config: { auth: WRITE_ACCOUNTS },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const target = await visibleAccount(ctx.db, request.params.id);
    await writeAccountNote(ctx.db, viewerId, target.id, request.body?.comment ?? '');
    return relationshipOf(viewerId, target.id);
  });

  app.post('/api/v1/accounts/:id/remove_from_followers', {
    schema: { params: AccountIdParams },
    config: { auth: { kind: 'user', scopes: ['write:follows', 'follow'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const follower = await visibleAccount(ctx.db, request.params.id);
    await ctx.actors.ask(viewerId, { type: 'removeFromFollowers', followerId: follower.id });
    return relationshipOf(viewerId, follower.id);
  });

  app.get('/api/v1/accounts/familiar_followers', {
    schema: { querystring: Type.Object({ id: Type.Optional(IdList(40)) }) },
    config: { auth: { kind: 'user', scopes: ['read:follows', 'follow'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const ids = [...new Set((request.query.id ?? []).filter(isId))];
    const found = await familiarFollowers(ctx.db, viewerId, ids, 40);
    const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set([...found.values()].flat())])).map((a) => [a.id, a]));
    return ids.map((id) => ({ id, accounts: (found.get(id) ?? []).flatMap((a) => (accounts.has(a) ? [renderAccount(ctx.render, accounts.get(a)!)] : [])) }));
  });

  // `pin`/`unpin` are the names before Mastodon 4.4; both do the same.
  for (const [name, on] of [['endorse', true], ['pin', true], ['unendorse', false], ['unpin', false]] as const) {
    app.post(`/api/v1/accounts/:id/${name}`, { schema: { params: AccountIdParams }, config: { auth: WRITE_ACCOUNTS } }, async (request) => {
      const viewerId = requireViewer(request);
      const target = await visibleAccount(ctx.db, request.params.id);
      if (on && !(await endorse(ctx.db, viewerId, target.id))) throw unprocessable('Validation failed: You must be following this account to endorse it');
      if (!on) await unendorse(ctx.db, viewerId, target.id);
      return relationshipOf(viewerId, target.id);
    });
  }

  app.get('/api/v1/endorsements', {
    schema: { querystring: Type.Object(PagingQuery(40, 80)) },
    config: { auth: { kind: 'user', scopes: ['read:accounts'] } },
  }, async (request, reply) => {
    const page = await endorsementsPage(ctx.db, requireViewer(request), pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    return page.accounts.map((a) => renderAccount(ctx.render, a));
  });

  app.get('/api/v1/accounts/:id/endorsements', {
    schema: { params: AccountIdParams, querystring: Type.Object(PagingQuery(40, 80)) },
    config: { auth: { kind: 'public', scopes: ['read:accounts'] } },
  }, async (request, reply) => {
    const account = await visibleAccount(ctx.db, request.params.id);
    // An account that hides its follows hides whom it features too.
    if (account.hide_collections && request.viewerId !== account.id) return [];
    const page = await endorsementsPage(ctx.db, account.id, pageParams(request.query, 40));
    setLinkHeader(request, reply, ctx.config.publicUrl, page.firstId, page.lastId);
    return page.accounts.map((a) => renderAccount(ctx.render, a));
  });
}
