import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import { isId } from '../params.ts';
import {
  translatable, translateStatus, translationEnabled, translationLanguages, translationTarget, type StatusTranslation,
} from '../../services/translation/translate-status.ts';
import { safeReturnTo } from './auth.ts';
import { sendMessagePage, translatorOf } from './page.ts';
import { formError } from './service-errors.ts';
import { refused, signedInForForm } from './client-actions.ts';
import { clientEntries } from './client-view.ts';

const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const Back = Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 4000 })) });
/** A page waits at most this long for the service's list of languages (asked once a day); without it, no button. */
const LANGUAGES_WAIT_MS = 1500;

/** Which posts get a Translate button; `key` names the answers (the same key, the same answers). */
export interface TranslateOffer {
  (post: { visibility: string; language: string | null }): boolean;
  readonly key: string;
}

/** Each list of the service's languages as it is asked again (once a day): a number, for offers' keys. */
const pairsSeen = new WeakMap<object, number>();
let pairsCount = 0;

/** Which posts of a page get a Translate button: null when no translation service is configured. */
export async function translateOffer(ctx: AppContext, viewerId: string): Promise<TranslateOffer | null> {
  if (!translationEnabled(ctx.config)) return null;
  let timer: NodeJS.Timeout | undefined;
  const [target, pairs] = await Promise.all([
    translationTarget(ctx, viewerId),
    Promise.race([
      translationLanguages(ctx.config).catch(() => ({})),
      new Promise<Record<string, string[]>>((resolve) => { timer = setTimeout(() => resolve({}), LANGUAGES_WAIT_MS); }),
    ]).finally(() => clearTimeout(timer)),
  ]);
  let seen = pairsSeen.get(pairs);
  if (seen === undefined) pairsSeen.set(pairs, (seen = ++pairsCount));
  return Object.assign((post: { visibility: string; language: string | null }) => translatable(pairs, target, post), { key: `${target}/${seen}` });
}

/** The translation a form asked for, kept by the service (never asked of it again here), or null. */
export async function keptTranslation(ctx: AppContext, viewerId: string, statusId: string): Promise<StatusTranslation | null> {
  if (!translationEnabled(ctx.config)) return null;
  try {
    return await translateStatus(ctx, viewerId, statusId, await translationTarget(ctx, viewerId), true);
  } catch (err) {
    if (err instanceof ApiError) return null;
    throw err;
  }
}

/**
 * A post's Translate button: as POST /api/v1/statuses/:id/translate (the same service, into the person's language),
 * then to the post's page, which shows the translation the service keeps for a day. A post that may not be
 * translated gets the API's 403, a service that fails its 503, each on a page.
 */
export default async function clientTranslationRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/statuses/:id/translate', { schema: { params: IdParams, body: Back } }, async (request, reply) => {
    const returnTo = request.body.return_to ? safeReturnTo(request.body.return_to, ctx.config.publicUrl) : '/home';
    const me = await signedInForForm(request, reply, returnTo);
    if (!me) return reply;
    const viewerId = me.account.id;
    let threadPath: string;
    try {
      const [entry] = isId(request.params.id) ? await clientEntries(ctx, viewerId, [request.params.id], null) : [];
      if (!entry) throw new ApiError(404, 'Record not found');
      await translateStatus(ctx, viewerId, entry.post.id, await translationTarget(ctx, viewerId));
      threadPath = `${entry.post.author.path}/${entry.post.id}`;
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 403) {
        return sendMessagePage(ctx, request, reply, { key: 'translation.refused_title' }, { key: 'translation.refused' }, { status: 403, kind: 'error', link: { href: returnTo, text: { key: 'common.go_back' } } });
      }
      if (err instanceof ApiError && err.statusCode === 503) {
        return sendMessagePage(ctx, request, reply, { key: 'translation.refused_title' }, formError(await translatorOf(ctx, request), err), { status: 503, kind: 'error', link: { href: returnTo, text: { key: 'common.go_back' } } });
      }
      return refused(ctx, request, reply, err, returnTo);
    }
    return reply.redirect(`${threadPath}?translated=1#translation`, 303);
  });
}
