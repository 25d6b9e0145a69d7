import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import type { AppContext } from '../../../context.ts';
import { isId } from '../../params.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound, unprocessable } from '../../../errors.ts';
import { findPoll, ownVotes } from '../../../storage/polls.ts';
import { renderPoll } from '../../serializers/poll.ts';
import { renderEmoji } from '../../serializers/custom-emoji.ts';
import { resolveEmojis } from '../../../services/custom-emojis.ts';
import { visibleStatus } from '../../../services/visibility.ts';

const PollParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

/** The poll as the viewer sees it, if they may see its status. */
async function viewPoll(ctx: AppContext, viewerId: string | null, id: string) {
  const poll = isId(id) ? await findPoll(ctx.db, id) : null;
  if (!poll) throw notFound();
  await visibleStatus(ctx.db, viewerId, poll.status_id);
  const [choices, emojis] = await Promise.all([
    viewerId ? ownVotes(ctx.db, viewerId, [poll.id]).then((v) => v.get(poll.id) ?? []) : Promise.resolve([]),
    resolveEmojis(ctx.db, [{ key: poll.id, accountId: poll.account_id, texts: poll.options }]).then((e) => e.get(poll.id) ?? []),
  ]);
  return renderPoll(poll, viewerId ? { accountId: viewerId, choices } : null, emojis.map((e) => renderEmoji(ctx.render, e)));
}

export default async function pollsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v1/polls/:id', {
    schema: { params: PollParams },
    config: { auth: { kind: 'public', scopes: ['read:statuses'] } },
  }, async (request) => viewPoll(ctx, request.viewerId, request.params.id));

  app.post('/api/v1/polls/:id/votes', {
    schema: { params: PollParams, body: Type.Object({ choices: Type.Optional(Type.Array(Type.Integer({ minimum: 0, maximum: 1000 }), { maxItems: 50 })) }) },
    config: { auth: { kind: 'user', scopes: ['write:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    if (!isId(request.params.id)) throw notFound();
    const choices = request.body.choices ?? [];
    if (choices.length === 0) throw unprocessable('Validation failed: Choices can\'t be blank');
    await ctx.actors.ask(viewerId, { type: 'votePoll', pollId: request.params.id, choices });
    return viewPoll(ctx, viewerId, request.params.id);
  });
}
