import { Type, type Static } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import type { RegistrationsMode } from '../../config.ts';
import {
  REGISTRATIONS_MODES, SettingsRefused, SHORT_DESCRIPTION_MAX, STATUS_CHARS_MAX, TEXT_MAX, TITLE_MAX,
  type RunTimeSettings, type SettingField,
} from '../../services/server-settings.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const MB = 1024 * 1024;

/** The form as sent: text fields, numbers as typed, languages as one comma-separated field. */
const SettingsForm = Type.Object({
  site_title: Type.String({ maxLength: TITLE_MAX + 100 }),
  site_short_description: Type.String({ maxLength: SHORT_DESCRIPTION_MAX + 100 }),
  site_extended_description: Type.String({ maxLength: TEXT_MAX + 1000 }),
  site_contact_email: Type.String({ maxLength: 400 }),
  site_contact_username: Type.String({ maxLength: 100 }),
  registrations_mode: Type.String({ maxLength: 20 }),
  closed_registrations_message: Type.String({ maxLength: TEXT_MAX + 1000 }),
  languages: Type.String({ maxLength: 400 }),
  site_terms: Type.String({ maxLength: TEXT_MAX + 1000 }),
  privacy_policy: Type.String({ maxLength: TEXT_MAX + 1000 }),
  status_max_characters: Type.String({ maxLength: 20 }),
  media_image_max_mb: Type.String({ maxLength: 20 }),
  media_video_max_mb: Type.String({ maxLength: 20 }),
  content_cache_retention_days: Type.Optional(Type.String({ maxLength: 20 })),
});
type Form = Static<typeof SettingsForm>;

/** The settings that stay in the environment (config.ts), read once at start: a restart applies a change. */
const RESTART_SETTINGS: readonly [string, string][] = [
  ['LOCAL_DOMAIN, LOCAL_HTTPS, PORT, BIND, TRUST_PROXY', 'the address and how it is served'],
  ['DATABASE_URL, REDIS_URL, REDIS_PREFIX, FILE_HOST, S3_*, DATA_DIR', 'where everything is stored'],
  ['SMTP_*', 'outgoing mail'],
  ['OIDC_*, OMNIAUTH_ONLY', 'single sign-on'],
  ['AUTHORIZED_FETCH, LIMITED_FEDERATION_MODE, SHOW_DOMAIN_BLOCKS, SHOW_DOMAIN_BLOCKS_RATIONALE', 'federation'],
  ['INSTANCE_THUMBNAIL, INSTANCE_THUMBNAIL_DESCRIPTION, SOURCE_URL, STATUS_PAGE_URL', 'the thumbnail and links of the instance entity'],
  ['MAX_IMAGE_BYTES, MAX_VIDEO_BYTES', 'the most the media limits here may be (uploads are read into memory up to them)'],
  ['DEEPL_*, LIBRE_TRANSLATE_*', 'translation'],
];

const number = (v: string) => (/^\s*\d{1,12}\s*$/.test(v) ? Number(v) : NaN);

/** The form's values as settings: numbers that are not numbers stay NaN, and the service refuses them. */
function fromForm(b: Form, current: RunTimeSettings): RunTimeSettings {
  return {
    instanceTitle: b.site_title.trim(),
    instanceDescription: b.site_short_description.trim(),
    instanceExtendedDescription: b.site_extended_description.trim(),
    contactEmail: b.site_contact_email.trim(),
    contactUsername: b.site_contact_username.trim().replace(/^@/, ''),
    registrationsMode: b.registrations_mode as RegistrationsMode,
    registrationsClosedMessage: b.closed_registrations_message.trim(),
    instanceLanguages: [...new Set(b.languages.split(/[\s,]+/).map((c) => c.toLowerCase()).filter((c) => c !== ''))],
    termsOfService: b.site_terms.trim(),
    privacyPolicy: b.privacy_policy.trim(),
    maxStatusChars: number(b.status_max_characters),
    maxImageBytes: number(b.media_image_max_mb) * MB,
    maxVideoBytes: number(b.media_video_max_mb) * MB,
    contentCacheRetentionDays: b.content_cache_retention_days === undefined ? current.contentCacheRetentionDays : number(b.content_cache_retention_days),
  };
}

/** The operators' settings page (Mastodon's Administration > Server settings), for roles with manage_settings. */
export default async function adminSettingsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  const page = (request: FastifyRequest, reply: FastifyReply, values: RunTimeSettings, errors: Partial<Record<SettingField, string>>, notice: string, status = 200) => {
    const env = ctx.settings.environment;
    return sendFormPage(ctx, request, reply, 'admin/settings', 'Server settings', {
      values: { ...values, instanceLanguages: values.instanceLanguages.join(', ') },
      mb: { image: Number.isFinite(values.maxImageBytes) ? Math.round(values.maxImageBytes / MB * 100) / 100 : '', video: Number.isFinite(values.maxVideoBytes) ? Math.round(values.maxVideoBytes / MB * 100) / 100 : '' },
      ceilings: { image: Math.floor(env.maxImageBytes / MB), video: Math.floor(env.maxVideoBytes / MB) },
      limits: { title: TITLE_MAX, short: SHORT_DESCRIPTION_MAX, text: TEXT_MAX, chars: STATUS_CHARS_MAX },
      modes: REGISTRATIONS_MODES.map((m) => [m, m === 'open' ? 'Open: anyone can sign up' : m === 'approved' ? 'Approval required: an operator approves each sign-up' : 'Closed: nobody can sign up (except with an invite)']),
      restart: RESTART_SETTINGS,
      errors, notice, error: Object.keys(errors).length > 0 ? 'Nothing was saved: correct the fields marked below.' : '',
    }, status);
  };

  app.get('/admin/settings', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return page(request, reply, ctx.settings.current, {}, request.query.notice === 'saved' ? 'The settings are saved; every process of the server uses them within a second.' : '');
  });

  app.post('/admin/settings', { schema: { body: SettingsForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const values = fromForm(request.body, ctx.settings.current);
    try {
      await ctx.settings.change(values, me.account.id);
    } catch (err) {
      if (err instanceof SettingsRefused) return page(request, reply, values, err.fields, '', 422);
      throw err;
    }
    return reply.redirect('/admin/settings?notice=saved', 303);
  });
}
