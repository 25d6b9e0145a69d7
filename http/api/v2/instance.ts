import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';
import { instanceStats } from '../../../storage/instance.ts';
import { renderInstanceV2 } from '../../serializers/instance.ts';
import { contactAccount, instanceExtras } from '../v1/instance.ts';
import { vapidPublicKey } from '../../../services/web-push.ts';

export default async function instanceV2Routes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/api/v2/instance', { config: { auth: { kind: 'anonymous' } } }, async () => {
    const [stats, contact, vapidKey, extras] = await Promise.all([instanceStats(ctx.db), contactAccount(ctx), vapidPublicKey(ctx.db), instanceExtras(ctx)]);
    return renderInstanceV2(ctx.render, ctx.config, stats, contact, vapidKey, extras);
  });
}
