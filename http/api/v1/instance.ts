import { translationLanguages } from '../../../services/translation/translate-status.ts';
import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../../route-options.ts';
import { Type } from '../../schema.ts';
import { notFound } from '../../../errors.ts';
import { instanceStats } from '../../../storage/instance.ts';
import { listRules } from '../../../storage/rules.ts';
import { renderExtendedDescription, renderInstanceV1, renderRule, type InstanceExtras } from '../../serializers/instance.ts';
import type { AppContext } from '../../../context.ts';
import { activity, contactAccount, extendedDescription, peers } from '../../../services/instance.ts';
import { instanceThumbnail } from '../../../services/instance-thumbnail.ts';
import { LANGUAGES } from '../../../services/languages.ts';
import { privacyPolicy, termsOfService } from '../../../services/instance-policies.ts';

export { contactAccount };

/** Rules and thumbnail, shown by both instance entities. */
export async function instanceExtras(ctx: AppContext): Promise<InstanceExtras> {
  const [rules, thumbnail] = await Promise.all([listRules(ctx.db), instanceThumbnail(ctx.config)]);
  return { rules, thumbnail };
}

const LANGUAGE_LIST = [...LANGUAGES].map(([code, name]) => ({ code, name }));

// As Mastodon's instance controllers, these do not look at tokens at all (`anonymous`).
export default async function instanceV1Routes(app: FastifyInstance, { ctx }: RouteOptions) {
  // A thumbnail file that is not an image stops start-up with a line naming INSTANCE_THUMBNAIL.
  if (ctx.config.instanceThumbnail) await instanceThumbnail(ctx.config);

  app.get('/api/v1/instance', { config: { auth: { kind: 'anonymous' } } }, async () => {
    const [stats, contact, extras] = await Promise.all([instanceStats(ctx.db), contactAccount(ctx), instanceExtras(ctx)]);
    return renderInstanceV1(ctx.render, ctx.config, stats, contact, extras);
  });

  app.get('/api/v1/instance/peers', { config: { auth: { kind: 'anonymous' } } }, async () => peers(ctx));

  app.get('/api/v1/instance/activity', { config: { auth: { kind: 'anonymous' } } }, async () => activity(ctx));

  app.get('/api/v1/instance/rules', { config: { auth: { kind: 'anonymous' } } }, async () =>
    (await listRules(ctx.db)).map(renderRule));

  // With none set by the operator, Mastodon answers an empty text and no date (the about page shows the description).
  app.get('/api/v1/instance/extended_description', { config: { auth: { kind: 'anonymous' } } }, async () =>
    (ctx.config.instanceExtendedDescription.trim() === '' ? { updated_at: null, content: '' } : renderExtendedDescription(await extendedDescription(ctx))));

  // The operator's texts, or the defaults the pages show too (services/instance-policies.ts).
  app.get('/api/v1/instance/privacy_policy', { config: { auth: { kind: 'anonymous' } } }, async () => {
    const policy = await privacyPolicy(ctx);
    return { updated_at: policy.updatedAt.toISOString(), content: policy.content };
  });

  // Only the operator's terms (TERMS_OF_SERVICE_FILE): with none, 404 as on Mastodon (the page shows default terms).
  // One version, in effect since it last changed; /:date answers it for its own date only.
  const operatorTerms = async () => {
    const terms = await termsOfService(ctx);
    if (!terms.custom) throw notFound();
    return { effective_date: terms.updatedAt.toISOString().slice(0, 10), effective: true, content: terms.content, succeeded_by: null };
  };
  app.get('/api/v1/instance/terms_of_service', { config: { auth: { kind: 'anonymous' } } }, operatorTerms);
  app.get<{ Params: { date: string } }>('/api/v1/instance/terms_of_service/:date', {
    schema: { params: Type.Object({ date: Type.String({ maxLength: 20 }) }) },
    config: { auth: { kind: 'anonymous' } },
  }, async (request) => {
    const terms = await operatorTerms();
    if (terms.effective_date !== request.params.date) throw notFound();
    return terms;
  });

  app.get('/api/v1/instance/languages', { config: { auth: { kind: 'anonymous' } } }, async () => LANGUAGE_LIST);

  // Source language -> target languages the configured service offers (`und`: detected); {} with no service.
  app.get('/api/v1/instance/translation_languages', { config: { auth: { kind: 'anonymous' } } }, async () => translationLanguages(ctx.config));

  // The thumbnail both instance entities name, from memory; its URL carries a digest of it, so it can be kept long.
  for (const size of ['@1x', '@2x'] as const) {
    app.get(`/instance/thumbnail${size}.:ext`, async (request, reply) => {
      const thumbnail = await instanceThumbnail(ctx.config);
      const image = thumbnail[size];
      const ext = image.contentType === 'image/png' ? 'png' : 'jpg';
      if ((request.params as { ext: string }).ext !== ext) return reply.code(404).send({ error: 'Record not found' });
      return reply
        .type(image.contentType)
        .header('cache-control', 'public, max-age=86400')
        .send(await image.data());
    });
  }
}
