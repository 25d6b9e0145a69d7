import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../app.ts';
import { instanceStats } from '../../../storage/instance.ts';
import { findAccountByUsername } from '../../../storage/accounts.ts';
import { renderInstanceV1 } from '../../serializers/instance.ts';
import type { AppContext } from '../../../context.ts';

export async function contactAccount(ctx: AppContext) {
  return ctx.config.contactUsername ? findAccountByUsername(ctx.db, ctx.config.contactUsername, null) : null;
}

export default async function instanceV1Routes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/api/v1/instance', { config: { auth: { kind: 'anonymous' } } }, async () => {
    const [stats, contact] = await Promise.all([instanceStats(ctx.db), contactAccount(ctx)]);
    return renderInstanceV1(ctx.render, ctx.config, stats, contact);
  });
}
