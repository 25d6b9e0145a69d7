import { personChanged } from '../../services/session-cache.ts';
import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isLanguage } from '../../services/languages.ts';
import { updateAppearance, type UserRow } from '../../storage/users.ts';
import { sendFormPage, signedInOrRedirect } from './page.ts';
import { languageChoices } from './settings.ts';

const THEMES: [UserRow['theme'], string][] = [['system', 'As my device is set (light or dark)'], ['light', 'Light'], ['dark', 'Dark']];

/** How the pages look and which language the interface speaks: stored on the user, applied on every page they open. */
export default async function appearancePageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/settings/appearance', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && sendFormPage(ctx, request, reply, 'settings/appearance', 'Appearance', {
      user: me.user, themes: THEMES, languages: languageChoices(), notice: request.query.notice === 'saved' ? 'Your changes are saved.' : '', error: '',
    });
  });

  app.post('/settings/appearance', {
    schema: {
      body: Type.Object({
        locale: Type.Optional(Type.String({ maxLength: 20 })), theme: Type.Optional(Type.String({ maxLength: 20 })),
        reduce_motion: Type.Optional(Type.String({ maxLength: 10 })), larger_text: Type.Optional(Type.String({ maxLength: 10 })),
      }),
    },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const b = request.body;
    const locale = (b.locale ?? '').trim();
    const theme = THEMES.find(([t]) => t === b.theme)?.[0];
    const error = !theme ? 'Choose light, dark or your device\'s colours.' : locale !== '' && !isLanguage(locale) ? 'Choose a language from the list.' : '';
    if (error || !theme) {
      return sendFormPage(ctx, request, reply, 'settings/appearance', 'Appearance', { user: me.user, themes: THEMES, languages: languageChoices(), notice: '', error }, 422);
    }
    await updateAppearance(ctx.db, me.user.id, { locale: locale || null, theme, reduceMotion: b.reduce_motion === '1', largerText: b.larger_text === '1' });
    await personChanged(ctx, { userId: me.user.id });
    return reply.redirect('/settings/appearance?notice=saved', 303);
  });
}
