import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';
import { ApiError, notFound } from '../../../errors.ts';
import { userFacingDomainBlocks } from '../../../storage/instance-domain-blocks.ts';
import { renderDomainBlock } from '../../serializers/domain-block.ts';

/**
 * GET /api/v1/instance/domain_blocks, as Mastodon publishes its moderated servers: silences and suspensions (not
 * noop or media-only blocks), silences first, each by domain; obfuscated domains starred, each with the SHA-256 of its
 * real name. Who may read it is SHOW_DOMAIN_BLOCKS (all by default, users: signed-in users only, disabled: 404), and
 * who sees the public comments SHOW_DOMAIN_BLOCKS_RATIONALE; in limited federation mode only signed-in users may.
 */
export default async function instanceDomainBlocksRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/api/v1/instance/domain_blocks', { config: { auth: { kind: 'public' } } }, async (request, reply) => {
    const signedIn = request.viewerId !== null;
    const shows = (setting: 'all' | 'users' | 'disabled') => setting === 'all' || (setting === 'users' && signedIn);
    if (ctx.config.limitedFederationMode && !signedIn) throw new ApiError(401, 'This method requires an authenticated user');
    if (!shows(ctx.config.showDomainBlocks)) throw notFound();
    const withComment = shows(ctx.config.showDomainBlocksRationale);
    const everyoneSeesThis = ctx.config.showDomainBlocks === 'all' && ctx.config.showDomainBlocksRationale !== 'users' && !ctx.config.limitedFederationMode;
    reply.header('cache-control', everyoneSeesThis ? 'public, max-age=180' : 'private, max-age=180');
    return (await userFacingDomainBlocks(ctx.db)).map((b) => renderDomainBlock(b, withComment));
  });
}
