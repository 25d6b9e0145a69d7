import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';

/** Custom emojis: this server has none (neither its own nor copies of other servers'), so the list is empty. */
export default async function customEmojisRoutes(app: FastifyInstance, _options: RouteOptions) {
  app.get('/api/v1/custom_emojis', { config: { auth: { kind: 'anonymous' } } }, async () => []);
}
