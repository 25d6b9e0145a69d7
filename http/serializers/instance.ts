import type { Config } from '../../config.ts';
import type { InstanceStats } from '../../storage/instance.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';
import type { AccountRow } from '../../storage/accounts.ts';
import { ALL_SCOPES } from '../oauth/scopes.ts';
import pkg from '../../package.json' with { type: 'json' };

/** Mastodon apps read the version to decide which features exist; we speak the 4.3 API. */
export const VERSION = `4.3.0 (compatible; ${pkg.name} ${pkg.version})`;
// What POST /api/v2/media takes (services/media.ts), by content.
const MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/avif',
  'video/mp4', 'video/webm', 'video/quicktime', 'audio/mpeg', 'audio/ogg', 'audio/wav', 'audio/flac', 'audio/mp4', 'audio/webm'];

function limits(config: Config) {
  return {
    accounts: {
      max_featured_tags: 10,
      max_pinned_statuses: 5,
      max_display_name_length: 30,
      max_note_length: 500,
      max_profile_fields: 4,
      profile_field_name_limit: 255,
      profile_field_value_limit: 255,
    },
    statuses: { max_characters: config.maxStatusChars, max_media_attachments: 4, characters_reserved_per_url: 23 },
    media_attachments: {
      supported_mime_types: MEDIA_TYPES,
      image_size_limit: config.maxImageBytes,
      image_matrix_limit: 7680 * 4320,
      video_size_limit: config.maxVideoBytes,
      video_frame_rate_limit: 60,
      video_matrix_limit: 2304000,
      description_limit: 1500,
    },
    polls: { max_options: 4, max_characters_per_option: 50, min_expiration: 300, max_expiration: 2629746 },
  };
}

const streamingUrl = (publicUrl: string) => publicUrl.replace(/^http/, 'ws');

// Mastodon sends '' when these are unset, which its own schema refuses (a required email and a URI, not nullable).
// These placeholders are valid and name nothing: `.invalid` never resolves (RFC 6761), so no one gets the mail,
// and about:blank is the empty document, since no public repository of this server is known.
const NO_CONTACT_EMAIL = 'contact-not-set@example.invalid';
const NO_SOURCE_URL = 'about:blank';
const contactEmail = (config: Config) => config.contactEmail || NO_CONTACT_EMAIL;

export function renderInstanceV1(ctx: RenderContext, config: Config, stats: InstanceStats, contact: AccountRow | null) {
  return {
    uri: config.localDomain,
    title: config.instanceTitle,
    short_description: config.instanceDescription,
    description: config.instanceDescription,
    email: contactEmail(config),
    version: VERSION,
    urls: { streaming_api: streamingUrl(config.publicUrl) },
    stats: { user_count: stats.userCount, status_count: stats.statusCount, domain_count: stats.domainCount },
    thumbnail: `${config.publicUrl}/thumbnail.png`,
    languages: ['en'],
    registrations: config.registrationsMode !== 'none',
    approval_required: config.registrationsMode === 'approved',
    invites_enabled: false,
    configuration: limits(config),
    contact_account: contact ? renderAccount(ctx, contact) : null,
    rules: [],
  };
}

export function renderInstanceV2(ctx: RenderContext, config: Config, stats: InstanceStats, contact: AccountRow | null, vapidPublicKey: string) {
  return {
    domain: config.localDomain,
    title: config.instanceTitle,
    version: VERSION,
    source_url: config.sourceUrl || NO_SOURCE_URL,
    description: config.instanceDescription,
    usage: { users: { active_month: stats.activeMonth } },
    thumbnail: { url: `${config.publicUrl}/thumbnail.png`, blurhash: null, versions: {} },
    icon: [],
    languages: ['en'],
    configuration: {
      urls: { streaming: streamingUrl(config.publicUrl), status: null },
      vapid: { public_key: vapidPublicKey },
      translation: { enabled: false },
      timelines_access: {
        live_feeds: { local: 'public', remote: 'public' },
        hashtag_feeds: { local: 'public', remote: 'public' },
        trending_link_feeds: { local: 'public', remote: 'public' },
      },
      ...limits(config),
    },
    registrations: {
      enabled: config.registrationsMode !== 'none',
      approval_required: config.registrationsMode === 'approved',
      reason_required: config.registrationsMode === 'approved',
      message: null,
      url: null,
      min_age: null,
    },
    api_versions: { mastodon: 2 },
    contact: { email: contactEmail(config), account: contact ? renderAccount(ctx, contact) : null },
    rules: [],
    oauth_scopes: ALL_SCOPES,
  };
}
