import { personChanged } from '../../services/session-cache.ts';
import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { isLanguage } from '../../services/languages.ts';
import { updateAppearance, type UserRow } from '../../storage/users.ts';
import { sendFormPage, signedInOrRedirect, translatorOf } from './page.ts';
import { languageChoices } from './settings.ts';
import { LOCALES } from './i18n.ts';

const THEMES: [UserRow['theme'], string][] = [['system', 'appearance.theme.system'], ['light', 'appearance.theme.light'], ['dark', 'appearance.theme.dark']];

/** The languages the pages speak, named in the page's language (what the locale hint lists); made once per locale. */
const languageLists = new Map<string, string>();
const interfaceLanguages = (locale: string) => languageLists.get(locale) ?? languageLists.set(locale, new Intl.ListFormat(locale, { type: 'conjunction' })
  .format(LOCALES.map((l) => new Intl.DisplayNames([locale], { type: 'language' }).of(l) ?? l))).get(locale)!;

/** How the pages look and which language the interface speaks: stored on the user, applied on every page they open. */
export default async function appearancePageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/settings/appearance', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const t = await translatorOf(ctx, request);
    return sendFormPage(ctx, request, reply, 'settings/appearance', t('appearance.title'), {
      user: me.user, themes: THEMES, languages: languageChoices(), interfaceLanguages: interfaceLanguages(t.locale), notice: request.query.notice === 'saved' ? t('settings.saved') : '', error: '',
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
    const t = await translatorOf(ctx, request);
    const error = !theme ? t('appearance.error.theme') : locale !== '' && !isLanguage(locale) ? t('appearance.error.locale') : '';
    if (error || !theme) {
      return sendFormPage(ctx, request, reply, 'settings/appearance', t('appearance.title'), { user: me.user, themes: THEMES, languages: languageChoices(), interfaceLanguages: interfaceLanguages(t.locale), notice: '', error }, 422);
    }
    await updateAppearance(ctx.db, me.user.id, { locale: locale || null, theme, reduceMotion: b.reduce_motion === '1', largerText: b.larger_text === '1' });
    await personChanged(ctx, { userId: me.user.id });
    return reply.redirect('/settings/appearance?notice=saved', 303);
  });
}
