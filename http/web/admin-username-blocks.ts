import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { ApiError } from '../../errors.ts';
import { isId } from '../../storage/ids.ts';
import { findUsernameBlock, usernameBlocksPage, type UsernameBlockRow } from '../../storage/username-blocks.ts';
import { comparisonOf, createUsernameBlock, removeUsernameBlock, updateUsernameBlock, USERNAME_BLOCK_MAX, type UsernameBlockInput } from '../../services/username-blocks.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';
import { gone, refusedPage } from './admin-refusal.ts';

const PAGE = 100;
const NOTICES: Record<string, string> = {
  added: 'The username block is added.',
  changed: 'The username block is saved.',
  removed: 'The username block is removed.',
};
const ListQuery = Type.Object({ max_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })), notice: Type.Optional(Type.String({ maxLength: 40 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
// A checkbox is sent only when ticked; the service answers a blank or long name, or another comparison, with a 422.
const BlockForm = Type.Object({
  username: Type.String({ maxLength: 1000 }),
  comparison: Type.String({ maxLength: 40 }),
  allow_with_approval: Type.Optional(Type.String({ maxLength: 10 })),
});

/** What the form holds: a block as stored, or as typed when it was refused. */
interface Typed { username: string; comparison: string; allow_with_approval: boolean }
const typedOf = (b: UsernameBlockRow): Typed => ({ username: b.username, comparison: comparisonOf(b), allow_with_approval: b.allow_with_approval });
const inputOf = (body: { username: string; comparison: string; allow_with_approval?: string | undefined }): UsernameBlockInput & Typed =>
  ({ username: body.username, comparison: body.comparison, allow_with_approval: body.allow_with_approval === '1' });
const refusal = (err: unknown) => {
  if (err instanceof ApiError && err.statusCode === 422) return err.message.replace(/^Validation failed: /, '');
  throw err;
};

/**
 * The operators' page of username blocks (Mastodon 4.5's Admin::UsernameBlocksController): list, add, edit, remove,
 * over the same service as /api/v1/admin/username_blocks, for roles that may manage blocks.
 */
export default async function adminUsernameBlockPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  const listPage = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: string; error?: string; maxId?: string | undefined; typed?: Typed }, status = 200) => {
    const rows = await usernameBlocksPage(ctx.db, { limit: PAGE + 1, maxId: extra.maxId });
    const page = rows.slice(0, PAGE);
    return sendFormPage(ctx, request, reply, 'admin/username-blocks', 'Username blocks', {
      blocks: page.map((b) => ({ ...typedOf(b), id: b.id })), max: USERNAME_BLOCK_MAX,
      typed: extra.typed ?? { username: '', comparison: 'equals', allow_with_approval: false },
      nextPage: rows.length > PAGE ? `/admin/username_blocks?max_id=${page.at(-1)!.id}` : '', notice: extra.notice ?? '', error: extra.error ?? '',
    }, status);
  };

  const editPage = (request: FastifyRequest, reply: FastifyReply, id: string, typed: Typed, error = '', status = 200) =>
    sendFormPage(ctx, request, reply, 'admin/username-block', 'Edit a username block', { id, typed, max: USERNAME_BLOCK_MAX, notice: '', error }, status);

  app.get('/admin/username_blocks', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return listPage(request, reply, { notice: (request.query.notice && NOTICES[request.query.notice]) || '', maxId: request.query.max_id });
  });

  app.post('/admin/username_blocks', { schema: { body: BlockForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const input = inputOf(request.body);
    try {
      await createUsernameBlock(ctx.db, input, me.account.id);
    } catch (err) {
      return listPage(request, reply, { error: refusal(err), typed: input }, 422);
    }
    return reply.redirect('/admin/username_blocks?notice=added', 303);
  });

  app.get('/admin/username_blocks/:id/edit', { schema: { params: IdParams } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const block = isId(request.params.id) ? await findUsernameBlock(ctx.db, request.params.id) : null;
    if (!block) return refusedPage(ctx, request, reply, gone(), '/admin/username_blocks');
    return editPage(request, reply, block.id, typedOf(block));
  });

  app.post('/admin/username_blocks/:id', { schema: { params: IdParams, body: BlockForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const input = inputOf(request.body);
    let block: UsernameBlockRow | null;
    try {
      block = isId(request.params.id) ? await updateUsernameBlock(ctx.db, request.params.id, input, me.account.id) : null;
    } catch (err) {
      return editPage(request, reply, request.params.id, input, refusal(err), 422);
    }
    if (!block) return refusedPage(ctx, request, reply, gone(), '/admin/username_blocks');
    return reply.redirect('/admin/username_blocks?notice=changed', 303);
  });

  app.post('/admin/username_blocks/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const block = isId(request.params.id) ? await removeUsernameBlock(ctx.db, request.params.id, me.account.id) : null;
    if (!block) return refusedPage(ctx, request, reply, gone(), '/admin/username_blocks');
    return reply.redirect('/admin/username_blocks?notice=removed', 303);
  });
}
