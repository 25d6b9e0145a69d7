import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';
import { LocalEmojiList } from '../../../services/custom-emojis.ts';
import { renderEmojiList } from '../../serializers/custom-emoji.ts';

/**
 * This server's custom emoji shown in the picker (Mastodon's CustomEmoji.listed: enabled, visible), by shortcode.
 * Every client asks at start, so the rendered list is kept in memory while the emoji version holds.
 */
export default async function customEmojisRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  const list = new LocalEmojiList(ctx.versions);
  app.get('/api/v1/custom_emojis', { config: { auth: { kind: 'anonymous' } } }, async (_request, reply) => {
    const body = await list.get(ctx.db, (rows) => renderEmojiList(ctx.render, rows));
    return reply.type('application/json; charset=utf-8').send(body);
  });
}
