import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { translateStatus, translationTarget } from '../../../services/translation/translate-status.ts';
import { renderTranslation } from '../../serializers/translation.ts';

const StatusParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const TranslateBody = Type.Object({
  // ISO 639-1, or a regional variant the service lists (pt-BR); the person's interface language when absent.
  lang: Type.Optional(Type.String({ pattern: '^[a-zA-Z]{2,3}([-_][a-zA-Z]{2,4})?$' })),
});

export default async function statusTranslationRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // POST /api/v1/statuses/:id/translate: 404 without a translation service, 403 for a post that may not be
  // translated (not public or unlisted, or a pair of languages the service lacks), 503 when the service fails.
  app.post('/api/v1/statuses/:id/translate', {
    schema: { params: StatusParams, body: Type.Optional(TranslateBody) },
    config: { auth: { kind: 'user', scopes: ['read:statuses'] } },
  }, async (request) => {
    const viewerId = requireViewer(request);
    const target = request.body?.lang?.replace('_', '-') ?? await translationTarget(ctx, viewerId);
    const translation = await translateStatus(ctx, viewerId, request.params.id, target);
    return renderTranslation(translation);
  });
}
